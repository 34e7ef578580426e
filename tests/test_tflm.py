"""`memplace tflm`: the planned models run on the `tflite-micro` host runtime.

Every number here comes from `memplace tflm ... --json` and is checked against the runtime
itself: its outputs, its arena use (what its recording allocator prints), and the smallest
arena it accepts, found here by bisection.
"""

from __future__ import annotations

import faulthandler
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tflite

from memplace.cli import main
from memplace.tflm import runtime as tflm_runtime
from memplace.tflm.greedy import Request, conflicts, simulate
from test_import_tflite import ADD, Op, T, build_tflite

SVDF = tflite.BuiltinOperator.SVDF
SHARED = Path(__file__).resolve().parents[2] / "shared" / "models"
MODELS = sorted([*SHARED.glob("mlperf-tiny/*.tflite"), *SHARED.glob("tflite-micro/*.tflite")])
BOARD = "qemu-mps3-an547"
TIME_LIMIT = "600"
"""Far above what any of these plans takes: the plans stop at their work budgets, never at
the clock, so they are the same under any load."""

micro = pytest.importorskip("tflite_micro", reason="the tflite-micro package is not installed")
pytestmark = pytest.mark.skipif(len(MODELS) < 9, reason="../shared/models is incomplete")


@pytest.fixture(scope="module")
def planned(tmp_path_factory: pytest.TempPathFactory) -> dict[str, tuple[Path, dict[str, Any]]]:
    """Every model planned by the command, reference kernels: (planned model, its JSON)."""
    out = tmp_path_factory.mktemp("planned")
    results = {}
    for model in MODELS:
        target = out / model.name
        argv = ["tflm", str(model), "--board", BOARD, "--out", str(target), "--json"]
        results[model.stem] = (target, _json([*argv, "--time-limit", TIME_LIMIT]))
    return results


def _json(argv: list[str]) -> dict[str, Any]:
    import contextlib
    import io

    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = main(argv)
    assert code == 0, stdout.getvalue()
    result: dict[str, Any] = json.loads(stdout.getvalue())
    return result


# -- the host runtime, asked directly -----------------------------------------------------

_USAGE = """
import sys
from tflite_micro import runtime
data = open(sys.argv[1], "rb").read()
runtime.Interpreter.from_bytes(data, arena_size=1 << 23).print_allocations()
"""


def _usage(model: Path) -> tuple[int, int]:
    """(head, tail) as the runtime's recording allocator prints them."""
    done = subprocess.run(
        [sys.executable, "-c", _USAGE, str(model)], capture_output=True, text=True, check=True
    )
    found = dict(re.findall(r"Arena allocation (head|tail) (\d+) bytes", done.stderr))
    return int(found["head"]), int(found["tail"])


def _accepts(data: bytes, arena: int) -> bool:
    """Whether the interpreter takes this arena; in a child, as the runtime may crash."""
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        faulthandler.disable()  # a crash here is an answer, not news
        os.dup2(os.open(os.devnull, os.O_WRONLY), 2)
        try:
            micro.runtime.Interpreter.from_bytes(data, arena_size=arena)
        except RuntimeError:
            os._exit(1)
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0


def _smallest_arena(data: bytes) -> int:
    """Coarse steps of 4K up to a working arena, then bisection to the byte."""
    low, high = 0, 4096
    while not _accepts(data, high):
        low, high = high, high + 4096
    while high - low > 1:
        middle = (low + high) // 2
        low, high = (low, middle) if _accepts(data, middle) else (middle, high)
    return high


