"""Models compiled by Vela for an Arm Ethos-U NPU, planned by `memplace tflm`.

Vela turns the operators the NPU runs into one `ethos-u` custom operator and writes an
offline plan in which the NPU's scratch area holds the operator's input and output (they
share bytes on purpose: the command stream addresses them there). memplace keeps that
layout, places the ethos-u kernel's own scratch around it as the runtime does, and gives
the arena; the host runtime has no ethos-u kernel, so nothing is measured there.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from memplace.importers.tflite import read_graph
from test_tflm import BOARD, SHARED, TIME_LIMIT, _json, _offline

pytest.importorskip("ethosu.vela", reason="the ethos-u-vela package is not installed")

MODELS = [
    SHARED / "mlperf-tiny" / "kws_ref_model.tflite",
    SHARED / "tflite-micro" / "person_detect.tflite",
]
pytestmark = pytest.mark.skipif(
    not all(m.is_file() for m in MODELS), reason="../shared/models is incomplete"
)


@pytest.fixture(scope="module")
def compiled(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    out = tmp_path_factory.mktemp("vela")
    for model in MODELS:
        argv = [sys.executable, "-m", "ethosu.vela", str(model)]
        argv += ["--accelerator-config", "ethos-u55-128", "--output-dir", str(out)]
        subprocess.run(argv, check=True, capture_output=True, timeout=600)
    return {m.stem: out / f"{m.stem}_vela.tflite" for m in MODELS}


@pytest.mark.parametrize("name", [m.stem for m in MODELS])
def test_vela_models_are_planned_around_velas_layout(
    name: str, compiled: dict[str, Path], tmp_path: Path
) -> None:
    model = compiled[name]
    source = read_graph(model.read_bytes(), str(model))
    assert source.offline is not None and any(op.kind == "ethos-u" for op in source.operators)
    out = tmp_path / "planned.tflite"
    argv = ["tflm", str(model), "--board", BOARD, "--out", str(out), "--json"]
    result = _json([*argv, "--time-limit", TIME_LIMIT])
    assert result["layout"] == "vela" and result["host"] is None
    (words,) = _offline(out.read_bytes())
    npu = [t for op in source.operators if op.kind == "ethos-u" for t in (*op.inputs, *op.outputs)]
    for t in npu:
        assert words[3 + t] == source.offline[t], "Vela's offsets are kept"
    # The kernel asks the runtime for a base address and a size per input and output.
    count = len(npu)
    assert [s["bytes"] for s in result["scratch"]] == [8 * count, 4 * count]
    # Vela's scratch area, and the kernel's scratch placed above it by the runtime.
    placed = [t for t in npu if source.tensors[t].in_arena]
    area = max(source.offline[t] + source.tensors[t].arena_bytes for t in placed)
    assert result["activations"] == area + 16 * -(-8 * count // 16) + 16 * -(-4 * count // 16)
    assert result["unknown_data"] == [] and result["target"]["margin"] == 0
    assert result["arena"] >= result["activations"] + result["persistent"]


def test_the_text_says_the_host_runtime_was_not_run(
    compiled: dict[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from memplace.cli import main

    model = compiled["kws_ref_model"]
    argv = ["tflm", str(model), "--board", BOARD, "--out", str(tmp_path / "p.tflite")]
    assert main([*argv, "--time-limit", TIME_LIMIT]) == 0
    out = capsys.readouterr().out
    assert "host runtime: not run (it has no kernel for ethos-u)" in out
    assert "Vela's layout of the ethos-u operators' tensors is kept" in out
