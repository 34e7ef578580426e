"""The import graph of `plugin/memplace`: no cycle, and no edge DESIGN §1's layers forbid.

The graph is read from the source (every import, at module level or in a function; those
under `if TYPE_CHECKING:` only name types and are left out), so a function-level import
cannot hide an edge.
"""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[1] / "plugin" / "memplace"

# The model: boards, workloads, scopes, stack hints and what they are read with.
MODEL = {"board", "workload", "scopes", "hints", "source", "names", "errors", "project_files"}
MODEL |= {"contract"}
MODEL |= {"resources", "declarations", "files"}
# Modules of higher stages that only declare data the model reads (standard library only):
# the runners' registry, which finds the runner modules at run time (each keeps its module
# level to its class and record: `test_loading_a_board_loads_no_stage_above_the_model`),
# and the RTOS registry (its names are its modules' names; an RTOS's own module builds on
# the verifier and loads only when `memplace stacks` or `verify` asks).
DECLARATIONS = {"memplace.runners.registry", "memplace.rtos"}
# What a generated project carries and runs with no memplace installed (its own Project API
# server, build and process wrapper): standard library only, so any stage may build on it.
CARRIED = "memplace.carried"
# The pure core: data in, data out; nothing here starts a process.
PURE = MODEL | {"importers", "planner", "imagemap", "codegen", "explain", "schema"}
# Modules that start processes, or hold what does.
PROCESSES = {"process", "qemu", "build", "runners", "project_api", "workflow", "tflm", "cli"}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found[name] = path
    return found


MODULES = _modules()


def _type_only(tree: ast.Module) -> set[int]:
    """The ids of the nodes under an `if TYPE_CHECKING:`."""
    hidden: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            hidden |= {id(inner) for inner in ast.walk(node)}
    return hidden


def _owner(name: str) -> str | None:
    """The module of `memplace` that `name` (a module or a name in one) is in."""
    while name and name not in MODULES:
        name = name.rpartition(".")[0]
    return name or None


def _imports(module: str) -> set[str]:
    path = MODULES[module]
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    hidden = _type_only(tree)
    targets: set[str] = set()
    for node in ast.walk(tree):
        if id(node) in hidden:
            continue
        if isinstance(node, ast.Import):
            targets |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")[: len(package.split(".")) - node.level + 1]
                base = ".".join([*parts, base] if base else parts)
            for alias in node.names:
                whole = f"{base}.{alias.name}"
                targets.add(whole if whole in MODULES else base)
    owners = {_owner(t) for t in targets if t.split(".")[0] == "memplace"}
    return {o for o in owners if o is not None and o != module}


GRAPH = {module: _imports(module) for module in MODULES}


def _stage(module: str) -> str:
    """`memplace.verify.elf` -> `verify`; `memplace` itself -> `memplace`."""
    if module in DECLARATIONS:
        return "declarations"
    if module.startswith(CARRIED):
        return "carried"
    parts = module.split(".")
    return parts[1] if len(parts) > 1 else "memplace"


def _cycle() -> list[str] | None:
    """One import cycle, as the modules around it, or None."""
    state: dict[str, int] = {}
    stack: list[str] = []

    def visit(module: str) -> list[str] | None:
        state[module] = 1
        stack.append(module)
        for target in sorted(GRAPH[module]):
            if state.get(target) == 1:
                return [*stack[stack.index(target) :], target]
            if target not in state and (found := visit(target)):
                return found
        stack.pop()
        state[module] = 2
        return None

    for module in sorted(GRAPH):
        if module not in state and (found := visit(module)):
            return found
    return None


def _edges(where: set[str], to: set[str]) -> list[str]:
    return sorted(
        f"{module} -> {target}"
        for module, targets in GRAPH.items()
        if _stage(module) in where
        for target in targets
        if _stage(target) in to
    )


def test_the_graph_is_read_from_the_whole_package() -> None:
    assert "memplace.planner.assign" in GRAPH
    assert "memplace.planner.core" in GRAPH["memplace.planner.assign"]
    assert "memplace.board" in GRAPH["memplace.scopes"]


def test_no_import_cycle() -> None:
    assert _cycle() is None, " -> ".join(_cycle() or [])


def test_the_model_imports_no_stage_above_it() -> None:
    assert _edges(MODEL, set(map(_stage, MODULES)) - MODEL) == []


def test_the_workload_never_imports_its_front_ends() -> None:
    assert _edges({"workload"}, {"importers", "tflm"}) == []