def _outputs(data: bytes, seed: int, runs: int = 2) -> list[np.ndarray]:
    """Outputs of `runs` invocations on seeded random inputs (state carries over)."""
    interpreter = micro.runtime.Interpreter.from_bytes(data, arena_size=1 << 22)
    model = tflite.Model.GetRootAs(data, 0).Subgraphs(0)
    rng = np.random.default_rng(seed)
    results = []
    for _ in range(runs):
        for k in range(model.InputsLength()):
            details = interpreter.get_input_details(k)
            dtype, shape = details["dtype"], details["shape"]
            if np.issubdtype(dtype, np.integer):
                info = np.iinfo(dtype)
                values = rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)
            else:
                values = rng.standard_normal(shape).astype(dtype)
            interpreter.set_input(values, k)
        interpreter.invoke()
        results += [interpreter.get_output(k).copy() for k in range(model.OutputsLength())]
    return results


def _offline(data: bytes) -> list[list[int]]:
    """Every OfflineMemoryAllocation entry's int32 words."""
    root = tflite.Model.GetRootAs(data, 0)
    entries = []
    for k in range(root.MetadataLength()):
        if root.Metadata(k).Name() == b"OfflineMemoryAllocation":
            words = root.Buffers(root.Metadata(k).Buffer()).DataAsNumpy().view("<i4")
            entries.append([int(w) for w in words])
    return entries


def _buffer_starts(data: bytes) -> list[int]:
    """Where each buffer's data starts in the file (-1 when it holds none)."""
    root = tflite.Model.GetRootAs(data, 0)
    starts = []
    for k in range(root.BuffersLength()):
        buffer = root.Buffers(k)
        starts.append(buffer.DataAsNumpy().ctypes.data - _base(data) if buffer.DataLength() else -1)
    return starts


def _base(data: bytes) -> int:
    return int(np.frombuffer(data, dtype=np.uint8).ctypes.data)


# -- the planned models on the runtime ----------------------------------------------------


@pytest.mark.parametrize("model", MODELS, ids=[m.stem for m in MODELS])
def test_planned_model_runs_bit_identical(model: Path, planned: dict[str, Any]) -> None:
    out, _ = planned[model.stem]
    original, changed = model.read_bytes(), out.read_bytes()
    for seed in (0, 1):
        want, got = _outputs(original, seed), _outputs(changed, seed)
        assert len(want) == len(got)
        for a, b in zip(want, got, strict=True):
            assert a.dtype == b.dtype and np.array_equal(a, b)


@pytest.mark.parametrize("model", MODELS, ids=[m.stem for m in MODELS])
def test_the_runtime_uses_memplaces_arena(model: Path, planned: dict[str, Any]) -> None:
    out, result = planned[model.stem]
    head, tail = _usage(out)
    assert head == result["activations"], "the runtime's planned part is memplace's"
    original_head, _ = _usage(model)
    assert result["tflm_activations"] == original_head, "the runtime's own planner, restated"
    assert result["activations"] <= result["tflm_activations"]
    assert result["lower_bound"] <= result["activations"]
    host = result["host"]
    assert host["measured"] and host["word_bits"] == 64 and host["kernels"] == "reference"
    assert (host["activations"], host["persistent"]) == (head, tail)
    target = result["target"]
    assert target["word_bits"] == 32 and target["estimated"] == bool(target["margin"])
    assert target["basis"].startswith("from TFLite Micro's allocator rules")
    assert result["persistent"] < tail, "a 32-bit target's records are smaller"
    assert result["arena"] >= result["activations"] + result["persistent"]


@pytest.mark.parametrize("model", MODELS, ids=[m.stem for m in MODELS])
def test_printed_arena_works_and_is_near_the_smallest(model: Path, planned: dict[str, Any]) -> None:
    out, result = planned[model.stem]
    data = out.read_bytes()
    smallest = _smallest_arena(data)
    arena = result["host"]["arena"]
    assert _accepts(data, arena)
    assert smallest <= arena <= smallest + 64


@pytest.mark.parametrize("model", MODELS, ids=[m.stem for m in MODELS])
def test_the_arena_rule_is_safe_on_the_host(model: Path, planned: dict[str, Any]) -> None:
    """The rule that gives the target's arena, with the host's word size, never falls short
    of what the host runtime needs, and overshoots by little."""
    _, result = planned[model.stem]
    host = result["host"]
    assert host["arena"] <= host["arena_by_rule"] <= host["arena"] + 256


