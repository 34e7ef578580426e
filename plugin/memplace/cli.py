"""The `memplace` command. Errors become exit codes here and nowhere else:
0 all good, 1 a check failed, 2 bad input or usage, 3 a tool failed or is missing."""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from memplace import resources, workflow
from memplace.board import Board, load_board
from memplace.build import build
from memplace.codegen import PROJECT_TYPES
from memplace.errors import CheckFailed, InputError, MemplaceError
from memplace.planner import ALGORITHMS, DEFAULT_ALGORITHM, plan
from memplace.planner.model import Plan
from memplace.project import Project
from memplace.scopes import resolve
from memplace.verify import Report, RunLog, verify
from memplace.workload import Workload, load_workload

Handler = Callable[[argparse.Namespace], int]


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as InputError (exit 2, one line)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise InputError(message, key=self.prog)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    args = None
    try:
        args = parser.parse_args(argv)
        logging.basicConfig(
            level=logging.DEBUG if args.debug else logging.WARNING, format="%(name)s: %(message)s"
        )
        handler: Handler = args.handler
        return handler(args)
    except MemplaceError as exc:
        if args is not None and args.debug:
            raise
        print(f"memplace: error: {exc}", file=sys.stderr)
        return exc.exit_code
    except KeyboardInterrupt:
        print("memplace: interrupted", file=sys.stderr)
        return 130


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="memplace",
        description="Plan, generate, build, run and verify "
        "where every buffer of your firmware lives.",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks and commands")
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    boards = commands.add_parser("boards", help="list the bundled boards")
    boards.add_argument("--json", action="store_true", help="print JSON")
    boards.set_defaults(handler=_boards)

    plan_cmd = commands.add_parser("plan", help="plan a workload on a board")
    _add_inputs(plan_cmd)
    plan_cmd.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan_cmd.add_argument(
        "--explain",
        action="store_true",
        help="say for every buffer where it could live and why it went where",
    )
    plan_cmd.set_defaults(handler=_plan)

    generate = commands.add_parser("generate", help="plan and write a firmware project")
    _add_inputs(generate)
    _add_project_options(generate)
    generate.add_argument("--out", type=Path, required=True, help="project folder to write")
    generate.add_argument(
        "--force", action="store_true", help="overwrite files edited since memplace wrote them"
    )
    generate.add_argument(
        "--pool-storage",
        default="generated",
        choices=("generated", "application"),
        help="who defines the workspace pool arrays: the generated C (default) or the app",
    )
    generate.set_defaults(handler=_generate)

    build_cmd = commands.add_parser("build", help="build a generated project (CMake + Ninja)")
    build_cmd.add_argument("dir", type=Path, metavar="DIR")
    build_cmd.set_defaults(handler=_build)

    run_cmd = commands.add_parser("run", help="run a built project under QEMU")
    run_cmd.add_argument("dir", type=Path, metavar="DIR")
    _add_timeout(run_cmd)
    run_cmd.set_defaults(handler=_run)

    verify_cmd = commands.add_parser("verify", help="check a built project against its plan")
    verify_cmd.add_argument("dir", type=Path, metavar="DIR")
    verify_cmd.add_argument("--json", action="store_true", help="print the report as JSON")
    verify_cmd.add_argument("--core", help="check only this core's image")
    verify_cmd.set_defaults(handler=_verify)

    check_cmd = commands.add_parser("check", help="generate, build, run under QEMU and verify")
    _add_inputs(check_cmd)
    _add_project_options(check_cmd)
    check_cmd.add_argument(
        "--out",
        type=Path,
        default=Path("memplace-check"),
        help="project folder (default: memplace-check)",
    )
    check_cmd.add_argument("--json", action="store_true", help="print the report as JSON")
    _add_timeout(check_cmd)
    check_cmd.set_defaults(handler=_check)

    module = commands.add_parser(
        "cmake-module", help="print the path of memplace.cmake, for include() in CMake"
    )
    module.set_defaults(handler=_cmake_module)

    demo = commands.add_parser("demo", help="check the bundled example on the default board")
    demo.add_argument(
        "--out",
        type=Path,
        default=Path("memplace-demo"),
        help="project folder (default: memplace-demo)",
    )
    _add_timeout(demo)
    demo.set_defaults(handler=_demo)
    return parser


def _add_inputs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("board", metavar="BOARD", help="bundled board name or board file")
    parser.add_argument("workload", metavar="WORKLOAD", type=Path, help="workload file")
    parser.add_argument(
        "--algorithm",
        default=DEFAULT_ALGORITHM,
        choices=sorted(ALGORITHMS),
        help=f"offset algorithm (default: {DEFAULT_ALGORITHM})",
    )


def _add_project_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--project-type",
        default="exerciser",
        choices=sorted(PROJECT_TYPES),
        help="what the project runs: the exerciser, the user's app, or the glue only "
        "(library); default: exerciser",
    )
    parser.add_argument(
        "--sources",
        type=Path,
        help="folder of the app's C files (project type app); they provide int app_main(void)",
    )


def _add_timeout(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout",
        type=float,
        default=workflow.DEFAULT_TIMEOUT,
        help=f"seconds before a run is stopped (default: {workflow.DEFAULT_TIMEOUT:g})",
    )


