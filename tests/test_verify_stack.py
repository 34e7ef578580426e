"""Bounds over a call graph: paths, recursion, indirect calls, dynamic frames, hints; and
the exception frames ISRs add."""

from __future__ import annotations

from memplace.board import Core, ImageLayout
from memplace.hints import StackHints
from memplace.verify.callgraph import CallGraph, Node
from memplace.verify.frames import Call
from memplace.verify.image import Function
from memplace.verify.stack import Analysis, exception_frame


def graph(*nodes: tuple[str, int, list[tuple[int, str | None]]], **extra: object) -> CallGraph:
    """Functions by name, with their frame and calls (depth, callee name or None)."""
    address = {name: 0x100 * (n + 1) for n, (name, _, _) in enumerate(nodes)}
    built = {}
    for name, frame, calls in nodes:
        built[address[name]] = Node(
            function=Function(address[name], 0x40, (name,)),
            frame=frame,
            calls=tuple(
                Call(address[name] + 2 * n, depth, None if callee is None else address[callee])
                for n, (depth, callee) in enumerate(calls)
            ),
            dynamic=tuple(extra.get("dynamic", {}).get(name, ())),  # type: ignore[attr-defined]
            unknown=extra.get("unknown", {}).get(name),  # type: ignore[attr-defined]
        )
    return CallGraph(nodes=built, by_name=address)


def hints(text: str) -> StackHints:
    return StackHints.from_text("memplace: stack_hints/v1\n" + text)


def bound_of(g: CallGraph, root: str, h: StackHints | None = None) -> tuple[int | None, list[str]]:
    analysis = Analysis(g, h or StackHints())
    bound = analysis.bound(g.by_name[root])
    return bound.bytes, [p.kind for p in bound.problems]


CHAIN = graph(
    ("main", 16, [(16, "a"), (8, "b")]),
    ("a", 100, [(40, "leaf")]),
    ("b", 8, [(8, "leaf")]),
    ("leaf", 200, []),
)


def test_the_bound_is_the_deepest_call_path() -> None:
    analysis = Analysis(CHAIN)
    bound = analysis.bound(CHAIN.by_name["main"])
    # main's call at 16, a's call to leaf at 40: 16 + 40 + 200.
    assert bound.bytes == 256
    assert bound.path == ("main", "a", "leaf")


def test_a_frame_deeper_than_its_calls_is_the_bound() -> None:
    g = graph(("main", 500, [(8, "leaf")]), ("leaf", 100, []))
    assert bound_of(g, "main") == (500, [])


def test_recursion_is_unbounded_with_its_cycle_until_hinted() -> None:
    g = graph(
        ("main", 8, [(8, "walk")]),
        ("walk", 32, [(32, "visit"), (32, "leaf")]),
        ("visit", 16, [(16, "walk")]),
        ("leaf", 64, []),
    )
    analysis = Analysis(g)
    bound = analysis.bound(g.by_name["main"])
    assert bound.bytes is None
    (problem,) = bound.problems
    assert problem.kind == "recursion" and "walk > visit > walk" in problem.message
    assert analysis.path_to(g.by_name["main"], problem.function) == ("main", "walk")
    # Four trips round walk and visit (48 bytes each), then the costliest way out.
    hinted = Analysis(g, hints("recursion: [{function: visit, depth: 4}]"))
    assert hinted.bound(g.by_name["main"]).bytes == 8 + 4 * 48 + (32 - 32 + 64)


def test_self_recursion() -> None:
    g = graph(("main", 8, [(8, "fact")]), ("fact", 24, [(24, "fact")]))
    assert bound_of(g, "main") == (None, ["recursion"])
    assert bound_of(g, "main", hints("recursion: [{function: fact, depth: 10}]")) == (
        8 + 240,
        [],
    )