def test_vww_arena_shrinks(planned: dict[str, Any]) -> None:
    _, result = planned["vww_96_int8"]
    assert result["tflm_activations"] == 73728
    assert result["activations"] == 55296 and result["optimal"]
    assert result["host"]["arena"] <= 85240


@pytest.mark.parametrize("model", MODELS, ids=[m.stem for m in MODELS])
def test_offsets_cover_every_tensor_and_buffers_keep_alignment(
    model: Path, planned: dict[str, Any]
) -> None:
    out, result = planned[model.stem]
    original, changed = model.read_bytes(), out.read_bytes()
    (words,) = _offline(changed)
    graph = tflite.Model.GetRootAs(original, 0).Subgraphs(0)
    count = graph.TensorsLength()
    assert words[:3] == [1, 0, count] and len(words) == 3 + count
    offsets = words[3:]
    assert all(o == -1 or (o >= 0 and o % 16 == 0) for o in offsets)
    for t, offset in enumerate(offsets):
        if graph.Tensors(t).IsVariable():
            assert offset == -1, "state stays with the runtime"
    assert sum(o >= 0 for o in offsets) == result["planned_tensors"]
    before, after = _buffer_starts(original), _buffer_starts(changed)
    assert len(after) == len(before) + 1
    for old, new in zip(before, after, strict=False):
        assert (old == -1) == (new == -1)
        if old >= 0:
            assert new % 16 == old % 16, "a weight buffer moved off its alignment"
    assert after[-1] % 16 == 0, "the offsets are 16-byte aligned"
    aligned = sum(1 for s in before if s >= 0 and s % 16 == 0)
    assert aligned == sum(1 for s in after[:-1] if s >= 0 and s % 16 == 0)


def test_an_existing_plan_is_replaced_and_the_input_is_kept(tmp_path: Path) -> None:
    model = SHARED / "mlperf-tiny" / "kws_ref_model.tflite"
    digest = hashlib.sha256(model.read_bytes()).hexdigest()
    first, second = tmp_path / "first.tflite", tmp_path / "second.tflite"
    base = ["--board", BOARD, "--time-limit", TIME_LIMIT, "--json"]
    one = _json(["tflm", str(model), "--out", str(first), *base])
    two = _json(["tflm", str(first), "--out", str(second), *base])
    assert hashlib.sha256(model.read_bytes()).hexdigest() == digest
    assert len(_offline(second.read_bytes())) == 1
    assert _offline(second.read_bytes()) == _offline(first.read_bytes())
    assert two["tflm_activations"] == one["activations"], "the runtime kept the model's plan"
    assert np.array_equal(_outputs(model.read_bytes(), 3)[0], _outputs(second.read_bytes(), 3)[0])


# -- CMSIS-NN scratch per core extension ----------------------------------------------------

KWS = SHARED / "mlperf-tiny" / "kws_ref_model.tflite"
# kws: conv 10x4 over 49x10x1 (40 im2col columns), four 3x3 depthwise convolutions of 64
# channels, 1x1 convolutions, an average pool of 64 channels, a fully connected layer.
CMSIS_KWS = {
    # Cortex-M3: im2col of int16, two columns: 2 * 40 * 2 bytes.
    "qemu-mps2-an385": ("none", [(1, 160, "im2col")]),
    # Cortex-M4: the same, and the average pool's int32 sums per channel; 3x3 depthwise
    # convolutions with padding <= 1 take CMSIS-NN's 3x3 kernel, which asks none.
    "qemu-mps2-an386": ("dsp", [(1, 160, "im2col"), (10, 256, "int32 sums per channel")]),
    # Cortex-M55: im2col of int8 padded to 16 (4 * 48), each depthwise a block of
    # 4 * 124 channels * 3 * 3.
    BOARD: (
        "mve",
        [(1, 192, "im2col")] + [(s, 4464, "depthwise input block") for s in (2, 4, 6, 8)],
    ),
}


