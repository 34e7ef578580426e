"""The `memplace` command. Errors become exit codes here and nowhere else:
0 all good, 1 a check failed, 2 bad input or usage, 3 a tool failed or is missing."""

from __future__ import annotations

import argparse
import errno
import io
import json
import logging
import math
import os
import signal
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from types import FrameType
from typing import TYPE_CHECKING, Any

from memplace import completion, options, resources, rtos
from memplace.board import Board, load_board, memory_map_data, memory_map_text
from memplace.carried.server import TERMINATING
from memplace.errors import CheckFailed, InputError, MemplaceError, SearchStopped, ToolError
from memplace.files import CONSOLE_HEADER, Output, claim, write_output
from memplace.importers import Importer, importer_for, importers, load_workload
from memplace.importers.registry import formats_text, frontends
from memplace.planner import DEFAULT_TIME_LIMIT, plan
from memplace.project_files import DEFAULT_TIMEOUT, run_record
from memplace.runners import registry
from memplace.schema import SCHEMAS
from memplace.workload import Workload

if TYPE_CHECKING:
    from memplace import workflow
    from memplace.importers.relax import RelaxModel
    from memplace.planner.model import Plan
    from memplace.verify import Report, RunLog
    from memplace.verify.target_memory import RunMemory

# The generator, builder, runners and verifier load in the commands that use them, so that
# `memplace --help` and `memplace plan` start in a fraction of a second.

Handler = Callable[[argparse.Namespace], int]


class _Parser(argparse.ArgumentParser):
    """argparse that reports usage errors as InputError (exit 2, one line)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        raise InputError(message, key=self.prog)


def main(argv: Sequence[str] | None = None) -> int:
    parser = _build_parser()
    args = None
    previous = {sig: signal.signal(sig, _terminated) for sig in TERMINATING}
    _ending.clear()
    _line_buffered()
    try:
        args = parser.parse_args(argv)
        logging.basicConfig(
            level=logging.DEBUG if args.debug else logging.WARNING, format="%(name)s: %(message)s"
        )
        handler: Handler = args.handler
        _claim_outputs(args)
        code = handler(args)
        if _ending:
            # The signal's exception was raised where Python swallows it (a finaliser, a
            # generator closed by the collector): the work went on, but memplace was ended.
            raise Terminated(_ending[0])
        return code
    except _Shown:
        return 0
    except MemplaceError as exc:
        if args is not None and args.debug:
            raise
        print(f"memplace: error: {exc}", file=sys.stderr)
        given = sys.argv[1:] if argv is None else list(argv)
        wants_json = getattr(args, "json", False) if args is not None else "--json" in given
        if wants_json and exc.exit_code != CheckFailed.exit_code:
            # A CI job that parses the output gets JSON whatever happened (a failed check
            # or plan has written its own JSON report already).
            sys.stdout.write(_error_json(exc))
        return exc.exit_code
    except KeyboardInterrupt:
        print("memplace: interrupted", file=sys.stderr)
        return 130
    except Terminated as exc:
        print(f"memplace: ended by {signal.Signals(exc.signum).name}", file=sys.stderr)
        return 128 + exc.signum
    except BrokenPipeError:
        # The reader went away (`memplace plan ... | head`): nothing more to say, and Python
        # must not complain again when it flushes stdout at exit.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except OSError as exc:
        # The system refused. A place the user may not write or read (permission, a
        # read-only file system) is the user's to fix (exit 2); no space left, an I/O error,
        # a file too large is the machine failing on fine input (exit 3).
        if args is not None and args.debug:
            raise
        print(f"memplace: error: {system_error(exc)}", file=sys.stderr)
        return InputError.exit_code if exc.errno in REFUSED else ToolError.exit_code
    finally:
        for sig, before in previous.items():
            signal.signal(sig, before)


def _error_json(exc: MemplaceError) -> str:
    """The JSON a command given `--json` writes when it fails before its report: the error
    with its exit code and, for bad input, where it is."""
    error: dict[str, object] = {"message": str(exc), "exit_code": exc.exit_code}
    if isinstance(exc, SearchStopped):
        error["stopped"] = exc.to_json()
    if isinstance(exc, InputError):
        if exc.mark is not None:
            error.update(file=exc.mark.file, line=exc.mark.line, column=exc.mark.column)
        if exc.key is not None:
            error["key"] = exc.key
    return json.dumps({"ok": False, "error": error}, indent=2) + "\n"


def _line_buffered() -> None:
    """Whole lines out as they are printed, even into a pipe, so that progress, the
    firmware's console and errors arrive in the order they happen."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper):
            stream.reconfigure(line_buffering=True)


