"""TFLite models (`.tflite` flatbuffers) as workloads.

Each operator of the main subgraph is one step, named after its operator and position
(`conv_2d_0`, `depthwise_conv_2d_1`, ...). Each activation tensor becomes a buffer that
lives from the operator that writes it to the last operator that reads it, inclusive; the
graph's inputs live from the first operator and its outputs to the last, as TFLite Micro
plans them. Variable tensors (state kept between invocations) live for the whole timeline.
Each weight buffer of the model becomes one constant carrying its real bytes; tensors that
share a buffer share the constant. Everything is 16-byte aligned, as TFLite Micro aligns
its arena.

The flatbuffer is read with the `tflite` package, the schema's generated Python.
"""

from __future__ import annotations

import json
import re
import struct
from collections.abc import Iterable
from dataclasses import dataclass
from math import prod
from pathlib import Path
from typing import Any

import tflite
import yaml

from memplace.errors import InputError
from memplace.files import read_input
from memplace.workload import DEFAULT_ALIGN, VERSION, Workload, WorkloadBuilder

IDENTIFIER = b"TFL3"
# Bytes per element of each TensorType; INT4 packs two elements into a byte.
ELEMENT_BYTES = {
    "FLOAT32": 4,
    "FLOAT16": 2,
    "INT32": 4,
    "UINT8": 1,
    "INT64": 8,
    "BOOL": 1,
    "INT16": 2,
    "COMPLEX64": 8,
    "INT8": 1,
    "FLOAT64": 8,
    "COMPLEX128": 16,
    "UINT64": 8,
    "UINT32": 4,
    "UINT16": 2,
    "BFLOAT16": 2,
}
# Path parts of converter-made tensor names that tell nothing about the tensor.
_DULL_PARTS = {"ReadVariableOp", "resource"}
_NAME_PART = re.compile(r"[^A-Za-z0-9_]+")
# A corrupt flatbuffer shows up as one of these while reading it.
CORRUPT = (struct.error, IndexError, ValueError, TypeError, OverflowError)


@dataclass(frozen=True)
class Activation:
    """A tensor the model computes: a buffer living from step `first` to `last`."""

    name: str
    tensor: int
    tensor_name: str
    dtype: str
    shape: tuple[int, ...]
    size: int
    first: int
    last: int


@dataclass(frozen=True)
class Weight:
    """A buffer of the model's data, read by one or more tensors."""

    name: str
    tensors: tuple[int, ...]
    tensor_name: str
    dtype: str
    shape: tuple[int, ...]
    data: bytes


@dataclass(frozen=True)
class Model:
    """What memplace takes from a model: the steps, the activations and the weights."""

    name: str
    source: str
    steps: tuple[str, ...]
    activations: tuple[Activation, ...]
    weights: tuple[Weight, ...]

    def workload(self, base_dir: Path | None = None) -> Workload:
        builder = WorkloadBuilder(self.name, self.steps, base_dir=base_dir, source=self.source)
        for act in self.activations:
            builder.buffer(act.name, act.size, (act.first, act.last), align=DEFAULT_ALIGN)
        for weight in self.weights:
            builder.constant(weight.name, data=weight.data, align=DEFAULT_ALIGN)
        return builder.build()

    def yaml(self, data_dir: str) -> str:
        """The workload file; each weight's `data_file` is `data_dir/<name>.bin`."""
        model = Path(self.source).name
        lines = [
            f"# Imported by memplace from {_comment(model)}: {len(self.steps)} operators,",
            f"# {len(self.activations)} activations and {len(self.weights)} weights "
            f"({sum(len(w.data) for w in self.weights)} bytes, in {_comment(data_dir)}/).",
            "# Activations live from the operator that writes them to the last that reads",
            "# them; the graph's inputs from the first operator, its outputs to the last.",
            "# Scopes are left at 'global': activations take the fastest workspace pool",
            "# with room and weights the fastest constant pool, spilling to slower ones.",
            f"memplace: {VERSION}",
            f"name: {_scalar(self.name)}",
            "steps:",
            *(f"  - {_scalar(step)}" for step in self.steps),
        ]
        if self.activations:
            lines.append("buffers:")
        for act in self.activations:
            live = f"[{_scalar(self.steps[act.first])}, {_scalar(self.steps[act.last])}]"
            lines.append(
                f"  - {{name: {act.name}, size: {act.size}, live: {live}}}"
                f"  # {_describe(act.tensor, act.tensor_name, act.dtype, act.shape)}"
            )
        if self.weights:
            lines.append("constants:")
        for weight in self.weights:
            file = _scalar(f"{data_dir}/{weight.name}.bin")
            about = _describe(weight.tensors[0], weight.tensor_name, weight.dtype, weight.shape)
            lines.append(
                f"  - {{name: {weight.name}, size: {len(weight.data)}, data_file: {file}}}"
                f"  # {about}"
            )
        return "\n".join(lines) + "\n"


