"""Workloads: loading, lifetimes, constants, and the inputs the loader refuses."""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from memplace.cli import main
from memplace.errors import InputError
from memplace.importers import load_workload
from memplace.workload import Workload


def test_demo_workload(demo_workload: Workload) -> None:
    assert demo_workload.name == "demo"
    assert demo_workload.steps[0] == "load"
    assert len([b for b in demo_workload.buffers if b.kind == "buffer"]) == 26
    im2col = demo_workload.buffer("im2col")
    assert (im2col.first, im2col.last, im2col.scope) == (2, 2, "local")
    # Constants live for the whole timeline.
    fc_w = demo_workload.buffer("fc_w")
    assert (fc_w.first, fc_w.last) == (0, len(demo_workload.steps) - 1)


def test_steps_default_to_the_lifetimes() -> None:
    workload = Workload.from_data(
        {
            "memplace": "workload/v1",
            "name": "w",
            "buffers": [
                {"name": "a", "size": 16, "live": [0, 3]},
                {"name": "b", "size": 16, "live": 1},
            ],
        }
    )
    assert workload.steps == ("0", "1", "2", "3")
    assert (workload.buffer("b").first, workload.buffer("b").last) == (1, 1)


def test_steps_as_a_count() -> None:
    workload = Workload.from_data(
        {
            "memplace": "workload/v1",
            "name": "w",
            "steps": 5,
            "buffers": [{"name": "a", "size": "1K", "live": [1, 4]}],
        }
    )
    assert len(workload.steps) == 5
    assert workload.buffer("a").size == 1024


def test_constant_from_a_data_file(tmp_path: Path) -> None:
    (tmp_path / "w.bin").write_bytes(bytes(range(100)))
    path = tmp_path / "workload.yaml"
    path.write_text("memplace: workload/v1\nname: w\nconstants:\n  - {name: c, data_file: w.bin}\n")
    constant = load_workload(path).buffer("c")
    assert constant.size == 100
    assert constant.data == bytes(range(100))


def test_dynamic_buffers_and_list_positions(write_yaml: Callable[[str, str], Path]) -> None:
    path = write_yaml(
        "w.yaml",
        "memplace: workload/v1\nname: w\nbuffers:\n"
        "  - {name: a, size: 64, live: 0, dynamic: true, users: [main, npu0]}\n",
    )
    buffer = load_workload(path).buffer("a")
    assert buffer.dynamic
    mark = buffer.mark("users[1]")
    assert mark is not None and (mark.line, mark.column) == (4, 63)
    # A key not written falls back to where the buffer is named.
    fallback = buffer.mark("pools")
    assert fallback is not None and (fallback.line, fallback.column) == (4, 12)


def test_json_workload(write_yaml: Callable[[str, str], Path]) -> None:
    path = write_yaml(
        "w.json",
        '{"memplace": "workload/v1", "name": "w", "steps": 2,\n'
        ' "buffers": [{"name": "a", "size": "2K", "live": [0, 1]}]}\n',
    )
    assert load_workload(path).buffer("a").size == 2048


def test_data_file_and_size_must_agree(tmp_path: Path) -> None:
    (tmp_path / "w.bin").write_bytes(bytes(10))
    path = tmp_path / "workload.yaml"
    path.write_text(
        "memplace: workload/v1\nname: w\nconstants:\n  - {name: c, data_file: w.bin, size: 12}\n"
    )
    with pytest.raises(InputError, match=r":4:39: constants\[0\].size: the constant's data holds"):
        load_workload(path)


def test_empty_data_file(tmp_path: Path) -> None:
    (tmp_path / "w.bin").write_bytes(b"")
    path = tmp_path / "workload.yaml"
    path.write_text("memplace: workload/v1\nname: w\nconstants:\n  - {name: c, data_file: w.bin}\n")
    with pytest.raises(InputError, match=r"constants\[0\].data_file: .*w.bin is empty"):
        load_workload(path)


def test_not_a_mapping(write_yaml: Callable[[str, str], Path]) -> None:
    path = write_yaml("w.yaml", "- 1\n")
    with pytest.raises(InputError, match=r":1:1: a workload file is a mapping"):
        load_workload(path)


def test_missing_version(write_yaml: Callable[[str, str], Path]) -> None:
    path = write_yaml("w.yaml", "name: w\n")
    with pytest.raises(InputError, match=r"missing 'memplace: workload/v1' at the top"):
        load_workload(path)