def _inputs(args: argparse.Namespace) -> tuple[Board, Workload]:
    return load_board(args.board), load_workload(args.workload)


def _boards(args: argparse.Namespace) -> int:
    rows: list[dict[str, Any]] = []
    for name, path in resources.bundled_boards().items():
        board = Board.from_file(path)
        rows.append(
            {
                "name": name,
                "summary": board.summary,
                "cores": {core.name: core.cpu for core in board.cores.values()},
                "qemu_machine": board.qemu_machine,
            }
        )
    if args.json:
        print(json.dumps(rows, indent=2))
        return 0
    for row in rows:
        cores = ", ".join(f"{core} ({cpu})" for core, cpu in row["cores"].items())
        qemu = f"  qemu: {row['qemu_machine']}" if row["qemu_machine"] else ""
        print(f"{row['name']:<24} {cores}{qemu}\n{'':<24} {row['summary']}")
    return 0


def _plan(args: argparse.Namespace) -> int:
    board, workload = _inputs(args)
    result = plan(board, workload, algorithm=args.algorithm)
    if args.json:
        sys.stdout.write(result.dumps())
        return 0
    print(pool_table(result))
    if args.explain:
        print()
        print(explain(board, workload, result))
    return 0


def _generate(args: argparse.Namespace) -> int:
    board, workload = _inputs(args)
    result = workflow.generate(
        board,
        workload,
        args.out,
        args.project_type,
        args.algorithm,
        force=args.force,
        sources=args.sources,
        pool_storage=args.pool_storage,
    )
    print(pool_table(result))
    print(f"wrote {args.out}")
    return 0


def _build(args: argparse.Namespace) -> int:
    Project.load(args.dir)
    output = build(args.dir)
    usage = [line for line in output.splitlines() if "%" in line and ":" in line]
    print("\n".join(usage) if usage else f"built {args.dir}")
    return 0


def _run(args: argparse.Namespace) -> int:
    log = workflow.run(args.dir, args.timeout)
    print(run_summary(log))
    return log.exit_code


def _verify(args: argparse.Namespace) -> int:
    project = Project.load(args.dir)
    if args.core:
        project = project.only(args.core)
    report = verify(project, workflow.recorded_run(args.dir))
    _print_report(report, args.json)
    return 0 if report.ok else CheckFailed.exit_code


def _check(args: argparse.Namespace) -> int:
    board, workload = _inputs(args)
    result = workflow.check(
        board,
        workload,
        args.out,
        args.project_type,
        args.algorithm,
        args.timeout,
        sources=args.sources,
    )
    if not args.json:
        print(pool_table(result.plan))
        if result.run is not None:
            print(run_summary(result.run))
    _print_report(result.report, args.json)
    return 0 if result.report.ok else CheckFailed.exit_code


def _cmake_module(args: argparse.Namespace) -> int:
    print(resources.data_dir("cmake") / "memplace.cmake")
    return 0


def _demo(args: argparse.Namespace) -> int:
    board = load_board("qemu-mps3-an547")
    workload = load_workload(resources.demo_workload())
    print(
        f"memplace demo: workload {workload.name} ({len(workload.buffers)} buffers and "
        f"constants over {len(workload.steps)} steps) on board {board.name}"
    )
    result = workflow.check(board, workload, args.out, timeout=args.timeout)
    print(pool_table(result.plan))
    if result.run is not None:
        print(run_summary(result.run))
    _print_report(result.report, as_json=False)
    return 0 if result.report.ok else CheckFailed.exit_code


def _print_report(report: Report, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(report.dumps())
    else:
        print(report.table())


def pool_table(result: Plan) -> str:
    """Per pool: memory, address range, bytes used of capacity."""
    lines = [
        f"{'pool':<12} {'memory':<8} {'address range':<25} {'used':>9} / {'capacity':<9} "
        f"{'lower bound':>11}"
    ]
    for pool in result.pools:
        span = f"[0x{pool.address:08x}, 0x{pool.address + pool.capacity:08x})"
        lines.append(
            f"{pool.name:<12} {pool.memory:<8} {span:<25} {pool.used:>9} / "
            f"{pool.capacity:<9} {pool.lower_bound:>11}"
        )
    for stack in result.stacks:
        span = f"[0x{stack.address:08x}, 0x{stack.address + stack.budget:08x})"
        lines.append(
            f"{stack.context + '.stack':<12} {stack.memory:<8} {span:<25} "
            f"{stack.planned:>9} / {stack.budget:<9}"
        )
    return "\n".join(lines)


def run_summary(log: RunLog) -> str:
    verdict = "passed" if log.passed else "FAILED"
    lines = [f"run: {verdict} (exit code {log.exit_code})"]
    lines += [f"run: {f.what} {f.name} failed its check at step {f.step}" for f in log.failures]
    return "\n".join(lines)


def explain(board: Board, workload: Workload, result: Plan) -> str:
    lines = []
    for candidates in resolve(board, workload):
        placement = result.placement(candidates.buffer.name)
        places = ", ".join(place.label for place in candidates.places)
        lines.append(
            f"{placement.name}: scope {candidates.buffer.scope}, users "
            f"{', '.join(candidates.users)}; candidates {places}"
        )
        lines.append(f"  -> {placement.place} at offset {placement.offset}: {placement.reason}")
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