class _Shown(Exception):
    """--version was answered: nothing more to do."""


class _Version(argparse.Action):
    def __init__(self, option_strings: list[str], dest: str, **kwargs: Any) -> None:
        super().__init__(option_strings, dest, nargs=0, help="print memplace's version")

    def __call__(self, *args: Any, **kwargs: Any) -> None:
        print(f"memplace {version()}")
        raise _Shown


def version() -> str:
    from memplace import __version__  # read from the installed package's metadata

    return str(__version__)


def _progress(args: argparse.Namespace) -> Callable[[str], None] | None:
    """Where the stages of a long command say they start: standard error, when it is a
    terminal and -q was not given."""
    if args.quiet or not sys.stderr.isatty():
        return None
    return lambda line: print(f"memplace: {line}", file=sys.stderr, flush=True)


def _console(as_json: bool = False) -> Callable[[str], None] | None:
    """Where the firmware's own console lines go as they come: standard output, unless that
    carries JSON (then they are in build/run.json only). memplace's protocol lines
    (`memplace: ...`) are not shown: the summary that follows the run says what they say."""
    if as_json:
        return None

    def show(line: str) -> None:
        if not line.startswith("memplace: "):
            print(line, flush=True)

    return show


class Terminated(BaseException):
    """SIGTERM or SIGHUP arrived: unwinds like Ctrl-C, so every child memplace started is
    stopped on the way out (`memplace.process`)."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


_ending: list[int] = []
"""The termination signal that arrived, should its exception be lost on the way."""


def _terminated(signum: int, frame: FrameType | None) -> None:
    _ending.append(signum)
    raise Terminated(signum)


# The files each command writes, as (attribute, option, kind of file); every one is claimed
# before any work (`memplace.files.claim`).
OUTPUTS = "outputs"
# The attributes that name files a command reads; no output may name one of them.
_INPUTS = ("board", "workload", "elf", "model", "stack_hints")


def _claim_outputs(args: argparse.Namespace) -> None:
    outputs = [
        Output(option, getattr(args, attribute), kind)
        for attribute, option, kind in getattr(args, OUTPUTS, ())
        if getattr(args, attribute, None) is not None
    ]
    inputs: list[Path] = []
    for attribute in _INPUTS:
        value = getattr(args, attribute, None)
        inputs += [Path(v) for v in (value if isinstance(value, list) else [value]) if v]
    claim(outputs, inputs)


REFUSED = (errno.EACCES, errno.EPERM, errno.EROFS)
"""Errors of the system that say the user named a place memplace may not use."""


def system_error(exc: OSError) -> str:
    """One line for an error the operating system reported."""
    what = exc.strerror or str(exc)
    where = exc.filename if exc.filename is not None else None
    return f"{where}: {what}" if where is not None else what


def seconds(text: str) -> float:
    """A command-line number of seconds: positive and finite."""
    return _positive(text, "a positive number of seconds")


def positive_number(text: str) -> float:
    """A command-line number that is positive and finite."""
    return _positive(text, "a positive number")


def _positive(text: str, expected: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"expected {expected}, got {text!r}")
    return value


def folder_to_write(text: str) -> Path:
    """A folder memplace may create or write into: not a file, not under a file."""
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a file, not a folder")
    _no_file_above(path, text)
    return path


def file_to_write(text: str) -> Path:
    """A file memplace may write: not a folder, not under a file."""
    path = Path(text)
    if path.is_dir():
        raise argparse.ArgumentTypeError(f"{text} is a folder; name a file to write")
    _no_file_above(path, text)
    return path


def _no_file_above(path: Path, text: str) -> None:
    for parent in path.absolute().parents:
        if parent.exists():
            if not parent.is_dir():
                raise argparse.ArgumentTypeError(f"{text}: {parent} is a file, not a folder")
            if not os.access(parent, os.W_OK | os.X_OK):
                raise argparse.ArgumentTypeError(f"{text}: cannot write in {parent} (read-only)")
            return


def _build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="memplace",
        description="Plan, generate, build, run and verify "
        "where every buffer of your firmware lives.",
    )
    parser.add_argument("--debug", action="store_true", help="show tracebacks and commands")
    parser.add_argument(
        "-q", "--quiet", action="store_true", help="no progress lines on a terminal"
    )
    parser.add_argument("--version", action=_Version)
    commands = parser.add_subparsers(dest="command", required=True, parser_class=_Parser)

    boards = commands.add_parser("boards", help="list the bundled boards, or show one")
    boards.add_argument("--json", action="store_true", help="print JSON")
    boards.set_defaults(handler=_boards)
    boards_commands = boards.add_subparsers(dest="boards_command", parser_class=_Parser)
    show = boards_commands.add_parser("show", help="the memory map as each core sees it")
    show.add_argument("board", metavar="BOARD", help="bundled board name or board file")
    show.add_argument("--json", action="store_true", help="print JSON")
    show.set_defaults(handler=_boards_show)

    schema = commands.add_parser("schema", help="print the JSON Schema of a file format")
    schema.add_argument("format", metavar="FORMAT", choices=sorted(SCHEMAS), help="board")
    schema.set_defaults(handler=_schema)

    plan_cmd = commands.add_parser("plan", help="plan a workload on a board")
    _add_inputs(plan_cmd)
    plan_cmd.add_argument("--json", action="store_true", help="print the plan as JSON")
    plan_cmd.add_argument(
        "--explain",
        action="store_true",
        help="say for every buffer where it could live and why it went where",
    )
    plan_cmd.add_argument(
        "--time-limit",
        type=seconds,
        default=DEFAULT_TIME_LIMIT,
        metavar="S",
        help="stop the searches after S seconds of wall-clock time, and say so (default: "
        "none; the searches stop at their work budgets, so the plan is the same on any "
        "machine; exit code 4 when a buffer has no place yet)",
    )
    plan_cmd.add_argument(
        "--effort",
        type=positive_number,
        default=1.0,
        metavar="X",
        help="multiply the searches' work budgets by X (default: 1)",
    )
    plan_cmd.add_argument(
        "--svg",
        type=file_to_write,
        metavar="FILE",
        help="draw every pool and stack into an SVG file",
    )
    plan_cmd.set_defaults(handler=_plan, outputs=[("svg", "--svg", "svg")])

    import_cmd = commands.add_parser(
        "import", help="turn a TFLite model into a workload file with its weights beside it"
    )
    import_cmd.add_argument("model", metavar="MODEL", type=Path, help="a .tflite model")
    import_cmd.add_argument(
        "--out", type=Path, required=True, help="workload file to write (weights: <stem>.data/)"
    )
    import_cmd.add_argument(
        "--force", action="store_true", help="replace the workload and weights if they exist"
    )
    import_cmd.set_defaults(handler=_import, outputs=[("out", "--out", "workload")])

    tflm = commands.add_parser(
        "tflm",
        help="write memplace's arena plan into a TFLite model for TensorFlow Lite Micro",
    )
    tflm.add_argument("model", metavar="MODEL", type=Path, help="a .tflite model")
    tflm.add_argument("--board", required=True, help="bundled board name or board file")
    tflm.add_argument(
        "--pool",
        help="workspace pool of the arena (default: the fastest that holds it)",
    )
    tflm.add_argument(
        "--kernels",
        choices=["reference", "cmsis-nn"],
        default="reference",
        help="kernel library whose scratch buffers to plan for (default: reference)",
    )
    tflm.add_argument("--out", type=Path, required=True, help="the planned model to write (a copy)")
    tflm.add_argument("--json", action="store_true", help="print the result as JSON")
    tflm.add_argument(
        "--time-limit",
        type=seconds,
        default=DEFAULT_TIME_LIMIT,
        metavar="S",
        help="stop the offset search after S seconds of wall-clock time (default: none)",
    )
    tflm.set_defaults(handler=_tflm, outputs=[("out", "--out", "tflite")])

    generate = commands.add_parser("generate", help="plan and write a firmware project")
    _add_inputs(generate)
    _add_project_options(generate)
    generate.add_argument(
        "--out", type=folder_to_write, required=True, help="project folder to write"
    )
    generate.add_argument(
        "--force", action="store_true", help="overwrite files edited since memplace wrote them"
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
    verify_cmd.add_argument(
        "--objects",
        type=Path,
        metavar="DIR",
        help="folder of the image's objects, with GCC's .su and .ci files beside them, for an "
        "image built outside the project (one image: use with --core)",
    )
    _add_report_options(verify_cmd)
    verify_cmd.set_defaults(handler=_verify, outputs=_REPORTS)

    stacks_cmd = commands.add_parser(
        "stacks",
        help="check the stack budgets of firmware built elsewhere (its own startup, linker "
        "script, RTOS and build)",
        epilog="RTOSes a core's `rtos` may name in the board: " + ", ".join(rtos.names()),
    )
    stacks_cmd.add_argument("elf", type=Path, metavar="FIRMWARE.elf")
    stacks_cmd.add_argument(
        "--board", required=True, help="board file that describes the firmware's contexts"
    )
    stacks_cmd.add_argument("--core", help="the core the firmware runs on (several cores)")
    stacks_cmd.add_argument(
        "--objects",
        type=Path,
        action="append",
        default=[],
        metavar="DIR",
        help="folder of the firmware's objects with GCC's .su and .ci files (default: the "
        "ELF's folder); may be given more than once",
    )
    stacks_cmd.add_argument(
        "--run",
        action="store_true",
        help="also run the firmware unchanged under the board's QEMU machine and read each "
        "stack's high-water mark from its memory when it exits or --timeout passes",
    )
    stacks_cmd.add_argument(
        "--timeout",
        type=seconds,
        default=10.0,
        help="with --run: seconds before the run is stopped and read (default: 10)",
    )
    stacks_cmd.add_argument(
        "--console",
        type=file_to_write,
        metavar="FILE",
        help="with --run: write the firmware's console output (UART, semihosting) here",
    )
    stacks_cmd.add_argument("--json", action="store_true", help="print the report as JSON")
    _add_report_options(stacks_cmd)
    stacks_cmd.set_defaults(
        handler=_stacks, outputs=[*_REPORTS, ("console", "--console", "console")]
    )

    check_cmd = commands.add_parser("check", help="generate, build, run under QEMU and verify")
    _add_inputs(check_cmd)
    _add_project_options(check_cmd)
    check_cmd.add_argument(
        "--out",
        type=folder_to_write,
        default=Path("memplace-check"),
        help="project folder (default: memplace-check)",
    )
    check_cmd.add_argument("--json", action="store_true", help="print the report as JSON")
    _add_report_options(check_cmd)
    _add_timeout(check_cmd)
    check_cmd.set_defaults(handler=_check, outputs=_REPORTS)

    flashing = " or ".join(registry.flash_runners())  # each runner's own record says
    flash_cmd = commands.add_parser(
        "flash",
        help=f"program a built project into its board ({flashing})",
        epilog=registry.flash_help(),
    )
    flash_cmd.add_argument("dir", type=Path, metavar="DIR")
    options.add_arguments(flash_cmd, *options.accepted_by("flash"))
    flash_cmd.set_defaults(handler=_flash)

    serve = commands.add_parser(
        "serve", help="answer Project API requests (JSON-RPC 2.0, one object per line)"
    )
    serve.add_argument(
        "--read-fd", type=int, metavar="N", help="read requests from this file descriptor"
    )
    serve.add_argument(
        "--write-fd", type=int, metavar="M", help="write replies to this file descriptor"
    )
    serve.add_argument(
        "--board", help="board this server is a template for (bundled name or board file)"
    )
    serve.add_argument("--project", type=Path, metavar="DIR", help="serve a generated project")
    serve.add_argument(  # where TVM puts it, after the pipes; `memplace --debug` works too
        "--debug", action="store_true", default=argparse.SUPPRESS, help="log debug detail"
    )
    serve.set_defaults(handler=_serve)

    template = commands.add_parser(
        "template",
        help="write a template project folder for microTVM "
        "(TemplateProject.from_directory, tvmc micro create-project)",
    )
    template.add_argument("board", metavar="BOARD", help="bundled board name or board file")
    template.add_argument(
        "--out", type=folder_to_write, required=True, metavar="DIR", help="new or empty folder"
    )
    template.set_defaults(handler=_template)

    module = commands.add_parser(
        "cmake-module", help="print the path of memplace.cmake, for include() in CMake"
    )
    module.set_defaults(handler=_cmake_module)

    demo = commands.add_parser("demo", help="check the bundled example on the default board")
    demo.add_argument(
        "--out",
        type=folder_to_write,
        default=Path("memplace-demo"),
        help="project folder (default: memplace-demo)",
    )
    _add_timeout(demo)
    demo.set_defaults(handler=_demo)

    shell = commands.add_parser(
        "completion", help="print a shell completion script: source <(memplace completion bash)"
    )
    shell.add_argument("shell", choices=completion.SHELLS, metavar="SHELL", help="bash or zsh")
    shell.set_defaults(handler=lambda args: _completion(args, parser))
    return parser


def _add_inputs(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("board", metavar="BOARD", help="bundled board name or board file")
    parser.add_argument(
        "workload",
        metavar="WORKLOAD",
        type=Path,
        help=formats_text(),
    )
    parser.add_argument(
        "--frontend",
        choices=sorted(frontends()),
        help="read WORKLOAD with the importer of this name, whatever its suffix ("
        + "; ".join(f"{name}: {i.describes}" for name, i in sorted(frontends().items()))
        + ")",
    )
    parser.add_argument(
        "--data-root",
        type=Path,
        metavar="DIR",
        help="folder the workload's data files may come from (default: the workload's own)",
    )
    options.add_arguments(parser, "algorithm")


def _add_project_options(parser: argparse.ArgumentParser) -> None:
    options.add_arguments(parser, "project_type", "sources", "pool_storage")
    # Unset, it depends on WORKLOAD: a model's demo, else the exerciser (_project_type).
    parser.set_defaults(project_type=None)
    for action in parser._actions:
        if action.dest == "project_type":
            runs = [i.describes for i in importers().values() if i.project_type != "exerciser"]
            action.help = (
                f"{options.BY_NAME['project_type'].help} (default: aot_standalone_demo, which "
                f"runs the model, for {' or '.join(runs)}; else exerciser)"
            )
    parser.add_argument(
        "--inputs",
        type=Path,
        metavar="X.npz",
        help="with --frontend tvm: the arrays to run the model on, named as its inputs "
        "(default: a deterministic fill)",
    )
    parser.add_argument(
        "--standalone-crt-dir",
        type=Path,
        metavar="DIR",
        help="TVM's standalone CRT folder, whose headers a Model Library Format archive's "
        "C code is built with (default: the archive's own runtime/, else memplace's)",
    )


_REPORTS = [("junit", "--junit", "junit"), ("sarif", "--sarif", "sarif")]


def _add_report_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--junit", type=file_to_write, metavar="FILE", help="write the report as JUnit XML"
    )
    parser.add_argument(
        "--sarif", type=file_to_write, metavar="FILE", help="write the report as SARIF"
    )
    parser.add_argument(
        "--stack-hints",
        action="append",
        default=[],
        metavar="FILE",
        help="stack hints (indirect call targets, recursion depths, alloca sizes): a file, or "
        "a bundled set such as newlib-nano; may be given more than once",
    )


def _add_timeout(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--timeout",
        type=seconds,
        default=DEFAULT_TIMEOUT,
        help=f"seconds before a run is stopped (default: {DEFAULT_TIMEOUT:g})",
    )


def _inputs(args: argparse.Namespace) -> tuple[Board, Workload]:
    board, workload, _ = _model_inputs(args)
    return board, workload


def _model_inputs(args: argparse.Namespace) -> tuple[Board, Workload, Importer]:
    """The board, the workload (its origin the model it was read from, if it was) and the
    importer that read it."""
    board = load_board(args.board)
    importer = importer_for(args.workload, args.frontend)
    inputs = getattr(args, "inputs", None)
    if inputs is not None and importer.frontend is None:
        raise InputError("--inputs feeds a model read with --frontend tvm", key="--inputs")
    workload = importer.read(args.workload, board, args.data_root)
    if inputs is not None:
        from memplace.importers.relax import RelaxModel

        if not isinstance(workload.origin, RelaxModel):
            raise InputError("--inputs feeds a model read with --frontend tvm", key="--inputs")
        workload = workload.origin.with_inputs(inputs).workload(board)
    return board, workload, importer


def _project_type(args: argparse.Namespace, importer: Importer) -> str:
    """--project-type, else what the importer's workloads are for: for a model whose code
    the project runs (a Model Library Format archive, a Relax model) the demo that runs
    it, else the exerciser."""
    if args.project_type is not None:
        return str(args.project_type)
    return importer.project_type


def _request(args: argparse.Namespace, progress: bool = True) -> workflow.ProjectRequest:
    """What `generate` and `check` are asked for, from their arguments."""
    from memplace import workflow
    from memplace.hints import load_hints

    board, workload, importer = _model_inputs(args)
    return workflow.ProjectRequest(
        board,
        workload,
        args.out,
        _project_type(args, importer),
        args.algorithm,
        force=getattr(args, "force", False),
        sources=args.sources,
        pool_storage=args.pool_storage,
        standalone_crt=args.standalone_crt_dir,
        timeout=getattr(args, "timeout", DEFAULT_TIMEOUT),
        stack_hints=load_hints(getattr(args, "stack_hints", None) or []),
    )


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


def _boards_show(args: argparse.Namespace) -> int:
    board = load_board(args.board)
    print(json.dumps(memory_map_data(board), indent=2) if args.json else memory_map_text(board))
    return 0


def _schema(args: argparse.Namespace) -> int:
    print(json.dumps(SCHEMAS[args.format](), indent=2))
    return 0


def _plan(args: argparse.Namespace) -> int:
    board, workload = _inputs(args)
    from memplace.planner.render_svg import render_svg, render_text

    if args.explain:
        from memplace.planner.explain import explain

        story = explain(
            board, workload, args.algorithm, time_limit=args.time_limit, effort=args.effort
        )
        if args.json:
            # Printed even when some buffer fits nowhere: saying why is the point.
            sys.stdout.write(json.dumps(story.to_json(), indent=2) + "\n")
        else:
            if story.plan is not None:
                print(pool_table(story.plan))
                print()
            print(story.text())
        story.raise_failure()
        if args.svg is not None and story.plan is not None:
            write_output(args.svg, render_svg(story.plan))
        return 0
    result = plan(board, workload, args.algorithm, time_limit=args.time_limit, effort=args.effort)
    if result.stopped is not None:
        print(
            f"memplace: search stopped at the time limit after {result.stopped} nodes: the "
            "plan fits, but a longer search may find smaller peaks",
            file=sys.stderr,
        )
    if args.svg is not None:
        write_output(args.svg, render_svg(result))
    if args.json:
        result.write_json(sys.stdout)
        return 0
    print(pool_table(result))
    print()
    print(render_text(result))
    return 0


def _import(args: argparse.Namespace) -> int:
    from memplace.importers import import_to_file  # the model readers load only when used

    done = import_to_file(args.model, args.out, force=args.force)
    model = done.model
    weight_bytes = sum(len(weight.data) for weight in model.weights)
    print(
        f"imported {args.model}: {len(model.steps)} operators, {len(model.activations)} "
        f"activation buffers, {len(model.weights)} weights ({weight_bytes} bytes)"
    )
    print(f"wrote {done.workload} and {done.data_dir}/")
    return 0


def _tflm(args: argparse.Namespace) -> int:
    from memplace import tflm  # the model readers load only when used

    board = load_board(args.board)
    if not args.model.is_file():
        raise InputError(f"no model file at {args.model}", key="MODEL")
    tflm.check_out(args.model, args.out)
    result = tflm.place_model(
        board, args.model, args.pool, args.kernels, time_limit=args.time_limit
    )
    tflm.write_model(result, args.model, args.out)
    if args.json:
        print(json.dumps({**result.to_json(), "out": str(args.out)}, indent=2))
        return 0
    print(tflm.summary(result))
    print(f"wrote {args.out}")
    return 0


def _generate(args: argparse.Namespace) -> int:
    from memplace import workflow

    result = workflow.generate(_request(args), _progress(args))
    print(pool_table(result))
    print(f"wrote {args.out}")
    return 0


def _completion(args: argparse.Namespace, parser: argparse.ArgumentParser) -> int:
    sys.stdout.write(completion.script(args.shell, parser, resources.bundled_boards()))
    return 0


def _build(args: argparse.Namespace) -> int:
    from memplace import workflow
    from memplace.build import build
    from memplace.project import Project

    Project.load(args.dir)
    output = build(args.dir, on_line=workflow.build_steps(_progress(args)))
    usage = [line for line in output.splitlines() if "%" in line and ":" in line]
    print("\n".join(usage) if usage else f"built {args.dir}")
    return 0


def _run(args: argparse.Namespace) -> int:
    from memplace import workflow

    log = workflow.run(args.dir, args.timeout, _console())
    print(run_summary(log))
    return log.exit_code


def _stacks(args: argparse.Namespace) -> int:
    from memplace.verify import load_hints, write_reports
    from memplace.verify.firmware import check_stacks, run_firmware

    if not args.elf.is_file():
        raise InputError(f"no firmware at {args.elf}", key="FIRMWARE.elf")
    board = load_board(args.board)
    hints = load_hints(args.stack_hints)
    run = run_firmware(args.elf, board, args.core, args.timeout) if args.run else None
    report = check_stacks(args.elf, board, args.core, args.objects, hints, run)
    if run is not None:
        if args.console is not None:
            write_output(args.console, CONSOLE_HEADER.format(args.elf) + run.console)
        if not args.json:
            print(_run_line(run, args.timeout))
    write_reports(report, junit=args.junit, sarif=args.sarif)
    _print_report(report, args.json)
    return 0 if report.ok else CheckFailed.exit_code


def _run_line(run: RunMemory, timeout: float) -> str:
    lines = run.console.splitlines()
    ended = (
        f"stopped after {timeout:g} s and read"
        if run.exit_code is None
        else f"read at its exit (code {run.exit_code})"
    )
    shown = "".join(f"\n  | {line}" for line in lines[-20:])
    return f"run: {ended}; console: {len(lines)} lines{shown}"


def _verify(args: argparse.Namespace) -> int:
    from memplace import workflow
    from memplace.project import Project
    from memplace.verify import load_hints, verify, write_reports

    project = Project.load(args.dir)
    if args.core:
        project = project.only(args.core)
    if args.objects is not None and len(set(project.images.values())) > 1:
        raise InputError(
            f"the folder holds one image's objects; name its core with --core "
            f"({', '.join(project.images)})",
            key="--objects",
        )
    hints = load_hints(args.stack_hints)
    report = verify(project, workflow.recorded_run(args.dir), hints, args.objects)
    write_reports(report, junit=args.junit, sarif=args.sarif)
    _print_report(report, args.json)
    return 0 if report.ok else CheckFailed.exit_code


def _check(args: argparse.Namespace) -> int:
    from memplace import workflow
    from memplace.importers.relax import RelaxModel
    from memplace.verify import write_reports

    request = _request(args)
    result = workflow.check(request, _progress(args), _console(args.json))
    write_reports(result.report, junit=args.junit, sarif=args.sarif)
    model = request.workload.origin
    if not isinstance(model, RelaxModel) or request.project_type != "aot_standalone_demo":
        return _print_check(result, args.json)
    if result.run is None:
        return _print_check(result, args.json)
    return _print_model_check(result, model, args.out, args.json)


def _print_model_check(
    result: workflow.CheckResult, model: RelaxModel, out: Path, as_json: bool
) -> int:
    """The check's report with the model's inputs (how each was filled) and every output
    the run printed."""
    from memplace.codegen.relax import inputs_report, read_outputs

    record = json.loads(run_record(out).read_text(encoding="utf-8"))
    outputs = read_outputs(str(record["output"]), model)
    inputs = inputs_report(model)
    if as_json:
        data = {**result.report.to_json(), "inputs": inputs, "outputs": outputs}
        sys.stdout.write(json.dumps(data, indent=2) + "\n")
    else:
        print(pool_table(result.plan))
        print(run_summary(result.run) if result.run is not None else "")
        for tensor in inputs:
            print(f"input {tensor['name']} {tensor['dtype']} {tensor['shape']}: {tensor['from']}")
        for tensor in outputs:
            print(
                f"output {tensor['name']} {tensor['dtype']} {tensor['shape']}: {tensor['values']}"
            )
        print(result.report.table())
    return 0 if result.report.ok else CheckFailed.exit_code


def _flash(args: argparse.Namespace) -> int:
    from memplace import workflow
    from memplace.runners import FlashRequest

    request = FlashRequest.from_values(vars(args))
    runner = workflow.flash(args.dir, args.runner, request)
    print(f"flashed {args.dir} with {runner}")
    return 0


def _serve(args: argparse.Namespace) -> int:
    from memplace.project_api.handler import serve  # only `serve` needs the server

    logger = logging.getLogger("memplace")
    level = logger.level
    if not args.debug:
        logger.setLevel(logging.INFO)  # each request is logged to stderr
    try:
        return serve(args.read_fd, args.write_fd, args.board, args.project)
    finally:
        logger.setLevel(level)


def _template(args: argparse.Namespace) -> int:
    from memplace.project_api.template import write_template

    write_template(args.board, args.out)
    print(f"wrote the memplace template for board {args.board} to {args.out}")
    return 0


def _cmake_module(args: argparse.Namespace) -> int:
    print(resources.data_dir("cmake") / "memplace.cmake")
    return 0


def _demo(args: argparse.Namespace) -> int:
    from memplace import workflow

    board = load_board("qemu-mps3-an547")
    workload = load_workload(resources.demo_workload())
    print(
        f"memplace demo: workload {workload.name} ({len(workload.buffers)} buffers and "
        f"constants over {len(workload.steps)} steps) on board {board.name}"
    )
    request = workflow.ProjectRequest(board, workload, args.out, timeout=args.timeout)
    result = workflow.check(request, _progress(args), _console())
    return _print_check(result, False)


def _print_check(result: workflow.CheckResult, as_json: bool) -> int:
    if not as_json:
        print(pool_table(result.plan))
        if result.run is not None:
            print(run_summary(result.run))
    _print_report(result.report, as_json)
    return 0 if result.report.ok else CheckFailed.exit_code


def _print_report(report: Report, as_json: bool) -> None:
    if as_json:
        sys.stdout.write(report.dumps())
    else:
        print(report.table())


def pool_table(result: Plan) -> str:
    """Per pool and stack: memory, address range, bytes used of capacity (and the pool's
    lower bound), in columns as wide as their longest entry."""
    rows = [("pool", "memory", "address range", "used", "capacity", "lower bound")]
    for pool in result.pools:
        span = f"[0x{pool.address:08x}, 0x{pool.address + pool.capacity:08x})"
        rows.append(
            (
                pool.name,
                pool.memory,
                span,
                str(pool.used),
                str(pool.capacity),
                str(pool.lower_bound),
            )
        )
    for stack in result.stacks:
        span = f"[0x{stack.address:08x}, 0x{stack.address + stack.budget:08x})"
        name = f"{stack.context}.stack"
        rows.append((name, stack.memory, span, str(stack.planned), str(stack.budget), ""))
    widths = [max(len(row[column]) for row in rows) for column in range(6)]
    lines = []
    for name, memory, span, used, capacity, bound in rows:
        line = (
            f"{name:<{widths[0]}}  {memory:<{widths[1]}}  {span:<{widths[2]}}  "
            f"{used:>{widths[3]}} / {capacity:<{widths[4]}}  {bound:>{widths[5]}}"
        )
        lines.append(line.rstrip())
    return "\n".join(lines)


def run_summary(log: RunLog) -> str:
    verdict = "passed" if log.passed else "FAILED"
    lines = [f"run: {verdict} (exit code {log.exit_code})"]
    lines += [f"run: {f.what} {f.name} failed its check at step {f.step}" for f in log.failures]
    return "\n".join(lines)


if __name__ == "__main__":
    sys.exit(main())
