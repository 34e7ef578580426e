"""Hostile input on `memplace stacks`, `tflm`, Model Library Format archives, `template`
and `serve`: each case is one row, run through the `memplace` command as a user runs it,
and answered with one line and the exit code of the README's rule (the input's fault: 2),
never a traceback, a hang or a file of the user's overwritten.

The cases that used to hang are bounded in work, not time: readers refuse what is not a
regular file before reading it, and the walks over a model's subgraphs and over Relay text
are counted in Python line events, so a slower machine changes nothing.
"""

from __future__ import annotations

import gzip
import json
import lzma
import os
import random
import re
import shutil
import struct
import subprocess
import sys
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from elftools.elf.elffile import ELFFile

from conftest import PATIENCE, cli_error, run_cli
from memplace import process
from memplace.importers import mlf
from memplace.importers import tflite as tflm_graph
from memplace.tflm import runtime
from mlf_archives import metadata_v5, v5_members, write_archive
from test_stacks import BOARD as RTOS_BOARD
from test_stacks import FLAGS, SOURCES
from test_tflm_subgraphs import BOOL, B, Op, Sub, T, build

BOARD = "qemu-mps3-an547"


def _work(call: Callable[[], Any]) -> int:
    """Python line events while `call` runs: a measure of work that no machine's speed or
    load changes."""
    events = 0

    def trace(frame: Any, event: str, arg: Any) -> Any:
        nonlocal events
        events += 1
        return trace

    sys.settrace(trace)
    try:
        call()
    except Exception:
        pass
    finally:
        sys.settrace(None)
    return events


# -- memplace stacks: the firmware's files --------------------------------------------------