def read_tflite(path: Path) -> Model:
    """Read a `.tflite` file; every problem with it is an InputError naming the file."""
    data = read_input(path, key="MODEL")
    return parse_tflite(data, str(path), workload_name(path))


def parse_tflite(data: bytes, source: str, name: str) -> Model:
    if len(data) < 8 or data[4:8] != IDENTIFIER:
        raise InputError(
            "not a TFLite model (a .tflite flatbuffer carries 'TFL3' at byte 4)", key=source
        )
    try:
        return _Reader(data, source).model(name)
    except CORRUPT as exc:
        raise InputError(f"the model is damaged: {exc}", key=source) from exc


def workload_name(path: Path) -> str:
    """A C identifier from the model's file name."""
    name = _NAME_PART.sub("_", path.stem).strip("_") or "model"
    return name if not name[0].isdigit() else f"m_{name}"


class _Reader:
    def __init__(self, data: bytes, source: str) -> None:
        self.data = data
        self.source = source
        self.model_root: Any = tflite.Model.GetRootAs(data, 0)
        self.types = _enum_names(tflite.TensorType)
        self.operators = _enum_names(tflite.BuiltinOperator)

    def error(self, message: str) -> InputError:
        return InputError(message, key=self.source)

    def model(self, name: str) -> Model:
        root = self.model_root
        if root.SubgraphsLength() != 1:
            raise self.error(
                f"the model has {root.SubgraphsLength()} subgraphs; memplace imports models "
                "with one (no control flow operators such as WHILE or IF)"
            )
        graph = root.Subgraphs(0)
        count = graph.OperatorsLength()
        if count == 0:
            raise self.error("the model has no operators")
        operators = [graph.Operators(i) for i in range(count)]
        steps = tuple(f"{self._operator_name(op)}_{i}" for i, op in enumerate(operators))
        constant = {t for t in range(graph.TensorsLength()) if self._constant(graph, t)}
        first, last = self._lifetimes(graph, operators, constant)
        activations = []
        for tensor in sorted(first):
            act = self._activation(graph, tensor, first[tensor], last[tensor])
            if act is not None:
                activations.append(act)
        weights = self._weights(graph, operators, constant)
        if not activations and not weights:
            raise self.error(
                "none of its tensors holds a byte (every shape has a dimension of 0): "
                "nothing to place"
            )
        return Model(name, self.source, steps, tuple(activations), tuple(weights))

    def _operator_name(self, op: Any) -> str:
        code = self.model_root.OperatorCodes(op.OpcodeIndex())
        if code is None:
            raise self.error(f"operator code {op.OpcodeIndex()} is missing")
        builtin = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
        if self.operators.get(builtin) == "CUSTOM" and code.CustomCode():
            return _slug(code.CustomCode().decode("utf-8", "replace")).lower() or "custom"
        return self.operators.get(builtin, f"op{builtin}").lower()

    def _constant(self, graph: Any, tensor: int) -> bool:
        """A tensor whose values the model carries (weights, biases, shapes)."""
        spec = graph.Tensors(tensor)
        if spec.IsVariable():
            return False
        buffer = self.model_root.Buffers(spec.Buffer()) if spec.Buffer() > 0 else None
        return buffer is not None and (buffer.DataLength() > 0 or buffer.Offset() > 1)

    def _lifetimes(
        self, graph: Any, operators: list[Any], constant: set[int]
    ) -> tuple[dict[int, int], dict[int, int]]:
        end = len(operators) - 1
        first: dict[int, int] = {}
        last: dict[int, int] = {}

        def touch(tensors: Iterable[int], step: int) -> None:
            for tensor in tensors:
                if tensor >= 0 and tensor not in constant:
                    first.setdefault(tensor, step)
                    last[tensor] = max(last.get(tensor, step), step)

        touch(_ints(graph.Inputs, graph.InputsLength()), 0)
        for step, op in enumerate(operators):
            touch(_ints(op.Inputs, op.InputsLength()), step)
            touch(_ints(op.Outputs, op.OutputsLength()), step)
            touch(_ints(op.Intermediates, op.IntermediatesLength()), step)
        touch(_ints(graph.Outputs, graph.OutputsLength()), end)
        for tensor in first:
            if graph.Tensors(tensor).IsVariable():
                first[tensor], last[tensor] = 0, end
        return first, last

    def _activation(self, graph: Any, tensor: int, first: int, last: int) -> Activation | None:
        spec = graph.Tensors(tensor)
        dtype, shape, size = self._size(spec, tensor)
        if size == 0:
            return None  # an empty tensor takes no memory
        name = _tensor_name(spec)
        return Activation(_buffer_name(tensor, name), tensor, name, dtype, shape, size, first, last)

    def _weights(self, graph: Any, operators: list[Any], constant: set[int]) -> list[Weight]:
        """One constant per model buffer that an operator reads, named after its first tensor."""
        readers: dict[int, list[int]] = {}
        for op in operators:
            for tensor in _ints(op.Inputs, op.InputsLength()):
                if tensor in constant:
                    users = readers.setdefault(graph.Tensors(tensor).Buffer(), [])
                    if tensor not in users:
                        users.append(tensor)
        weights = []
        for buffer_index, tensors in sorted(readers.items(), key=lambda item: min(item[1])):
            tensors.sort()
            spec = graph.Tensors(tensors[0])
            dtype, shape, _ = self._size(spec, tensors[0])
            name = _tensor_name(spec)
            data = self._bytes(buffer_index)
            weights.append(
                Weight(_buffer_name(tensors[0], name), tuple(tensors), name, dtype, shape, data)
            )
        return weights

    def _bytes(self, index: int) -> bytes:
        buffer = self.model_root.Buffers(index)
        if buffer.Offset() > 1:
            # Large models keep buffers after the flatbuffer, at an offset into the file.
            start, size = buffer.Offset(), buffer.Size()
            if start + size > len(self.data):
                raise self.error(f"buffer {index} lies past the end of the file")
            return self.data[start : start + size]
        return bytes(buffer.DataAsNumpy().tobytes())

    def _size(self, spec: Any, tensor: int) -> tuple[str, tuple[int, ...], int]:
        dtype = self.types.get(spec.Type(), f"TYPE_{spec.Type()}")
        shape = tuple(int(spec.Shape(k)) for k in range(spec.ShapeLength()))
        if any(dim < 0 for dim in shape):
            raise self.error(
                f"tensor {tensor} ({_tensor_name(spec)}) has an unknown dimension {list(shape)}; "
                "memplace places tensors of fixed shape"
            )
        count = prod(shape)
        if dtype == "INT4":
            size = (count + 1) // 2
        elif dtype in ELEMENT_BYTES:
            size = count * ELEMENT_BYTES[dtype]
        else:
            raise self.error(
                f"tensor {tensor} ({_tensor_name(spec)}) is of type {dtype}, which has no "
                "fixed size"
            )
        if problem := shape_problem(shape, count, size):
            raise self.error(f"tensor {tensor} ({_tensor_name(spec)}) {problem}")
        return dtype, shape, size