@pytest.mark.parametrize("board", sorted(CMSIS_KWS))
def test_cmsis_nn_scratch_per_core_extension(board: str, tmp_path: Path) -> None:
    out = tmp_path / "kws.tflite"
    argv = ["tflm", str(KWS), "--board", board, "--kernels", "cmsis-nn", "--out", str(out)]
    result = _json([*argv, "--json", "--time-limit", TIME_LIMIT])
    extension, scratch = CMSIS_KWS[board]
    assert result["extension"] == extension and result["kernels"] == "cmsis-nn"
    assert [(s["step"], s["bytes"], s["why"]) for s in result["scratch"]] == scratch
    assert result["unmodelled"] == []
    if extension == "mve":
        # Scratch lives for its operator's step: the area grows to what such a build needs.
        assert result["activations"] == result["tflm_activations"] == 20464
    else:
        assert result["activations"] == 16000


def test_reference_kernels_ask_for_svdf_and_lstm_scratch(planned: dict[str, Any]) -> None:
    _, keyword = planned["keyword_scrambled"]
    assert len(keyword["scratch"]) == 14
    assert {s["why"] for s in keyword["scratch"]} == {"svdf state products", "svdf output sums"}
    _, lstm = planned["trained_lstm_int8"]
    assert [s["bytes"] for s in lstm["scratch"]] == [40] * 4  # 1 x 20 int16 cells
    _, vww = planned["vww_96_int8"]
    assert vww["scratch"] == []


