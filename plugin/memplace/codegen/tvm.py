"""A TVM model (a Model Library Format archive) inside the generated project.

The archive's `codegen/host` C code and headers are copied into `tvm/`; the TVM runtime
headers that code includes come from the standalone CRT folder TVM passes, else from the
archive's own `runtime/include`, else from memplace's minimal ones (declaring what AOT code
uses). `memplace/src/tvm_backend.c` gives `TVMBackendAllocWorkspace` the plan's arena, and
project type `aot_standalone_demo` adds a main that runs the model once and prints its
outputs.
"""

from __future__ import annotations

from typing import Any

import jinja2

from memplace.board import Board
from memplace.errors import InputError
from memplace.importers.mlf import WORKSPACE, ModelArchive, pool_buffer

DEMO = "aot_standalone_demo"
# Project types that compile the model's C code into the image.
MODEL_TYPES = (DEMO, "app")
OWN_HEADERS = ("tvm/runtime/c_runtime_api.h", "tvm/runtime/c_backend_api.h")
RUNTIME_INCLUDE = "tvm/runtime/include"
BACKEND = "memplace/src/tvm_backend.c"
DEMO_SOURCE = "src/aot_demo.c"
# Bytes of an output the demo prints in hex; the rest is summed up in a checksum.
PRINTED_BYTES = 32


def check_model(board: Board, project_type: str, model: ModelArchive | None) -> None:
    if project_type != DEMO:
        return
    if model is None:
        raise InputError(
            f"project type {DEMO} runs a TVM model: give a Model Library Format archive "
            "(.tar) as WORKLOAD",
            key="--project-type",
        )
    if len(board.cores) > 1:
        raise InputError(
            f"project type {DEMO} runs the model on one core; board {board.name} has "
            f"{len(board.cores)} ({', '.join(board.cores)})",
            key="--project-type",
        )
    if not model.interface:
        raise InputError(
            f"{model.path}: project type {DEMO} calls the model through TVM's C interface; "
            f"the archive has no codegen/host/include/{model.prefix}.h (build with "
            "Executor('aot', {'interface-api': 'c', 'unpacked-api': True}))",
            key="WORKLOAD",
        )


def tvm_context(model: ModelArchive, crt_include: str | None) -> dict[str, Any]:
    """What the templates need of the model. `crt_include` is the standalone CRT's
    include folder, relative to the project (None: the archive's, else memplace's)."""
    includes = [crt_include] if crt_include is not None else [RUNTIME_INCLUDE]
    includes.append("tvm/codegen/host/include")
    return {
        "prefix": model.prefix,
        "model": model.model,
        "version": model.version,
        "archive": model.path.name,
        "inputs": [_tensor(t.name, t.size, t.dtype, "input") for t in model.inputs],
        "outputs": [_tensor(t.name, t.size, t.dtype, "output") for t in model.outputs],
        "pools": [
            {
                "name": pool.name,
                "buffer": pool_buffer(pool).upper(),
                "kind": pool.kind,
                "size": pool.size,
            }
            for pool in model.pools
        ],
        "run_parameters": list(model.run_parameters),
        "run_model": model.run_model,
        "workspace": model.workspace_size,
        "workspace_buffer": WORKSPACE,
        "includes": includes,
        "sources": [f"tvm/{name}" for name in model.sources] + [BACKEND],
        "quiet_sources": [],
        "printed_bytes": PRINTED_BYTES,
    }


def _tensor(name: str, size: int, dtype: str | None, role: str) -> dict[str, Any]:
    return {
        "name": name,
        "buffer": f"{role}_{name}".upper(),
        "size": size,
        "dtype": dtype or "unknown",
        "float32": dtype == "float32" and size % 4 == 0,
    }


def model_files(
    env: jinja2.Environment, context: dict[str, Any], model: ModelArchive, crt_given: bool
) -> dict[str, str]:
    """The model's files of the project: its code, the runtime headers it needs (unless
    the standalone CRT folder is given), the workspace backend and, for the demo, a main."""
    files = {f"tvm/{name}": text for name, text in model.sources.items()}
    files.update({f"tvm/{name}": text for name, text in model.headers.items()})
    if not crt_given:
        carried = model.runtime_headers
        if all(header in carried for header in OWN_HEADERS):
            files.update({f"{RUNTIME_INCLUDE}/{name}": text for name, text in carried.items()})
        else:
            for header in OWN_HEADERS:
                template = env.get_template(f"tvm/{header.rpartition('/')[2]}.j2")
                files[f"{RUNTIME_INCLUDE}/{header}"] = template.render(context)
    files[BACKEND] = env.get_template("tvm/tvm_backend.c.j2").render(context)
    if context["project_type"] == DEMO:
        core = context["cores"][0]
        files[DEMO_SOURCE] = env.get_template("tvm/aot_demo.c.j2").render({**context, "core": core})
    return files
