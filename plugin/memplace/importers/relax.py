"""TVM as installed today: a Relax IRModule (`apache-tvm`, 0.25 and later) as a workload.

A model comes in as an IRModule and its parameters (`from_relax`, for Python), a module
saved with `tvm.ir.save_json` or as TVMScript text (`module.script()`), or a `.tflite` /
`.onnx` file read through TVM's Relax frontends (`read_relax`: what `--frontend tvm`
reads). It is lowered with TVM's own passes
(LegalizeOps, FuseOps, FuseTIR, CallTIRRewrite, ...), after which the entry function
`main` is a list of kernel calls in destination-passing style: each tensor Relax would
allocate is an `R.builtin.alloc_tensor` with its storage scope, written by the kernel call
that takes it. memplace reads that list:

- every call of a TIR kernel (or `R.to_vdevice`, a copy) is a step, in binding order;
- every allocated tensor is a buffer live from the first step that touches it to the last
  (through its views: `R.reshape` and plain rebinding are aliases, never copies), with the
  scope its storage scope says: `global` any workspace pool, `global.<pool>` that pool, a
  VDevice memory scope naming a board memory any workspace pool in it, or what `scopes`
  maps it to;
- every constant (the weights) is a constant with its bytes;
- the inputs and outputs are buffers of the caller's, live over the whole run;
- the workspace a kernel takes through `TVMBackendAllocWorkspace` (sizes read from the C
  TVM writes for it) is a dynamic buffer of that step, handed out by the planned arena of
  the pool the plan gives it.

TVM's C for the kernels (`tvm.tirx.build(..., target="c")`) comes with the model, for
`codegen.relax` to put in the project beside the static executor it writes. TVM itself is
imported only here, and only when a Relax model is read.
"""

from __future__ import annotations

import importlib
import re
import struct
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING, Any

from memplace.errors import InputError, ToolError
from memplace.importers.registry import Importer
from memplace.workload import Workload, WorkloadBuilder

if TYPE_CHECKING:
    from memplace.board import Board

__all__ = [
    "INSTALL",
    "RelaxModel",
    "Step",
    "TensorView",
    "from_relax",
    "read_relax",
    "require_tvm",
]

INSTALL = "pip install 'memplace[tvm]'  (TVM's wheel, apache-tvm)"
SUFFIXES = (".json", ".py", ".tflite", ".onnx")
KEY = "MODEL"
# Alignment of every tensor and of each workspace request (TVM's CRT aligned to 16).
ALIGN = 16
WORKSPACE_ALIGN = 16
WORKSPACE = "tvm_workspace"
_DTYPE = re.compile(r"^(int|uint|float)(8|16|32|64)$")
_DL_CODES = {"int": 0, "uint": 1, "float": 2}
_KERNEL = re.compile(
    r"^TVM_DLL int32_t (__tvm_ffi_\w+)\(void\* self_handle, void\* args, "
    r"int32_t num_args, void\* result\) \{$",
    re.MULTILINE,
)
# A float constant in a kernel's TVMScript, and as TVM's C prints it (`%e`, `f` if float32).
_SCRIPT_FLOAT = re.compile(r"T\.float(16|32|64)\((-?[0-9][0-9.e+-]*)\)")
_PACK = {"16": "<e", "32": "<f"}
_C_FLOAT = re.compile(r"(?<![\w.])(-?[0-9]\.[0-9]{6}e[+-][0-9]{2,3})(f?)(?![\w.])")
_ALLOC = re.compile(r"TVMBackendAllocWorkspace\(\d+, \w+, \(uint64_t\)(\d+)(?:ULL)?, ")


@dataclass(frozen=True)
class TensorView:
    """One tensor as a kernel sees it: the workload buffer (or constant) holding its bytes,
    and its own shape and dtype; a reshape is another view of the same buffer."""

    buffer: str
    role: str  # "input", "output", "storage" or "constant"
    dtype: str
    shape: tuple[int, ...]

    @property
    def nbytes(self) -> int:
        return nbytes(self.dtype, self.shape)

    @property
    def dl_code(self) -> int:
        kind = _DTYPE.match(self.dtype)
        assert kind is not None  # _dtype checked it
        return _DL_CODES[kind[1]]

    @property
    def dl_bits(self) -> int:
        kind = _DTYPE.match(self.dtype)
        assert kind is not None
        return int(kind[2])