def test_an_operator_not_modelled_is_named(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = SHARED / "tflite-micro" / "trained_lstm_int8.tflite"
    argv = ["tflm", str(model), "--board", BOARD, "--kernels", "cmsis-nn"]
    assert main([*argv, "--out", str(tmp_path / "x.tflite"), "--time-limit", TIME_LIMIT]) == 0
    out = capsys.readouterr().out
    assert "warning: these operators may ask for scratch memplace does not model: " in out
    assert "unidirectional_sequence_lstm_0" in out


def test_text_output_names_target_and_host(
    planned: dict[str, Any], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = SHARED / "mlperf-tiny" / "vww_96_int8.tflite"
    argv = ["tflm", str(model), "--board", BOARD, "--out", str(tmp_path / "v.tflite")]
    assert main([*argv, "--time-limit", TIME_LIMIT]) == 0
    out = capsys.readouterr().out
    _, result = planned["vww_96_int8"]
    give = f"arena {result['arena']} bytes: give this to the MicroInterpreter"
    assert f"{give} (32-bit target)" in out
    assert "64-bit, reference kernels, measured" in out
    assert f"smallest arena {result['host']['arena']}" in out


def test_without_the_runtime_the_target_figures_are_the_same(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, planned: dict[str, Any]
) -> None:
    """The target's figures come from the allocator's rules, not from the host runtime."""
    monkeypatch.setattr(tflm_runtime, "available", lambda: False)
    model = SHARED / "mlperf-tiny" / "vww_96_int8.tflite"
    argv = ["tflm", str(model), "--board", BOARD, "--out", str(tmp_path / "v.tflite")]
    result = _json([*argv, "--json", "--time-limit", TIME_LIMIT])
    assert result["host"] is None
    assert result["target"]["basis"] == "from TFLite Micro's allocator rules"
    _, measured = planned["vww_96_int8"]
    for key in ("activations", "persistent", "arena"):
        assert result[key] == measured[key]


# -- errors -----------------------------------------------------------------------------------


SMALL_BOARD = """\
memplace: board/v1
name: small
cores:
  cpu0: {cpu: cortex-m4, float_abi: hard, layout: {vectors: ram, code: ram, data: ram, load: ram}}
memories:
  ram: {origin: 0x20000000, size: 64K, attrs: rwx, kind: sram, access: [cpu0]}
pools:
  ws: {memory: ram, size: 20K, kind: workspace}
contexts:
  main: {core: cpu0, entry: main, stack: {memory: ram, size: 2K}}
"""
OUT = ["--out", "{tmp}/x.tflite"]


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (
            ["{model}", "--board", BOARD, "--out", "{model}"],
            2,
            "is an input of this command; memplace never writes over",
        ),
        (["{model}", "--board", BOARD, "--out", "{tmp}"], 2, "is a folder; name the model file"),
        (["{model}", "--board", BOARD, "--out", "{tmp}/no/x.tflite"], 2, "--out: no folder"),
        (["{tmp}/none.tflite", "--board", BOARD, *OUT], 2, "MODEL: no model file"),
        (["{tmp}/bad.tflite", "--board", BOARD, *OUT], 2, "bad.tflite: not a TFLite model"),
        (
            ["{model}", "--board", BOARD, "--pool", "nope", "--out", "{tmp}/x.tflite"],
            2,
            "--pool: no workspace pool 'nope' on board qemu-mps3-an547; choose from",
        ),
        (
            ["{model}", "--board", BOARD, "--pool", "itcm_const", "--out", "{tmp}/x.tflite"],
            2,
            "no workspace pool 'itcm_const'",
        ),
        (
            ["{model}", "--board", BOARD, "--kernels", "tvm", "--out", "{tmp}/x.tflite"],
            2,
            "invalid choice: 'tvm'",
        ),
        (["{model}", *OUT], 2, "the following arguments are required: --board"),
        (
            ["{model}", "--board", "{tmp}/small.yaml", "--out", "{tmp}/x.tflite"],
            1,
            "no workspace pool holds the model's arena: ws lacks",
        ),
    ],
)
def test_cli_errors(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    args: list[str],
    code: int,
    message: str,
) -> None:
    model = tmp_path / "kws.tflite"
    model.write_bytes(KWS.read_bytes())
    (tmp_path / "bad.tflite").write_bytes(b"\x00" * 64)
    (tmp_path / "small.yaml").write_text(SMALL_BOARD)
    before = sorted(p.name for p in tmp_path.rglob("*"))
    argv = ["tflm", *(a.format(model=model, tmp=tmp_path) for a in args), "--time-limit", "1"]
    assert main(argv) == code
    err = capsys.readouterr().err
    lines = err.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in err, err
    assert message in lines[0], lines[0]
    assert sorted(p.name for p in tmp_path.rglob("*")) == before, "an error wrote files"
    assert model.read_bytes() == KWS.read_bytes()


# -- the runtime's planner, restated: tables of live ranges ---------------------------------


def test_greedy_places_offline_buffers_first_and_the_rest_largest_first() -> None:
    requests = [
        Request("a", 32, 0, 1),
        Request("b", 64, 1, 2),
        Request("c", 32, 2, 3),
        Request("fixed", 16, 0, 3, offline=64),
    ]
    layout = simulate(requests)
    # fixed keeps 64; b, the largest, takes 0; a and c are each live with b and fixed, so
    # both go above fixed, where they share room (they are never live together).
    assert layout.offsets == (80, 0, 80, 64)
    assert layout.used == 112


def test_greedy_breaks_ties_as_the_runtime_does() -> None:
    """Equal sizes: the buffer added last is placed first."""
    layout = simulate([Request("first", 16, 0, 0), Request("second", 16, 0, 0)])
    assert layout.offsets == (16, 0)


def test_conflicts_name_overlaps_and_bad_offsets() -> None:
    requests = [Request("a", 32, 0, 1), Request("b", 32, 1, 2), Request("c", 32, 3, 3)]
    assert conflicts(requests, [0, 32, 0], 16) == []
    problems = conflicts(requests, [0, 16, 8], 16)
    assert problems[0] == "c at offset 8 is not a multiple of 16"
    assert problems[1] == "a [0, 32) and b [16, 48) are live together (scopes 0-1 and 1-2)"


