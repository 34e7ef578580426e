"""Small Relax models written with TVMScript, for the tests of `--frontend tvm`: a float
model whose tensors move between storage scopes (`R.to_vdevice`) and through a reshape,
a quantization whose scale 7 printed digits do not hold, and TVM's own VM on the host, to
compare the board's outputs with."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import numpy as np
import pytest
import tflite
import tvm
from tvm import relax
from tvm.relax.frontend.tflite import from_tflite

WEIGHTS = (np.arange(32, dtype=np.float32).reshape(8, 4) - 12.0) / 7.0
MODELS = Path(__file__).resolve().parents[2] / "shared/models/mlperf-tiny"
KWS = MODELS / "kws_ref_model.tflite"
AD01 = MODELS / "ad01_int8.tflite"
STR_WW = MODELS / "str_ww_ref_model.tflite"
# As the other tests of ../shared's models: they need the checkout's neighbour.
needs_kws = pytest.mark.skipif(not KWS.is_file(), reason=f"no model at {KWS}")
needs_models = pytest.mark.skipif(
    not (AD01.is_file() and STR_WW.is_file()), reason=f"no models in {MODELS}"
)

# kws's first requantization scale: the float32 0.037401788, which TVM's C code generator
# prints as 3.740179e-02f (7 significant digits), one ulp below it.
SCALE = 0.037401787936687469
QUANTIZE = f"""

@I.ir_module
class Module:
    @R.function
    def main(x: R.Tensor((8,), "float32")) -> R.Tensor((8,), "int8"):
        with R.dataflow():
            q = R.quantize(
                x, R.const({SCALE!r}, "float32"), R.const(0, "int8"), axis=0, out_dtype="int8"
            )
            R.output(q)
        return q
"""


def boundary_inputs() -> np.ndarray:
    """Eight inputs x whose x / SCALE rounds to another integer when the scale is the one
    TVM's C prints (3.740179e-02f): the first float32 from (k + 0.5) * SCALE up where the
    two quotients round apart, for k = -100, -70, ..., 99."""
    exact, printed = np.float32(SCALE), np.float32(f"{SCALE:e}")
    found = []
    for k in (-100, -70, -40, -10, 10, 40, 70, 99):
        x = np.float32((k + 0.5) * SCALE)
        while np.rint(x / exact) == np.rint(x / printed):
            x = np.nextafter(x, np.float32(np.inf))
        found.append(x)
    return np.array(found, dtype=np.float32)


SCOPED = """

@I.ir_module
class Module:
    I.module_global_infos(
        {"vdevice": [I.vdevice("llvm", 0, "global"), I.vdevice("llvm", 0, "SCOPE")]}
    )

    @R.function
    def main(
        x: R.Tensor((2, 8), "float32"), w: R.Tensor((8, 4), "float32")
    ) -> R.Tensor((8,), "float32"):
        with R.dataflow():
            a = R.matmul(x, w)
            b = R.to_vdevice(a, "llvm:1")
            d = R.reshape(b, (8,))
            e = R.nn.softmax(d)
            R.output(e)
        return e
"""


def scoped_module(scope: str = "global.sram_ws") -> Any:
    """x @ w, copied to a VDevice of memory scope `scope`, reshaped to (8,) (a view),
    softmax;
    `w` is a parameter (bind WEIGHTS)."""
    module = tvm.script.from_source(SCOPED.replace("SCOPE", scope))
    assert isinstance(module, tvm.ir.IRModule)
    return module


def bound(module: Any, params: dict[str, np.ndarray]) -> Any:
    tensors = {name: tvm.runtime.tensor(value) for name, value in params.items()}
    return relax.transform.BindParams("main", tensors)(module)


def run_on_host(
    module: Any, *inputs: np.ndarray, c_library: Path | None = None
) -> list[np.ndarray]:
    """The outputs of TVM's own VM on the host: `tvm.compile(mod, target="llvm")`, or with
    `c_library` (a path to write the library to) TVM's C kernels (target "c", the code the
    board runs) built by the host's C compiler."""
    if c_library is None:
        executable = tvm.compile(module, target="llvm")
    else:
        tvm.compile(module, target="c").export_library(str(c_library))
        executable = tvm.runtime.load_module(str(c_library))
    machine = relax.VirtualMachine(executable, [tvm.cpu(), tvm.cpu()])
    result = machine["main"](*(tvm.runtime.tensor(x) for x in inputs))
    results = list(result) if isinstance(result, (list, tuple)) else [result]
    return [item.numpy() for item in results]


def tflite_module(path: Path) -> Any:
    return from_tflite(tflite.Model.GetRootAsModel(path.read_bytes(), 0))