@dataclass(frozen=True)
class Step:
    """A call of the entry function, in order: a TIR kernel (`symbol` is its C function,
    `__tvm_ffi_<name>`) or a copy (`R.to_vdevice`, from args[0] to args[1])."""

    name: str
    kind: str  # "kernel" or "copy"
    symbol: str
    args: tuple[TensorView, ...]
    workspace: tuple[int, ...] = ()  # bytes of each TVMBackendAllocWorkspace, in order


@dataclass(frozen=True)
class Storage:
    """A tensor Relax would allocate: `scope` is its storage scope as Relax gives it."""

    name: str
    size: int
    scope: str
    first: int
    last: int


@dataclass(frozen=True)
class Constant:
    name: str
    dtype: str
    shape: tuple[int, ...]
    data: bytes = field(repr=False)


@dataclass(frozen=True)
class RelaxModel:
    """A Relax model lowered for the static executor, with what planning and code need."""

    name: str
    source: str  # the file it came from, or "<python>"
    inputs: tuple[TensorView, ...]
    outputs: tuple[TensorView, ...]
    storages: tuple[Storage, ...]
    constants: tuple[Constant, ...]
    steps: tuple[Step, ...]
    kernels_c: str = field(repr=False)
    headers: Mapping[str, str] = field(repr=False)  # path below include/ -> text
    tvm_version: str
    # Bytes of the storages Relax's own plan (StaticPlanBlockMemory) allocates.
    tvm_plan_bytes: int
    scope_map: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    # The bytes each input is run on (input name -> bytes); none: the demo fills them.
    input_data: Mapping[str, bytes] = field(default_factory=dict, repr=False)
    inputs_from: str | None = None  # where input_data came from
    # The inputs' names as the model gives them (a TFLite tensor's `serving_default_x:0`),
    # in the order of `inputs`, whose buffers carry them as C names.
    input_names: tuple[str, ...] = ()

    def with_inputs(self, path: Path) -> RelaxModel:
        """The model to be run on the arrays of the `.npz` file at `path`, one per input,
        named as the inputs, of their dtype and shape."""
        numpy = importlib.import_module("numpy")
        try:
            with numpy.load(path, allow_pickle=False) as archive:
                arrays = {name: archive[name] for name in archive.files}
        except (OSError, ValueError) as exc:
            raise InputError(
                f"{path}: not a NumPy .npz archive ({_first_line(exc)})", key="--inputs"
            ) from None
        names = self.input_names or tuple(tensor.buffer for tensor in self.inputs)
        # An array is named as the model names the input, or as its C name.
        chosen = {
            tensor.buffer: next((key for key in (name, tensor.buffer) if key in arrays), None)
            for tensor, name in zip(self.inputs, names, strict=True)
        }
        if None in chosen.values() or len(arrays) != len(self.inputs):
            raise InputError(
                f"{path} holds arrays {', '.join(sorted(arrays)) or 'none'}; the model's inputs "
                f"are {', '.join(names)}",
                key="--inputs",
            )
        data = {}
        for tensor in self.inputs:
            key = chosen[tensor.buffer] or tensor.buffer
            array = arrays[key]
            if str(array.dtype) != tensor.dtype or tuple(array.shape) != tensor.shape:
                raise InputError(
                    f"{path}: array {key} is {array.dtype} {tuple(array.shape)}; the "
                    f"input is {tensor.dtype} {tensor.shape}",
                    key="--inputs",
                )
            data[tensor.buffer] = array.astype(array.dtype.newbyteorder("<")).tobytes()
        return replace(self, input_data=data, inputs_from=str(path))

    @property
    def workload_name(self) -> str:
        return self.name

    @property
    def workspace(self) -> int:
        """The most kernel workspace one step takes, padding included."""
        return max((_padded(step.workspace) for step in self.steps), default=0)

    def workload(self, board: Board | None = None) -> Workload:
        """The buffers the model needs, their storage scopes read against `board` (a scope
        naming one of its pools pins the tensor there; one naming a memory makes that
        memory's workspace pools the candidates)."""
        board_pools = tuple(board.pools) if board is not None else ()
        memories: dict[str, list[str]] = {}
        for pool in board.pools.values() if board is not None else ():
            if pool.kind == "workspace":
                memories.setdefault(pool.memory, []).append(pool.name)
        steps = [step.name for step in self.steps]
        last = len(steps) - 1
        builder = WorkloadBuilder(self.name, steps=steps, source=self.source, origin=self)
        for tensor in (*self.inputs, *self.outputs):
            builder.buffer(tensor.buffer, tensor.nbytes, [0, last], align=ALIGN)
        for storage in self.storages:
            scope, pools = self._scope(storage, board_pools, memories)
            builder.buffer(
                storage.name,
                storage.size,
                [storage.first, storage.last],
                align=ALIGN,
                scope=scope,
                pools=pools,
            )
        for constant in self.constants:
            builder.constant(constant.name, data=constant.data or b"\0", align=ALIGN)
        for index, step in enumerate(self.steps):
            if step.workspace:
                # One buffer for all of a step's requests: they come from one arena, in one
                # pool, whichever pool the plan gives each step.
                builder.buffer(
                    workspace_buffer(index),
                    _padded(step.workspace),
                    index,
                    align=WORKSPACE_ALIGN,
                    scope="global.workspace",
                    dynamic=True,
                )
        try:
            return builder.build()
        except InputError as error:
            raise InputError(f"{self.source}: {error.message}", key=error.key) from None

    def _scope(
        self,
        storage: Storage,
        board_pools: Collection[str],
        memories: Mapping[str, Sequence[str]],
    ) -> tuple[str, tuple[str, ...] | None]:
        """A storage scope as a memplace scope and candidate pools."""
        scope = storage.scope
        if scope in self.scope_map:
            pools = self.scope_map[scope]
            if len(pools) == 1:
                return f"global.{pools[0]}", None
            return "global.workspace", pools
        if scope in ("global", ""):
            return "global.workspace", None
        name = scope.removeprefix("global.")
        if name in board_pools:
            return f"global.{name}", None
        if memories.get(name):
            return "global.workspace", tuple(memories[name])
        known = sorted({*board_pools, *memories, *self.scope_map})
        raise InputError(
            f"{self.source}: tensor {storage.name} has storage scope {scope!r}, which names "
            f"no pool or memory of the board ({', '.join(known) or 'none'}); map it to pools "
            "with scopes={...} (memplace.importers.relax.from_relax)",
            key=f"{storage.name}.scope",
        )


