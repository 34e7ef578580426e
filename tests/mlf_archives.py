"""Model Library Format archives built by hand for the tests, in the layout TVM's
`export_model_library_format` writes (metadata versions 5 and 7), with C code of ours in
the shape TVM's AOT executor generates with `interface-api=c`.

The model, `default`: y = sqrt(2 * x + 1) over four float32 elements. With the
default inputs the demo fills in (0.5, 0.75, 1.0, 1.25) it prints 1.414214, 1.581139,
1.732051, 1.870829.

- `v5_archive`: TVM 0.9's layout; operators take their workspace through
  `TVMBackendAllocWorkspace` (16 bytes in the main function, 16 in the operator), and
  `workspace_size_bytes` declares their sum (or `workspace` bytes, to test a short one).
- `v5_run_model_members`: the shape of a real archive of TVM 0.9.dev (`tvmc compile
  --output-format mlf`, December 2021): one C file, whose `tvmgen_default_run_model`
  takes the input and output as `void*`, and no `tvmgen_default_run`, which the C
  interface header declares all the same.
- `v7_archive`: TVM 0.15's layout with USMP: the run function takes
  `struct tvmgen_default_workspace_pools`, a workspace pool (`workspace_pool`, 32 bytes)
  and a constant pool (`constant_pool`, the scale factors) whose bytes the C interface
  header carries.
"""

from __future__ import annotations

import io
import json
import math
import struct
import tarfile
from pathlib import Path
from typing import Any

INPUTS = [0.5, 0.75, 1.0, 1.25]
EXPECTED = [math.sqrt(2 * x + 1) for x in INPUTS]

_LIB0_V5 = """\
#include "tvm/runtime/c_runtime_api.h"
#ifdef __cplusplus
extern "C" {
#endif
#include <tvmgen_default.h>
TVM_DLL int32_t tvmgen_default___tvm_main__(void* x,void* output0);
int32_t tvmgen_default_run(struct tvmgen_default_inputs* inputs,
                           struct tvmgen_default_outputs* outputs) {
  return tvmgen_default___tvm_main__(inputs->x,outputs->y);
}
#ifdef __cplusplus
}
#endif
;"""

_LIB1_V5 = """\
// tvm target: c -keys=cpu -mcpu=cortex-m55
#define TVM_EXPORTS
#include "tvm/runtime/c_runtime_api.h"
#include "tvm/runtime/c_backend_api.h"
#include <math.h>

static const float __attribute__((section(".rodata.tvm"), aligned(16))) constant_0[4] = {
    0x1p+1, 0x1p+1, 0x1p+1, 0x1p+1
};

#ifdef __cplusplus
extern "C"
#endif
TVM_DLL int32_t tvmgen_default_fused_multiply_add(float* p0, float* T_add) {
  void* scaled = TVMBackendAllocWorkspace(1, 0, (uint64_t)16, 2, 32);
  if (scaled == NULL) {
    return -1;
  }
  for (int32_t ax0 = 0; ax0 < 4; ++ax0) {
    ((float*)scaled)[ax0] = (p0[ax0] * ((float*)constant_0)[ax0]);
  }
  for (int32_t ax0 = 0; ax0 < 4; ++ax0) {
    T_add[ax0] = (((float*)scaled)[ax0] + 1.000000e+00f);
  }
  if (TVMBackendFreeWorkspace(1, 0, scaled) != 0) {
    return -1;
  }
  return 0;
}

#ifdef __cplusplus
extern "C"
#endif
TVM_DLL int32_t tvmgen_default_fused_sqrt(float* p0, float* T_sqrt) {
  for (int32_t ax0 = 0; ax0 < 4; ++ax0) {
    T_sqrt[ax0] = sqrtf(p0[ax0]);
  }
  return 0;
}

#ifdef __cplusplus
extern "C"
#endif
TVM_DLL int32_t tvmgen_default___tvm_main__(float* x_buffer_var, float* output_buffer_var) {
  void* sid_1 = TVMBackendAllocWorkspace(1, 0, (uint64_t)16, 0, 8);
  if (sid_1 == NULL) {
    return -1;
  }
  if (tvmgen_default_fused_multiply_add(x_buffer_var, sid_1) != 0 ) return -1;
  if (tvmgen_default_fused_sqrt(sid_1, output_buffer_var) != 0 ) return -1;
  if (TVMBackendFreeWorkspace(1, 0, sid_1) != 0) {
    return -1;
  }
  return 0;
}
"""