def test_indirect_calls_take_their_hinted_targets() -> None:
    g = graph(
        ("main", 8, [(8, "dispatch")]),
        ("dispatch", 16, [(16, None)]),
        ("small", 8, []),
        ("big", 400, []),
    )
    assert bound_of(g, "main") == (None, ["indirect"])
    both = hints("indirect_calls: [{caller: dispatch, targets: [small, big]}]")
    assert bound_of(g, "main", both) == (8 + 16 + 400, [])
    never = hints("indirect_calls: [{caller: dispatch, targets: []}]")
    assert bound_of(g, "main", never) == (24, [])


def test_an_indirect_hint_for_one_site_matches_its_location() -> None:
    g = graph(("main", 8, [(8, None)]), ("op", 40, []))
    located = CallGraph(
        nodes={
            **g.nodes,
            0x100: Node(
                function=g.nodes[0x100].function,
                frame=8,
                calls=(Call(0x104, 8, None, location="lib/src/ops.c:42:9"),),
            ),
        },
        by_name=g.by_name,
    )
    at = hints("indirect_calls: [{caller: main, at: src/ops.c:42, targets: [op]}]")
    assert bound_of(located, "main", at) == (48, [])
    elsewhere = hints("indirect_calls: [{caller: main, at: src/ops.c:43, targets: [op]}]")
    assert bound_of(located, "main", elsewhere) == (None, ["indirect"])


def test_dynamic_frames_need_an_alloca_hint() -> None:
    g = graph(
        ("main", 8, [(8, "fmt")]),
        ("fmt", 16, [(16, "leaf")]),
        ("leaf", 8, []),
        dynamic={"fmt": ["vla src/fmt.c:3:9"]},
    )
    assert bound_of(g, "main") == (None, ["dynamic"])
    assert bound_of(g, "main", hints("alloca: [{function: fmt, size: 100}]")) == (
        8 + 16 + 100 + 8,
        [],
    )


def test_a_frame_the_walk_cannot_follow_needs_a_frame_hint() -> None:
    g = graph(
        ("main", 8, [(8, "switcher")]),
        ("switcher", 0, []),
        unknown={"switcher": "the stack pointer is set from r0"},
    )
    assert bound_of(g, "main") == (None, ["unknown"])
    assert bound_of(g, "main", hints("frames: [{function: switcher, size: 64}]")) == (72, [])


def test_a_call_to_no_function_is_reported() -> None:
    g = graph(("main", 8, []))
    broken = CallGraph(
        nodes={0x100: Node(g.nodes[0x100].function, 8, (Call(0x102, 8, 0x9000),))},
        by_name=g.by_name,
    )
    assert bound_of(broken, "main") == (None, ["missing"])


def test_a_branch_into_another_functions_body_costs_that_function() -> None:
    g = graph(("main", 8, []), ("divide", 24, []))
    into = CallGraph(
        nodes={
            0x100: Node(g.nodes[0x100].function, 8, (Call(0x102, 0, 0x220, tail=True),)),
            0x200: g.nodes[0x200],
        },
        by_name=g.by_name,
    )
    assert bound_of(into, "main") == (24, [])


def test_every_problem_is_reported_once() -> None:
    g = graph(
        ("main", 8, [(8, "a"), (8, "b")]),
        ("a", 8, [(8, None)]),
        ("b", 8, [(8, "b"), (8, "a")]),
    )
    assert sorted(bound_of(g, "main")[1]) == ["indirect", "recursion"]


def _core(cpu: str, float_abi: str) -> Core:
    return Core("cpu0", cpu, float_abi, ImageLayout("itcm", "itcm", "dtcm", "itcm"))


def test_exception_frames() -> None:
    assert exception_frame(_core("cortex-m55", "hard")) == 104 + 4
    assert exception_frame(_core("cortex-m4", "softfp")) == 104 + 4
    assert exception_frame(_core("cortex-m55", "soft")) == 32 + 4
    assert exception_frame(_core("cortex-m3", "soft")) == 32 + 4
