"""Large workloads on the user's path: the windows search, the fast workload reader with
positions on demand, the compressed plan JSON and the command line's deferred imports.
No timings are checked; benchmarks/scale.py measures them."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from types import ModuleType

import pytest

from conftest import benchmark
from memplace.cli import main
from memplace.errors import InputError
from memplace.planner import ALGORITHMS
from memplace.planner.blocks import Block, Budget, lower_bound
from memplace.planner.check import placement_problems
from memplace.planner.greedy import greedy_size
from memplace.planner.model import Plan
from memplace.planner.windows import LARGE
from memplace.source import Document
from memplace.workload import Workload

COUNT = LARGE + 1000


@pytest.fixture(scope="module")
def generator() -> ModuleType:
    return benchmark("random_workload")


def _blocks(generator: ModuleType, count: int, seed: int = 1) -> list[Block]:
    return [Block(s, f, last, 16) for s, f, last in generator.random_lifetimes(count, seed)]


def _plan_json(capsys: pytest.CaptureFixture[str], board: Path, workload: Path) -> str:
    assert main(["plan", str(board), str(workload), "--json"]) == 0
    return capsys.readouterr().out


def test_the_generator_is_seeded(generator: ModuleType, tmp_path: Path) -> None:
    _, first = generator.write(300, tmp_path / "a", seed=4)
    _, again = generator.write(300, tmp_path / "b", seed=4)
    _, other = generator.write(300, tmp_path / "c", seed=5)
    assert first.read_bytes() == again.read_bytes() != other.read_bytes()


def test_windows_places_soundly_the_same_way_twice_and_no_worse_than_greedy(
    generator: ModuleType,
) -> None:
    blocks = _blocks(generator, COUNT, seed=3)
    found = ALGORITHMS["windows"](blocks, Budget(nodes=10**9))
    names = [f"b{i}" for i in range(len(blocks))]
    assert placement_problems(blocks, found.offsets, found.peak, names) == []
    assert found.peak <= greedy_size(blocks).peak
    assert found.peak <= lower_bound(blocks) * 1.01
    assert ALGORITHMS["windows"](blocks, Budget(nodes=10**9)) == found


def test_a_large_workload_plans_near_its_bound_through_the_cli(
    generator: ModuleType, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board, as_yaml = generator.write(COUNT, tmp_path, seed=2)
    _, as_json = generator.write(COUNT, tmp_path, seed=2, as_json=True)
    text = _plan_json(capsys, board, as_yaml)
    assert _plan_json(capsys, board, as_json) == text  # either format, the same plan
    assert _plan_json(capsys, board, as_yaml) == text  # and the same again
    data = json.loads(text)
    pool = data["pools"][0]
    assert pool["used"] <= pool["lower_bound"] * 1.01
    # The timeline is a count: the steps carry no names here.
    assert data["steps"] == {"count": COUNT // 8, "names": {}}
    assert len(data["placements"]) == COUNT
    assert Plan.from_json(data).dumps() == text


def test_a_plan_names_only_the_steps_where_something_starts_or_ends() -> None:
    workload = Workload.from_data(
        {
            "memplace": "workload/v1",
            "name": "w",
            "steps": ["in", "conv", "pool", "fc", "out"],
            "buffers": [{"name": "a", "size": 64, "live": ["conv", "fc"]}],
        }
    )
    from memplace.board import load_board
    from memplace.planner import plan

    result = plan(load_board("qemu-mps3-an547"), workload)
    data = json.loads(result.dumps())
    assert data["steps"] == {"count": 5, "names": {"1": "conv", "3": "fc"}}
    assert Plan.from_json(data).steps == ("0", "conv", "2", "fc", "4")
    # A plan written with every step's name reads as before.
    data["steps"] = list(result.steps)
    assert Plan.from_json(data).steps == result.steps


@pytest.mark.parametrize(
    ("name", "pool", "stack", "reason", "dynamic"),
    [
        ("b0", "arena_ws", None, "fastest pool reachable by main", False),
        ('q"uote\\d', None, "main.thread0", "\u00e9t\u00e9 \U0001f600\n\t", True),
    ],
)
def test_a_placement_is_written_as_json_writes_it(
    name: str, pool: str | None, stack: str | None, reason: str, dynamic: bool
) -> None:
    # The plan's JSON writes each placement by hand, to be quick on a million of them: the
    # same bytes as json.dumps, escapes and all.
    from memplace.planner.model import Placement, _placement_json, _placement_line

    placement = Placement(name, "buffer", pool, stack, 64, 48, 16, 3, 9, reason, None, dynamic)
    assert _placement_line(placement) == json.dumps(_placement_json(placement))


@pytest.mark.parametrize(
    "text",
    [
        "a: 1\nb: [x, 'y', \"z\", 010, 0x1f, 1_000, 3.5, .inf, yes, No, ~, '', 12K]\n",
        "a:\n  - {name: b1, size: 64}\n  - name: c\n    live: [0, 1]\nd: null\n",
        '{"a": [1, 2.5, "x", true, null, {"b": []}], "c": "\\u00e9"}',
        '{"a": 1e5}',
        "{a: 1, b: [2, 3]}",
        "",
        "--- \nx: 1\n",
    ],
)
def test_the_fast_reader_reads_what_the_careful_one_does(text: str) -> None:
    fast = Document.from_text(text, "f.yaml")
    assert fast.data == Document.careful(text, "f.yaml").data
    assert type(fast.data) is type(Document.careful(text, "f.yaml").data)


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("a: 1\nb:\n  c: 2\n  c: 3\n", r"f.yaml:4:3: b.c: key given twice"),
        ('{"a": 1,\n "a": 2}', r"f.yaml:2:2: a: key given twice"),
        ("a: &x [1]\nb: !!python/object:os.system x\n", r"f.yaml:2:4: YAML tag"),
        ("a: 2020-01-01\n", r"f.yaml:1:4: YAML tag 'tag:yaml.org,2002:timestamp'"),
        ("a: [1, 2\n", r"f.yaml:2:1: not valid YAML"),
        ("a: &x [*x]\n", r"alias \*x is inside the value it names"),
        ("<<: {a: 1}\n", r"merge keys"),
    ],
)
def test_what_the_fast_reader_does_not_take_is_refused_where_it_is(text: str, message: str) -> None:
    with pytest.raises(InputError, match=message):
        Document.from_text(text, "f.yaml")


def test_positions_are_found_when_an_error_needs_them(tmp_path: Path) -> None:
    lines = ["memplace: workload/v1", "name: w", "buffers:"]
    lines += [f"  - {{name: b{i}, size: 64, live: [0, 1]}}" for i in range(50)]
    lines.append("  - {name: bad, size: -4, live: [0, 1]}")
    lines.append("  - {name: b7, size: 64, live: [0, 1]}")
    path = tmp_path / "w.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"w.yaml:54:23: buffers\[50\].size: a size must be"):
        Workload.from_file(path)
    del lines[-2]
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(InputError, match=r"w.yaml:54:12: b7.name: name used twice"):
        Workload.from_file(path)


def test_a_buffer_read_the_plain_way_knows_where_its_keys_are(tmp_path: Path) -> None:
    path = tmp_path / "w.json"
    path.write_text(
        '{"memplace": "workload/v1", "name": "w", "buffers": [\n'
        '  {"name": "a", "size": 64, "live": [0, 3]}]}\n'
    )
    buffer = Workload.from_file(path).buffers[0]
    assert str(buffer.mark("live[1]")) == f"{path}:2:41"
    assert str(buffer.mark("size")) == f"{path}:2:25"
    assert buffer.mark("live") is not None and buffer.mark("name") is not None


def test_the_command_line_loads_only_what_a_plan_needs(tmp_path: Path) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text(
        "memplace: workload/v1\nname: w\nbuffers:\n  - {name: a, size: 64, live: [0, 1]}\n"
    )
    heavy = ("jinja2", "numpy", "memplace.codegen", "memplace.verify", "memplace.workflow")
    script = (
        "import contextlib, io, sys\n"
        "from memplace.cli import main\n"
        "with contextlib.redirect_stdout(io.StringIO()):\n"
        f"    code = main(['plan', 'qemu-mps3-an547', {str(workload)!r}, '--json'])\n"
        f"print(code, sorted(m for m in {heavy!r} if m in sys.modules))\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True
    )
    assert done.stdout.split("\n")[0] == "0 []"


def test_the_project_types_the_command_line_lists_are_the_generators() -> None:
    from memplace.codegen import PROJECT_TYPES
    from memplace.project_files import PROJECT_TYPE_NAMES

    assert tuple(PROJECT_TYPES) == PROJECT_TYPE_NAMES


def test_the_check_finds_every_overlap_a_pairwise_comparison_finds() -> None:
    import random

    rng = random.Random(7)
    for _ in range(300):
        count = rng.randrange(1, 12)
        blocks = [
            Block(rng.randrange(1, 9), first := rng.randrange(6), first + rng.randrange(4))
            for _ in range(count)
        ]
        offsets = [rng.randrange(0, 24) for _ in blocks]
        names = [f"b{i}" for i in range(count)]
        pairs = {
            (names[a], names[b]) if offsets[a] <= offsets[b] else (names[b], names[a])
            for a in range(count)
            for b in range(a + 1, count)
            if blocks[a].conflicts(blocks[b])
            and offsets[a] < offsets[b] + blocks[b].size
            and offsets[b] < offsets[a] + blocks[a].size
        }
        found = placement_problems(blocks, offsets, 100, names)
        assert {tuple(p.split(" overlap")[0].split(" and ")) for p in found} == pairs
