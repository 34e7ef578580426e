"""Resource variables: TFLite Micro models that keep state in VAR_HANDLE variables
(CALL_ONCE, VAR_HANDLE, READ_VARIABLE, ASSIGN_VARIABLE), as microWakeWord's streaming
wake-word models do.

A stand-in model is written here with the flatbuffers builder: an init subgraph that
CALL_ONCE runs sets a variable to zero; each invocation adds its input to the variable and
outputs half the sum. The real models are those the `pymicro-wakeword` package ships
(ESPHome's wake words). Each is planned by `memplace tflm` as a user runs it and run on the
`tflite-micro` runtime over a stream of inputs, the state carried between invocations.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tflite

from test_tflm import BOARD, TIME_LIMIT, _json, _offline, _usage
from test_tflm_subgraphs import UNIT, B, Op, Sub, T, _floats, build

micro = pytest.importorskip("tflite_micro", reason="the tflite-micro package is not installed")

RESOURCE = tflite.TensorType.RESOURCE
STREAM = 12  # invocations


def stream_model(width: int = UNIT) -> bytes:
    """s = 0 once; then per invocation s = x + s, y = (x + s) * 0.5."""
    main = Sub(
        [
            T("x", [1, width]),
            T("handle", [], RESOURCE),
            T("s", [1, width]),
            T("sum", [1, width]),
            T("half", [1, width], data=_floats(0.5, [1, width])),
            T("y", [1, width]),
            T("handle2", [], RESOURCE),
        ],
        [
            Op(B.CALL_ONCE, [], [], [1]),
            Op(B.VAR_HANDLE, [], [1], shared="state"),
            Op(B.READ_VARIABLE, [1], [2]),
            Op(B.ADD, [0, 2], [3]),
            Op(B.VAR_HANDLE, [], [6], shared="state"),
            Op(B.ASSIGN_VARIABLE, [6, 3], []),
            Op(B.MUL, [3, 4], [5]),
        ],
        [0],
        [5],
    )
    init = Sub(
        [T("handle", [], RESOURCE), T("zero", [1, width], data=_floats(0.0, [1, width]))],
        [Op(B.VAR_HANDLE, [], [0], shared="state"), Op(B.ASSIGN_VARIABLE, [0, 1], [])],
        [],
    )
    return build([main, init])


def _wake_words() -> list[Path]:
    try:
        import pymicro_wakeword
    except ImportError:
        return []
    return sorted((Path(pymicro_wakeword.__file__).parent / "models").glob("*.tflite"))


WAKE_WORDS = _wake_words()


def _inputs(data: bytes, seed: int) -> list[np.ndarray]:
    """`STREAM` seeded inputs for the model's first input."""
    interpreter = micro.runtime.Interpreter.from_bytes(data, arena_size=1 << 22)
    details = interpreter.get_input_details(0)
    dtype, shape = details["dtype"], details["shape"]
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        info = np.iinfo(dtype)
        return [
            rng.integers(info.min, info.max, size=shape, endpoint=True, dtype=dtype)
            for _ in range(STREAM)
        ]
    return [rng.standard_normal(shape).astype(dtype) for _ in range(STREAM)]


def _stream(
    data: bytes, seed: int, output: int = 0, last: np.ndarray | None = None
) -> list[np.ndarray]:
    """Output `output` of one interpreter over the seeded stream, in order; `last`
    replaces the stream's last input."""
    interpreter = micro.runtime.Interpreter.from_bytes(data, arena_size=1 << 22)
    inputs = _inputs(data, seed)
    if last is not None:
        inputs[-1] = last
    outputs = []
    for values in inputs:
        interpreter.set_input(values, 0)
        interpreter.invoke()
        outputs.append(interpreter.get_output(output).copy())
    return outputs


def _plan(model: Path, out: Path) -> dict[str, Any]:
    argv = ["tflm", str(model), "--board", BOARD, "--out", str(out), "--json"]
    return _json([*argv, "--time-limit", TIME_LIMIT])


