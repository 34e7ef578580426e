"""Shared fixtures: the default board and the demo workload as data and as files, and a
workload that touches every pool of a board. And how the suite runs in parallel
(pytest-xdist) without depending on the machine's speed or load."""

from __future__ import annotations

import ast
import contextlib
import copy
import dataclasses
import fcntl
import importlib.util
import os
import shutil
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

from memplace import resources
from memplace.board import Board, Pool, load_board
from memplace.build import build
from memplace.cli import main
from memplace.codegen import render
from memplace.importers import load_workload
from memplace.planner import Plan, plan
from memplace.planner.blocks import Block
from memplace.project import write_project
from memplace.workload import Workload

DEFAULT_BOARD = "qemu-mps3-an547"

PATIENCE = 300.0
"""Seconds a test waits for something that must happen (a process starting or ending, a line
from it) before it calls it a hang. Only a hang runs into it: no test expects anything to
happen within a time, so a slow or loaded machine passes the same tests as a fast one."""


CONTRACT = "MEMPLACE_TEST_CONTRACT"
"""`NAME=VALUE[,NAME=VALUE...]`: run the suite with these names of `memplace.contract`
changed, in its own process and in every Python it starts (`contract_hook/`), to show that
nothing but the contract holds them: `MEMPLACE_TEST_CONTRACT=POOL_SECTION=.mp_pool. pytest`."""


CONTRACT_CHANGES: dict[str, tuple[str, str]] = {}
"""What CONTRACT changed: name -> (the name of today, the name the suite runs with)."""


def as_contract_says(text: str) -> str:
    """`text` written with today's names (a golden file), as the changed contract writes it."""
    for old, new in CONTRACT_CHANGES.values():
        text = text.replace(old, new)
    return text


def _contract_defaults() -> dict[str, str]:
    """The names `memplace.contract` sets, as its source writes them (a Python this suite
    started has them changed already, by `contract_hook/sitecustomize.py`)."""
    from memplace import contract

    tree = ast.parse(Path(contract.__file__).read_text(encoding="utf-8"))
    return {
        node.targets[0].id: node.value.value
        for node in tree.body
        if isinstance(node, ast.Assign)
        and isinstance(node.targets[0], ast.Name)
        and isinstance(node.value, ast.Constant)
        and isinstance(node.value.value, str)
    }


def _change_the_contract() -> None:
    spec = os.environ.get(CONTRACT)
    if not spec:
        return
    from memplace import contract

    for item in spec.split(","):
        name, _, value = item.partition("=")
        if not name.isupper() or not isinstance(getattr(contract, name, None), str) or not value:
            raise pytest.UsageError(f"{CONTRACT}: no name {name!r} of memplace.contract to set")
        CONTRACT_CHANGES[name] = (_contract_defaults()[name], value)
        setattr(contract, name, value)
    hook = str(Path(__file__).resolve().parent / "contract_hook")
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [hook, *filter(None, [os.environ.get("PYTHONPATH")])]
    )


