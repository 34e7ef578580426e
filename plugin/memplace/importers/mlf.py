"""Model Library Format (MLF): the `.tar` archive TVM's `export_model_library_format` writes.

What memplace reads from it (TVM 0.9-0.15, metadata versions 5-7):

- `metadata.json`: the model's name (top level in version 5, under `modules` from 6 on),
  its executor (AOT only: a graph executor needs TVM's runtime on the target), and the
  `memory.functions.main` entry: `workspace_size_bytes`, `io_size_bytes`, and from
  version 7 each input's and output's size and dtype;
- `codegen/host/src/*.c`: the model's C code, compiled into the project; whether it calls
  `TVMBackendAllocWorkspace` decides whether it gets a workspace arena;
- `codegen/host/include/tvmgen_<name>.h`: the C interface (`interface-api=c`): the
  members of `struct tvmgen_<name>_inputs/_outputs/_workspace_pools`, the parameters of
  `tvmgen_<name>_run`, and the sizes of USMP's memory pools (`<POOL>_WORKSPACE_POOL_SIZE`,
  `<POOL>_CONSTANT_POOL_SIZE` with its `_CONSTANT_POOL_DATA`); TVM writes pools there, not
  in `metadata.json`;
- `src/relay.txt` (version 5) or `src/<name>.relay`: the shapes and dtypes of the inputs
  when the metadata does not give them;
- `runtime/include/`: the standalone CRT's headers, when TVM put the CRT in the archive.

The archive becomes a workload of one step, `run`, in which every buffer is live: each
input and output, each USMP pool (pinned to the board pool of the same name, else placed
as the board's scopes allow) and, for an archive whose operators take their workspace
through `TVMBackendAllocWorkspace`, one dynamic buffer of the declared workspace size,
which the generated C hands out through an arena.

The archive is read in memory: nothing is unpacked to disk, and members that an unpacker
would put outside its folder (absolute paths, `..`) or that are links or devices make the
whole archive an input error.
"""

from __future__ import annotations

import gzip
import io
import json
import lzma
import re
import tarfile
import zlib
from collections.abc import Collection, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from memplace.errors import InputError
from memplace.files import integer, read_input
from memplace.importers.registry import Importer
from memplace.workload import Workload, WorkloadBuilder

if TYPE_CHECKING:
    from memplace.board import Board

__all__ = ["ModelArchive", "Pool", "Tensor", "is_mlf", "read_mlf"]

SUPPORTED_VERSIONS = (5, 6, 7)
SUFFIXES = (".tar", ".tgz", ".tar.gz", ".tar.xz", ".txz")
STEP = "run"
WORKSPACE = "tvm_workspace"
# TVM's CRT aligns every workspace allocation to this many bytes (TVM_RUNTIME_ALLOC_ALIGNMENT).
ALIGN = 16
MAX_MEMBER = 64 << 20  # bytes of one member memplace reads into memory
KEY = "MODEL"

_DTYPE = re.compile(r"^(float|int|uint|bool)(\d+)$")


@dataclass(frozen=True)
class Tensor:
    """An input or output of the model: `name` is its member in TVM's C structs."""

    name: str
    size: int
    dtype: str | None = None


@dataclass(frozen=True)
class Pool:
    """A USMP memory pool the application provides: `name` is its member of
    `struct tvmgen_<model>_workspace_pools`; a constant pool comes with its bytes."""

    name: str
    kind: str  # "workspace" or "constant"
    size: int
    data: bytes | None = field(default=None, repr=False)