# -- models TFLite Micro cannot plan, and one built here ---------------------------------------


def _tensors(*shapes: list[int]) -> list[T]:
    return [T(f"t{k}", shape) for k, shape in enumerate(shapes)]


@pytest.mark.parametrize(
    ("data", "message"),
    [
        (build_tflite(_tensors([4]), [], [0], [0]), "the model has no operators"),
        (
            build_tflite(_tensors([-1, 4], [4]), [Op(ADD, [0], [1])], [0], [1]),
            "tensor 0 (t0) has an unknown dimension [-1, 4]; memplace places tensors of fixed",
        ),
        (
            build_tflite(
                [T("s", [4], tflite.TensorType.STRING), T("b", [4])], [Op(ADD, [0], [1])], [0], [1]
            ),
            "tensor 0 (s) is of type STRING, which has no fixed size",
        ),
        (KWS.read_bytes()[:3000], "the model is damaged: "),
        (
            build_tflite(_tensors([1, 4], [1, 4]), [Op(SVDF, [0], [1])], [0], [1]),
            "operator 0 (SVDF) lacks the inputs or shapes its kernel reads",
        ),
    ],
)
def test_models_it_refuses(
    data: bytes, message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    model = tmp_path / "m.tflite"
    model.write_bytes(data)
    argv = ["tflm", str(model), "--board", BOARD, "--out", str(tmp_path / "x.tflite")]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.startswith(f"memplace: error: {model}: ") and message in err, err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m.tflite"]


def test_a_built_model_without_metadata_gets_its_plan(tmp_path: Path) -> None:
    """add(a, a) -> b -> add(b, b) -> c: the converter-free model has no metadata at all."""
    tensors = [T(f"t{k}", [1, 40], tflite.TensorType.FLOAT32) for k in range(3)]
    data = build_tflite(tensors, [Op(ADD, [0, 0], [1]), Op(ADD, [1, 1], [2])], [0], [2])
    model, out = tmp_path / "m.tflite", tmp_path / "planned.tflite"
    model.write_bytes(data)
    result = _json(["tflm", str(model), "--board", BOARD, "--out", str(out), "--json"])
    (words,) = _offline(out.read_bytes())
    # a lives in scopes 0-1, b in 1-2, c in 2-2: a and c share offset 0.
    assert words == [1, 0, 3, 0, 160, 0]
    assert result["activations"] == result["tflm_activations"] == 320
    want, got = _outputs(data, 5), _outputs(out.read_bytes(), 5)
    assert all(np.array_equal(x, y) for x, y in zip(want, got, strict=True))


# -- the generated C interface of a TFLite workload ---------------------------------------------


@pytest.mark.qemu
def test_a_generated_project_offers_the_arena(tmp_path: Path, board: Any) -> None:
    from memplace import workflow
    from memplace.importers import load_workload
    from memplace.tflm import place_model

    out = tmp_path / "kws"
    result = workflow.check(workflow.ProjectRequest(board, load_workload(KWS), out))
    assert result.run is not None and result.run.passed and result.report.ok
    arena = place_model(board, KWS, "dtcm_ws", measure=False, time_limit=None).arena
    assert arena > result.plan.pool("dtcm_ws").used, "the arena is more than the activations"
    header = (out / "memplace/include/kws_ref_model_memplace.h").read_text()
    assert f"#define KWS_REF_MODEL_TFLM_ARENA_SIZE {arena}u\n" in header
    assert "#define KWS_REF_MODEL_TFLM_ARENA (kws_ref_model_pool_dtcm_ws)\n" in header
    size = re.search(r"#define KWS_REF_MODEL_DTCM_WS_SIZE (\d+)u", header)
    assert size is not None and int(size.group(1)) >= arena, "the pool's storage holds it"
    linker = (out / "memplace/cpu0/linker.ld").read_text()
    length = re.search(r"pool_dtcm_ws\s+\(rw\) : ORIGIN = \S+, LENGTH = (\S+)", linker)
    assert length is not None and int(length.group(1), 16) >= arena


def test_other_workloads_have_no_arena(tmp_path: Path, board: Any, demo_workload: Any) -> None:
    from memplace import workflow

    workflow.generate(workflow.ProjectRequest(board, demo_workload, tmp_path / "demo"))
    header = next((tmp_path / "demo/memplace/include").glob("*_memplace.h")).read_text()
    assert "TFLM_ARENA" not in header


TWO_POOLS = """\
memplace: board/v1
name: two
cores:
  cpu0: {cpu: cortex-m4, float_abi: hard, layout: {vectors: ram, code: ram, data: ram, load: ram}}
memories:
  tcm: {origin: 0x10000000, size: 32K, attrs: rw, kind: tcm, access: [cpu0], latency: 1}
  ram: {origin: 0x20000000, size: 256K, attrs: rwx, kind: sram, access: [cpu0], latency: 2}
pools:
  fast_ws: {memory: tcm, size: 20K, kind: workspace}
  slow_ws: {memory: ram, size: 128K, kind: workspace}
contexts:
  main: {core: cpu0, entry: main, stack: {memory: ram, size: 2K}}
"""


def test_the_fastest_pool_that_holds_the_whole_arena(tmp_path: Path) -> None:
    """kws's activations (16000 bytes) fit the fast pool; its arena does not."""
    board = tmp_path / "two.yaml"
    board.write_text(TWO_POOLS)
    out = tmp_path / "kws.tflite"
    base = ["tflm", str(KWS), "--board", str(board), "--out", str(out), "--json"]
    result = _json([*base, "--time-limit", TIME_LIMIT])
    assert result["pool"] == "slow_ws" and result["activations"] == 16000
    assert result["arena"] > 20 * 1024
    pinned = _json([*base, "--pool", "slow_ws", "--time-limit", TIME_LIMIT])
    assert pinned["pool"] == "slow_ws"


def test_a_carried_plan_that_breaks_the_runtimes_rules_is_replaced(tmp_path: Path) -> None:
    """A model whose offline plan (not Vela's) puts every tensor at offset 0: the runtime's
    layout from it would overlap live tensors, so memplace's own plan is written."""
    from memplace.tflm.metadata import with_offline_plan

    data = KWS.read_bytes()
    tensors = tflite.Model.GetRootAs(data, 0).Subgraphs(0).TensorsLength()
    broken = tmp_path / "broken.tflite"
    broken.write_bytes(with_offline_plan(data, [0] * tensors))
    out = tmp_path / "planned.tflite"
    argv = ["tflm", str(broken), "--board", BOARD, "--out", str(out), "--json"]
    result = _json([*argv, "--time-limit", TIME_LIMIT])
    assert result["layout"] == "memplace" and result["activations"] == 16000
    want, got = _outputs(data, 5), _outputs(out.read_bytes(), 5)
    assert all(np.array_equal(x, y) for x, y in zip(want, got, strict=True))


def test_a_plan_breaking_the_runtimes_rules_is_never_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    import dataclasses

    import memplace.tflm as tflm

    real = tflm.plan

    def everything_at_zero(*args: Any, **kwargs: Any) -> Any:
        result = real(*args, **kwargs)
        moved = tuple(dataclasses.replace(p, offset=0) for p in result.placements)
        return dataclasses.replace(result, placements=moved)

    monkeypatch.setattr(tflm, "plan", everything_at_zero)
    out = tmp_path / "kws.tflite"
    assert main(["tflm", str(KWS), "--board", BOARD, "--out", str(out)]) == 3
    err = capsys.readouterr().err
    assert "memplace's plan breaks TFLite Micro's rules, so no model was written: " in err
    assert "are live together" in err
    assert not out.exists() and list(tmp_path.iterdir()) == []