def pytest_configure(config: pytest.Config) -> None:
    _change_the_contract()
    # Hypothesis times each example (200 ms by default) and calls slow data generation a
    # failure: on a loaded machine both fail tests that pass at rest. Neither is timed here.
    settings.register_profile(
        "memplace", deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
    settings.load_profile("memplace")


def wait_until(condition: Callable[[], object], what: str) -> None:
    """Wait until `condition()` holds; a hang (PATIENCE) fails the test, saying `what`
    never happened."""
    deadline = time.monotonic() + PATIENCE
    while not condition():
        assert time.monotonic() < deadline, f"{what} within {PATIENCE:g} s"
        time.sleep(0.02)


def ended(pid: int) -> bool:
    """Whether process `pid` is gone (or a zombie: it ended, its parent has not asked)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return True
    return stat.rsplit(")", 1)[1].split()[0] == "Z"


@contextlib.contextmanager
def _run_lock(tmp_path_factory: pytest.TempPathFactory, name: str) -> Iterator[Path]:
    """The folder the whole run shares (above each xdist worker's own), held under a lock
    named `name` while the block runs."""
    base = tmp_path_factory.getbasetemp()
    if "PYTEST_XDIST_WORKER" in os.environ:
        base = base.parent
    with (base / f"{name}.lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield base


def made_once(
    tmp_path_factory: pytest.TempPathFactory, name: str, make: Callable[[Path], None]
) -> Path:
    """Folder `name`, filled by `make(folder)` once for the whole run: the first worker to
    ask makes it, the others wait for it and get the same folder. Tests only read it."""
    with _run_lock(tmp_path_factory, name) as base:
        folder = base / name
        done = base / f"{name}.done"
        if not done.exists():
            shutil.rmtree(folder, ignore_errors=True)  # a worker that failed making it
            make(folder)
            done.touch()
        return folder


@pytest.fixture(scope="session")
def board() -> Board:
    return load_board(DEFAULT_BOARD)


def _touch_workload(board: Board) -> Workload:
    """One buffer pinned in every workspace pool and one constant in every constant pool,
    each used by the first thread context that reaches the pool's memory, so that a build
    places every pool and a run proves each one's memory works."""
    threads = [c.name for c in board.contexts.values() if c.kind == "thread"]

    def entry(name: str, size: int, pool: Pool) -> dict[str, Any]:
        user = next(t for t in threads if board.reaches(t, pool.memory))
        spec: dict[str, Any] = {"name": name, "size": size, "scope": f"global.{pool.name}"}
        if user != threads[0]:
            spec["users"] = [user]  # the first thread is the default user
        return spec

    reached = [p for p in board.pools.values() if any(board.reaches(t, p.memory) for t in threads)]
    return Workload.from_data(
        {
            "memplace": "workload/v1",
            "name": "touch",
            "steps": 2,
            "buffers": [
                {**entry(f"b_{p.name}", 256, p), "live": [0, 1]}
                for p in reached
                if p.kind == "workspace"
            ],
            "constants": [entry(f"c_{p.name}", 64, p) for p in reached if p.kind == "constant"],
        }
    )


@pytest.fixture(scope="session")
def touch_workload() -> Callable[[Board], Workload]:
    return _touch_workload


@pytest.fixture(scope="session")
def demo_workload() -> Workload:
    return load_workload(resources.demo_workload())


@pytest.fixture
def board_data() -> dict[str, Any]:
    """The default board file as plain data, to change in a test."""
    path = resources.bundled_boards()[DEFAULT_BOARD]
    return copy.deepcopy(yaml.safe_load(path.read_text()))


@pytest.fixture
def small_workload_data() -> dict[str, Any]:
    return {
        "memplace": "workload/v1",
        "name": "small",
        "steps": ["a", "b", "c"],
        "buffers": [
            {"name": "x", "size": 1024, "live": ["a", "b"]},
            {"name": "y", "size": 2048, "live": ["b", "c"]},
            {"name": "z", "size": 512, "live": ["c", "c"]},
        ],
        "constants": [{"name": "w", "size": 300}],
    }


@pytest.fixture
def write_yaml(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write text to a file in the test's folder and return its path."""

    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return write


def has_toolchain() -> bool:
    return all(shutil.which(tool) for tool in ("arm-none-eabi-gcc", "qemu-system-arm"))


@pytest.fixture(scope="session")
def built_demo(
    tmp_path_factory: pytest.TempPathFactory, board: Board, demo_workload: Workload
) -> Path:
    """The demo project, generated and built once for the whole run (by one worker for
    all); never changed (tests that run or change it work on a copy, `demo_copy`)."""

    def make(folder: Path) -> None:
        write_project(render(board, plan(board, demo_workload)), folder / "project")
        build(folder / "project")

    return made_once(tmp_path_factory, "demo", make) / "project"


@pytest.fixture
def demo_copy(built_demo: Path, tmp_path: Path) -> Callable[..., Path]:
    """A copy of the built demo, with `arm-none-eabi-objcopy ARGS` applied to its ELF when
    given (GCC's .su and .ci files come along, for the stack analysis)."""

    def make(*objcopy: str) -> Path:
        copy = tmp_path / "mutant"
        shutil.copytree(
            built_demo, copy, ignore=shutil.ignore_patterns("*.ninja*", "CMakeCache.txt")
        )
        if objcopy:
            elf = copy / "build" / "cpu0.elf"
            subprocess.run(["arm-none-eabi-objcopy", *objcopy, str(elf)], check=True)
        return copy

    return make


def moved_onto(result: Plan, onto: str, *names: str) -> Plan:
    """`result` with the buffers `names` moved to the offset of buffer `onto`: a plan whose
    live buffers share bytes, for tests that the target or the checks catch it."""
    offset = result.placement(onto).offset
    return dataclasses.replace(
        result,
        placements=tuple(
            dataclasses.replace(p, offset=offset) if p.name in names else p
            for p in result.placements
        ),
    )


def run_cli(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str, str]:
    """`memplace ARGV...` in this process, as a user runs it: its exit code and what it
    printed to standard output and standard error."""
    code = main([str(arg) for arg in argv])
    out, err = capsys.readouterr()
    return code, out, err


def cli_error(capsys: pytest.CaptureFixture[str], *argv: str | Path, code: int = 2) -> str:
    """`memplace ARGV...` refused as a user sees it: exit `code` and one line on standard
    error, no traceback. Returns that line."""
    exit_code, _, err = run_cli(capsys, *argv)
    assert exit_code == code, err
    assert len(err.strip().splitlines()) == 1, err
    assert "Traceback" not in err
    return err.strip()


def benchmark(name: str) -> ModuleType:
    """The script `benchmarks/NAME.py` as a module (loaded once), for the tests of its
    tables and of what it generates."""
    module_name = f"bench_{name}"
    if module_name not in sys.modules:
        path = Path(__file__).resolve().parents[1] / "benchmarks" / f"{name}.py"
        spec = importlib.util.spec_from_file_location(module_name, path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules[module_name] = module  # dataclasses look their module up there
        spec.loader.exec_module(module)
    return sys.modules[module_name]


# Small offset problems for property tests: a few blocks over a few steps, mixed alignments.
BLOCKS = st.lists(
    st.builds(
        lambda size, first, span, align: Block(size * align, first, first + span, align),
        st.integers(1, 12),
        st.integers(0, 10),
        st.integers(0, 4),
        st.sampled_from([1, 2, 4, 16]),
    ),
    min_size=1,
    max_size=14,
)


# QEMU's mps2-an521 with cpu1's image programmed in SSRAM1 and run from SSRAM2, copied there
# by cpu0 from its release table; the two cores meet in the mailbox.
AN521_COPIED_CPU1 = """\
memplace: board/v1
extends: qemu-mps2-an521
name: an521-cpu1-copied
cores:
  cpu1:
    layout: {vectors: ssram2, code: ssram2, data: ssram2, load: ssram1, copy: releaser}
    release:
      by: cpu0
      steps:
        - {write: 0x50021114, value: 0x38200000}
        - {clear: 0x50021118, mask: 0x2}
pools:
  ssram2_ws: null
"""

# QEMU's mps2-an521 with cpu1's data in SSRAM0 beside cpu0's whole image (its code and vector
# table in SSRAM1, where INITSVTOR1 points): the two images share SSRAM0.
AN521_SHARED_DATA = """\
memplace: board/v1
name: an521-shared-data
extends: qemu-mps2-an521
cores:
  cpu1:
    layout: {vectors: ssram1, code: ssram1, data: ssram0, load: ssram1}
"""


RTOS_EXAMPLE = Path(__file__).resolve().parents[1] / "examples" / "rtos-stacks"
RTOS_EXAMPLE_FLAGS = ["-mcpu=cortex-m3", "-mthumb", "-O1", "-ffreestanding"]


def build_rtos_example(
    folder: Path, flags: list[str] = RTOS_EXAMPLE_FLAGS, tasks: Path | None = None
) -> Path:
    """examples/rtos-stacks built by its own commands with `flags`, as its Makefile does,
    with GCC's two stack reports beside each object in `folder`: the ELF `memplace stacks`
    reads. `tasks` replaces the example's tasks.c."""
    from memplace import process

    gcc = process.find_tool("arm-none-eabi-gcc")
    objects = []
    for source in (tasks or RTOS_EXAMPLE / "tasks.c", RTOS_EXAMPLE / "startup.c"):
        objects.append(str(folder / f"{source.stem}.o"))
        argv = [gcc, *flags, "-fstack-usage", "-fcallgraph-info=su,da", "-c"]
        argv += [str(source), "-o", objects[-1]]
        assert process.run(argv, timeout=PATIENCE).returncode == 0
    elf = folder / "rtos.elf"
    argv = [gcc, *flags, "-nostdlib", "-T", str(RTOS_EXAMPLE / "link.ld"), *objects, "-o", str(elf)]
    assert process.run(argv, timeout=PATIENCE).returncode == 0
    return elf