@dataclass(frozen=True)
class ModelArchive:
    """What memplace needs of one MLF archive, read and checked."""

    path: Path
    version: int
    model: str  # TVM's module name, e.g. "default"
    workspace_size: int  # bytes taken through TVMBackendAllocWorkspace (0 when never called)
    inputs: tuple[Tensor, ...]
    outputs: tuple[Tensor, ...]
    pools: tuple[Pool, ...]
    run_parameters: tuple[str, ...]  # of tvmgen_<model>_run: inputs, outputs, workspace_pools
    sources: Mapping[str, str] = field(repr=False)  # archive path -> text, codegen/host/src
    headers: Mapping[str, str] = field(repr=False)  # archive path -> text, codegen/host/include
    runtime_headers: Mapping[str, str] = field(repr=False)  # path below runtime/include -> text
    archive: bytes = field(default=b"", repr=False)  # the archive file's bytes (b"": a folder)
    # The parameters of `tvmgen_<model>_run_model` when the archive's code lacks the C
    # interface's `tvmgen_<model>_run` (TVM 0.8 to 0.9.dev), which memplace then defines.
    run_model: str | None = None

    @property
    def prefix(self) -> str:
        """TVM's C prefix of the model's names: tvmgen_<model>."""
        return f"tvmgen_{_c_name(self.model)}"

    @property
    def workload_name(self) -> str:
        """The workload's name: distinct from TVM's own `tvmgen_` names in the same image."""
        return f"tvm_{_c_name(self.model)}"

    @property
    def interface(self) -> bool:
        """Whether the archive has TVM's C interface header (`interface-api=c`)."""
        return f"codegen/host/include/{self.prefix}.h" in self.headers

    def workload(self, board_pools: Collection[str] = ()) -> Workload:
        """The buffers the model needs, as a workload of one step. A USMP pool named like
        one of `board_pools` is pinned to that pool."""
        builder = WorkloadBuilder(
            self.workload_name, steps=[STEP], source=str(self.path), origin=self
        )
        for tensor in self.inputs:
            builder.buffer(f"input_{tensor.name}", tensor.size, STEP)
        for tensor in self.outputs:
            builder.buffer(f"output_{tensor.name}", tensor.size, STEP)
        for pool in self.pools:
            scope = f"global.{pool.name}" if pool.name in board_pools else "global"
            if pool.kind == "constant":
                builder.constant(pool_buffer(pool), data=pool.data, scope=scope, align=ALIGN)
            else:
                builder.buffer(pool_buffer(pool), pool.size, STEP, scope=scope, align=ALIGN)
        if self.workspace_size:
            builder.buffer(WORKSPACE, self.workspace_size, STEP, align=ALIGN, dynamic=True)
        try:
            return builder.build()
        except InputError as error:
            raise InputError(f"{self.path}: {error.message}", key=error.key) from None


def pool_buffer(pool: Pool) -> str:
    """The workload buffer (or constant) that holds a USMP pool."""
    return f"tvm_{pool.name}"


def _import(path: Path, board: Board | None, data_root: Path | None) -> Workload:
    return read_mlf(path).workload(() if board is None else tuple(board.pools))


IMPORTER = Importer(
    name="mlf",
    suffixes=SUFFIXES,
    describes="a TVM Model Library Format archive",
    read=_import,
    folder=lambda path: (path / "metadata.json").is_file(),
    project_type="aot_standalone_demo",
)


def is_mlf(path: Path) -> bool:
    """Whether `path` names an MLF archive (by its suffix) or an unpacked one (a folder
    holding metadata.json)."""
    return path.name.lower().endswith(SUFFIXES) or (path / "metadata.json").is_file()


def read_mlf(path: Path) -> ModelArchive:
    """The archive at `path` (or the folder it was unpacked in), checked; any problem is an
    `InputError` naming it."""
    if path.is_dir():
        return _Reader(path, _read_folder(path)).read()
    if not path.is_file():
        raise InputError(f"no Model Library Format archive at {path}", key=KEY)
    archive = read_input(path, key=KEY)
    return replace(_Reader(path, _read_members(path, archive)).read(), archive=archive)


# The members memplace reads, by their path in the archive.
_WANTED = re.compile(
    r"^(metadata\.json|codegen/host/(src|include|lib)/[^/]+|src/[^/]+|"
    r"runtime/include/(tvm/runtime|dlpack)/([^/]+/)*[^/]+\.h)$"
)