MAX_ELEMENTS = 2**31 - 1
"""Elements and bytes of one tensor at most: TFLite (Micro) counts them in an `int`."""


def shape_problem(shape: tuple[int, ...], count: int, size: int) -> str | None:
    """What is wrong with a tensor of this shape, element count and bytes, or None."""
    if max(count, size) > MAX_ELEMENTS:
        return (
            f"of shape {list(shape)} holds {count} elements in {size} bytes; TFLite counts "
            f"both in 32-bit integers (at most {MAX_ELEMENTS})"
        )
    return None


def _enum_names(enum: type) -> dict[int, str]:
    return {
        value: key
        for key, value in vars(enum).items()
        if not key.startswith("_") and isinstance(value, int)
    }


def _ints(getter: Any, length: int) -> list[int]:
    return [int(getter(i)) for i in range(length)]


def _tensor_name(spec: Any) -> str:
    raw = spec.Name()
    return raw.decode("utf-8", "replace") if raw else ""


def _buffer_name(tensor: int, tensor_name: str) -> str:
    """`t<index>_<slug>`: unique by the index, readable by the slug.

    Converters join the names of fused ops with ';'; the first is the most telling, and
    its last two telling path parts ("conv2d/Relu", "dense/BiasAdd") say enough."""
    head = tensor_name.split(";")[0]
    parts = [part for part in head.split("/") if part not in _DULL_PARTS]
    slug = _slug("_".join(parts[-2:]))[:40].strip("_")
    return f"t{tensor}_{slug}" if slug else f"t{tensor}"


def _slug(text: str) -> str:
    return _NAME_PART.sub("_", text).strip("_")


def _describe(tensor: int, name: str, dtype: str, shape: tuple[int, ...]) -> str:
    head = name.split(";")[0]
    shown = head if len(head) <= 60 else head[:57] + "..."
    return _comment(f"tensor {tensor} {shown}: {dtype.lower()}{list(shape)}")


def _comment(text: str) -> str:
    """Text safe inside a YAML comment: one line, printable."""
    return "".join(ch if ch.isprintable() else "?" for ch in text)


def _scalar(text: str) -> str:
    """`text` as a YAML scalar that reads back as the same string."""
    try:
        plain_ok = yaml.safe_load(f"[{text}]") == [text]
    except yaml.YAMLError:
        plain_ok = False
    return text if plain_ok and "#" not in text else json.dumps(text)
