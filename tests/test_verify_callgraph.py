"""GCC's .su and .ci files, and their merge with the disassembly's frames."""

from __future__ import annotations

import pytest

from memplace.errors import InputError
from memplace.verify.callgraph import merge, parse_ci, parse_su
from memplace.verify.frames import Call, Frame
from memplace.verify.image import Function

# GCC's own output, verbatim (its lines are long).
CI = """graph: { title: "src/app.c"
node: { title: "src/app.c:helper.constprop.0" label: "helper.constprop\\nsrc/app.c:7:12\\n48 bytes (static)\\n0 dynamic objects" }
node: { title: "sink" label: "sink\\nsrc/app.c:4:6" shape : ellipse }
edge: { sourcename: "src/app.c:helper.constprop.0" targetname: "sink" label: "src/app.c:8:5" }
node: { title: "run" label: "run\\nsrc/app.c:10:5\\n16 bytes (dynamic)\\n1 dynamic objects\\n vla src/app.c:10:30" }
node: { title: "__indirect_call" label: "Indirect Call Placeholder" shape : ellipse }
edge: { sourcename: "run" targetname: "__indirect_call" label: "src/app.c:12:9" }
edge: { sourcename: "run" targetname: "src/app.c:helper.constprop.0" label: "src/app.c:13:5" }
node: { title: "memcpy" label: "__builtin_memcpy\\n<built-in>" shape : ellipse }
edge: { sourcename: "run" targetname: "memcpy" }
}
"""  # noqa: E501

SU = """/work/p/src/app.c:7:12:helper.constprop\t48\tstatic
/work/p/src/app.c:10:5:run\t16\tdynamic
/work/p/src/app.c:20:5:bounded\t64\tdynamic,bounded
"""


def test_ci_nodes_edges_and_indirect_calls() -> None:
    unit = parse_ci(CI)
    helper = unit.functions["src/app.c:helper.constprop.0"]
    assert (helper.name, helper.file, helper.frame, helper.location) == (
        "helper.constprop.0",
        "src/app.c",
        48,
        "src/app.c:7:12",
    )
    run = unit.functions["run"]
    assert run.dynamic and run.dynamic_objects == ("vla src/app.c:10:30",)
    assert ("run", "__indirect_call", "src/app.c:12:9") in {
        (c.caller, c.callee, c.location) for c in unit.calls
    }
    assert unit.external["memcpy"] == "__builtin_memcpy"


def test_a_broken_ci_line_is_an_error_naming_it() -> None:
    with pytest.raises(InputError, match="line 2: unexpected call graph entry"):
        parse_ci('graph: { title: "x"\nnode: { title: "f" }\n}\n', "x.ci")


def test_su_lines() -> None:
    functions = parse_su(SU)
    assert [(f.name, f.frame, f.qualifier) for f in functions] == [
        ("helper.constprop", 48, "static"),
        ("run", 16, "dynamic"),
        ("bounded", 64, "dynamic,bounded"),
    ]
    assert functions[0].location == "/work/p/src/app.c:7:12"


def _frames() -> dict[int, Frame]:
    helper = Function(0x100, 0x40, ("helper.constprop.0",), file="app.c")
    run = Function(0x200, 0x40, ("run",))
    sink = Function(0x300, 0x10, ("sink",))
    copy = Function(0x400, 0x10, ("memcpy",))
    bounded = Function(0x500, 0x10, ("bounded",))
    return {
        0x100: Frame(helper, 40, (Call(0x110, 40, 0x300),)),
        0x200: Frame(run, 16, (Call(0x210, 16, None), Call(0x214, 16, 0x100, dynamic=True))),
        0x300: Frame(sink, 0),
        0x400: Frame(copy, 0),
        0x500: Frame(bounded, 8, (Call(0x510, 8, 0x300, dynamic=True),), dynamic=(0x504,)),
    }


def test_the_merge_takes_the_larger_frame_and_deepens_the_calls() -> None:
    graph = merge(_frames(), [parse_ci(CI)], parse_su(SU))
    helper = graph.nodes[0x100]
    # GCC says 48 where the walk saw 40: the 8 bytes count under the call too.
    assert helper.frame == 48 and helper.calls[0].depth == 48 and helper.gcc
    assert graph.nodes[0x300].gcc is False


def test_the_merge_adds_the_calls_gcc_knows_and_locates_indirect_ones() -> None:
    graph = merge(_frames(), [parse_ci(CI)], parse_su(SU))
    run = graph.nodes[0x200]
    assert run.dynamic == ("vla src/app.c:10:30",)
    indirect = [c for c in run.calls if c.target is None]
    assert [c.location for c in indirect] == ["src/app.c:12:9"]
    # memcpy is a call only GCC reported: counted from the deepest point of the frame.
    assert (16, 0x400) in {(c.depth, c.target) for c in run.calls}


def test_dynamic_bounded_frames_need_no_hint() -> None:
    graph = merge(_frames(), [], parse_su(SU))
    bounded = graph.nodes[0x500]
    assert bounded.frame == 64 and bounded.dynamic == ()
    assert [(c.depth, c.dynamic) for c in bounded.calls] == [(64, False)]


def test_names_resolve_static_functions_by_file() -> None:
    graph = merge(_frames(), [parse_ci(CI)])
    assert graph.by_name["helper.constprop.0"] == 0x100
    assert graph.node("run") is graph.nodes[0x200]
    assert graph.node("nothing") is None
