"""A Relax model (`importers.relax`) inside the generated project: TVM's C kernels and the
static executor memplace writes for them.

- `tvm/<model>_kernels.c`: the C TVM wrote for every kernel (`tvm.tirx.build`, target c),
  as it wrote it; `tvm/include/`: the headers it includes, from the installed wheels;
- `memplace/include/<model>_model.h`, `memplace/src/<model>_model.c`: `<model>_run(inputs,
  outputs)`, which calls each kernel in order through TVM's packed calling convention, with
  a DLTensor per tensor pointing into the planned memory (a reshape is another DLTensor over
  the same bytes), and the runtime the kernels need: `TVMBackendAllocWorkspace` and
  `TVMBackendFreeWorkspace` over the planned arena, `TVMFFIErrorSetRaisedFromCStrParts`
  keeping the last error. No heap, no TVM runtime;
- for `aot_standalone_demo`, `src/aot_demo.c`: a main that puts the inputs in place (the
  user's arrays, or a fill), runs the model once and prints every output in full, which
  `read_outputs` reads back from the run's console.
"""

from __future__ import annotations

import re
from typing import Any

import jinja2

from memplace.board import Board
from memplace.errors import InputError
from memplace.importers.relax import RelaxModel, TensorView, nbytes, workspace_buffer
from memplace.planner.model import Plan

DEMO = "aot_standalone_demo"
INCLUDE = "tvm/include"
# Bytes of an output per printed line.
LINE_BYTES = 64
FILL = (
    "float element i = 0.5 + 0.25 * (i % 8); any other byte j = (j * 13 + 7) mod 256 "
    "(no --inputs given)"
)
_OUTPUT = re.compile(r"^tvm: output (\w+) hex (\d+) ([0-9a-f]*)$", re.MULTILINE)


def kernels_source(model: RelaxModel) -> str:
    return f"tvm/{model.name}_kernels.c"


def check_relax(board: Board, project_type: str, model: RelaxModel) -> None:
    if project_type == DEMO and len(board.cores) > 1:
        raise InputError(
            f"project type {DEMO} runs the model on one core; board {board.name} has "
            f"{len(board.cores)} ({', '.join(board.cores)})",
            key="--project-type",
        )


def relax_context(model: RelaxModel, plan: Plan) -> dict[str, Any]:
    """What the templates need of the model; `plan` says which pool's arena each step
    takes its workspace from."""
    views: list[TensorView] = []
    for step in model.steps:
        for arg in step.args:
            if arg not in views:
                views.append(arg)
    for tensor in (*model.inputs, *model.outputs):
        if tensor not in views:
            views.append(tensor)
    index = {view: number for number, view in enumerate(views)}
    arenas = [
        plan.placement(workspace_buffer(number)).pool if step.workspace else None
        for number, step in enumerate(model.steps)
    ]
    return {
        "relax": True,
        "model": model.name,
        "archive": model.source.rpartition("/")[2],
        "version": model.tvm_version,
        "includes": [INCLUDE],
        "sources": [kernels_source(model), f"memplace/src/{model.name}_model.c"],
        "quiet_sources": [kernels_source(model)],
        "tensors": [_tensor(view) for view in views],
        "inputs": [_io(view, index[view], model) for view in model.inputs],
        "outputs": [_io(view, index[view], model) for view in model.outputs],
        "steps": [
            {
                "name": step.name,
                "kind": step.kind,
                "symbol": step.symbol,
                "args": [index[arg] for arg in step.args],
                "bytes": step.args[-1].nbytes,
                "arena": arena,
            }
            for step, arena in zip(model.steps, arenas, strict=True)
        ],
        "arena_pools": sorted({pool for pool in arenas if pool is not None}),
        "kernels": sorted({step.symbol for step in model.steps if step.kind == "kernel"}),
        "max_args": max(len(step.args) for step in model.steps),
        "workspace": model.workspace,
        "line_bytes": LINE_BYTES,
        "fill": FILL,
        "inputs_from": model.inputs_from,
    }


def _tensor(view: TensorView) -> dict[str, Any]:
    return {
        "buffer": view.buffer,
        "role": view.role,
        "dtype": view.dtype,
        "shape": list(view.shape) or [1],
        "ndim": len(view.shape),
        "code": view.dl_code,
        "bits": view.dl_bits,
        "bytes": view.nbytes,
    }


def _io(view: TensorView, number: int, model: RelaxModel) -> dict[str, Any]:
    data = model.input_data.get(view.buffer) if view.role == "input" else None
    return {
        **_tensor(view),
        "tensor": number,
        "float": view.dtype.startswith("float"),
        "rows": _rows(data) if data is not None else None,
    }


def _rows(data: bytes) -> list[str]:
    return [
        " ".join(f"0x{byte:02x}," for byte in data[start : start + 16])
        for start in range(0, len(data), 16)
    ]


def model_files(
    env: jinja2.Environment, context: dict[str, Any], model: RelaxModel
) -> dict[str, str]:
    """The model's files of the project."""
    files = {kernels_source(model): model.kernels_c}
    files.update({f"{INCLUDE}/{name}": text for name, text in model.headers.items()})
    name = model.name
    files[f"memplace/include/{name}_model.h"] = env.get_template("tvm/relax_model.h.j2").render(
        context
    )
    files[f"memplace/src/{name}_model.c"] = env.get_template("tvm/relax_model.c.j2").render(context)
    if context["project_type"] == DEMO:
        core = context["cores"][0]
        files["src/aot_demo.c"] = env.get_template("tvm/relax_demo.c.j2").render(
            {**context, "core": core}
        )
    return files


def read_outputs(console: str, model: RelaxModel) -> list[dict[str, Any]]:
    """Every output as the demo printed it: name, dtype, shape and values (a flat list);
    an output the run did not print in full has values null."""
    import numpy  # a dependency of TVM, which read the model

    printed: dict[str, bytearray] = {}
    for name, offset, text in _OUTPUT.findall(console):
        data = printed.setdefault(name, bytearray())
        if int(offset) == len(data):
            data += bytes.fromhex(text)
    result = []
    for tensor in model.outputs:
        got = printed.get(tensor.buffer)
        values = None
        if got is not None and len(got) == nbytes(tensor.dtype, tensor.shape):
            little = numpy.dtype(tensor.dtype).newbyteorder("<")
            values = numpy.frombuffer(bytes(got), dtype=little).tolist()
        result.append(
            {
                "name": tensor.buffer,
                "dtype": tensor.dtype,
                "shape": list(tensor.shape),
                "values": values,
            }
        )
    return result


def inputs_report(model: RelaxModel) -> list[dict[str, Any]]:
    """How each input was filled, for the report."""
    return [
        {
            "name": tensor.buffer,
            "dtype": tensor.dtype,
            "shape": list(tensor.shape),
            "from": model.inputs_from if model.input_data else FILL,
        }
        for tensor in model.inputs
    ]
