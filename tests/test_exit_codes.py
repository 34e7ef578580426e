"""The table of exit codes in docs/guide.md, walked row by row: each row has a case here
that makes it happen through the `memplace` command, and ends with the row's code and one
line (no traceback). A row without a case, or a case without a row, fails the walk."""

from __future__ import annotations

import gzip
import os
import re
import shutil
import signal
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import PATIENCE, run_cli
from memplace import process
from memplace.resources import demo_workload
from memplace.tflm import runtime
from mlf_archives import v5_archive
from test_hostile_inputs import _one_add
from test_stacks import BOARD as RTOS_BOARD
from test_stacks import FLAGS, SOURCES

GUIDE = Path(__file__).resolve().parents[1] / "docs" / "guide.md"
BOARD = "qemu-mps3-an547"


def _table() -> dict[str, str]:
    """The rows of the guide's exit code table: what happened -> exit."""
    text = GUIDE.read_text(encoding="utf-8")
    section = text.split("\n## Exit codes\n", 1)[1].split("\n## ", 1)[0]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    cells = [[cell.strip() for cell in row.strip("|").split("|")] for row in rows[1:]]
    return {what: code for what, code in cells}


Case = Callable[[Path, pytest.CaptureFixture[str], pytest.MonkeyPatch], tuple[int, str]]


def _cli(capsys: pytest.CaptureFixture[str], *argv: str | Path) -> tuple[int, str]:
    code, _, err = run_cli(capsys, *argv)
    return code, err


def _subprocess(argv: list[str], cwd: Path, code: str = "") -> tuple[int, str]:
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            f"{code}import sys; from memplace.cli import main; sys.exit(main({argv!r}))",
        ],
        capture_output=True,
        text=True,
        cwd=cwd,
        timeout=PATIENCE,
    )
    return done.returncode, done.stderr


def _firmware(folder: Path) -> Path:
    gcc = process.find_tool("arm-none-eabi-gcc")
    for name in ("tasks", "startup"):
        argv = [gcc, *FLAGS, "-fstack-usage", "-fcallgraph-info=su,da", "-c"]
        argv += [str(SOURCES / f"{name}.c"), "-o", str(folder / f"{name}.o")]
        assert process.run(argv, timeout=PATIENCE).returncode == 0
    elf = folder / "rtos.elf"
    argv = [gcc, *FLAGS, "-nostdlib", "-T", str(SOURCES / "link.ld")]
    argv += [str(folder / "tasks.o"), str(folder / "startup.o"), "-o", str(elf)]
    assert process.run(argv, timeout=PATIENCE).returncode == 0
    (folder / "board.yaml").write_text(RTOS_BOARD)
    return elf


def _good(tmp: Path, capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch) -> tuple[int, str]:
    return _cli(capsys, "plan", BOARD, demo_workload())


def _check_failed(
    tmp: Path, capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch
) -> tuple[int, str]:
    workload = tmp / "big.yaml"
    workload.write_text(
        "memplace: workload/v1\nname: big\nsteps: [s0]\n"
        "buffers:\n  - {name: a, size: 1024M, live: [s0, s0]}\n"
    )
    return _cli(capsys, "plan", BOARD, workload)


def _stopped(
    tmp: Path, capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch
) -> tuple[int, str]:
    from test_planner_benchmarks import ONE_POOL_BOARD, SHARED, _workload_file

    instance = SHARED / "minimalloc" / "F.1048576.csv"
    if not instance.is_file():
        pytest.skip("../shared/benchmarks/minimalloc is absent")
    board = tmp / "board.yaml"
    board.write_text(ONE_POOL_BOARD)
    workload = _workload_file(instance, tmp / "f.yaml")
    return _cli(capsys, "plan", board, workload, "--time-limit", "1e-9")


def _usage(
    tmp: Path, capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch
) -> tuple[int, str]:
    model = tmp / "m.tflite"
    model.write_bytes(_one_add([1, 4]))
    return _cli(
        capsys, "tflm", model, "--board", BOARD, "--out", tmp / "o.tflite", "--time-limit", "inf"
    )