_HEADER_V5 = """\
#ifndef TVMGEN_DEFAULT_H_
#define TVMGEN_DEFAULT_H_
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/*!
 * \\brief Input tensor pointers for TVM module "default"
 */
struct tvmgen_default_inputs {
  void* x;
};

/*!
 * \\brief Output tensor pointers for TVM module "default"
 */
struct tvmgen_default_outputs {
  void* y;
};

/*!
 * \\brief entrypoint function for TVM module "default"
 * \\param inputs Input tensors for the module
 * \\param outputs Output tensors for the module
 */
int32_t tvmgen_default_run(
  struct tvmgen_default_inputs* inputs,
  struct tvmgen_default_outputs* outputs
);
/*!
 * \\brief Workspace size for TVM module "default"
 */
#define TVMGEN_DEFAULT_WORKSPACE_SIZE 32

#ifdef __cplusplus
}
#endif

#endif // TVMGEN_DEFAULT_H_
"""

_RELAY = """\
def @main(%x: Tensor[(1, 4), float32], output_tensor_names=["y"]) {
  %0 = multiply(%x, meta[relay.Constant][0]);
  %1 = add(%0, 1f);
  sqrt(%1)
}
"""

_LIB0_V7 = """\
#include "tvm/runtime/c_runtime_api.h"
#ifdef __cplusplus
extern "C" {
#endif
#include <tvmgen_default.h>
TVM_DLL int32_t tvmgen_default___tvm_main__(void* x,void* output0,
    uint8_t* constant_pool_0_var,uint8_t* workspace_pool_1_var);
int32_t tvmgen_default_run(struct tvmgen_default_inputs* inputs,
    struct tvmgen_default_outputs* outputs,
    struct tvmgen_default_workspace_pools* workspace_pools) {
  return tvmgen_default___tvm_main__(inputs->x,outputs->y,
    workspace_pools->constant_pool,
    workspace_pools->workspace_pool);
}
#ifdef __cplusplus
}
#endif
;"""

_LIB1_V7 = """\
// tvm target: c -keys=cpu -mcpu=cortex-m55
#define TVM_EXPORTS
#include "tvm/runtime/c_runtime_api.h"
#include "tvm/runtime/c_backend_api.h"
#include <math.h>

#ifdef __cplusplus
extern "C"
#endif
TVM_DLL int32_t tvmgen_default_fused_multiply_add(float* p0, float* T_add,
    uint8_t* constant_pool_0_var, uint8_t* workspace_pool_1_var) {
  void* scaled_let = (&(workspace_pool_1_var[16]));
  for (int32_t ax0 = 0; ax0 < 4; ++ax0) {
    ((float*)scaled_let)[ax0] = (p0[ax0] * ((float*)constant_pool_0_var)[ax0]);
  }
  for (int32_t ax0 = 0; ax0 < 4; ++ax0) {
    T_add[ax0] = (((float*)scaled_let)[ax0] + 1.000000e+00f);
  }
  return 0;
}

#ifdef __cplusplus
extern "C"
#endif
TVM_DLL int32_t tvmgen_default_fused_sqrt(float* p0, float* T_sqrt) {
  for (int32_t ax0 = 0; ax0 < 4; ++ax0) {
    T_sqrt[ax0] = sqrtf(p0[ax0]);
  }
  return 0;
}

#ifdef __cplusplus
extern "C"
#endif
TVM_DLL int32_t tvmgen_default___tvm_main__(float* x_buffer_var, float* output_buffer_var,
    uint8_t* constant_pool_0_var, uint8_t* workspace_pool_1_var) {
  void* sid_1_let = (&(workspace_pool_1_var[0]));
  if (tvmgen_default_fused_multiply_add(x_buffer_var, sid_1_let, constant_pool_0_var,
                                        workspace_pool_1_var) != 0 ) return -1;
  if (tvmgen_default_fused_sqrt(sid_1_let, output_buffer_var) != 0 ) return -1;
  return 0;
}
"""