def test_without_drops_buffers(demo_workload: Workload) -> None:
    fewer = demo_workload.without({"input", "fc_w"})
    assert len(fewer.buffers) == len(demo_workload.buffers) - 2
    assert "input" not in {b.name for b in fewer.buffers}


def _error(tmp_path: Path, data: dict[str, Any]) -> str:
    path = tmp_path / "workload.yaml"
    path.write_text(yaml.safe_dump(data, sort_keys=False))
    with pytest.raises(InputError) as caught:
        load_workload(path)
    text = str(caught.value)
    assert re.match(rf"{re.escape(str(path))}:\d+:\d+: ", text), text
    return text


Change = Callable[[dict[str, Any]], Any]

RULES: list[tuple[str, Change, str]] = [
    ("version", lambda d: d.update(memplace="workload/v2"), r"this memplace reads workload/v1"),
    (
        "unknown key",
        lambda d: d["buffers"][0].update(lifetime=[0, 1]),
        r"buffers\[0\].lifetime: unknown key; valid: align, dynamic, live, name, pools, "
        r"priority, scope, size, users",
    ),
    ("name not C", lambda d: d["buffers"][0].update(name="x-1"), r"is not a C identifier"),
    ("duplicate name", lambda d: d["buffers"][1].update(name="x"), r"name used twice"),
    (
        "unknown step",
        lambda d: d["buffers"][0].update(live=["a", "d"]),
        r"buffers\[0\].live\[1\]: no step 'd'; valid: a, b, c",
    ),
    (
        "step past the end",
        lambda d: d["buffers"][0].update(live=[0, 7]),
        r"step 7 is past the last step \(2\)",
    ),
    (
        "backwards life",
        lambda d: d["buffers"][0].update(live=["c", "a"]),
        r"the last step comes before the first",
    ),
    ("three steps", lambda d: d["buffers"][0].update(live=[0, 1, 2]), r"live is \[first, last\]"),
    ("align", lambda d: d["buffers"][0].update(align=12), r"align must be a power of two"),
    ("size", lambda d: d["buffers"][0].update(size="12 bytes"), r"expected a size"),
    ("missing size", lambda d: d["buffers"][0].pop("size"), r"missing required key 'size'"),
    (
        "constant without bytes",
        lambda d: d["constants"][0].pop("size"),
        r"a constant needs a size or a data_file",
    ),
    (
        "missing data file",
        lambda d: d["constants"][0].update(data_file="none.bin"),
        r"constants\[0\].data_file: cannot read",
    ),
    ("duplicate step", lambda d: d.update(steps=["a", "a", "c"]), r"step 'a' named twice"),
    ("empty step name", lambda d: d.update(steps=["a", "", "c"]), r"steps\[1\]: a step name"),
    ("no steps", lambda d: d.update(steps=[]), r"steps: steps needs at least one step"),
    ("zero steps", lambda d: d.update(steps=0), r"steps: must be at least 1, got 0"),
    ("step not text", lambda d: d.update(steps=["a", 2, "c"]), r"steps\[1\]: expected text"),
    (
        "named step with counted steps",
        lambda d: d.update(steps=3),
        r"buffers\[0\].live\[0\]: no step 'a'; valid: 0, 1, 2",
    ),
    (
        "named step without steps",
        lambda d: d.pop("steps"),
        r"no step 'a': steps are numbers unless the workload names them in 'steps'",
    ),
    ("negative step", lambda d: d["buffers"][0].update(live=[-1, 0]), r"must be at least 0"),
    ("empty", lambda d: (d.pop("buffers"), d.pop("constants")), r"needs at least one buffer"),
    ("no name", lambda d: d.pop("name"), r"missing required key 'name'"),
    ("not a mapping", lambda d: d.update(buffers=[["x"]]), r"buffers\[0\]: expected a mapping"),
    ("zero size", lambda d: d["buffers"][0].update(size=0), r"a size must be positive, got 0"),
    ("align zero", lambda d: d["buffers"][0].update(align=0), r"align: must be at least 1"),
    ("empty scope", lambda d: d["buffers"][0].update(scope=""), r"scope: a scope is not empty"),
    ("scope not text", lambda d: d["buffers"][0].update(scope=3), r"scope: expected text"),
    (
        "empty users",
        lambda d: d["buffers"][0].update(users=[]),
        r"buffers\[0\].users: users lists at least one name, or leave it out",
    ),
    (
        "user twice",
        lambda d: d["buffers"][0].update(users=["main", "main"]),
        r"buffers\[0\].users\[1\]: 'main' listed twice",
    ),
    ("user not a name", lambda d: d["buffers"][0].update(users=["a b"]), r"is not a C identifier"),
    ("empty pools", lambda d: d["buffers"][0].update(pools=[]), r"pools lists at least one"),
    (
        "pool twice",
        lambda d: d["constants"][0].update(pools=["p", "p"]),
        r"constants\[0\].pools\[1\]: 'p' listed twice",
    ),
    ("dynamic", lambda d: d["buffers"][0].update(dynamic="yes"), r"expected true or false"),
    (
        "dynamic constant",
        lambda d: d["constants"][0].update(dynamic=True),
        r"constants\[0\].dynamic: unknown key",
    ),
    (
        "constant with a lifetime",
        lambda d: d["constants"][0].update(live=[0, 1]),
        r"constants\[0\].live: unknown key",
    ),
    (
        "data given in a file",
        lambda d: d["constants"][0].update(data="abc"),
        r"constants\[0\].data: unknown key",
    ),
    (
        "unknown top-level key",
        lambda d: d.update(stack_hint=[]),
        r"stack_hint: unknown key; did you mean 'stack_hints'\?",
    ),
    (
        "stack hints entry not a mapping",
        lambda d: d.update(stack_hints=[["walk"]]),
        r"stack_hints\[0\]: a stack hints entry is a mapping",
    ),
    (
        "stack hints bad alloca",
        lambda d: d.update(stack_hints=[{"alloca": [{"function": "f", "size": -1}]}]),
        r"stack_hints\[0\].alloca\[0\].size: must be at least 0, got -1",
    ),
    (
        "stack hints bad site",
        lambda d: d.update(
            stack_hints=[{"indirect_calls": [{"caller": "f", "at": "x", "targets": []}]}]
        ),
        r"stack_hints\[0\].indirect_calls\[0\].at: expected file:line or file:line:column",
    ),
]