@pytest.fixture(scope="module")
def firmware(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example firmware (examples/rtos-stacks) built as its users build it, with DWARF
    debug information (-g) to damage."""
    build = tmp_path_factory.mktemp("rtos")
    gcc = process.find_tool("arm-none-eabi-gcc")
    for name in ("tasks", "startup"):
        argv = [gcc, *FLAGS, "-g", "-fstack-usage", "-fcallgraph-info=su,da", "-c"]
        argv += [str(SOURCES / f"{name}.c"), "-o", str(build / f"{name}.o")]
        assert process.run(argv, timeout=PATIENCE).returncode == 0
    elf = build / "rtos.elf"
    argv = [gcc, *FLAGS, "-g", "-nostdlib", "-T", str(SOURCES / "link.ld")]
    argv += [str(build / "tasks.o"), str(build / "startup.o"), "-o", str(elf)]
    assert process.run(argv, timeout=PATIENCE).returncode == 0
    return elf


@pytest.fixture
def stacks_dir(firmware: Path, tmp_path: Path) -> Path:
    """A copy of the example firmware's ELF, .su and .ci files and its board."""
    folder = tmp_path / "fw"
    folder.mkdir()
    for path in firmware.parent.iterdir():
        if path.suffix in (".elf", ".su", ".ci"):
            shutil.copy(path, folder)
    (folder / "board.yaml").write_text(RTOS_BOARD)
    return folder


def _section(elf: Path, name: str) -> tuple[int, int, int]:
    """(offset of its data, index, offset of its header) of section `name`."""
    with elf.open("rb") as handle:
        parsed = ELFFile(handle)
        for index, section in enumerate(parsed.iter_sections()):
            if section.name == name:
                header = parsed["e_shoff"] + index * parsed["e_shentsize"]
                return section["sh_offset"], index, header
    raise AssertionError(name)


def _patch(elf: Path, offset: int, fmt: str, value: int) -> None:
    data = bytearray(elf.read_bytes())
    struct.pack_into(fmt, data, offset, value)
    elf.write_bytes(bytes(data))


def _fifo(d: Path) -> None:
    os.mkfifo(d / "waiting.su")


def _zero_su(d: Path) -> None:
    (d / "zero.su").symlink_to("/dev/zero")


def _zero_ci(d: Path) -> None:
    (d / "zero.ci").symlink_to("/dev/zero")


def _folder_su(d: Path) -> None:
    (d / "folder.su").mkdir()


def _long_su(d: Path) -> None:
    (d / "long.su").write_text("long.c:1:1:long\t" + "9" * 5000 + "\tstatic\n")


def _long_ci(d: Path) -> None:
    ci = next(d.glob("tasks*.ci"))
    ci.write_text(re.sub(r"\\n\d+ bytes", lambda m: "\\n" + "9" * 5000 + " bytes", ci.read_text()))


def _long_hint(d: Path) -> None:
    (d / "hints.yaml").write_text(
        "memplace: stack_hints/v1\nrecursion:\n  - {function: walk, depth: " + "9" * 5000 + "}\n"
    )


def _machine(number: int) -> Callable[[Path], None]:
    return lambda d: _patch(d / "rtos.elf", 18, "<H", number)  # e_machine


def _dwarf_version(d: Path) -> None:
    offset, _, _ = _section(d / "rtos.elf", ".debug_info")
    _patch(d / "rtos.elf", offset + 4, "<H", 133)


def _flipped_abbrev(d: Path) -> None:
    elf = d / "rtos.elf"
    offset, _, _ = _section(elf, ".debug_abbrev")
    data = bytearray(elf.read_bytes())
    # The first abbreviation: its code, its tag, then its children flag, 0 or 1 in DWARF.
    data[offset + 2] = 0x7F
    elf.write_bytes(bytes(data))


def _huge_section(d: Path) -> None:
    _, _, header = _section(d / "rtos.elf", ".text")
    _patch(d / "rtos.elf", header + 20, "<I", 0xFFFFFFF0)  # sh_size: 4 GiB


STACKS_CASES = [
    (_fifo, [], re.escape("waiting.su is not a regular file (a FIFO, socket or device)")),
    (_zero_su, [], re.escape("zero.su is not a regular file (a FIFO, socket or device)")),
    (_zero_ci, [], re.escape("zero.ci is not a regular file (a FIFO, socket or device)")),
    (_folder_su, [], re.escape("folder.su is a folder, not a file")),
    (_long_su, [], re.escape("long.su:1: a number of 5000 digits; at most 40 are read")),
    (_long_ci, [], r"tasks\.ci:\d+: a number of 5000 digits; at most 40 are read"),
    (
        _long_hint,
        ["--stack-hints", "HINTS"],
        r"hints\.yaml:3:29: a number of 5000 characters; at most 40 digits are read",
    ),
    (
        _machine(62),
        [],
        r"FIRMWARE\.elf: \S*rtos\.elf is a 32-bit ELF file for EM_X86_64; memplace reads "
        r"images for Arm Cortex-M cores",
    ),
    (_machine(3), [], r"FIRMWARE\.elf: \S*rtos\.elf is a 32-bit ELF file for EM_386"),
    (
        _dwarf_version,
        [],
        r"rtos\.elf: its DWARF debug information is damaged: DWARFError: Expected supported "
        r"DWARF version\. Got '133'",
    ),
    (_flipped_abbrev, [], r"rtos\.elf: its DWARF debug information is damaged: "),
    (
        _huge_section,
        [],
        r"FIRMWARE\.elf: \S*rtos\.elf: section 2 claims 4294967280 bytes at offset \d+, past "
        r"the end of the file",
    ),
]


@pytest.mark.parametrize(
    ("damage", "extra", "message"), STACKS_CASES, ids=[c[0].__name__ for c in STACKS_CASES]
)
def test_stacks_refuses_bad_firmware_files_in_one_line(
    stacks_dir: Path,
    capsys: pytest.CaptureFixture[str],
    damage: Callable[[Path], None],
    extra: list[str],
    message: str,
) -> None:
    damage(stacks_dir)
    extra = [str(stacks_dir / "hints.yaml") if a == "HINTS" else a for a in extra]
    elf, board = stacks_dir / "rtos.elf", stacks_dir / "board.yaml"
    line = cli_error(capsys, "stacks", elf, "--board", board, *extra)
    assert re.search(message, line), line


# -- outputs ----------------------------------------------------------------------------------


def test_no_output_of_stacks_may_name_an_input_or_a_file_memplace_did_not_write(
    stacks_dir: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    elf, board = stacks_dir / "rtos.elf", stacks_dir / "board.yaml"
    before = {p.name: p.read_bytes() for p in stacks_dir.iterdir() if p.is_file()}
    notes = stacks_dir / "notes.txt"
    notes.write_text("mine\n")
    refusals = [
        (["--console", str(elf), "--run"], f"--console: {elf} is an input of this command"),
        (["--junit", str(board)], f"--junit: {board} is an input of this command"),
        (["--sarif", str(elf)], f"--sarif: {elf} is an input of this command"),
        (
            ["--junit", str(notes)],
            f"--junit: {notes} exists and memplace did not write it; name a new file or remove it",
        ),
        (
            ["--junit", str(stacks_dir / "r.xml"), "--sarif", str(stacks_dir / "r.xml")],
            f"--sarif: {stacks_dir / 'r.xml'} is also named by --junit",
        ),
        (["--sarif", "/dev/null"], "--sarif: /dev/null is not a regular file memplace wrote"),
    ]
    for extra, message in refusals:
        line = cli_error(capsys, "stacks", elf, "--board", board, *extra)
        assert line.startswith(f"memplace: error: {message}"), line
    assert {p.name: p.read_bytes() for p in stacks_dir.iterdir() if p.name in before} == before
    assert notes.read_text() == "mine\n"
    assert sorted(p.name for p in stacks_dir.iterdir()) == sorted([*before, "notes.txt"])
    # What memplace wrote it may write again: the reports of the last run are replaced.
    reports = ["--junit", str(stacks_dir / "r.xml"), "--sarif", str(stacks_dir / "r.sarif")]
    for _ in range(2):
        code, _, err = run_cli(capsys, "stacks", elf, "--board", board, *reports)
        assert code == 1 and err == "", err  # the example's tx task is over its budget
    assert (stacks_dir / "r.xml").read_text().count("<testsuite ") == 1
    assert not [p for p in stacks_dir.iterdir() if p.name.startswith(".")]


def test_tflm_never_writes_over_its_board(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "m.tflite"
    model.write_bytes(
        build([Sub([T("x", [1, 4]), T("y", [1, 4])], [Op(B.ADD, [0, 0], [1])], [0], [1])])
    )
    board = tmp_path / "board.yaml"
    board.write_text(f"memplace: board/v1\nextends: {BOARD}\nname: mine\n")
    text = board.read_text()
    line = cli_error(capsys, "tflm", model, "--board", board, "--out", board)
    never = "is an input of this command; memplace never writes over what it reads"
    assert line == f"memplace: error: --out: {board} {never}"
    line = cli_error(capsys, "tflm", model, "--board", BOARD, "--out", model)
    assert line.endswith(
        f"--out: {model} is an input of this command; memplace never writes over what it reads"
    )
    assert board.read_text() == text
    assert sorted(p.name for p in tmp_path.iterdir()) == ["board.yaml", "m.tflite"]


def test_plan_svg_is_refused_over_its_workload(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from memplace.resources import demo_workload

    workload = tmp_path / "w.yaml"
    shutil.copy(demo_workload(), workload)
    line = cli_error(capsys, "plan", BOARD, workload, "--svg", workload)
    assert line.endswith(
        f"--svg: {workload} is an input of this command; memplace never writes over what it reads"
    )
    svg = tmp_path / "plan.svg"
    for _ in range(2):  # a picture memplace drew it draws again
        assert run_cli(capsys, "plan", BOARD, workload, "--svg", svg)[0] == 0
    assert svg.read_text().startswith("<svg")


def test_template_in_a_place_no_one_may_write_is_the_users_to_fix(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = cli_error(capsys, "template", BOARD, "--out", "/sys/memplace-template")
    assert line == "memplace: error: /sys/memplace-template: Operation not permitted"


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_template_in_a_read_only_folder_is_refused_before_any_work(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    folder = tmp_path / "ro"
    folder.mkdir(mode=0o555)
    line = cli_error(capsys, "template", BOARD, "--out", folder / "t")
    assert line.endswith(f"argument --out: {folder / 't'}: cannot write in {folder} (read-only)")


# -- memplace tflm and plan: TFLite models ------------------------------------------------


def _fanning_ifs(depth: int) -> bytes:
    """Subgraph k's IF runs subgraph k + 1 as both branches: 2**depth walks of the last."""

    def branch(k: int) -> Sub:
        if k == depth:
            return Sub([T("in", [1, 4]), T("out", [1, 4])], [Op(B.ADD, [0, 0], [1])], [0], [1])
        ops = [Op(B.IF, [1, 0], [2], [k + 1, k + 1])]
        return Sub([T("in", [1, 4]), T("flag", [1], BOOL), T("out", [1, 4])], ops, [0], [2])

    main = Sub(
        [T("x", [1, 4]), T("flag", [1], BOOL), T("y", [1, 4])],
        [Op(B.IF, [1, 0], [2], [1, 1])],
        [0, 1],
        [2],
    )
    return build([main, *(branch(k) for k in range(1, depth + 1))])


def _call_once_chain(length: int) -> bytes:
    main = Sub(
        [T("x", [1, 4]), T("y", [1, 4])],
        [Op(B.CALL_ONCE, [], [], [1]), Op(B.ADD, [0, 0], [1])],
        [0],
        [1],
    )
    chain = [Sub([], [Op(B.CALL_ONCE, [], [], [k + 1])], [], []) for k in range(1, length)]
    last = Sub([T("a", [1, 4]), T("b", [1, 4])], [Op(B.ADD, [0, 0], [1])], [], [])
    return build([main, *chain, last])


def _one_add(shape: list[int], code: int = B.ADD) -> bytes:
    return build([Sub([T("x", shape), T("y", shape)], [Op(code, [0, 0], [1])], [0], [1])])


MODEL_CASES = {
    "fanning_ifs": (
        _fanning_ifs(40),
        "walking its subgraphs as TFLite Micro does opens more than 100000 allocation scopes "
        "(a subgraph is walked once per call, so calls that fan out multiply); memplace plans "
        "at most 100000",
    ),
    "call_once_chain": (
        _call_once_chain(3000),
        "operator 0 of subgraph 99 (CALL_ONCE) calls subgraph 100, nesting calls 100 deep; "
        "memplace follows subgraph calls at most 100 deep",
    ),
    "shape_2_31": (
        _one_add([65536, 32768]),
        "tensor 0 (x) of shape [65536, 32768] holds 2147483648 elements in 8589934592 bytes; "
        "TFLite counts both in 32-bit integers (at most 2147483647)",
    ),
    "shape_zero": (
        _one_add([0, 4]),
        "none of its tensors takes arena memory (each is a constant, a variable or empty, of "
        "a dimension of 0): nothing to plan",
    ),
    "tensor_index": (
        build([Sub([T("x", [1, 4]), T("y", [1, 4])], [Op(B.ADD, [0, 7], [1])], [0], [1])]),
        "operator 0 (ADD) names tensor 7; its subgraph has 2",
    ),
}


@pytest.mark.parametrize("case", sorted(MODEL_CASES))
def test_tflm_refuses_bad_models_in_one_line(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    data, message = MODEL_CASES[case]
    model = tmp_path / f"{case}.tflite"
    model.write_bytes(data)
    line = cli_error(capsys, "tflm", model, "--board", BOARD, "--out", tmp_path / "out.tflite")
    assert line == f"memplace: error: {model}: {message}"
    assert sorted(p.name for p in tmp_path.iterdir()) == [model.name]


@pytest.mark.parametrize(
    ("make", "size"), [(_fanning_ifs, 40), (_call_once_chain, 3000)], ids=["ifs", "chain"]
)
def test_the_subgraph_walk_is_counted_once_per_subgraph(
    make: Callable[[int], bytes], size: int
) -> None:
    """2**40 walks of a subgraph, or 3,000 nested calls, are refused after work linear in
    the model's size: a model twice as large costs about twice the line events (the same on
    any machine), where a walk per call would cost 2**20 times more."""
    small, large = make(size // 2), make(size)
    work = [
        _work(lambda data=data: tflm_graph.read_graph(data, "m.tflite")) for data in (small, large)
    ]
    assert work[1] < 2.5 * work[0], work


def test_a_buffer_index_past_the_models_buffers_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "m.tflite"
    data = bytearray(_one_add([1, 4]))
    root = tflm_graph.schema().Model.GetRootAs(bytes(data), 0)
    tensor = root.Subgraphs(0).Tensors(0)
    field = tensor._tab.Offset(8)  # Tensor.buffer (fields: shape, type, buffer)
    struct.pack_into("<I", data, tensor._tab.Pos + field, 999)
    model.write_bytes(bytes(data))
    line = cli_error(capsys, "tflm", model, "--board", BOARD, "--out", tmp_path / "o.tflite")
    assert line == f"memplace: error: {model}: tensor 0 (x) names buffer 999; the model has 3"


@pytest.mark.parametrize("case", ["shape_2_31", "shape_zero"])
def test_plan_names_the_model_of_a_bad_shape(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "m.tflite"
    model.write_bytes(MODEL_CASES[case][0])
    line = cli_error(capsys, "plan", BOARD, model)
    assert line.startswith(f"memplace: error: {model}: ")
    assert (
        "tensor 0 (x) of shape [65536, 32768]" in line or "every shape has a dimension of 0" in line
    )


@pytest.mark.skipif(not runtime.available(), reason="the tflite-micro package is not installed")
def test_a_model_the_runtime_cannot_run_is_the_models_fault(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A custom operator TFLite Micro has no kernel for: memplace plans it, the host runtime
    cannot run it, and the error names the model (not a temporary file)."""
    model = tmp_path / "custom.tflite"
    model.write_bytes(_one_add([1, 4], B.CUSTOM))
    line = cli_error(capsys, "tflm", model, "--board", BOARD, "--out", tmp_path / "o.tflite")
    assert line.startswith(
        f"memplace: error: {model}: TFLite Micro's host runtime cannot run the model: "
    )
    assert "planned.tflite" not in line


@pytest.mark.parametrize("value", ["inf", "nan", "-1", "0"])
def test_tflm_time_limit_is_a_positive_finite_number(
    value: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "m.tflite"
    model.write_bytes(_one_add([1, 4]))
    argv = ["tflm", model, "--board", BOARD, "--out", tmp_path / "o.tflite"]
    line = cli_error(capsys, *argv, f"--time-limit={value}")
    assert line.endswith(
        f"argument --time-limit: expected a positive number of seconds, got {value!r}"
    )


def _flips(data: bytes, seed: int) -> bytes:
    rng = random.Random(seed)
    flipped = bytearray(data)
    for _ in range(rng.randint(1, 8)):
        flipped[rng.randrange(len(flipped))] ^= 1 << rng.randrange(8)
    return bytes(flipped)


def test_byte_flips_of_a_model_never_end_in_a_traceback(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """300 seeded byte flips of a model of two subgraphs through `memplace tflm` (memplace's
    own reader and planner; the host runtime is left out, its answer has a test above), and
    of a model of one through `memplace plan` (the importer): each one planned, or refused
    in one line naming the model with exit 2 (or, from `plan`, a tensor a flipped shape
    made too large for any pool: exit 1, a buffer that fits nowhere)."""
    monkeypatch.setattr(runtime, "available", lambda: False)
    original = _fanning_ifs(1)
    outcomes: dict[int, int] = {}
    for seed in range(300):
        model = tmp_path / "m.tflite"
        model.write_bytes(_flips(original, seed))
        out = tmp_path / f"o{seed}.tflite"
        code, _, err = run_cli(capsys, "tflm", model, "--board", BOARD, "--out", out)
        outcomes[code] = outcomes.get(code, 0) + 1
        assert code in (0, 2), (seed, err)
        if code == 2:
            assert len(err.strip().splitlines()) == 1 and err.startswith(
                f"memplace: error: {model}: "
            ), (seed, err)
    assert outcomes.get(2, 0) > 10 and outcomes.get(0, 0) > 10, outcomes
    single = _one_add([2, 8])
    outcomes = {}
    for seed in range(300):
        model.write_bytes(_flips(single, seed))
        code, _, err = run_cli(capsys, "plan", BOARD, model)
        outcomes[code] = outcomes.get(code, 0) + 1
        assert code in (0, 1, 2), (seed, err)  # 1: a flipped shape's tensor fits nowhere
        if code:
            assert len(err.strip().splitlines()) == 1, (seed, err)
        if code == 2:
            assert len(err.strip().splitlines()) == 1 and str(model) in err, (seed, err)
    assert outcomes.get(2, 0) > 10 and outcomes.get(0, 0) > 10, outcomes


# -- Model Library Format archives -----------------------------------------------------------


def _archive(path: Path, **members: str) -> Path:
    return write_archive(path, {**v5_members(), **members})


def _metadata(change: Callable[[dict[str, Any]], None]) -> str:
    data = metadata_v5()
    change(data)
    return json.dumps(data)


def _truncated(compress: Callable[[bytes], bytes], suffix: str) -> Callable[[Path], Path]:
    def make(folder: Path) -> Path:
        whole = _archive(folder / "whole.tar").read_bytes()
        path = folder / f"cut{suffix}"
        path.write_bytes(compress(whole)[:-200])
        return path

    return make


def _members(**members: str) -> Callable[[Path], Path]:
    return lambda folder: _archive(folder / "m.tar", **members)


HEADER = "codegen/host/include/tvmgen_default.h"
MLF_CASES: dict[str, tuple[Callable[[Path], Path], str]] = {
    "truncated_gzip": (
        _truncated(gzip.compress, ".tar.gz"),
        "ends before its last member does: the archive is truncated",
    ),
    "truncated_tar": (
        _truncated(lambda whole: whole[: len(whole) // 2 + 200], ".tar"),
        "ends before its last member does: the archive is truncated",
    ),
    "truncated_xz": (
        _truncated(lzma.compress, ".tar.xz"),
        "ends before its last member does: the archive is truncated",
    ),
    "long_number": (
        _members(
            **{
                "metadata.json": json.dumps(metadata_v5()).replace(
                    '"workspace_size_bytes": 32', '"workspace_size_bytes": ' + "9" * 5000
                )
            }
        ),
        "metadata.json: a number of 5000 digits; at most 40 are read",
    ),
    "nested": (
        _members(**{"metadata.json": "[" * 100_000 + "]" * 100_000}),
        "metadata.json is nested too deeply",
    ),
    "mistyped_main": (
        _members(
            **{"metadata.json": _metadata(lambda m: m["memory"]["functions"]["main"].append(5))}
        ),
        "metadata.json: memory.functions.main lists JSON objects only",
    ),
    "mistyped_executors": (
        _members(**{"metadata.json": _metadata(lambda m: m.update(executors="aot"))}),
        "metadata.json: 'executors' is 'aot', not a list of names",
    ),
}


@pytest.mark.parametrize("case", sorted(MLF_CASES))
def test_bad_archives_are_refused_in_one_line(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    make, message = MLF_CASES[case]
    archive = make(tmp_path)
    line = cli_error(capsys, "plan", BOARD, archive)
    assert line.startswith(f"memplace: error: MODEL: {archive}") and message in line, line


HOSTILE_TEXT: dict[str, tuple[Callable[[int], str], str]] = {
    "relay_heads": (lambda n: "def @main(" * n + ")" * n, "src/relay.txt"),
    "relay_parens": (lambda n: "def @main(" + ") " * n, "src/relay.txt"),
    "struct_heads": (lambda n: "struct tvmgen_default_inputs {" * n, HEADER),
    "run_heads": (lambda n: "int32_t tvmgen_default_run(" * n, HEADER),
}


@pytest.mark.parametrize("case", sorted(HOSTILE_TEXT))
def test_archive_text_is_read_in_one_pass(
    case: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Text that made a regular expression try every start against the rest of the text
    (20,000 starts: an hour) is read in work linear in its length: twice the text, about
    twice the line events of the reader, whose patterns each run once."""
    text, member = HOSTILE_TEXT[case]
    archives = []
    for n in (10_000, 20_000):
        archives.append(_archive(tmp_path / f"m{n}.tar", **{member: text(n)}))
    line = cli_error(capsys, "plan", BOARD, archives[1])
    assert line.startswith(f"memplace: error: MODEL: {archives[1]}: ")
    work = [_work(lambda a=archive: mlf.read_mlf(a)) for archive in archives]
    assert work[1] < 2.5 * work[0], work


# -- boards -------------------------------------------------------------------------------------


def test_two_tasks_of_one_name_are_refused_where_the_second_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = tmp_path / "board.yaml"
    board.write_text(
        RTOS_BOARD
        + "  again: {core: cpu0, kind: task, entry: vAgain, task: Rx, stack: {size: 64}}\n"
    )
    line = cli_error(capsys, "boards", "show", board)
    row = RTOS_BOARD.count("\n") + 1
    assert line == (
        f"memplace: error: {board}:{row}:56: contexts.again.task: context 'rx' on core 'cpu0' "
        "is already the RTOS task 'Rx'; give each task a name of its own (`task: NAME`)"
    )


@pytest.mark.parametrize(
    ("context", "column", "message"),
    [
        (
            "  bad: {core: cpu0, kind: isr, entry: main, irq: 3, priority: 64}",
            39,
            "contexts.bad.entry: context 'main' on core 'cpu0' already starts at main(); give "
            "each context an entry of its own",
        ),
        (
            "  main: {irq: 3}",
            10,
            "contexts.main.irq: irq is the device interrupt line of an isr; a thread context "
            "has none (remove it, or set kind: isr)",
        ),
    ],
)
def test_an_irq_on_a_main_entry_is_located(
    context: str, column: int, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = tmp_path / "board.yaml"
    board.write_text(f"memplace: board/v1\nextends: {BOARD}\nname: b\ncontexts:\n{context}\n")
    line = cli_error(capsys, "boards", "show", board)
    assert line == f"memplace: error: {board}:5:{column}: {message}"


# -- memplace serve ---------------------------------------------------------------------------


def _corpus() -> Iterator[bytes]:
    """Requests no reply may be lost to: ids and parameters of every JSON kind, numbers past
    a float's range, values JSON has no word for, and seeded random lines."""
    info = '"jsonrpc": "2.0", "method": "server_info_query", "params": {"tvm_version": ""}'
    for request_id in [
        "1e400",
        "-1e400",
        "1e308",
        "-0.0",
        "NaN",
        "Infinity",
        '{"a": 1e400}',
        "[1, 2]",
        "true",
        '"x"',
        "null",
        "9" * 4000,
        "9" * 5000,
        "1.5",
    ]:
        yield f'{{{info}, "id": {request_id}}}'.encode()
    for params in [
        '{"tvm_version": 1e400}',
        '{"n": 1e400, "timeout_sec": -1e400}',
        "[1e400]",
        '{"options": {"verbose": 1e400}}',
        "1e400",
        '"params"',
        "[[[[[]]]]]",
    ]:
        for method in ["server_info_query", "read_transport", "build", "nope"]:
            request = f'"jsonrpc": "2.0", "method": "{method}", "params": {params}, "id": 7'
            yield f"{{{request}}}".encode()
    yield b"[" * 100_000 + b"]" * 100_000
    yield b'[{"jsonrpc": "2.0", "method": "nope", "id": 1e400}, 1e400]'
    yield b"\xff\xfe"
    rng = random.Random(30)
    for _ in range(60):
        yield bytes(rng.randrange(32, 127) for _ in range(rng.randint(1, 60)))


def test_the_server_answers_every_request_of_the_corpus(tmp_path: Path) -> None:
    lines = list(_corpus())
    done = subprocess.run(
        [sys.executable, "-m", "memplace.cli", "serve"],
        input=b"".join(line + b"\n" for line in lines),
        capture_output=True,
        cwd=tmp_path,
        timeout=PATIENCE,
    )
    assert done.returncode == 0, done.stderr.decode()[-2000:]
    replies = done.stdout.splitlines()
    assert len(replies) == len(lines)
    for line, raw in zip(lines, replies, strict=True):
        reply = json.loads(raw)
        for item in reply if isinstance(reply, list) else [reply]:
            assert item["jsonrpc"] == "2.0" and "id" in item, (line[:80], item)
            assert ("result" in item) != ("error" in item), (line[:80], item)
    first = json.loads(replies[0])
    assert first["id"] is None and first["error"]["code"] == -32600


def test_the_server_refuses_one_descriptor_for_both_directions(
    capsys: pytest.CaptureFixture[str],
) -> None:
    line = cli_error(capsys, "serve", "--read-fd", "0", "--write-fd", "0")
    assert line == (
        "memplace: error: serve: --read-fd and --write-fd are both 0: requests come in on one "
        "pipe and replies go out on another"
    )


# -- memplace stacks --run: what the firmware asks of the machine ----------------------------

EXITING = """\
extern unsigned __stack_top;
int main(void);

void Reset_Handler(void)
{
    register unsigned call __asm__("r0") = 0x20; /* SYS_EXIT_EXTENDED */
    register unsigned block __asm__("r1") = 0xFFFFFFF0u; /* no memory there */
    main();
    __asm__ volatile("bkpt 0xab" : : "r"(call), "r"(block));
    for (;;) {
    }
}

int main(void) { return 0; }

__attribute__((section(".vectors"), used)) void (*const vectors[16])(void) = {
    (void (*)(void))&__stack_top, Reset_Handler,
};
"""


@pytest.mark.qemu
def test_an_exit_whose_parameter_block_is_nowhere_is_the_firmwares_fault(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "fw.c").write_text(EXITING)
    gcc = process.find_tool("arm-none-eabi-gcc")
    flags = ["-mcpu=cortex-m3", "-mthumb", "-O1", "-ffreestanding"]
    argv = [gcc, *flags, "-fstack-usage", "-fcallgraph-info=su,da", "-c", "fw.c", "-o", "fw.o"]
    assert process.run(argv, timeout=PATIENCE, cwd=tmp_path).returncode == 0
    argv = [gcc, *flags, "-nostdlib", "-T", str(SOURCES / "link.ld"), "fw.o", "-o", "fw.elf"]
    assert process.run(argv, timeout=PATIENCE, cwd=tmp_path).returncode == 0
    board = tmp_path / "board.yaml"
    board.write_text("memplace: board/v1\nextends: qemu-mps2-an385\nname: exiting\n")
    elf = tmp_path / "fw.elf"
    line = cli_error(capsys, "stacks", elf, "--board", board, "--run", "--timeout", f"{PATIENCE:g}")
    assert line == (
        "memplace: error: FIRMWARE.elf: the firmware exits through semihosting "
        "(SYS_EXIT_EXTENDED) with its parameter block at 0xfffffff0, which is no memory of "
        "the machine"
    )


def test_a_reply_that_cannot_be_written_becomes_an_internal_error() -> None:
    """The last guard before a reply leaves: whatever a reply holds, a line of JSON goes
    out and the server goes on."""
    from memplace.carried import server

    line = server._encode({"jsonrpc": "2.0", "id": float("inf"), "result": None})
    reply = json.loads(line)
    assert reply["id"] is None and reply["error"]["code"] == -32603
    assert "Out of range float values are not JSON compliant" in reply["error"]["message"]


def test_import_replaces_only_a_workload_it_wrote(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "m.tflite"
    model.write_bytes(_one_add([1, 4]))
    mine = tmp_path / "mine.yaml"
    mine.write_text("x: 1\n")
    never = "is an input of this command; memplace never writes over what it reads"
    line = cli_error(capsys, "import", model, "--out", model, "--force")
    assert line == f"memplace: error: --out: {model} {never}"
    line = cli_error(capsys, "import", model, "--out", mine, "--force")
    assert line == (
        f"memplace: error: --out: {mine} exists and memplace did not write it; name a new "
        "file or remove it"
    )
    assert mine.read_text() == "x: 1\n" and model.read_bytes() == _one_add([1, 4])
    workload = tmp_path / "w.yaml"
    for _ in range(2):  # its own workload it replaces when told to
        assert run_cli(capsys, "import", model, "--out", workload, "--force")[0] == 0
