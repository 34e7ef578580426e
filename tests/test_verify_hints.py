"""The stack hints file: what it reads, and every error a user can make in it."""

from __future__ import annotations

from pathlib import Path

import pytest

from memplace.errors import InputError
from memplace.hints import Site, StackHints, bundled_hints, load_hints
from memplace.verify.callgraph import CallGraph
from memplace.verify.stack import hint_warnings

GOOD = """memplace: stack_hints/v1
indirect_calls:
  - caller: dispatch
    at: src/ops.c:42
    targets: [op_add, op_mul]
  - {caller: run, targets: op_add}
recursion:
  - {function: walk, depth: 8}
alloca:
  - {function: format_row, size: 256}
frames:
  - {function: switch_stacks, size: 64}
"""


def test_a_hints_file_reads() -> None:
    hints = StackHints.from_text(GOOD, "h.yaml")
    (first, second) = hints.indirect_calls
    assert (first.caller, first.targets, first.at) == (
        "dispatch",
        ("op_add", "op_mul"),
        Site("src/ops.c", 42),
    )
    assert second.targets == ("op_add",) and second.at is None
    assert hints.recursion_depth(("walk",)) == 8
    assert hints.alloca_size(("format_row",)) == 256
    assert hints.frame_size(("switch_stacks",)) == 64
    assert hints.targets(("dispatch",), "build/../src/ops.c:42:17") == ["op_add", "op_mul"]
    assert hints.targets(("dispatch",), "src/ops.c:41:3") is None
    assert hints.targets(("run",), None) == ["op_add"]
    assert str(first.mark) == "h.yaml:3:13"


def test_sites_match_by_trailing_path_and_column() -> None:
    site = Site("ops.c", 42, 9)
    assert site.matches("lib/ops.c:42:9") and site.matches("ops.c:42")
    assert not site.matches("lib/ops.c:42:10") and not site.matches("xops.c:42:9")
    assert not site.matches(None) and not site.matches("<built-in>")


@pytest.mark.parametrize(
    ("text", "where", "message"),
    [
        ("indirect_calls: []\n", "h.yaml:1:1", "missing 'memplace: stack_hints/v1'"),
        ("memplace: stack_hints/v2\n", "h.yaml:1:11", "reads stack_hints/v1, not 'stack_hints/v2'"),
        ("memplace: stack_hints/v1\nrecursoin: []\n", "h.yaml:2:1", "did you mean 'recursion'"),
        (
            "memplace: stack_hints/v1\nrecursion:\n  - {function: f}\n",
            "h.yaml:3:5",
            "missing required key 'depth'",
        ),
        (
            "memplace: stack_hints/v1\nrecursion:\n  - {function: f, depth: 0}\n",
            "h.yaml:3:26",
            "must be at least 1",
        ),
        (
            "memplace: stack_hints/v1\nalloca:\n  - {function: f, size: -4}\n",
            "h.yaml:3:25",
            "must be at least 0",
        ),
        (
            "memplace: stack_hints/v1\nalloca:\n  - {function: f, size: 8}\n"
            "  - {function: f, size: 16}\n",
            "h.yaml:4:16",
            "f is given twice in alloca (first at h.yaml:3:16)",
        ),
        (
            "memplace: stack_hints/v1\nframes:\n  - {function: 'not a name', size: 8}\n",
            "h.yaml:3:16",
            "is not a function name",
        ),
        (
            "memplace: stack_hints/v1\nindirect_calls:\n  - {caller: f, at: ops.c, targets: [g]}\n",
            "h.yaml:3:21",
            "expected file:line or file:line:column",
        ),
        (
            "memplace: stack_hints/v1\nindirect_calls:\n  - {caller: f}\n",
            "h.yaml:3:5",
            "missing required key 'targets'",
        ),
        (
            "memplace: stack_hints/v1\ncut_calls:\n  - {caller: f}\n",
            "h.yaml:3:5",
            "missing required key 'callee'",
        ),
        (
            "memplace: stack_hints/v1\ncut_calls:\n  - {callee: f, called_from: g}\n",
            "h.yaml:3:30",
            "called_from says where the caller is called from: name the caller",
        ),
        (
            "memplace: stack_hints/v1\ncut_calls:\n  - {caller: f, callee: 'a b'}\n",
            "h.yaml:3:25",
            "is not a function name",
        ),
        (
            "memplace: stack_hints/v1\ninterrupts_masked_until_scheduler: yes please\n",
            "h.yaml:2:36",
            "expected true or false, got 'yes please'",
        ),
        (
            "memplace: stack_hints/v1\nindirect_calls: {caller: f}\n",
            "h.yaml:2:17",
            "expected a list",
        ),
        ("- just a list\n", "h.yaml:1:1", "expected a mapping"),
        ("memplace: [\n", "h.yaml:2:1", "not valid YAML"),
    ],
)
def test_every_mistake_names_its_place(text: str, where: str, message: str) -> None:
    with pytest.raises(InputError) as caught:
        StackHints.from_text(text, "h.yaml")
    assert str(caught.value).startswith(where), str(caught.value)
    assert message in str(caught.value)


def test_a_function_no_image_has_is_a_warning_with_a_suggestion(tmp_path: Path) -> None:
    """A build at another optimisation level may inline the function or leave it out: one
    hints file serves every build type."""
    path = tmp_path / "h.yaml"
    path.write_text("memplace: stack_hints/v1\nrecursion:\n  - {function: walk_tre, depth: 3}\n")
    graph = CallGraph(nodes={}, by_name={"walk_tree": 0x100, "main": 0x200})
    assert hint_warnings(StackHints.from_file(path), [graph]) == (
        f"{path}:3:16: stack hints: no function 'walk_tre' in this build (inlined, or not "
        "linked), so the hint is not used; did you mean 'walk_tree'?",
    )


def test_bundled_sets_may_name_functions_the_image_lacks() -> None:
    assert "newlib-nano" in bundled_hints()
    hints = load_hints(["newlib-nano"])
    assert hints is not None and hints.names() == []
    assert hints.targets(("_printf_i",), None) == ["__sfputs_r", "__ssputs_r"]
    assert hint_warnings(hints, [CallGraph(nodes={}, by_name={})]) == ()


def test_several_files_merge(tmp_path: Path) -> None:
    mine = tmp_path / "mine.yaml"
    mine.write_text("memplace: stack_hints/v1\nrecursion: [{function: walk, depth: 3}]\n")
    hints = load_hints(["newlib-nano", mine])
    assert hints is not None
    assert hints.recursion_depth(("walk",)) == 3 and hints.recursion_depth(("__sfp",)) == 2
    assert [name for name, _ in hints.names()] == ["walk"]
    assert load_hints([]) is None


def test_a_missing_hints_file_is_an_error() -> None:
    with pytest.raises(InputError, match=r"--stack-hints: no stack hints file at nowhere.yaml"):
        load_hints(["nowhere.yaml"])