@pytest.mark.parametrize(
    ("change", "message"), [(c, m) for _, c, m in RULES], ids=[name for name, _, _ in RULES]
)
def test_rule(
    tmp_path: Path, small_workload_data: dict[str, Any], change: Change, message: str
) -> None:
    change(small_workload_data)
    assert re.search(message, _error(tmp_path, small_workload_data))


def test_stack_hints_are_read_with_their_positions(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(
        "memplace: workload/v1\nname: w\nbuffers:\n  - {name: a, size: 16, live: 0}\n"
        "stack_hints:\n"
        "  - indirect_calls:\n"
        "      - {caller: run_op, targets: [conv, pool]}\n"
        "    frames: [{function: kernel_entry, size: 32}]\n"
    )
    (hints,) = load_workload(path).stack_hints
    assert hints.targets(("run_op",), None) == ["conv", "pool"]
    assert hints.frame_size(("kernel_entry",)) == 32
    assert str(hints.indirect_calls[0].mark) == f"{path}:7:18"
    assert (
        Workload.from_data(
            {
                "memplace": "workload/v1",
                "name": "w",
                "buffers": [{"name": "a", "size": 1, "live": 0}],
            }
        ).stack_hints
        == ()
    )


def test_a_control_character_is_an_input_error_on_the_command_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "w.yaml"
    path.write_bytes(b"memplace: workload/v1\nname: a\x07b\n")
    assert main(["plan", "qemu-mps3-an547", str(path)]) == 2
    assert capsys.readouterr().err == (
        f"memplace: error: {path}:2:8: not valid YAML: character #x0007 is not allowed in YAML "
        "text (control characters are not, except tab and line breaks)\n"
    )


def test_a_buffer_copied_by_an_alias_is_a_name_used_twice(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(
        "memplace: workload/v1\nname: x\nbuffers:\n - &a {name: b, size: 1, live: 0}\n - *a\n"
    )
    with pytest.raises(InputError) as caught:
        load_workload(path)
    assert str(caught.value) == f"{path}:5:4: b.name: name used twice in the workload"


def test_aliases_share_a_list_of_users(tmp_path: Path) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(
        "memplace: workload/v1\nname: x\nbuffers:\n"
        " - {name: a, size: 16, live: 0, users: &npu [main, npu0]}\n"
        " - {name: b, size: 16, live: 0, users: *npu}\n"
    )
    workload = load_workload(path)
    assert workload.buffer("b").users == ("main", "npu0")