def _header_v7(constants: bytes) -> str:
    rows = ", ".join(f"0x{byte:02x}" for byte in constants)
    return f"""\
#ifndef TVMGEN_DEFAULT_H_
#define TVMGEN_DEFAULT_H_
#include <stdint.h>

#ifdef __cplusplus
extern "C" {{
#endif

/*!
 * \\brief Input tensor x size (in bytes) for TVM module "default"
 */
#define TVMGEN_DEFAULT_X_SIZE 16
/*!
 * \\brief Output tensor y size (in bytes) for TVM module "default"
 */
#define TVMGEN_DEFAULT_Y_SIZE 16
/*!
 * \\brief Input tensor pointers for TVM module "default"
 */
struct tvmgen_default_inputs {{
  void* x;
}};

/*!
 * \\brief Output tensor pointers for TVM module "default"
 */
struct tvmgen_default_outputs {{
  void* y;
}};

/*!
 * \\brief Workspace pool pointers for TVM module "default"
 */
struct tvmgen_default_workspace_pools {{
  void* constant_pool;
  void* workspace_pool;
}};

/*!
 * \\brief entrypoint function for TVM module "default"
 * \\param inputs Input tensors for the module
 * \\param outputs Output tensors for the module
 * \\param workspace_pools Workspace memory pool pointers for the module
 */
int32_t tvmgen_default_run(
  struct tvmgen_default_inputs* inputs,
  struct tvmgen_default_outputs* outputs,
  struct tvmgen_default_workspace_pools* workspace_pools
);
/*!
 * \\brief Workspace size for TVM module "default"
 */
#define TVMGEN_DEFAULT_WORKSPACE_SIZE 0
/*!
 * \\brief constant_pool initialization data for TVM module "default"
 */
#define TVMGEN_DEFAULT_CONSTANT_POOL_CONSTANT_POOL_SIZE {len(constants)}
#define TVMGEN_DEFAULT_CONSTANT_POOL_CONSTANT_POOL_DATA \\
    {rows} \\

/*!
 * \\brief workspace_pool size for TVM module "default"
 */
#define TVMGEN_DEFAULT_WORKSPACE_POOL_WORKSPACE_POOL_SIZE 32

#ifdef __cplusplus
}}
#endif

#endif // TVMGEN_DEFAULT_H_
"""


def _main_v5(workspace: int) -> dict[str, Any]:
    return {
        "constants_size_bytes": 16,
        "device": 1,
        "io_size_bytes": 32,
        "workspace_size_bytes": workspace,
    }


def metadata_v5(workspace: int = 32) -> dict[str, Any]:
    operators = [
        ("tvmgen_default_fused_multiply_add", 16),
        ("tvmgen_default_fused_sqrt", 0),
    ]
    return {
        "executors": ["aot"],
        "export_datetime": "2022-03-24 18:49:45Z",
        "external_dependencies": [],
        "memory": {
            "functions": {
                "main": [_main_v5(workspace)],
                "operator_functions": [
                    {
                        "function_name": name,
                        "workspace": [{"device": 1, "workspace_size_bytes": size}],
                    }
                    for name, size in operators
                ],
            }
        },
        "model_name": "default",
        "style": "full-model",
        "target": {"1": "c -keys=cpu -mcpu=cortex-m55"},
        "version": 5,
    }


def metadata_v7(version: int = 7) -> dict[str, Any]:
    tensor = {"dtype": "float32", "size": 16}
    main = {
        "constants_size_bytes": 16,
        "device": 1,
        "inputs": {"x": tensor},
        "io_size_bytes": 32,
        "outputs": {"y": tensor},
        "workspace_size_bytes": 32,
    }
    return {
        "modules": {
            "default": {
                "executors": ["aot"],
                "export_datetime": "2023-11-01 10:00:00Z",
                "memory": {"functions": {"main": [main], "operator_functions": []}},
                "model_name": "default",
                "style": "full-model",
                "target": ["c -keys=cpu -mcpu=cortex-m55"],
            }
        },
        "version": version,
    }