def _read_members(path: Path, data: bytes) -> dict[str, bytes]:
    """The regular files of the archive (`data`, read from `path`) that memplace reads, by
    normalised path."""
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as archive:
            found: dict[str, bytes] = {}
            members = archive.getmembers()
            if not path.name.lower().endswith(SUFFIXES[1:]) and members:
                # A plain tar cut short (an interrupted copy) lists the members it still
                # has: the last one's data runs past the end of the file, or nothing
                # follows it (a whole tar ends with zero blocks after its last member).
                last = members[-1]
                blocks = -(-(last.offset_data + last.size) // tarfile.BLOCKSIZE)
                if len(data) < (blocks + 1) * tarfile.BLOCKSIZE:
                    raise EOFError
            for member in members:
                name = _safe_name(path, member)
                if name is None or not member.isfile() or not _WANTED.match(name):
                    continue
                _check_size(path, member.name, member.size)
                handle = archive.extractfile(member)
                if handle is not None:
                    found[name] = handle.read()
    except EOFError:
        raise InputError(
            f"{path} ends before its last member does: the archive is truncated (an "
            "interrupted download?)",
            key=KEY,
        ) from None
    except (tarfile.TarError, zlib.error, lzma.LZMAError, gzip.BadGzipFile):
        raise InputError(
            f"{path} is not a Model Library Format archive (a tar file, plain or compressed)",
            key=KEY,
        ) from None
    except OSError as exc:
        raise InputError(f"cannot read {path}: {exc.strerror or exc}", key=KEY) from None
    return found


def _read_folder(root: Path) -> dict[str, bytes]:
    """The files memplace reads of an unpacked archive: regular files inside `root` only,
    so a link cannot pull in a file from elsewhere."""
    found: dict[str, bytes] = {}
    real_root = root.resolve()
    for file in sorted(root.rglob("*")):
        name = file.relative_to(root).as_posix()
        if not _WANTED.match(name):
            continue
        if file.is_symlink() or not file.is_file() or real_root not in file.resolve().parents:
            raise InputError(
                f"{root}: {name} is a link or not a regular file; an MLF folder holds files "
                "and folders only",
                key=KEY,
            )
        _check_size(root, name, file.stat().st_size)
        found[name] = file.read_bytes()
    return found


def _check_size(path: Path, name: str, size: int) -> None:
    if size > MAX_MEMBER:
        raise InputError(
            f"{path}: member {name} holds {size} bytes, more than the {MAX_MEMBER} memplace reads",
            key=KEY,
        )


def _safe_name(path: Path, member: tarfile.TarInfo) -> str | None:
    """The member's path without its leading `./`; None for the archive's root. Members
    that would land outside the folder they are unpacked in, links and devices are refused."""
    pure = PurePosixPath(member.name)
    if pure.is_absolute() or ".." in pure.parts or "\\" in member.name:
        raise InputError(
            f"{path}: member {member.name!r} would be unpacked outside the archive's folder",
            key=KEY,
        )
    if not (member.isfile() or member.isdir()):
        raise InputError(
            f"{path}: member {member.name!r} is a link or a device; an MLF archive holds "
            "files and folders only",
            key=KEY,
        )
    parts = [part for part in pure.parts if part != "."]
    return "/".join(parts) or None


@dataclass
class _Found:
    """An input or output while its size and dtype are being found."""

    name: str
    size: int | None
    dtype: str | None

    def tensor(self) -> Tensor:
        assert self.size is not None  # _fill_unknown_size leaves none unknown
        return Tensor(self.name, self.size, self.dtype)


class _Reader:
    def __init__(self, path: Path, members: dict[str, bytes]) -> None:
        self.path = path
        self.members = members

    def error(self, message: str) -> InputError:
        return InputError(f"{self.path}: {message}", key=KEY)

    def text(self, name: str) -> str:
        try:
            return self.members[name].decode("utf-8")
        except UnicodeDecodeError:
            raise self.error(f"{name} is not UTF-8 text") from None

    def read(self) -> ModelArchive:
        metadata = self._metadata()
        version = metadata["version"]
        module = self._module(metadata, version)
        model = self._string(module, "model_name")
        self._check_executor(module)
        main = self._main(module)
        sources = self._code()
        headers = self._texts("codegen/host/include/", ".h")
        runtime = {
            name.removeprefix("runtime/include/"): text
            for name, text in self._texts("runtime/include/", ".h").items()
        }
        prefix = f"tvmgen_{_c_name(model)}"
        header = headers.get(f"codegen/host/include/{prefix}.h", "")
        pools = _pools(header, prefix, self)
        inputs, outputs = self._tensors(main, header, prefix, model)
        run_parameters = _run_parameters(header, prefix, self)
        run_model = self._run_model(
            header, prefix, sources, run_parameters, len(inputs) + len(outputs)
        )
        workspace = _integer(main.get("workspace_size_bytes", 0), "workspace_size_bytes", self)
        return ModelArchive(
            path=self.path,
            version=version,
            model=model,
            workspace_size=workspace if _allocates(sources) else 0,
            inputs=inputs,
            outputs=outputs,
            pools=pools,
            run_parameters=run_parameters,
            run_model=run_model,
            sources=sources,
            headers=headers,
            runtime_headers=runtime,
        )

    def _run_model(
        self,
        header: str,
        prefix: str,
        sources: Mapping[str, str],
        run_parameters: tuple[str, ...],
        tensors: int,
    ) -> str | None:
        """The run function the C interface header declares is defined by the C code: an
        archive whose header and code disagree would only fail at link time. Except one
        case: TVM 0.8 to 0.9.dev's `tvmc compile --output-format mlf` left that function out
        of the archive, whose code defines `<prefix>_run_model` taking the `tensors` inputs
        and outputs one by one (`void*` each). Then the parameter list of
        `<prefix>_run_model`, over which memplace defines `<prefix>_run` as TVM's own
        wrapper does; else None."""
        if not re.search(rf"\b{prefix}_run\s*\(", header):
            return None
        defined = re.compile(rf"\b{prefix}_run\s*\([^;{{)]*\)\s*\{{")
        if any(defined.search(text) for text in sources.values()):
            return None
        run_model = re.compile(rf"\bint32_t\s+{prefix}_run_model\s*\(([^;{{)]*)\)\s*\{{")
        for text in sources.values():
            match = run_model.search(text)
            parameters = match[1].split(",") if match is not None else []
            if (
                run_parameters == ("inputs", "outputs")
                and len(parameters) == tensors
                and all(re.fullmatch(r"\s*void\s*\*\s*\w+\s*", p) for p in parameters)
            ):
                return ", ".join(" ".join(p.split()) for p in parameters)
        found = sorted(
            {
                name
                for text in sources.values()
                for name in re.findall(rf"\b({prefix}_run\w+)\s*\(", text)
            }
        )
        others = f" (it defines {', '.join(found)})" if found else ""
        raise self.error(
            f"codegen/host/include/{prefix}.h declares {prefix}_run, but no C file in "
            f"codegen/host/src defines it{others}: the header and the code come from "
            "different builds"
        )

    def _metadata(self) -> dict[str, Any]:
        """metadata.json, of a version memplace reads."""
        if "metadata.json" not in self.members:
            raise self.error("no metadata.json: not a Model Library Format archive")
        try:
            metadata = json.loads(self.text("metadata.json"), parse_int=self._json_integer)
        except json.JSONDecodeError as exc:
            raise self.error(f"metadata.json is not JSON: {exc}") from None
        except RecursionError:
            raise self.error("metadata.json is nested too deeply") from None
        if not isinstance(metadata, dict):
            raise self.error("metadata.json is not a JSON object")
        version = metadata.get("version")
        if version not in SUPPORTED_VERSIONS or isinstance(version, bool):
            supported = ", ".join(map(str, SUPPORTED_VERSIONS))
            raise self.error(
                f"metadata version {version!r} is not one memplace reads ({supported}: "
                "what TVM 0.9 to 0.15 write)"
            )
        return metadata

    def _json_integer(self, text: str) -> int:
        return integer(text, f"{KEY}: {self.path}: metadata.json")

    def _texts(self, folder: str, suffix: str) -> dict[str, str]:
        return {
            name: self.text(name)
            for name in sorted(self.members)
            if name.startswith(folder) and name.endswith(suffix)
        }

    def _code(self) -> dict[str, str]:
        """The model's C files; TVM's llvm target leaves object files, which are refused."""
        sources = self._texts("codegen/host/src/", ".c")
        if not sources:
            objects = any(name.startswith("codegen/host/lib/") for name in self.members)
            hint = " (it holds object files from TVM's llvm target: build with target c)"
            raise self.error(f"no C code in codegen/host/src{hint if objects else ''}")
        return sources

    def _module(self, metadata: dict[str, Any], version: int) -> dict[str, Any]:
        if version == 5:
            return metadata
        modules = metadata.get("modules")
        if not isinstance(modules, dict) or not modules:
            raise self.error(f"metadata version {version} lists its model under 'modules'")
        if len(modules) > 1:
            raise self.error(
                f"the archive holds {len(modules)} models ({', '.join(sorted(modules))}); "
                "memplace reads archives of one"
            )
        (module,) = modules.values()
        if not isinstance(module, dict):
            raise self.error("metadata.json: a module is a JSON object")
        return module

    def _string(self, data: dict[str, Any], key: str) -> str:
        value = data.get(key)
        if not isinstance(value, str) or not value:
            raise self.error(f"metadata.json has no '{key}'")
        return value

    def _check_executor(self, module: dict[str, Any]) -> None:
        style = module.get("style", "full-model")
        if style != "full-model":
            raise self.error(
                f"an archive of style {style!r}; memplace reads whole models (full-model)"
            )
        executors = module.get("executors", module.get("runtimes", []))
        if not isinstance(executors, list) or not all(isinstance(e, str) for e in executors):
            raise self.error(f"metadata.json: 'executors' is {executors!r}, not a list of names")
        if "aot" not in executors:
            raise self.error(
                f"the model was built for the {', '.join(executors or ['unknown'])} executor; "
                "memplace runs models built with the AOT executor (Executor('aot'))"
            )

    def _main(self, module: dict[str, Any]) -> dict[str, Any]:
        memory = module.get("memory")
        functions = memory.get("functions") if isinstance(memory, dict) else None
        main = functions.get("main") if isinstance(functions, dict) else None
        if not isinstance(main, list) or not main or not isinstance(main[0], dict):
            raise self.error("metadata.json has no memory.functions.main entry")
        # One entry per device; the model's C code runs on the CPU (device type 1).
        if not all(isinstance(entry, dict) for entry in main):
            raise self.error("metadata.json: memory.functions.main lists JSON objects only")
        return next((entry for entry in main if entry.get("device") == 1), main[0])

    def _tensors(
        self, main: dict[str, Any], header: str, prefix: str, model: str
    ) -> tuple[tuple[Tensor, ...], tuple[Tensor, ...]]:
        """The inputs and outputs, named by the C interface header (else the metadata),
        sized and typed by the header, the metadata or the Relay text, whichever says."""
        relay = _relay_inputs(self._relay(model))
        found: dict[str, list[_Found]] = {}
        for role in ("inputs", "outputs"):
            declared = main.get(role)
            infos = (
                {_c_name(name): info for name, info in declared.items()}
                if isinstance(declared, dict)
                else {}
            )
            names = _struct_members(header, f"{prefix}_{role}") or list(infos)
            if not names:
                raise self.error(
                    f"the archive names no {role}: it needs TVM's C interface header "
                    f"codegen/host/include/{prefix}.h (build with interface-api=c)"
                )
            found[role] = [
                self._found(name, infos.get(name), header, prefix, relay) for name in names
            ]
        self._fill_unknown_size(main, found["inputs"] + found["outputs"])
        inputs, outputs = (tuple(f.tensor() for f in found[role]) for role in found)
        return inputs, outputs

    def _found(
        self,
        name: str,
        info: Any,
        header: str,
        prefix: str,
        relay: dict[str, tuple[int, str]],
    ) -> _Found:
        info = info if isinstance(info, dict) else {}
        size = _macro(header, f"{prefix}_{name}_size".upper())
        if size is None and "size" in info:
            size = _integer(info["size"], f"{name}.size", self)
        dtype = info.get("dtype") if isinstance(info.get("dtype"), str) else None
        from_relay = relay.get(name)
        if from_relay is not None:
            size = from_relay[0] if size is None else size
            dtype = dtype or from_relay[1]
        return _Found(name, size, dtype)

    def _fill_unknown_size(self, main: dict[str, Any], tensors: list[_Found]) -> None:
        """Version 5 gives the total bytes of inputs and outputs only: one tensor of unknown
        size takes what the others leave (and the model's one dtype, when it has one)."""
        unknown = [tensor for tensor in tensors if tensor.size is None]
        if not unknown:
            return
        total = main.get("io_size_bytes")
        if len(unknown) > 1 or not isinstance(total, int):
            names = ", ".join(tensor.name for tensor in unknown)
            raise self.error(f"metadata.json gives no size for {names}")
        (last,) = unknown
        rest = total - sum(tensor.size or 0 for tensor in tensors)
        if rest <= 0:
            raise self.error(f"io_size_bytes ({total}) leaves no bytes for {last.name}")
        last.size = rest
        dtypes = {tensor.dtype for tensor in tensors if tensor.dtype is not None}
        if last.dtype is None and len(dtypes) == 1:
            last.dtype = dtypes.pop()

    def _relay(self, model: str) -> str:
        for name in ("src/relay.txt", f"src/{model}.relay"):
            if name in self.members:
                return self.text(name)
        return ""


def _allocates(sources: Mapping[str, str]) -> bool:
    """Whether the model's code takes workspace at run time; with USMP it takes none, its
    pools being the application's (or static arrays of its own, for internal pools)."""
    return any("TVMBackendAllocWorkspace(" in text for text in sources.values())


def _c_name(name: str) -> str:
    """TVM's SanitizeName: every character that is not a letter or digit becomes `_`."""
    return re.sub(r"[^0-9A-Za-z]", "_", name)


def _integer(value: Any, key: str, reader: _Reader) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise reader.error(f"metadata.json: {key} is a byte count, not {value!r}")
    return value


def _struct_members(header: str, struct: str) -> list[str]:
    body = _up_to(header, rf"struct\s+{re.escape(struct)}\s*\{{", "}")
    return re.findall(r"void\s*\*\s*(\w+)\s*;", body) if body is not None else []


def _up_to(text: str, head: str, close: str) -> str | None:
    """The text between the first match of `head` and the next `close` after it, or None.
    Found with `str.find`, not a pattern that rescans the rest of the text for every
    candidate start, so a header of many unclosed heads costs its length once."""
    match = re.search(head, text)
    if match is None:
        return None
    end = text.find(close, match.end())
    return text[match.end() : end] if end >= 0 else None


def _macro(header: str, name: str) -> int | None:
    match = re.search(rf"^#define\s+{re.escape(name)}\s+(\d+)\s*$", header, re.MULTILINE)
    return integer(match[1], f"{KEY}: #define {name}") if match else None


def _run_parameters(header: str, prefix: str, reader: _Reader) -> tuple[str, ...]:
    arguments = _up_to(header, rf"int32_t\s+{re.escape(prefix)}_run\s*\(", ")")
    if arguments is None:
        return ()
    kinds = tuple(re.findall(rf"struct\s+{re.escape(prefix)}_(\w+)\s*\*", arguments))
    unknown = [kind for kind in kinds if kind not in ("inputs", "outputs", "workspace_pools")]
    if unknown:
        raise reader.error(
            f"{prefix}_run takes {', '.join(unknown)}; memplace runs models whose run "
            "function takes inputs, outputs and workspace pools (no external devices)"
        )
    if "inputs" not in kinds:
        raise reader.error(
            "the model keeps its inputs and outputs inside its workspace pools "
            "(usmp.use_workspace_io); memplace runs models that take them as arguments"
        )
    return kinds


def _pools(header: str, prefix: str, reader: _Reader) -> tuple[Pool, ...]:
    pools = []
    for name in _struct_members(header, f"{prefix}_workspace_pools"):
        stem = f"{prefix}_{name}".upper()
        size = _macro(header, f"{stem}_WORKSPACE_POOL_SIZE")
        if size is not None:
            pools.append(Pool(name, "workspace", size))
            continue
        size = _macro(header, f"{stem}_CONSTANT_POOL_SIZE")
        if size is None:
            raise reader.error(f"the C interface header gives no size for pool {name}")
        data = _constant_data(header, f"{stem}_CONSTANT_POOL_DATA")
        if data is None or len(data) != size:
            raise reader.error(
                f"the C interface header's data of constant pool {name} is not {size} bytes"
            )
        pools.append(Pool(name, "constant", size, data))
    return tuple(pools)


def _constant_data(header: str, macro: str) -> bytes | None:
    """The bytes of a `#define X \\` macro continued over lines of `0x..` values."""
    lines = header.splitlines()
    for index, line in enumerate(lines):
        if re.match(rf"^#define\s+{macro}\b", line):
            body = [line.split(macro, 1)[1]]
            while body[-1].rstrip().endswith("\\") and index + 1 < len(lines):
                index += 1
                body.append(lines[index])
            values = re.findall(r"0x([0-9A-Fa-f]{1,2})\b", " ".join(body))
            return bytes(int(value, 16) for value in values)
    return None


def _main_parameters(relay: str) -> str | None:
    """What `def @main(...)` holds: up to the first `)` followed by `->` or `{`. Scanned
    once from left to right (each `)` and the white space after it looked at once)."""
    head = relay.find("def @main(")
    if head < 0:
        return None
    start = close = head + len("def @main(")
    while (close := relay.find(")", close)) >= 0:
        after = close + 1
        while after < len(relay) and relay[after].isspace():
            after += 1
        if relay.startswith(("->", "{"), after):
            return relay[start:close]
        close += 1
    return None


def _relay_inputs(relay: str) -> dict[str, tuple[int, str]]:
    """The tensor parameters of `@main` in Relay text: C name -> (bytes, dtype)."""
    parameters = _main_parameters(relay)
    if parameters is None:
        return {}
    found = {}
    pattern = r"%([\w.:]+):\s*Tensor\[\(([\d,\s]*)\),\s*(\w+)\]"
    for name, shape, dtype in re.findall(pattern, parameters):
        kind = _DTYPE.match(dtype)
        if kind is None:
            continue
        count = 1
        for extent in filter(None, (part.strip() for part in shape.split(","))):
            count *= integer(extent, f"{KEY}: the Relay text's @main")
        found[_c_name(name)] = ((count * int(kind[2]) + 7) // 8, dtype)
    return found