def _bad_board(
    tmp: Path, capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch
) -> tuple[int, str]:
    board = tmp / "board.yaml"
    board.write_text(f"memplace: board/v1\nextends: {BOARD}\nname: b\nmemries: {{}}\n")
    return _cli(capsys, "boards", "show", board)


def _long_number(
    tmp: Path, capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch
) -> tuple[int, str]:
    board = tmp / "board.yaml"
    board.write_text(
        f"memplace: board/v1\nextends: {BOARD}\nname: b\ncontexts:\n"
        f"  main: {{stack: {{size: {'9' * 50}}}}}\n"
    )
    return _cli(capsys, "boards", "show", board)


def _not_regular(
    tmp: Path, capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch
) -> tuple[int, str]:
    elf = _firmware(tmp)
    os.mkfifo(tmp / "fifo.su")
    return _cli(capsys, "stacks", elf, "--board", tmp / "board.yaml")


def _damaged(
    tmp: Path, capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch
) -> tuple[int, str]:
    whole = v5_archive(tmp / "m.tar").read_bytes()
    cut = tmp / "cut.tar.gz"
    cut.write_bytes(gzip.compress(whole)[:-100])
    return _cli(capsys, "plan", BOARD, cut)


def _other_core(
    tmp: Path, capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch
) -> tuple[int, str]:
    elf = tmp / "host.elf"
    elf.write_bytes(Path(os.path.realpath(sys.executable)).read_bytes())
    return _cli(capsys, "stacks", elf, "--board", "qemu-mps2-an385")


def _runtime_refuses(
    tmp: Path, capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch
) -> tuple[int, str]:
    if not runtime.available():
        pytest.skip("the tflite-micro package is not installed")
    from test_tflm_subgraphs import B

    model = tmp / "custom.tflite"
    model.write_bytes(_one_add([1, 4], B.CUSTOM))
    return _cli(capsys, "tflm", model, "--board", BOARD, "--out", tmp / "o.tflite")


def _output_over_input(
    tmp: Path, capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch
) -> tuple[int, str]:
    return _cli(capsys, "plan", BOARD, demo_workload(), "--svg", demo_workload())


def _not_writable(
    tmp: Path, capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch
) -> tuple[int, str]:
    return _cli(capsys, "template", BOARD, "--out", "/sys/memplace-template")


def _tool_missing(
    tmp: Path, capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch
) -> tuple[int, str]:
    project = tmp / "p"
    assert _cli(capsys, "generate", BOARD, demo_workload(), "--out", project)[0] == 0
    mp.setenv("PATH", "/nonexistent")
    mp.setattr(sys, "executable", "/nonexistent/python")
    return _cli(capsys, "build", project)


def _tool_failed(
    tmp: Path, capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch
) -> tuple[int, str]:
    elf = _firmware(tmp)
    tools = tmp / "bin"
    tools.mkdir()
    fake = tools / "arm-none-eabi-objdump"
    fake.write_text("#!/bin/sh\necho 'objdump: out of memory' >&2\nexit 1\n")
    fake.chmod(0o755)
    mp.setenv("PATH", f"{tools}{os.pathsep}{os.environ['PATH']}")
    return _cli(capsys, "stacks", elf, "--board", tmp / "board.yaml")


def _system_failed(
    tmp: Path, capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch
) -> tuple[int, str]:
    limit = (
        "import resource, signal; signal.signal(signal.SIGXFSZ, signal.SIG_IGN); "
        "resource.setrlimit(resource.RLIMIT_FSIZE, (100, 100)); "
    )
    argv = ["plan", BOARD, str(demo_workload()), "--svg", str(tmp / "plan.svg")]
    return _subprocess(argv, tmp, limit)