def test_the_verifier_imports_neither_codegen_nor_build() -> None:
    assert _edges({"verify"}, {"codegen", "build", "workflow"}) == []


def test_the_pure_core_starts_no_process() -> None:
    assert _edges(PURE, PROCESSES | {"verify", "project"}) == []
    for module, path in MODULES.items():
        if _stage(module) in PURE:
            assert "subprocess" not in path.read_text(encoding="utf-8"), module


def test_the_image_map_sits_between_the_planner_and_the_generator() -> None:
    """The image map reads the board and the plan; the generator, the project and the
    verifier read it; it reads none of them."""
    assert "memplace.imagemap" in GRAPH["memplace.codegen"]
    assert "memplace.imagemap" in GRAPH["memplace.project"]
    assert _edges({"imagemap"}, {"codegen", "project", "verify", "importers", "tflm"}) == []


def test_the_names_of_the_contract_are_read_where_they_are_kept() -> None:
    """Every module reads the contract's names as `contract.X` (or its functions), never a
    copy bound at import: then a name changed in `memplace.contract` is changed for all."""
    copies = []
    for module, path in MODULES.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.ImportFrom) and node.module == "memplace.contract":
                copies += [f"{module}: {a.name}" for a in node.names if a.name.isupper()]
    assert copies == []


def test_no_stage_imports_the_cli() -> None:
    assert _edges(set(map(_stage, MODULES)) - {"cli"}, {"cli"}) == []


def test_declarations_import_nothing_of_memplace() -> None:
    assert all(GRAPH[module] <= {"memplace"} for module in DECLARATIONS)


def test_what_a_project_carries_imports_only_itself() -> None:
    carried = {module for module in MODULES if _stage(module) == "carried"}
    assert "memplace.carried.server" in carried
    allowed = carried | {"memplace"}
    assert [f"{m} -> {t}" for m in sorted(carried) for t in sorted(GRAPH[m] - allowed)] == []


def test_below_the_project_api_only_what_a_project_carries_is_used() -> None:
    """The build, the process wrapper and the options build on the carried modules, never on
    the server side of the Project API (its handler, client and workflow)."""
    below = {"process", "qemu", "build", "options", "codegen", "verify", "runners"}
    assert _edges(below, {"project_api"}) == []


def test_loading_a_board_loads_no_stage_above_the_model() -> None:
    """A board flashed by a runner (`stm32h743`) is checked against the runner's record,
    read from its module; nothing that runs a tool is loaded."""
    code = (
        "import memplace.board, sys; memplace.board.load_board('stm32h743'); "
        "print(sorted(m for m in sys.modules if m.startswith('memplace') or m == 'jinja2'))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    names = set(ast.literal_eval(out.stdout))
    assert "jinja2" not in names
    assert {_stage(module) for module in names if module in MODULES} <= MODEL | {
        "memplace",
        "runners",
        "qemu",
        "declarations",
    }
    assert {"memplace.runners.registry", "memplace.runners.pyocd"} <= names
    assert not {"memplace.process", "memplace.carried.processes"} & names
    assert [m for m in sorted(names) if m.startswith("memplace.rtos")] == ["memplace.rtos"]


@pytest.mark.parametrize(
    ("statement", "allowed"),
    [
        ("import memplace.errors", {"memplace", "memplace.errors"}),
        ("import memplace", {"memplace", "memplace.errors"}),
    ],
)
def test_importing_memplace_is_light(statement: str, allowed: set[str]) -> None:
    """`import memplace` and its errors load nothing else of memplace, nor Jinja2."""
    loaded = "sorted(m for m in sys.modules if 'memplace' in m or m == 'jinja2')"
    code = f"{statement}; import sys; print({loaded})"
    # What a user's Python loads: without the suite's hook that changes the contract's names.
    env = {k: v for k, v in os.environ.items() if k != "MEMPLACE_TEST_CONTRACT"}
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, env=env
    )
    assert set(ast.literal_eval(out.stdout)) <= allowed


def test_public_names_stay_themselves_once_every_module_is_loaded() -> None:
    """A submodule named like a public name would replace it on import (`memplace.explain`
    the module over `explain` the function)."""
    code = (
        "import importlib, memplace, pkgutil; "
        "[importlib.import_module(m.name) for m in pkgutil.walk_packages(memplace.__path__, "
        "'memplace.') if not m.name.endswith('_core')]; "
        "import types; "
        "print([n for n in memplace.__all__ if isinstance(getattr(memplace, n), types.ModuleType)])"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "[]"