def workspace_buffer(step: int) -> str:
    """The dynamic buffer of what a step takes through TVMBackendAllocWorkspace."""
    return f"{WORKSPACE}_{step}"


def nbytes(dtype: str, shape: Sequence[int]) -> int:
    kind = _DTYPE.match(dtype)
    bits = int(kind[2]) if kind else 8
    count = 1
    for extent in shape:
        count *= extent
    return (count * bits + 7) // 8


def _padded(sizes: Sequence[int]) -> int:
    return sum(-(-size // WORKSPACE_ALIGN) * WORKSPACE_ALIGN for size in sizes)


def require_tvm() -> ModuleType:
    """TVM's Python package, or a ToolError (exit 3) saying how to install it."""
    try:
        return importlib.import_module("tvm")
    except ImportError as exc:
        raise ToolError(
            f"reading a Relax model needs TVM, which is not installed ({exc}): {INSTALL}"
        ) from None


def _import(path: Path, board: Board | None, data_root: Path | None) -> Workload:
    return read_relax(path).workload(board)


IMPORTER = Importer(
    name="relax",
    suffixes=SUFFIXES,
    describes="a Relax model: a module saved with tvm.ir.save_json or as TVMScript, or a "
    "model TVM's Relax frontends read",
    read=_import,
    project_type="aot_standalone_demo",
    frontend="tvm",
)


def read_relax(
    path: Path,
    scopes: Mapping[str, str | Sequence[str]] | None = None,
    fold_constants: bool = False,
) -> RelaxModel:
    """The model at `path`: a module saved with `tvm.ir.save_json` (`.json`) or written as
    TVMScript (`.py`, what `module.script()` prints), or a `.tflite` / `.onnx` model read
    through TVM's Relax frontend. `scopes` and `fold_constants` as for `from_relax`."""
    suffix = path.suffix.lower()
    if suffix not in SUFFIXES:
        raise InputError(
            f"--frontend tvm reads {', '.join(SUFFIXES)} models, not {path.name!r}", key=KEY
        )
    if not path.is_file():
        raise InputError(f"no model file at {path}", key=KEY)
    tvm = require_tvm()
    if suffix == ".json":
        try:
            module = tvm.ir.load_json(path.read_text(encoding="utf-8"))
        except Exception as exc:  # TVM raises its own error classes (and UnicodeDecodeError)
            raise InputError(
                f"{path}: not a module saved with tvm.ir.save_json ({_first_line(exc)})", key=KEY
            ) from None
        if not isinstance(module, tvm.ir.IRModule):
            raise InputError(f"{path}: holds a {type(module).__name__}, not an IRModule", key=KEY)
    elif suffix == ".py":
        module = _from_script(tvm, path)
    elif suffix == ".tflite":
        module = _from_tflite(path)
    else:
        module = _from_onnx(path)
    return from_relax(
        module,
        name=_c_name(path.stem),
        scopes=scopes,
        source=str(path),
        fold_constants=fold_constants,
    )


def _from_script(tvm: Any, path: Path) -> Any:
    """A module written as TVMScript (what `module.script()` prints)."""
    try:
        module = tvm.script.from_source(path.read_text(encoding="utf-8"))
    except Exception as exc:  # TVM's parser raises its own errors
        raise InputError(f"{path}: not a TVMScript module ({_first_line(exc)})", key=KEY) from None
    if not isinstance(module, tvm.ir.IRModule):
        raise InputError(f"{path}: holds a {type(module).__name__}, not an IRModule", key=KEY)
    return module


def _from_tflite(path: Path) -> Any:
    import tflite  # a dependency of memplace
    from tvm.relax.frontend.tflite import from_tflite

    data = path.read_bytes()
    try:
        model = tflite.Model.GetRootAsModel(data, 0)
        return from_tflite(model)
    except Exception as exc:  # the flatbuffer reader and TVM raise what they like
        raise InputError(
            f"{path}: TVM's TFLite frontend cannot read it: {_first_line(exc)}", key=KEY
        ) from None


def _from_onnx(path: Path) -> Any:
    try:
        onnx = importlib.import_module("onnx")
    except ImportError:
        raise ToolError(f"reading {path.name} needs the onnx package: pip install onnx") from None
    from tvm.relax.frontend.onnx import from_onnx

    try:
        return from_onnx(onnx.load(str(path)), keep_params_in_input=False)
    except Exception as exc:
        raise InputError(
            f"{path}: TVM's ONNX frontend cannot read it: {_first_line(exc)}", key=KEY
        ) from None


def from_relax(
    module: Any,
    params: Mapping[str, Any] | None = None,
    name: str = "model",
    scopes: Mapping[str, str | Sequence[str]] | None = None,
    source: str = "<python>",
    fold_constants: bool = False,
) -> RelaxModel:
    """A Relax IRModule whose entry function is `main`, with `params` (name -> array) bound
    to its parameters of those names; `scopes` maps a VDevice memory scope to a pool or a
    list of candidate pools. `fold_constants` adds TVM's FoldConstant to the lowering
    (see `_lower`)."""
    tvm = require_tvm()
    from tvm import relax

    if not isinstance(module, tvm.ir.IRModule) or "main" not in [
        g.name_hint for g in module.get_global_vars()
    ]:
        raise InputError(f"{source}: a Relax model is an IRModule with a function main", key=KEY)
    if params:
        names = [param.name for param in module["main"].params]
        unknown = sorted(set(params) - set(names))
        if unknown:
            raise InputError(
                f"{source}: main has no parameter {', '.join(unknown)} to bind; its "
                f"parameters are {', '.join(names) or 'none'}",
                key="params",
            )
        numpy = importlib.import_module("numpy")
        bound = {key: tvm.runtime.tensor(numpy.asarray(value)) for key, value in params.items()}
        module = relax.transform.BindParams("main", bound)(module)
    lowered = _lower(tvm, relax, module, source, fold_constants)
    main = lowered["main"]
    walker = _Walker(tvm, relax, source)
    walker.walk(main)
    try:
        kernels_c = _kernels_c(tvm, lowered)
    except Exception as exc:  # TVM's code generators raise TVM's errors
        raise InputError(
            f"{source}: TVM cannot write C for its kernels: {_first_line(exc)}", key=KEY
        ) from None
    steps = tuple(walker.with_workspace(kernels_c))
    return RelaxModel(
        name=_c_name(name),
        source=source,
        inputs=tuple(walker.inputs),
        input_names=tuple(walker.input_names),
        outputs=tuple(walker.outputs),
        storages=tuple(walker.storages()),
        constants=tuple(walker.constants.values()),
        steps=steps,
        kernels_c=kernels_c,
        headers=_headers(kernels_c),
        tvm_version=str(tvm.__version__),
        tvm_plan_bytes=_tvm_plan_bytes(relax, lowered),
        scope_map={
            key: (value,) if isinstance(value, str) else tuple(value)
            for key, value in (scopes or {}).items()
        },
    )


def _lower(tvm: Any, relax: Any, module: Any, source: str, fold_constants: bool) -> Any:
    """TVM's own lowering, up to the calls of kernels in destination-passing style. No
    FoldConstant unless asked: it would turn a quantized model's int8 weights into float32
    constants four times their size (ad01's 270 KB into 1 MB); dequantized by a kernel
    instead, they stay int8 in the constant pools and are float only while a step needs
    them."""
    folding = [relax.transform.FoldConstant()] if fold_constants else []
    passes = [
        relax.transform.RealizeVDevice(),
        relax.transform.LegalizeOps(),
        relax.transform.AnnotateTIROpPattern(),
        *folding,
        relax.transform.FuseOps(),
        relax.transform.FuseTIR(),
        relax.transform.DeadCodeElimination(),
        relax.transform.RewriteDataflowReshape(),
        relax.transform.ToNonDataflow(),
        relax.transform.RemovePurityChecking(),
        relax.transform.CallTIRRewrite(),
        relax.transform.AttachGlobalSymbol(),
    ]
    try:
        with tvm.transform.PassContext(opt_level=3):
            return tvm.transform.Sequential(passes)(module)
    except Exception as exc:  # TVM's passes raise TVM's errors
        raise InputError(
            f"{source}: TVM cannot lower the model: {_first_line(exc)}", key=KEY
        ) from None


def _kernels_c(tvm: Any, lowered: Any) -> str:
    """TVM's C for every kernel, as `tvm.tirx.build(..., target="c")` writes it, each float
    constant written exactly (`_exact_floats`)."""
    from tvm.tirx.build import codegen_build

    functions = {gv: f for gv, f in lowered.functions.items() if isinstance(f, tvm.tirx.PrimFunc)}
    # Kernels a VDevice put on another target are built for the board like the rest.
    functions = {
        gv: f.without_attr("target") if "target" in (f.attrs or {}) else f
        for gv, f in functions.items()
    }
    # The steps of tvm.tirx.build for a CPU target, holding on to the TIR that is printed.
    target = tvm.target.Target("c").with_host(tvm.target.Target("c"))
    module = tvm.tirx.transform.BindTarget(target)(tvm.IRModule(functions, attrs=lowered.attrs))
    pipeline, finalize_host, _ = tvm.tirx.get_tir_pipeline("default")
    module = finalize_host()(pipeline(module))
    source = str(codegen_build(module, target).inspect_source())
    scripts = {
        str(function.attrs["global_symbol"]): function.script()
        for function in module.functions.values()
        if isinstance(function, tvm.tirx.PrimFunc) and "global_symbol" in (function.attrs or {})
    }
    return _exact_floats(source, scripts)


def _exact_floats(source: str, scripts: Mapping[str, str]) -> str:
    """`source` with each float literal TVM printed written as the exact value it holds.

    TVM's C code generator prints a float constant with `std::scientific` at the stream's
    default precision, 7 significant digits (`3.740179e-02f` for the float32 0.037401788,
    whose shortest exact decimal needs 8): the C compiler then rounds that text to the
    neighbouring float, one ulp off, and a requantization scale off by one ulp moves a
    value sitting near a rounding boundary by one int8 step. TVM's LLVM code generator
    takes the value itself. So each literal of a kernel (`scripts`: symbol -> the kernel's
    TVMScript, which prints every constant exactly) becomes a C99 hexadecimal float of the
    value TVM holds; a literal two different constants of one kernel print alike stays as
    TVM wrote it."""
    starts = list(_KERNEL.finditer(source))
    pieces = [source[: starts[0].start()] if starts else source]
    for index, match in enumerate(starts):
        end = starts[index + 1].start() if index + 1 < len(starts) else len(source)
        values: dict[str, set[float]] = {}
        for bits, text in _SCRIPT_FLOAT.findall(scripts.get(match[1], "")):
            value = float(text)
            if bits != "64":  # the float32 (float16) nearest the double TVM holds
                (value,) = struct.unpack(_PACK[bits], struct.pack(_PACK[bits], value))
            values.setdefault(f"{float(text):e}{'' if bits == '64' else 'f'}", set()).add(value)

        def exact(literal: re.Match[str], values: dict[str, set[float]] = values) -> str:
            found = values.get(literal[0], set())
            return next(iter(found)).hex() + literal[2] if len(found) == 1 else literal[0]

        pieces.append(_C_FLOAT.sub(exact, source[match.start() : end]))
    return "".join(pieces)


def _tvm_plan_bytes(relax: Any, lowered: Any) -> int:
    """Bytes of the storages Relax's StaticPlanBlockMemory allocates for `main`."""
    import tvm

    planned = relax.transform.StaticPlanBlockMemory()(lowered)
    total = 0
    for block in planned["main"].body.blocks:
        for binding in block.bindings:
            value = binding.value
            if (
                isinstance(value, tvm.ir.Call)
                and getattr(value.op, "name", "") == "relax.memory.alloc_storage"
            ):
                total += int(value.args[0].values[0])
    return total


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return next((line for line in reversed(text) if line.strip()), type(exc).__name__)[:300]


def _c_name(name: str) -> str:
    text = re.sub(r"[^0-9A-Za-z_]", "_", name)
    return text if text and not text[0].isdigit() else f"m_{text}"


class _Walker:
    """Reads the lowered `main`: steps, storages with lifetimes, constants, inputs, outputs."""

    def __init__(self, tvm: Any, relax: Any, source: str) -> None:
        self.tvm = tvm
        self.relax = relax
        self.source = source
        self.views: dict[Any, TensorView] = {}  # Relax var -> the view it names
        self.inputs: list[TensorView] = []
        self.input_names: list[str] = []
        self.outputs: list[TensorView] = []
        self.scopes: dict[str, str] = {}
        self.touched: dict[str, list[int]] = {}
        self.constants: dict[Any, Constant] = {}
        self.constant_views: dict[Any, TensorView] = {}
        self.steps: list[Step] = []
        self.names: set[str] = set()

    def error(self, message: str) -> InputError:
        return InputError(f"{self.source}: {message}", key=KEY)

    def walk(self, main: Any) -> None:
        for param in main.params:
            shape, dtype = self._tensor(param.ty, f"input {param.name}")
            view = TensorView(self._name(param.name), "input", dtype, shape)
            self.views[param] = view
            self.inputs.append(view)
            self.input_names.append(str(param.name))
        for block in main.body.blocks:
            for binding in block.bindings:
                self._binding(binding)
        if not self.steps:
            raise self.error("the model computes nothing (its main calls no kernel)")
        self._outputs(main.body.body)

    def _binding(self, binding: Any) -> None:
        tvm = self.tvm
        value = binding.value
        var = binding.var
        if isinstance(value, tvm.ir.Var):
            self.views[var] = self._view(value)
            return
        if not isinstance(value, tvm.ir.Call):
            raise self.error(
                f"memplace's executor runs calls; {var.name} binds a {type(value).__name__}"
            )
        op = value.op
        if isinstance(op, tvm.ir.GlobalVar):
            args = tuple(self._argument(arg) for arg in value.args)
            self._step(op.name_hint, "kernel", f"__tvm_ffi_{op.name_hint}", args)
            return
        name = getattr(op, "name", str(op))
        if name == "relax.builtin.alloc_tensor":
            shape, dtype = self._tensor(var.ty, var.name)
            storage = self._name(var.name)
            self.scopes[storage] = str(value.args[3].value) if len(value.args) > 3 else "global"
            self.views[var] = TensorView(storage, "storage", dtype, shape)
            return
        if name == "relax.reshape":
            base = self._view(value.args[0])
            shape, dtype = self._tensor(var.ty, var.name)
            self.views[var] = TensorView(base.buffer, base.role, dtype, shape)
            return
        if name == "relax.to_vdevice":
            shape, dtype = self._tensor(var.ty, var.name)
            vdevice = var.ty.vdevice
            storage = self._name(var.name)
            self.scopes[storage] = str(vdevice.memory_scope) if vdevice is not None else "global"
            target = TensorView(storage, "storage", dtype, shape)
            self.views[var] = target
            self._step(
                f"to_vdevice_{var.name}", "copy", "memcpy", (self._argument(value.args[0]), target)
            )
            return
        raise self.error(
            f"memplace's static executor runs TIR kernels, reshapes and R.to_vdevice; "
            f"{var.name} is {name}"
        )

    def _step(self, name: str, kind: str, symbol: str, args: tuple[TensorView, ...]) -> None:
        index = len(self.steps)
        for arg in args:
            if arg.role == "storage":
                self.touched.setdefault(arg.buffer, []).append(index)
        self.steps.append(Step(f"{index}:{name}", kind, symbol, args))

    def _argument(self, arg: Any) -> TensorView:
        if isinstance(arg, self.tvm.ir.Constant):
            return self._constant(arg)
        if isinstance(arg, self.tvm.ir.Var):
            return self._view(arg)
        raise self.error(f"a kernel takes a {type(arg).__name__}; memplace passes tensors only")

    def _view(self, var: Any) -> TensorView:
        if var not in self.views:
            raise self.error(f"{var.name} is used before memplace knows its memory")
        return self.views[var]

    def _constant(self, constant: Any) -> TensorView:
        for known, view in self.constant_views.items():
            if known.same_as(constant):
                return view
        tensor = getattr(constant, "value", None)
        if not hasattr(tensor, "numpy"):
            raise self.error(f"a kernel takes {constant}; memplace passes tensor constants only")
        array = tensor.numpy()  # type: ignore[union-attr]
        dtype = _dtype(str(array.dtype), "a constant", self)
        name = self._name(f"const_{len(self.constants)}")
        shape = tuple(int(extent) for extent in array.shape)
        data = array.astype(array.dtype.newbyteorder("<")).tobytes()
        self.constants[constant] = Constant(name, dtype, shape, data)
        view = TensorView(name, "constant", dtype, shape)
        self.constant_views[constant] = view
        return view

    def _tensor(self, info: Any, what: str) -> tuple[tuple[int, ...], str]:
        if not isinstance(info, self.relax.type.TensorType) or info.shape is None:
            raise self.error(f"{what} is not a tensor of known shape")
        try:
            shape = tuple(int(extent) for extent in info.shape.values)
        except (TypeError, AttributeError):
            raise self.error(f"{what} has a symbolic shape; memplace plans static shapes") from None
        return shape, _dtype(str(info.dtype), what, self)

    def _outputs(self, result: Any) -> None:
        fields = result.fields if isinstance(result, self.tvm.ir.Tuple) else [result]
        seen: set[str] = set()
        for index, item in enumerate(fields):
            if not isinstance(item, self.tvm.ir.Var):
                raise self.error("an output of main is not a tensor memplace knows")
            view = self._view(item)
            if view.role != "storage" or view.buffer in seen:
                what = "an input or constant" if view.role != "storage" else "another output"
                raise self.error(
                    f"output {index} is {what} itself; memplace runs models whose outputs a "
                    "kernel writes"
                )
            seen.add(view.buffer)
            name = "output" if len(fields) == 1 else f"output{index}"
            self.outputs.append(TensorView(self._name(name), "output", view.dtype, view.shape))
        # The caller's output memory replaces the storage each output was computed in.
        renamed = {
            self._view(item).buffer: out.buffer
            for item, out in zip(fields, self.outputs, strict=True)
        }
        self.steps = [
            Step(
                step.name,
                step.kind,
                step.symbol,
                tuple(
                    TensorView(renamed[a.buffer], "output", a.dtype, a.shape)
                    if a.buffer in renamed
                    else a
                    for a in step.args
                ),
            )
            for step in self.steps
        ]
        for buffer in renamed:
            self.touched.pop(buffer, None)

    def storages(self) -> list[Storage]:
        result = []
        for name, touched in self.touched.items():
            size = max(arg.nbytes for step in self.steps for arg in step.args if arg.buffer == name)
            result.append(Storage(name, size, self.scopes[name], min(touched), max(touched)))
        return result

    def with_workspace(self, kernels_c: str) -> list[Step]:
        bodies = _kernel_bodies(kernels_c)
        steps = []
        for step in self.steps:
            if step.kind == "kernel" and step.symbol not in bodies:
                raise self.error(f"TVM wrote no C function {step.symbol} for step {step.name}")
            sizes = tuple(int(size) for size in _ALLOC.findall(bodies.get(step.symbol, "")))
            steps.append(Step(step.name, step.kind, step.symbol, step.args, sizes))
        return steps

    def _name(self, wanted: str) -> str:
        name = _c_name(wanted)
        candidate, number = name, 1
        while candidate in self.names:
            candidate = f"{name}_{number}"
            number += 1
        self.names.add(candidate)
        return candidate


def _dtype(dtype: str, what: str, walker: _Walker) -> str:
    if not _DTYPE.match(dtype):
        raise walker.error(
            f"{what} is {dtype}; memplace's executor passes int, uint and float tensors"
        )
    return dtype


def _kernel_bodies(source: str) -> dict[str, str]:
    """symbol -> the C text of its definition (to the next kernel's)."""
    starts = list(_KERNEL.finditer(source))
    return {
        match[1]: source[
            match.end() : starts[index + 1].start() if index + 1 < len(starts) else len(source)
        ]
        for index, match in enumerate(starts)
    }


def _headers(kernels_c: str) -> dict[str, str]:
    """The headers TVM's C includes, and theirs, from the installed wheels (tvm/include,
    tvm_ffi/include): path below include/ -> text."""
    roots = []
    for package in ("tvm", "tvm_ffi"):
        module = importlib.import_module(package)
        roots.append(Path(module.__file__ or "").parent / "include")
    found: dict[str, str] = {}
    pending = re.findall(r'^#include\s*["<]([\w/.]+\.h)[">]', kernels_c, re.MULTILINE)
    while pending:
        name = pending.pop()
        if name in found:
            continue
        for root in roots:
            path = root / name
            if path.is_file():
                text = path.read_text(encoding="utf-8")
                found[name] = text
                pending += re.findall(r'^#include\s*["<]([\w/.]+\.h)[">]', text, re.MULTILINE)
                break
    return dict(sorted(found.items()))