def _own_result(
    tmp: Path, capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch
) -> tuple[int, str]:
    """The host runtime runs the model as given but refuses memplace's planned copy."""
    model = tmp / "m.tflite"
    model.write_bytes(_one_add([1, 4]))
    original = model.read_bytes()

    def measure(path: Path) -> runtime.Measured:
        if path.read_bytes() != original:
            raise runtime.RuntimeFailed(path, "RuntimeError: TFLM failed to allocate tensors")
        return runtime.Measured(64, 64, 128, "test")

    mp.setattr(runtime, "available", lambda: True)
    mp.setattr(runtime, "measure", measure)
    return _cli(capsys, "tflm", model, "--board", BOARD, "--out", tmp / "o.tflite")


def _firmware_code(
    tmp: Path, capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch
) -> tuple[int, str]:
    if shutil.which("qemu-system-arm") is None:
        pytest.skip("QEMU is not installed")
    sources = tmp / "src"
    sources.mkdir()
    (sources / "app.c").write_text("int app_main(void) { return 3; }\n")
    project = tmp / "p"
    argv = ["generate", BOARD, demo_workload(), "--project-type", "app", "--sources", sources]
    assert _cli(capsys, *argv, "--out", project)[0] == 0
    assert _cli(capsys, "build", project)[0] == 0
    code, err = _cli(capsys, "run", project)
    assert code == 3, err
    return code, "the firmware's"


def _signals(
    tmp: Path, capsys: pytest.CaptureFixture[str], mp: pytest.MonkeyPatch
) -> tuple[int, str]:
    """`memplace serve` waiting for requests, ended by each signal in turn."""
    codes = []
    for signum in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
        child = subprocess.Popen(
            [sys.executable, "-m", "memplace.cli", "serve"],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=tmp,
        )
        assert child.stdin is not None and child.stdout is not None
        child.stdin.write(b'{"jsonrpc": "2.0", "method": "nope", "id": 1}\n')
        child.stdin.flush()
        child.stdout.readline()  # it serves: the signal arrives while it waits for more
        child.send_signal(signum)
        child.communicate(timeout=PATIENCE)
        codes.append(str(child.returncode))
    return 0, " / ".join(codes)


CASES: dict[str, Case] = {
    "all good": _good,
    "a check failed": _check_failed,
    "the user's `--time-limit` stopped a search": _stopped,
    "a usage error": _usage,
    "a board, workload or hints file": _bad_board,
    "a number of more than 40 digits": _long_number,
    "an input that is not a regular file": _not_regular,
    "a damaged input": _damaged,
    "an ELF for a core memplace does not read": _other_core,
    "a model TFLite Micro's host runtime cannot run": _runtime_refuses,
    "an output that names an input": _output_over_input,
    "an output in a place the user may not write": _not_writable,
    "a tool is missing": _tool_missing,
    "a tool failed or timed out on good input": _tool_failed,
    "the system failed": _system_failed,
    "memplace's own result broke its rules": _own_result,
    "`memplace run`": _firmware_code,
    "ended by Ctrl-C": _signals,
}


def _case(row: str) -> str:
    found = [start for start in CASES if row.startswith(start)]
    assert len(found) == 1, f"no case (or several) for the row {row!r}"
    return found[0]


def test_every_row_has_a_case_and_every_case_a_row() -> None:
    rows = _table()
    assert len(rows) == len(CASES)
    assert sorted(_case(row) for row in rows) == sorted(CASES)


@pytest.mark.parametrize("row", sorted(_table()))
def test_the_row_holds(
    row: str, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    expected = _table()[row]
    code, said = CASES[_case(row)](tmp_path, capsys, monkeypatch)
    if not expected.isdigit():  # the firmware's own code, or the codes of the signals
        assert said == expected, said
        return
    assert code == int(expected), said
    if code:
        lines = said.strip().splitlines()
        assert len(lines) == 1 and lines[0].startswith("memplace: error: "), said
        assert "Traceback" not in said
    assert not re.search(r"\bTraceback\b", said)