def test_the_stand_in_keeps_its_state_and_runs_bit_identical(tmp_path: Path) -> None:
    model = tmp_path / "stream.tflite"
    model.write_bytes(stream_model())
    result = _plan(model, tmp_path / "planned.tflite")
    planned = (tmp_path / "planned.tflite").read_bytes()
    want, got = _stream(model.read_bytes(), 3), _stream(planned, 3)
    assert all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(want, got, strict=True))
    # The state is carried: y_k = (x_k + x_{k-1} + ... + x_0) * 0.5.
    rng = np.random.default_rng(3)
    total = np.zeros((1, UNIT), np.float32)
    for output in got:
        total = rng.standard_normal((1, UNIT)).astype(np.float32) + total
        assert np.array_equal(output, total * np.float32(0.5))
    # The resource tensors hold ids the VAR_HANDLE kernel keeps: the runtime places them
    # nowhere in the arena, and memplace leaves them to it.
    (words,) = _offline(planned)
    assert words[3 + 1] == -1 and words[3 + 6] == -1 and words[3 + 7] == -1
    head, _ = _usage(tmp_path / "planned.tflite")
    assert head == result["activations"]
    assert result["target"]["margin"] == 0 and result["unknown_data"] == []


def test_the_variables_buffer_is_in_the_persistent_part(tmp_path: Path) -> None:
    """Twice as wide a variable: the persistent part grows by its buffer's extra bytes."""
    sizes = []
    for width in (UNIT, 2 * UNIT):
        model = tmp_path / f"stream{width}.tflite"
        model.write_bytes(stream_model(width))
        sizes.append(_plan(model, tmp_path / f"planned{width}.tflite")["persistent"])
    assert sizes[1] - sizes[0] == UNIT * 4


def _with_logit(data: bytes) -> bytes:
    """The model with its LOGISTIC's input (the wake word's logit) as a second output:
    on random features the probability rounds to 0, the logit shows the state."""
    import flatbuffers
    from tflite_micro.tensorflow.lite.micro.python import schema_py_generated as fb

    model = fb.ModelT.InitFromObj(fb.Model.GetRootAs(data, 0))
    main = model.subgraphs[0]
    (logit,) = (
        int(op.inputs[0])
        for op in main.operators
        if model.operatorCodes[op.opcodeIndex].builtinCode == fb.BuiltinOperator.LOGISTIC
    )
    main.outputs = [*main.outputs, logit]
    builder = flatbuffers.Builder(len(data) * 2)
    builder.Finish(model.Pack(builder), file_identifier=b"TFL3")
    return bytes(builder.Output())


@pytest.mark.parametrize("model", WAKE_WORDS, ids=[m.stem for m in WAKE_WORDS])
def test_microwakeword_models_run_bit_identical_over_a_stream(model: Path, tmp_path: Path) -> None:
    result = _plan(model, tmp_path / "planned.tflite")
    planned = (tmp_path / "planned.tflite").read_bytes()
    want, got = _stream(model.read_bytes(), 7), _stream(planned, 7)
    assert all(a.dtype == b.dtype and np.array_equal(a, b) for a, b in zip(want, got, strict=True))
    head, _ = _usage(tmp_path / "planned.tflite")
    assert head == result["activations"] <= result["tflm_activations"]
    assert result["planned_tensors"] > 0 and result["target"]["margin"] == 0
    # The logit, over the stream and after two histories that end in the same input.
    probe = tmp_path / "logit.tflite"
    probe.write_bytes(_with_logit(model.read_bytes()))
    _plan(probe, tmp_path / "logit-planned.tflite")
    planned = (tmp_path / "logit-planned.tflite").read_bytes()
    want, got = _stream(probe.read_bytes(), 7, 1), _stream(planned, 7, 1)
    assert all(np.array_equal(a, b) for a, b in zip(want, got, strict=True))
    assert len({a.tobytes() for a in got}) > 1, "the stream moves the logit"
    elsewhere = _stream(planned, 8, 1, last=_inputs(planned, 7)[-1])
    assert not np.array_equal(got[-1], elsewhere[-1]), "the same input after another history"


def test_the_wake_word_models_are_there() -> None:
    assert [m.stem for m in WAKE_WORDS] == ["alexa", "hey_jarvis", "hey_mycroft", "okay_nabu"]