def v5_members(workspace: int = 32) -> dict[str, bytes | str]:
    return {
        "./metadata.json": json.dumps(metadata_v5(workspace), indent=2, sort_keys=True),
        "./codegen/host/src/default_lib0.c": _LIB0_V5,
        "./codegen/host/src/default_lib1.c": _LIB1_V5,
        "./codegen/host/include/tvmgen_default.h": _HEADER_V5,
        "./parameters/default.params": b"\x00" * 32,
        "./src/relay.txt": _RELAY,
    }


def v5_run_model_members() -> dict[str, bytes | str]:
    metadata = metadata_v5()
    metadata["target"] = {"1": "c -keys=cpu -link-params=0 -mcpu=cortex-m55 -system-lib=0"}
    code = _LIB1_V5.replace(
        "TVM_DLL int32_t tvmgen_default___tvm_main__(float* x_buffer_var, "
        "float* output_buffer_var)",
        "TVM_DLL int32_t tvmgen_default_run_model(void* x_buffer_var, void* output_buffer_var)",
    )
    return {
        "./metadata.json": json.dumps(metadata, indent=2, sort_keys=True),
        "./codegen/host/src/default_lib0.c": code,
        "./codegen/host/include/tvmgen_default.h": _HEADER_V5,
        "./parameters/default.params": b"\x00" * 32,
        "./src/relay.txt": _RELAY,
    }


def v7_members(
    constant_pool: str = "constant_pool", workspace_pool: str = "workspace_pool"
) -> dict[str, bytes | str]:
    constants = struct.pack("<4f", 2.0, 2.0, 2.0, 2.0)
    header = _header_v7(constants)
    lib0, lib1 = _LIB0_V7, _LIB1_V7
    renames = {"constant_pool": constant_pool, "workspace_pool": workspace_pool}
    for old, new in renames.items():
        header = header.replace(f"void* {old};", f"void* {new};")
        header = header.replace(f"DEFAULT_{old.upper()}_", f"DEFAULT_{new.upper()}_")
        lib0 = lib0.replace(f"workspace_pools->{old}", f"workspace_pools->{new}")
    return {
        "./metadata.json": json.dumps(metadata_v7(), indent=2, sort_keys=True),
        "./codegen/host/src/default_lib0.c": lib0,
        "./codegen/host/src/default_lib1.c": lib1,
        "./codegen/host/include/tvmgen_default.h": header,
        "./parameters/default.params": b"\x00" * 32,
        "./src/default.relay": _RELAY,
    }


def write_archive(path: Path, members: dict[str, bytes | str]) -> Path:
    """A tar file holding `members` (path -> content), folders included, as TVM writes it."""
    with tarfile.open(path, "w") as archive:
        folders = sorted({str(Path(name).parent) for name in members} - {"."})
        for folder in folders:
            for depth in range(1, len(Path(folder).parts) + 1):
                name = str(Path(*Path(folder).parts[:depth]))
                if name not in archive.getnames() and name != ".":
                    info = tarfile.TarInfo(name)
                    info.type = tarfile.DIRTYPE
                    info.mode = 0o755
                    archive.addfile(info)
        for name, content in members.items():
            data = content.encode() if isinstance(content, str) else content
            info = tarfile.TarInfo(name)
            info.size = len(data)
            info.mode = 0o644
            archive.addfile(info, io.BytesIO(data))
    return path


def v5_archive(path: Path, workspace: int = 32) -> Path:
    return write_archive(path, v5_members(workspace))


def v7_archive(path: Path, **pools: str) -> Path:
    return write_archive(path, v7_members(**pools))


def printed_outputs(output: str, name: str = "y") -> list[float]:
    """The float32 values a demo run printed for output `name`."""
    prefix = f"tvm: output {name}["
    return [float(line.split()[-1]) for line in output.splitlines() if line.startswith(prefix)]
