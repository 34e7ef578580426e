"""Loading a board file, and every rule it must keep.

A board file is checked in three passes, as west checks a manifest: the version gate,
then the shape of every key, then the rules that tie names together. `extends:` merges a
board over the one it names, each node keeping the file and line it came from.

The keys each mapping accepts are declared once, as data (`BOARD_KEYS` and friends): the
loader refuses anything else, and `schema.py` builds the JSON Schema from the same tables.
"""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from memplace import names, resources
from memplace.board.addresses import ContextSpec, PoolSpec, reserve
from memplace.board.parts import (
    ADDRESS_SPACE,
    BOARD_NAME,
    CONTEXT_KINDS,
    COPIERS,
    CPUS,
    CPUS_WITHOUT_VTOR,
    DEVICE_KINDS,
    FIRST_IRQ_EXCEPTION,
    FLOAT_ABIS,
    JOINED_VECTORS_OFFSET,
    LAYOUT_KEYS,
    MAX_INTERRUPTS,
    MAX_PRIORITY,
    MEMORY_KINDS,
    ON_EXIT,
    OPERANDS,
    POOL_KINDS,
    RELEASE_HANDSHAKES,
    RTOSES,
    STACK_ALIGN,
    VERSION,
    Core,
    Device,
    FlashRun,
    Layout,
    Memory,
    Pool,
    QemuRun,
    Release,
    ReleaseStep,
    Run,
    Stack,
    vector_align,
)
from memplace.errors import InputError, Mark
from memplace.hints import read_stack_hints
from memplace.runners.capabilities import BOARD_SETTINGS, DECLARED, flash_runners
from memplace.source import Document, Node, is_identifier, name_problem, suggest

# Cores that never have a floating-point unit: only `float_abi: soft` makes sense on them.
CPUS_WITHOUT_FPU = ("cortex-m0", "cortex-m0plus", "cortex-m3", "cortex-m23")

"""What switches tasks on a core: `none`, or an RTOS whose context switch memplace knows
(`verify.rtos`)."""

STEP_ACTIONS = ("write", "set", "clear")

# Scope words a context name would collide with (`global.<pool>`, `<context>.stack`).
RESERVED_CONTEXT_NAMES = ("global", "local")

# VTOR ignores the low 7 bits: a vector table starts on a 128-byte boundary.
VECTOR_ALIGN = 128

# fmt: off
C_KEYWORDS = frozenset((
    "auto", "break", "case", "char", "const", "continue", "default", "do", "double", "else",
    "enum", "extern", "float", "for", "goto", "if", "inline", "int", "long", "register",
    "restrict", "return", "short", "signed", "sizeof", "static", "struct", "switch", "typedef",
    "union", "unsigned", "void", "volatile", "while", "_Bool", "_Complex", "_Imaginary",
    "_Alignas", "_Alignof", "_Atomic", "_Generic", "_Noreturn", "_Static_assert",
    "_Thread_local",
))

# The handlers of the 16 core exceptions in memplace's startup code.
CORE_HANDLERS = (
    "Reset_Handler", "NMI_Handler", "HardFault_Handler", "MemManage_Handler",
    "BusFault_Handler", "UsageFault_Handler", "SecureFault_Handler", "SVC_Handler",
    "DebugMon_Handler", "PendSV_Handler", "SysTick_Handler", "Default_Handler",
)

@dataclass(frozen=True)
class Key:
    """One key a board file mapping accepts: its name, whether it must be there, its meaning."""

    name: str
    help: str
    required: bool = False

BOARD_KEYS = (
    Key("memplace", "format version; must be board/v1", required=True),
    Key("name", "the board's name (letters, digits, '.', '_', '-')", required=True),
    Key("summary", "one line about the board"),
    Key("extends", "a bundled board name or a path relative to this file; maps merge by key"),
    Key("cores", "every CPU that runs code; one image (ELF) per core", required=True),
    Key("devices", "bus masters that touch memory but run no code of ours (DMA, NPU)"),
    Key("memories", "the physical memory map", required=True),
    Key("pools", "planning pools carved out of memories"),
    Key("contexts", "execution contexts, each with a stack budget", required=True),
    Key("run", "how the board runs: under QEMU, or flashed through a debug probe"),
    Key(
        "stack_hints",
        "what the call graph cannot tell about this board's code (indirect calls, recursion, "
        "alloca, frames), each entry as in a stack_hints/v1 file",
    ),
)

CORE_KEYS = (
    Key("cpu", "the -mcpu of this core", required=True),
    Key("float_abi", "hard, softfp or soft (default soft)"),
    Key(
        "layout",
        "which memory holds each part of this core's own image (required unless `image` is set)",
    ),
    Key(
        "boot",
        "address of the vector table the core starts from, as it sees it "
        "(default: the start of its vectors memory)",
    ),
    Key("release", "how another core starts this one; absent: it starts at reset"),
    Key("rtos", "none or freertos: what switches this core's tasks (default none)"),
    Key(
        "interrupts",
        "device interrupt lines of its vector table (the vendor's IRQ count), or "
        "{lines: N, names: {LINE: NAME}} with the vendor's names (NAME_IRQHandler); a "
        "generated table holds 16 + lines entries (default 0: the core exceptions only)",
    ),
    Key(
        "image",
        "another core whose image (ELF) this core runs, with contexts, stacks and a vector "
        "table of its own; it releases this core",
    ),
)

LAYOUT_FIELDS = (
    Key("vectors", "memory of the vector table", required=True),
    Key("code", "memory of .text and .rodata", required=True),
    Key("data", "memory of .data and .bss", required=True),
    Key("load", "memory the image is programmed into (default: the code memory)"),
    Key(
        "copy",
        "what copies vectors and code from `load` to where they run before the core runs "
        "them: reset (the core's own reset code), releaser (the core that releases it) or "
        "boot-rom (the chip's boot ROM); absent: they run where they are programmed",
    ),
)

RELEASE_KEYS = (
    Key("by", "the core whose startup code releases this one", required=True),
    Key("steps", "register writes that release it, in order"),
    Key("handshake", "a start-up protocol instead of steps: rp2040-sio-fifo"),
)

STEP_KEYS = (
    Key("write", "address of a 32-bit register to write `value` to"),
    Key("set", "address of a 32-bit register in which to set the bits of `mask`"),
    Key("clear", "address of a 32-bit register in which to clear the bits of `mask`"),
    Key("value", "the word to write"),
    Key("mask", "the bits to set or clear"),
)

DEVICE_KEYS = (Key("kind", "dma, npu or other", required=True),)

MEMORY_KEYS = (
    Key("origin", "system address of the first byte", required=True),
    Key("size", "bytes; an integer or a number with K or M", required=True),
    Key("attrs", "letters of rwx", required=True),
    Key("kind", "flash, rom, tcm, sram, dram or other (default other)"),
    Key("access", "the cores and devices that reach this memory", required=True),
    Key("latency", "lower is faster; orders pool preference (default 1)"),
    Key("views", "{core: address} where a core sees this memory elsewhere"),
)

POOL_KEYS = (
    Key("memory", "the memory the pool is carved from", required=True),
    Key("kind", "workspace (buffers) or constant", required=True),
    Key("size", "bytes; leave it out to take what is left of a memory with no image sections"),
)

CONTEXT_KEYS = (
    Key("core", "the core it runs on", required=True),
    Key("kind", "thread, isr or task (an RTOS task; default thread)"),
    Key("entry", "root function of its call graph (default main, or <name>_handler for isr)"),
    Key("stack", "{memory, size}: its stack (per thread); required for threads"),
    Key(
        "threads", "worker threads this context starts, each with a stack like `stack` (default 0)"
    ),
    Key(
        "max_stack_alloca",
        "bytes: largest buffer planned on this stack under scope global (default 0)",
    ),
    Key("preempts", "contexts on the same core whose stacks this one runs on when it fires"),
    Key(
        "priority",
        "isr only: its preemption level, lower preempts higher (default 0); generated "
        "projects write it into the priority bits every core of the architecture implements "
        "(levels 0..7, or 0..3 on Armv6-M and Armv8-M Baseline)",
    ),
    Key("irq", "isr only: its device interrupt line; vector table entry 16 + irq is its entry"),
    Key("task", "task only: the name the RTOS knows the task by (default: the context's)"),
)

STACK_KEYS = (
    Key("memory", "the memory the stack is in", required=True),
    Key("size", "bytes per thread, a multiple of 8", required=True),
)

TASK_STACK_KEYS = (
    Key("size", "bytes of a stack the RTOS or the application allocates", required=True),
)

RUN_KEYS = (
    Key("qemu", "present when the board runs under QEMU"),
    Key("flash", "how a real board is programmed"),
    Key(
        "simulator",
        "true when the target is a simulator, whose semihosting is always there (default: "
        "true when the board runs under QEMU and has no flash)",
    ),
    Key(
        "on_exit",
        "what the firmware does when it ends or faults with no debugger attached: spin, "
        "reset (through AIRCR) or hook (calls memplace_on_exit(code)); default spin",
    ),
)

INTERRUPT_KEYS = (
    Key("lines", "device interrupt lines of the vector table", required=True),
    Key("names", "{LINE: NAME}: the vendor's name of a line; its handler is NAME_IRQHandler"),
)

QEMU_KEYS = (Key("machine", "the QEMU -M machine name", required=True),)

FLASH_KEYS = (
    Key("runner", " or ".join(flash_runners()), required=True),
    Key("target", "pyOCD target name (runner pyocd)"),
    Key("config", "OpenOCD config file or files (runner openocd)"),
    Key("frequency", "SWD/JTAG clock in Hz, when the probe's default does not suit the board"),
)

def _names(keys: Iterable[Key]) -> list[str]:
    return [key.name for key in keys]

def _required(keys: Iterable[Key]) -> list[str]:
    return [key.name for key in keys if key.required]

def board_path(spec: str | Path) -> Path:
    text = str(spec)
    bundled = resources.bundled_boards()
    if text in bundled:
        return bundled[text]
    path = Path(text)
    if path.suffix in (".yaml", ".yml", ".json") or "/" in text:
        if not path.is_file():
            raise InputError(f"no board file at {text}", key="BOARD")
        return path
    raise InputError(f"no bundled board {text!r}; {suggest(text, bundled)}", key="BOARD")

def load_with_extends(path: Path, seen: tuple[Path, ...]) -> Document:
    doc = Document.from_file(path)
    node = Node(doc)
    if not isinstance(doc.data, dict):
        raise node.error("a board file is a mapping")
    _check_version(node)
    parent = node.get("extends")
    if parent is None:
        return doc
    spec = parent.string()
    bundled = resources.bundled_boards()
    base_path = bundled.get(spec) or (path.parent / spec)
    if not base_path.is_file():
        raise parent.error(
            f"no board {spec!r} to extend (no bundled board and no file {base_path}); "
            f"{suggest(spec, bundled)}"
        )
    if base_path.resolve() in seen:
        raise parent.error("boards extend each other in a circle")
    if not node.has("name"):
        raise node.error("a board that extends another needs a name of its own")
    base = load_with_extends(base_path, (*seen, path.resolve()))
    del doc.data["extends"]
    return _merge(base, doc)

def _merge(base: Document, top: Document) -> Document:
    """`top` over `base`: mappings merge key by key, a key set to null in `top` removes it,
    anything else is replaced. Every node keeps the position of the file it came from."""

    def merge(low: Any, high: Any) -> Any:
        if isinstance(low, dict) and isinstance(high, dict):
            merged = {**low, **{key: merge(low.get(key), value) for key, value in high.items()}}
            return {key: value for key, value in merged.items() if value is not None}
        return high

    merged = Document(data=merge(base.data, top.data), file=top.file)
    for path in _paths(merged.data, ()):
        source = top if path in top.marks else base
        merged.marks[path] = source.marks.get(path, Mark(source.file, 1, 1))
        if path in source.key_marks:
            merged.key_marks[path] = source.key_marks[path]
    return merged

def _paths(data: Any, path: tuple[str | int, ...]) -> Iterator[tuple[str | int, ...]]:
    yield path
    if isinstance(data, dict):
        for key, value in data.items():
            yield from _paths(value, (*path, key))
    elif isinstance(data, list):
        for index, value in enumerate(data):
            yield from _paths(value, (*path, index))

def _check_version(node: Node) -> None:
    version = node.get("memplace")
    if version is None:
        raise node.error(f"missing 'memplace: {VERSION}' at the top of the board file")
    if version.value != VERSION:
        raise version.error(f"this memplace reads {VERSION}, not {version.value!r}")

def read_board(doc: Document) -> dict[str, Any]:
    """The fields of the `Board` that `doc` describes, every rule checked."""
    return BoardReader(doc).read()


class BoardReader:
    def __init__(self, doc: Document) -> None:
        self.doc = doc
        self.root = Node(doc)

    def read(self) -> dict[str, Any]:
        """The board's fields, every rule checked and every address given."""
        root = self.root
        if not isinstance(root.value, dict):
            raise root.error("a board file is a mapping")
        _check_version(root)
        root.mapping(_names(BOARD_KEYS), required=_required(BOARD_KEYS))
        if root.has("extends"):
            # Files resolve `extends` as they load (`Board.from_file`); plain data cannot.
            raise root.child("extends").key_error(
                "extends is resolved when a board file is read; load it with Board.from_file"
            )
        name = self._board_name()
        summary = root.child("summary").string() if root.has("summary") else ""
        devices = self._devices()
        cores_node = root.child("cores")
        core_names = [_name(node, key, "core") for key, node in cores_node.items()]
        if not core_names:
            raise cores_node.error("a board needs at least one core")
        for key, node in cores_node.items():
            if key in devices:
                raise node.key_error(f"{key!r} names both a core and a device; rename one")
        memories = self._memories(core_names, devices)
        cores = {
            key: self._core(node, memories)
            for key, node in cores_node.items()
            if not _runs_other_image(node)
        }
        owners = dict(cores)
        for key, node in cores_node.items():
            if _runs_other_image(node):
                cores[key] = _joined_core(node, memories, owners, core_names)
        cores = {key: cores[key] for key in core_names}
        _check_releases(cores_node, cores)
        _check_copiers(cores_node, cores, memories)
        _check_shared_layouts(cores_node, cores, memories)
        _check_views(root.child("memories"), cores, memories)
        _check_vector_tables(cores_node, cores)
        _check_image_tables(cores_node, cores, memories)
        pools_node = root.get("pools")
        pool_specs = [
            self._pool(key, node, memories, cores)
            for key, node in (pools_node.items() if pools_node else iter(()))
        ]
        if pools_node:
            _check_macro_names(pools_node)
        contexts_node = root.child("contexts")
        context_specs = [
            self._context(key, node, cores, devices, memories)
            for key, node in contexts_node.items()
        ]
        if not context_specs:
            raise contexts_node.error("a board needs at least one context")
        _check_contexts(contexts_node, context_specs, cores)
        _check_irqs(context_specs, cores)
        _check_image_entries(context_specs, cores)
        pools, stacks = reserve(pool_specs, context_specs, memories, cores, self.doc.file)
        _check_tables_below_areas(cores_node, cores, memories, pools, stacks)
        contexts = {spec.name: spec.build(stacks) for spec in context_specs}
        run = self._run()
        _check_rom_copies(cores_node, cores, run)
        return dict(
            name=name,
            summary=summary,
            cores=cores,
            devices=devices,
            memories=memories,
            pools=pools,
            contexts=contexts,
            qemu_machine=run.qemu.machine if run.qemu else None,
            source=self.doc.file,
            run=run,
            stack_hints=read_stack_hints(root.get("stack_hints")),
        )

    def _board_name(self) -> str:
        node = self.root.child("name")
        name = node.string()
        if not BOARD_NAME.match(name):
            raise node.error(f"board names are letters, digits, '.', '_' and '-', got {name!r}")
        return name

    def _devices(self) -> dict[str, Device]:
        node = self.root.get("devices")
        devices: dict[str, Device] = {}
        for key, item in node.items() if node else iter(()):
            item.mapping(_names(DEVICE_KEYS), required=_required(DEVICE_KEYS))
            devices[key] = Device(_name(item, key), item.child("kind").choice(DEVICE_KINDS))
        return devices

    def _memories(self, cores: list[str], devices: Mapping[str, Device]) -> dict[str, Memory]:
        memories: dict[str, Memory] = {}
        users = [*cores, *devices]
        for key, item in self.root.child("memories").items():
            item.mapping(_names(MEMORY_KEYS), required=_required(MEMORY_KEYS))
            attrs_node = item.child("attrs")
            attrs = attrs_node.string()
            if not attrs or any(ch not in "rwx" for ch in attrs) or len(set(attrs)) != len(attrs):
                raise attrs_node.error(f"attrs are letters from 'rwx', got {attrs!r}")
            access = _access(item.child("access"), users)
            origin = item.child("origin").integer()
            size = item.child("size").size()
            if origin + size > ADDRESS_SPACE:
                raise item.child("size").error("the memory ends past the 4 GiB address space")
            memories[key] = Memory(
                name=_name(item, key, "memory"),
                origin=origin,
                size=size,
                attrs="".join(ch for ch in "rwx" if ch in attrs),
                kind=item.child("kind").choice(MEMORY_KINDS) if item.has("kind") else "other",
                access=tuple(access),
                latency=item.child("latency").integer() if item.has("latency") else 1,
                views=_views(item, cores, access, size),
            )
        if not memories:
            raise self.root.child("memories").error("a board needs at least one memory")
        return memories

    def _core(self, item: Node, memories: Mapping[str, Memory]) -> Core:
        name = _name(item, item.path[-1])
        item.mapping(_names(CORE_KEYS), required=_required(CORE_KEYS))
        cpu = item.child("cpu").choice(CPUS)
        float_abi = item.child("float_abi").choice(FLOAT_ABIS) if item.has("float_abi") else "soft"
        if float_abi != "soft" and cpu in CPUS_WITHOUT_FPU:
            raise item.child("float_abi").error(
                f"{cpu} has no floating-point unit; use float_abi: soft"
            )
        if not item.has("layout"):
            raise item.error(
                f"core {name!r} needs a `layout` (where its image goes), or `image: CORE` to "
                f"run another core's image"
            )
        layout = _layout(item.child("layout"), name, memories)
        _check_vector_move(item.child("layout"), cpu, layout)
        # A core whose reset code copies its image boots where the image is programmed.
        boots_from = layout.load if layout.copy == "reset" else layout.vectors
        boot = memories[boots_from].address_for(name)
        if item.has("boot"):
            role = "load" if layout.copy == "reset" else "vectors"
            boot = _boot(item.child("boot"), name, memories[boots_from], role)
        release = _release(item.child("release")) if item.has("release") else None
        rtos = item.child("rtos").choice(RTOSES) if item.has("rtos") else "none"
        interrupts, names = _interrupts(item.get("interrupts"), cpu)
        return Core(
            name,
            cpu,
            float_abi,
            layout,
            boot,
            release,
            rtos,
            interrupts=interrupts,
            interrupt_names=names,
        )

    def _pool(
        self,
        key: str,
        item: Node,
        memories: Mapping[str, Memory],
        cores: Mapping[str, Core],
    ) -> PoolSpec:
        item.mapping(_names(POOL_KEYS), required=_required(POOL_KEYS))
        memory = _memory_ref(item.child("memory"), memories)
        kind = item.child("kind").choice(POOL_KINDS)
        where = memories[memory]
        if kind == "constant" and not where.readable():
            raise item.child("memory").error(
                f"a constant pool needs a readable memory; {memory!r} is {where.attrs}"
            )
        if kind == "workspace" and not where.writable():
            raise item.child("memory").error(
                f"a workspace pool needs a writable memory; {memory!r} is {where.attrs}"
            )
        if not any(core in where.access for core in cores):
            raise item.child("memory").error(
                f"no core reaches memory {memory!r}, so no image can hold this pool; "
                f"add a core to that memory's access list"
            )
        size = item.child("size").size() if item.has("size") else None
        return PoolSpec(_name(item, key, "pool"), memory, kind, size, item)

    def _context(
        self,
        key: str,
        item: Node,
        cores: Mapping[str, Core],
        devices: Mapping[str, Device],
        memories: Mapping[str, Memory],
    ) -> ContextSpec:
        name = _name(item, key)
        if name in RESERVED_CONTEXT_NAMES:
            raise item.key_error(f"{name!r} is a scope word; give this context another name")
        if name in devices:
            raise item.key_error(f"{name!r} names both a context and a device; rename one")
        item.mapping(_names(CONTEXT_KEYS), required=_required(CONTEXT_KEYS))
        core_node = item.child("core")
        core = core_node.string()
        if core not in cores:
            raise core_node.error(f"no core {core!r}; {suggest(core, cores)}")
        kind = item.child("kind").choice(CONTEXT_KINDS) if item.has("kind") else "thread"
        budget, task = None, None
        if kind == "task":
            budget, task = _task(item, key, cores[core])
        elif item.has("task"):
            raise item.child("task").key_error("`task` names an RTOS task; this is no task")
        stack_node = item.get("stack")
        placed = stack_node is not None and (kind != "task" or stack_node.has("memory"))
        stack = _stack(stack_node, core, memories) if placed else None
        threads = item.child("threads").integer(minimum=1) if item.has("threads") else 0
        if stack is None and kind == "thread":
            raise item.error("a thread context needs a stack: {memory: NAME, size: BYTES}")
        if threads and kind == "isr":
            raise item.child("threads").error(
                "an isr is one handler; `threads` is for thread contexts"
            )
        default_entry = {"thread": "main", "task": key}.get(kind, f"{key}_handler")
        entry = _entry(item.get("entry"), default_entry)
        alloca_node = item.get("max_stack_alloca")
        alloca = alloca_node.size(allow_zero=True) if alloca_node else 0
        _check_alloca(item, alloca, stack)
        priority = _priority(item.get("priority"), kind)
        irq = _irq(item.get("irq"), kind)
        preempts_node = item.get("preempts")
        return ContextSpec(
            name=name,
            core=core,
            kind=kind,
            entry=entry,
            stack=stack,
            node=item,
            max_stack_alloca=alloca,
            preempts=tuple(preempts_node.names()) if preempts_node else (),
            priority=priority,
            threads=threads,
            task=task,
            budget=budget,
            irq=irq,
        )

    def _run(self) -> Run:
        run = self.root.get("run")
        if run is None:
            return Run()
        run.mapping(_names(RUN_KEYS), required=_required(RUN_KEYS))
        qemu = run.get("qemu")
        flash = run.get("flash")
        if qemu is not None:
            qemu.mapping(_names(QEMU_KEYS), required=_required(QEMU_KEYS))
        return Run(
            qemu=QemuRun(qemu.child("machine").string()) if qemu is not None else None,
            flash=_flash(flash) if flash is not None else None,
            simulator=run.child("simulator").boolean() if run.has("simulator") else None,
            on_exit=run.child("on_exit").choice(ON_EXIT) if run.has("on_exit") else "spin",
        )

def _name(item: Node, key: str | int, kind: str = "") -> str:
    """The key of `item` in its mapping, checked to be a C identifier that can name a
    thing of the generated project (`kind`: what the project makes of it, `names`)."""
    if not is_identifier(str(key)):
        raise item.key_error(f"{key!r} is not a C identifier (letters, digits, _)")
    problem = name_problem(str(key)) or names.kind_problem(kind, str(key))
    if problem:
        raise item.key_error(problem)
    return str(key)

def _check_macro_names(pools_node: Node) -> None:
    """Pools whose names differ only in case would give the header the same macros."""
    seen: dict[str, str] = {}
    for key, item in pools_node.items():
        other = seen.setdefault(key.upper(), key)
        if other != key:
            raise item.key_error(
                f"pools {other!r} and {key!r} would give the generated header the same "
                f"macros ({key.upper()}_...); rename one of them"
            )

def _memory_ref(node: Node, memories: Mapping[str, Memory]) -> str:
    memory = node.string()
    if memory not in memories:
        raise node.error(f"no memory {memory!r}; {suggest(memory, memories)}")
    return memory

def _access(node: Node, users: list[str]) -> list[str]:
    access = node.names()
    if not access:
        raise node.error(f"no core or device reaches this memory; list them: {', '.join(users)}")
    for index, who in enumerate(access):
        if who not in users:
            place = node.child(index) if isinstance(node.value, list) else node
            raise place.error(f"no core or device {who!r}; {suggest(who, users)}")
    return access

def _views(item: Node, cores: list[str], access: list[str], size: int) -> dict[str, int]:
    views: dict[str, int] = {}
    node = item.get("views")
    for core, view in node.items() if node else iter(()):
        if core not in cores:
            raise view.key_error(f"views name cores; {suggest(core, cores)}")
        if core not in access:
            raise view.key_error(
                f"core {core!r} has a view of this memory but no access; add it to `access`"
            )
        address = view.integer()
        if address + size > ADDRESS_SPACE:
            raise view.error(f"core {core!r} would see this memory end past 4 GiB")
        views[core] = address
    return views

def _layout(node: Node, core: str, memories: Mapping[str, Memory]) -> Layout:
    node.mapping(_names(LAYOUT_FIELDS), required=_required(LAYOUT_FIELDS))
    chosen: dict[str, str] = {}
    for key in LAYOUT_KEYS:
        part = node.get(key)
        if part is None:
            chosen[key] = chosen["code"]
            continue
        memory = _memory_ref(part, memories)
        if core not in memories[memory].access:
            raise part.error(
                f"core {core!r} cannot access memory {memory!r}; "
                f"add it to that memory's access list"
            )
        _check_layout_attrs(part, key, memories[memory])
        chosen[key] = memory
    copy = node.child("copy").choice(COPIERS) if node.has("copy") else None
    if copy is None:
        _check_runs_in_place(node, chosen)
    else:
        _check_copied_parts(node, copy, chosen, memories)
    return Layout(**chosen, copy=copy)

def _check_runs_in_place(node: Node, chosen: Mapping[str, str]) -> None:
    """Without a `copy`, nothing moves vectors or code: they run where they are programmed."""
    for part in ("vectors", "code"):
        if chosen[part] == chosen["load"]:
            continue
        if part == "vectors":
            # The core reads its vector table at reset, before any code of the image could
            # copy it anywhere: it must be where the image is programmed.
            raise node.child("vectors").error(
                f"the vector table must be in the load memory {chosen['load']!r}, where the "
                f"image is when the core starts; set vectors: {chosen['load']}, or say what "
                f"copies it there (copy: {', '.join(COPIERS)})"
            )
        raise node.child("code").error(
            f"code runs from {chosen['code']!r} but is programmed into {chosen['load']!r}, and "
            f"nothing is declared to copy it there; say what does (copy: {', '.join(COPIERS)}) "
            f"or set code: {chosen['load']}"
        )

def _check_copied_parts(
    node: Node, copy: str, chosen: Mapping[str, str], memories: Mapping[str, Memory]
) -> None:
    """A copy has something to copy, into memories the copier can write."""
    moved = [part for part in ("vectors", "code") if chosen[part] != chosen["load"]]
    if not moved:
        raise node.child("copy").error(
            f"vectors and code are already in the load memory {chosen['load']!r}: there is "
            f"nothing to copy (data is copied at reset anyway); remove copy"
        )
    for part in moved:
        memory = memories[chosen[part]]
        if not memory.writable():
            raise node.child(part).error(
                f"{part} is copied into {memory.name!r} before it runs, but {memory.name!r} is "
                f"{memory.attrs!r}; add w to its attrs"
            )
    if copy == "boot-rom" and chosen["vectors"] != chosen["code"]:
        # A boot ROM copies one block and starts the core on the vector table at its start.
        raise node.child("vectors").error(
            f"the boot ROM copies one block from {chosen['load']!r}: put vectors and code in "
            f"one memory (vectors: {chosen['code']})"
        )

def _check_vector_move(node: Node, cpu: str, layout: Layout) -> None:
    if layout.copy == "reset" and layout.vectors != layout.load and cpu in CPUS_WITHOUT_VTOR:
        raise node.child("vectors").error(
            f"{cpu} has no VTOR, so its vector table stays where it boots; "
            f"set vectors: {layout.load}"
        )

def _check_layout_attrs(node: Node, part: str, memory: Memory) -> None:
    needs = {"vectors": "r", "code": "rx", "data": "rw", "load": "r"}[part]
    missing = [letter for letter in needs if letter not in memory.attrs]
    if missing:
        raise node.error(
            f"{part} needs a memory with {needs!r}; {memory.name!r} is {memory.attrs!r} "
            f"(add the missing letters to its attrs, or pick another memory)"
        )

def _boot(node: Node, core: str, vectors: Memory, role: str = "vectors") -> int:
    boot = node.integer()
    start = vectors.address_for(core)
    if not start <= boot < start + vectors.size:
        raise node.error(
            f"the boot address must lie in the {role} memory {vectors.name!r} "
            f"[0x{start:08x}, 0x{start + vectors.size:08x}) as core {core!r} sees it"
        )
    if boot % VECTOR_ALIGN:
        raise node.error(f"a vector table starts on a {VECTOR_ALIGN}-byte boundary (VTOR)")
    return boot

def _release(node: Node) -> Release:
    node.mapping(_names(RELEASE_KEYS), required=_required(RELEASE_KEYS))
    by = node.child("by").name()
    steps_node = node.get("steps")
    steps = tuple(_step(step) for step in steps_node.elements()) if steps_node else ()
    handshake = None
    if node.has("handshake"):
        handshake = node.child("handshake").choice(RELEASE_HANDSHAKES)
        if steps:
            raise node.child("handshake").error("a release has steps or a handshake, not both")
    return Release(by, steps, handshake)

def _step(node: Node) -> ReleaseStep:
    node.mapping(_names(STEP_KEYS))
    actions = [action for action in STEP_ACTIONS if node.has(action)]
    if len(actions) != 1:
        raise node.error(
            "a step is one of {write: ADDRESS, value: WORD}, {set: ADDRESS, mask: BITS} "
            "or {clear: ADDRESS, mask: BITS}"
        )
    action = actions[0]
    operand = OPERANDS[action]
    other = "mask" if operand == "value" else "value"
    if node.has(other) or not node.has(operand):
        raise node.error(f"a {action} step takes `{operand}`")
    address = _word(node.child(action))
    if address % 4:
        raise node.child(action).error("a register address is a multiple of 4")
    return ReleaseStep(action, address, _word(node.child(operand)))

def _word(node: Node) -> int:
    value = node.integer()
    if value >= ADDRESS_SPACE:
        raise node.error(f"expected a 32-bit value, got 0x{value:x}")
    return value

def _task(item: Node, key: str, core: Core) -> tuple[int | None, str]:
    """A task's stack size (when the RTOS allocates the stack) and the name its RTOS
    knows it by. Tasks switch through an RTOS: the core must name one."""
    if core.rtos == "none":
        raise item.child("kind").error(
            f"a task runs under an RTOS; say which on core {core.name!r} (rtos: freertos)"
        )
    stack = item.get("stack")
    task = item.child("task").string() if item.has("task") else key
    if stack is None:
        return None, task  # the size the firmware creates the task with (`memplace stacks`)
    if not stack.has("memory"):
        stack.mapping(("memory", "size"), required=("size",))
    budget = None if stack.has("memory") else stack.child("size").size()
    if not task:
        raise item.child("task").error("a task's name is not empty")
    return budget, task

def _stack(node: Node | None, core: str, memories: Mapping[str, Memory]) -> tuple[str, int] | None:
    if node is None:
        return None
    node.mapping(_names(STACK_KEYS), required=_required(STACK_KEYS))
    memory = _memory_ref(node.child("memory"), memories)
    if core not in memories[memory].access:
        raise node.child("memory").error(
            f"core {core!r} cannot access memory {memory!r}; add it to that memory's access list"
        )
    if not memories[memory].writable():
        raise node.child("memory").error(
            f"a stack needs a writable memory; {memory!r} is {memories[memory].attrs}"
        )
    size = node.child("size").size()
    if size % STACK_ALIGN:
        raise node.child("size").error(
            f"a stack size is a multiple of {STACK_ALIGN} bytes, got {size}"
        )
    return memory, size

def _entry(node: Node | None, default: str) -> str:
    if node is None:
        return default
    entry = node.name()
    if entry in C_KEYWORDS:
        raise node.error(f"{entry!r} is a C keyword; name a function")
    return entry

def _priority(node: Node | None, kind: str) -> int:
    if node is None:
        return 0
    if kind != "isr":
        # No scheduler runs thread contexts (a core starts on its first one): a thread
        # priority would change nothing, so it is refused rather than silently ignored.
        raise node.key_error(
            "priority is an isr's exception priority; a thread context has none (remove it)"
        )
    priority = node.integer()
    if priority > MAX_PRIORITY:
        raise node.error(f"an exception priority is 0..{MAX_PRIORITY}, got {priority}")
    return priority

def _interrupts(node: Node | None, cpu: str) -> tuple[int, tuple[tuple[int, str], ...]]:
    """A core's device interrupt lines (as many as its NVIC can have, at most) and the
    vendor's names of those it names."""
    if node is None:
        return 0, ()
    lines = node
    names: list[tuple[int, str]] = []
    if isinstance(node.value, dict):
        node.mapping(_names(INTERRUPT_KEYS), required=_required(INTERRUPT_KEYS))
        lines = node.child("lines")
    count = lines.integer()
    if count > MAX_INTERRUPTS[cpu]:
        raise lines.error(
            f"a {cpu} has at most {MAX_INTERRUPTS[cpu]} device interrupt lines, got {count}"
        )
    seen: dict[str, int] = {}
    named = node.get("names")
    for key, item in named.items() if named is not None else ():
        line = int(key) if str(key).isdigit() else -1
        if not 0 <= line < count:
            raise item.key_error(f"a line of this table is a number 0..{count - 1}, got {key}")
        name = item.name()
        if name in seen:
            raise item.error(f"line {seen[name]} is named {name!r} already")
        seen[name] = line
        names.append((line, name))
    return count, tuple(sorted(names))

def _check_vector_tables(cores_node: Node, cores: Mapping[str, Core]) -> None:
    """A table with device lines starts on its own size's power-of-two boundary (VTOR), as
    the core sees it. A core whose reset code moves VTOR boots from a table of the 16 core
    exceptions; the linker aligns the copy it moves to."""
    for name, core in cores.items():
        if not core.interrupts or core.boot % vector_align(core.interrupts) == 0:
            continue
        if core.layout.copy == "reset" and core.layout.vectors != core.layout.load:
            continue
        node = cores_node.child(name)
        place = node.child("boot") if node.has("boot") else node.child("interrupts")
        entries = FIRST_IRQ_EXCEPTION + core.interrupts
        raise place.error(
            f"a vector table of {entries} entries starts on a {vector_align(core.interrupts)}"
            f"-byte boundary (VTOR); core {name!r} boots from 0x{core.boot:08x}"
        )

def _irq(node: Node | None, kind: str) -> int | None:
    if node is None:
        return None
    if kind != "isr":
        raise node.key_error(
            f"irq is the device interrupt line of an isr; a {kind} context has none "
            "(remove it, or set kind: isr)"
        )
    return node.integer()

def _check_irqs(specs: list[ContextSpec], cores: Mapping[str, Core]) -> None:
    """Each isr with a line is wired to a line its core's vector table has, one isr per
    line, and through an entry of its own (a core exception's handler has its own entry)."""
    wired: dict[tuple[str, int], str] = {}
    for spec in specs:
        if spec.irq is None:
            continue
        node = spec.node.child("irq")
        lines = cores[spec.core].interrupts
        if not lines:
            raise node.error(
                f"core {spec.core!r} declares no device interrupt lines; add "
                f"`interrupts: N` to it (how many lines its vector table has)"
            )
        if spec.irq >= lines:
            raise node.error(
                f"core {spec.core!r} has {lines} device interrupt lines (0..{lines - 1}); "
                f"there is no line {spec.irq}"
            )
        first = wired.setdefault((spec.core, spec.irq), spec.name)
        if first != spec.name:
            raise node.error(
                f"context {first!r} is already wired to irq {spec.irq} of core {spec.core!r}; "
                "a line has one handler"
            )
        if spec.entry in CORE_HANDLERS:
            raise (spec.node.get("entry") or spec.node).error(
                f"{spec.entry} is the handler of a core exception; the handler of irq "
                f"{spec.irq} (exception {FIRST_IRQ_EXCEPTION + spec.irq}) needs a name of its own"
            )
        problem = names.handler_problem(spec.entry)
        if problem is not None:
            raise (spec.node.get("entry") or spec.node).error(
                f"{problem}; the handler of irq {spec.irq} needs a name of its own"
            )

def _check_alloca(item: Node, alloca: int, stack: tuple[str, int] | None) -> None:
    if stack is None and alloca:
        raise item.child("max_stack_alloca").error(
            "this context has no stack of its own to plan buffers on; set it to 0 or add a stack"
        )
    if stack is not None and alloca > stack[1]:
        raise item.child("max_stack_alloca").error(
            f"{alloca} is more than the whole stack ({stack[1]} bytes)"
        )

def _flash(node: Node) -> FlashRun:
    node.mapping(_names(FLASH_KEYS), required=_required(FLASH_KEYS))
    runner = node.child("runner").choice(flash_runners())
    caps = DECLARED[runner]  # what the runner itself declares it needs and takes
    for needed in sorted(caps.needs):
        if not node.has(needed):
            raise node.error(f"runner {runner} needs `{needed}`")
    for key in BOARD_SETTINGS:
        if node.has(key) and key not in caps.settings:
            listed = ", ".join(f"`{name}`" for name in sorted(caps.needs))
            raise node.child(key).key_error(f"runner {runner} takes {listed}, not `{key}`")
    frequency = node.child("frequency").integer(minimum=1) if node.has("frequency") else None
    target = node.child("target").string() if node.has("target") else None
    return FlashRun(runner, target=target, config=_configs(node), frequency=frequency)


def _configs(node: Node) -> tuple[str, ...]:
    """The OpenOCD config files `config` names: one, or a list of at least one."""
    if not node.has("config"):
        return ()
    config = node.child("config")
    files = [config.string()] if isinstance(config.value, str) else []
    files += [item.string() for item in config.elements()] if isinstance(config.value, list) else []
    if not files:
        raise config.error("name at least one OpenOCD config file")
    return tuple(files)

def _check_releases(cores_node: Node, cores: Mapping[str, Core]) -> None:
    """A released core is released by a core that itself starts at reset (so some core
    always does)."""
    for name, core in cores.items():
        if core.release is None:
            continue
        by_node = cores_node.child(name).child("release").child("by")
        if core.release.by not in cores or core.release.by == name:
            others = [other for other in cores if other != name]
            raise by_node.error(
                f"no other core {core.release.by!r}; {suggest(core.release.by, others)}"
            )
        if cores[core.release.by].release is not None:
            raise by_node.error(
                f"core {core.release.by!r} is itself released by another; "
                f"name a core that starts at reset"
            )

def _check_copiers(
    cores_node: Node, cores: Mapping[str, Core], memories: Mapping[str, Memory]
) -> None:
    """An image its releaser copies has a releaser that reaches both where the image is
    programmed and where it runs; a boot ROM starts only a core that starts at reset."""
    for name, core in cores.items():
        if core.image is not None:
            continue  # it runs another core's image, laid out (and copied) by that core
        layout = core.layout
        layout_node = cores_node.child(name).child("layout")
        if layout.copy == "boot-rom" and core.release is not None:
            raise layout_node.child("copy").error(
                f"a boot ROM starts only the cores that start at reset; core {name!r} is "
                f"released by {core.release.by!r}: use copy: releaser"
            )
        if layout.copy != "releaser":
            continue
        if core.release is None:
            raise layout_node.child("copy").error(
                f"copy: releaser needs a core that releases core {name!r}; add "
                f"release: {{by: CORE, steps: [...]}}, or use copy: reset"
            )
        by = core.release.by
        for part in ("load", "vectors", "code"):
            memory = memories[getattr(layout, part)]
            if by not in memory.access:
                raise layout_node.child(part).error(
                    f"core {by!r} copies this image before it releases core {name!r}, but "
                    f"cannot reach memory {memory.name!r}; add {by} to its access list"
                )

def _check_rom_copies(cores_node: Node, cores: Mapping[str, Core], run: Run) -> None:
    """QEMU starts a core on the image as it is loaded: no boot ROM copies it anywhere."""
    if run.qemu is None:
        return
    for name, core in cores.items():
        if core.image is None and core.layout.copy == "boot-rom":
            raise cores_node.child(name).child("layout").child("copy").error(
                f"QEMU machine {run.qemu.machine!r} has no boot ROM that copies images; "
                f"use copy: reset"
            )


def _check_shared_layouts(
    cores_node: Node, cores: Mapping[str, Core], memories: Mapping[str, Memory]
) -> None:
    """Images may share a memory: memplace gives each its own range of it (`codegen`), one
    after another, each starting at its vector table where that is in the memory. So two
    vector tables in one memory need two boot addresses."""
    first: dict[tuple[str, int], str] = {}
    for name, core in cores.items():
        if core.image is not None:
            continue  # it runs another core's image: nothing of its own to place
        vectors = memories[core.layout.vectors]
        system = core.boot - vectors.address_for(name) + vectors.origin
        other = first.setdefault((vectors.name, system), name)
        if other != name:
            node = cores_node.child(name)
            raise (node.child("boot") if node.has("boot") else node.child("layout")).error(
                f"cores {other!r} and {name!r} both start from a vector table at "
                f"0x{core.boot:08x} in memory {core.layout.vectors!r}; their images share that "
                f"memory one after the other: give core {name!r} a `boot` address past the "
                f"image of core {other!r}"
            )


def _check_views(memories_node: Node, cores: Iterable[str], memories: Mapping[str, Memory]) -> None:
    """No core may see two memories at overlapping addresses. The error points at the
    address (the core's view, or else the origin) of the one declared later."""
    order = list(memories)
    for core in cores:
        seen = sorted(
            (memory.address_for(core), memory.address_for(core) + memory.size, memory.name)
            for memory in memories.values()
            if core in memory.access
        )
        for (low_start, low_end, low), (high_start, high_end, high) in itertools.pairwise(seen):
            if high_start >= low_end:
                continue
            later = max(low, high, key=order.index)
            node = memories_node.child(later)
            views = node.get("views")
            address = views.child(core) if views and views.has(core) else node.child("origin")
            raise address.error(
                f"core {core!r} sees memories {low!r} and {high!r} at overlapping addresses "
                f"([0x{low_start:08x}, 0x{low_end:08x}) and [0x{high_start:08x}, "
                f"0x{high_end:08x})); move one"
            )

def _check_contexts(
    contexts_node: Node, specs: list[ContextSpec], cores: Mapping[str, Core]
) -> None:
    by_name = {spec.name: spec for spec in specs}
    for spec in specs:
        _check_preempts(spec, by_name)
        _check_thread_names(spec, by_name)
    for core in cores:
        on_core = [spec for spec in specs if spec.core == core]
        if not any(spec.kind == "thread" for spec in on_core):
            raise contexts_node.error(
                f"core {core!r} has no thread context to start on; add one with core: {core}"
            )
        tasks: dict[str, str] = {}
        for spec in on_core:
            if spec.kind != "task" or spec.task is None:
                continue
            named = tasks.setdefault(spec.task, spec.name)
            if named != spec.name:
                raise (spec.node.get("task") or spec.node).error(
                    f"context {named!r} on core {core!r} is already the RTOS task "
                    f"{spec.task!r}; give each task a name of its own (`task: NAME`)"
                )
        entries: dict[str, str] = {}
        for spec in on_core:
            if spec.kind == "task":
                continue  # an RTOS may start several tasks at one function
            first = entries.setdefault(spec.entry, spec.name)
            if first != spec.name:
                raise (spec.node.get("entry") or spec.node).error(
                    f"context {first!r} on core {core!r} already starts at {spec.entry}(); "
                    f"give each context an entry of its own"
                )
    for spec in specs:
        # Under an RTOS every handler runs on the main stack (`verify.firmware`).
        on_main_stack = cores[spec.core].rtos != "none"
        if spec.kind == "isr" and spec.stack is None and not spec.preempts and not on_main_stack:
            raise spec.node.error(
                "an isr runs on the stacks of the contexts it preempts: list them in "
                "`preempts`, or give it a stack of its own (under an RTOS: the main stack)"
            )

def _check_thread_names(spec: ContextSpec, by_name: Mapping[str, ContextSpec]) -> None:
    """A worker thread's stack is named in C as `<context>_thread<N>`
    (memplace_stack_main_thread0): no context may take that name too."""
    for index in range(spec.threads):
        twin = by_name.get(f"{spec.name}_thread{index}")
        if twin is not None:
            raise twin.node.key_error(
                f"the stack of thread {index} of context {spec.name!r} has the C name "
                f"{twin.name} (memplace_stack_{twin.name}); give this context another name"
            )

def _check_preempts(spec: ContextSpec, by_name: Mapping[str, ContextSpec]) -> None:
    node = spec.node.get("preempts")
    if node is None:
        return
    for index, other in enumerate(spec.preempts):
        place = node.child(index) if isinstance(node.value, list) else node
        if other not in by_name:
            raise place.error(f"no context {other!r}; {suggest(other, by_name)}")
        if other == spec.name:
            raise place.error("a context cannot preempt itself")
        target = by_name[other]
        if target.core != spec.core:
            raise place.error(
                f"context {other!r} runs on core {target.core!r}, not {spec.core!r}; "
                f"a context preempts only contexts of its own core"
            )
        if spec.kind == "isr" and target.kind == "isr" and spec.priority >= target.priority:
            raise place.error(
                f"an exception preempts only a less urgent one: give {spec.name!r} a priority "
                f"below {target.priority} (lower is more urgent)"
            )


def _runs_other_image(node: Node) -> bool:
    return isinstance(node.value, dict) and node.has("image")


def _joined_core(
    item: Node, memories: Mapping[str, Memory], owners: Mapping[str, Core], names: list[str]
) -> Core:
    """A core that runs the image of another (`image: OWNER`), as the Pico SDK's two cores
    run one image: the owner's layout, the owner's cpu and float ABI, started by the owner
    once its reset code has set the image's data up, from a vector table of its own."""
    name = _name(item, item.path[-1])
    item.mapping(_names(CORE_KEYS), required=_required(CORE_KEYS))
    image_node = item.child("image")
    image = image_node.name()
    if image == name:
        raise image_node.error(
            f"core {name!r} names itself; a core runs its own image without `image`"
        )
    if image not in names:
        others = [other for other in names if other != name]
        raise image_node.error(f"no core {image!r}; {suggest(image, others)}")
    if image not in owners:
        raise image_node.error(
            f"core {image!r} itself runs another core's image; name the core whose image it is"
        )
    owner = owners[image]
    if owner.layout.copy is not None:
        raise image_node.error(
            f"core {image!r} runs its image after copying it at boot (copy: "
            f"{owner.layout.copy}); a second core cannot join a copied image yet: give core "
            f"{name!r} an image of its own"
        )
    if item.has("layout"):
        raise item.child("layout").key_error(
            f"core {name!r} runs the image of core {image!r}, whose layout says where it goes; "
            f"remove `layout`"
        )
    cpu = item.child("cpu").choice(CPUS)
    if cpu != owner.cpu:
        raise item.child("cpu").error(
            f"one image is built for one cpu: core {image!r} is {owner.cpu}, so core {name!r} "
            f"cannot run its image as {cpu}"
        )
    float_abi = owner.float_abi
    if item.has("float_abi"):
        float_abi = item.child("float_abi").choice(FLOAT_ABIS)
        if float_abi != owner.float_abi:
            raise item.child("float_abi").error(
                f"one image has one float ABI: core {image!r} uses {owner.float_abi}, "
                f"not {float_abi}"
            )
    _check_joined_memories(image_node, name, owner, memories)
    if not item.has("release"):
        raise item.error(
            f"core {name!r} runs the image of core {image!r}, which starts it once the image's "
            f"data is set up: add release: {{by: {image}, ...}}"
        )
    release = _release(item.child("release"))
    if release.by != image:
        raise item.child("release").child("by").error(
            f"core {name!r} runs the image of core {image!r}: core {image!r} releases it, "
            f"after its reset code has set the image's data up"
        )
    vectors = memories[owner.layout.vectors]
    boot = owner.boot + JOINED_VECTORS_OFFSET
    if item.has("boot"):
        boot = _boot(item.child("boot"), name, vectors)
        if boot <= owner.boot:
            raise item.child("boot").error(
                f"the vector table of core {name!r} goes after that of core {image!r}, which "
                f"starts at 0x{owner.boot:08x}"
            )
    elif boot >= vectors.address_for(name) + vectors.size:
        raise item.error(
            f"no room for core {name!r}'s vector table in memory {vectors.name!r}; set `boot`"
        )
    rtos = item.child("rtos").choice(RTOSES) if item.has("rtos") else "none"
    # Each core has its own NVIC: the joining core's table has lines of its own.
    interrupts, lines = _interrupts(item.get("interrupts"), cpu)
    return Core(
        name,
        cpu,
        float_abi,
        owner.layout,
        boot,
        release,
        rtos,
        interrupts=interrupts,
        interrupt_names=lines,
        image=image,
    )


def _check_tables_below_areas(
    cores_node: Node,
    cores: Mapping[str, Core],
    memories: Mapping[str, Memory],
    pools: Mapping[str, Pool],
    stacks: Mapping[tuple[str, int], Stack],
) -> None:
    """The vector table a core starts from lies in the room its image grows in: below the
    pools and stacks that take the top of that memory."""
    for name, core in cores.items():
        memory = memories[core.layout.boot_memory]
        start = core.boot - memory.shift(name)
        end = start + 4 * (FIRST_IRQ_EXCEPTION + core.interrupts)
        areas = [(p.address, p.size, f"pool {p.name!r}") for p in pools.values()]
        areas += [(s.address, s.size, "a stack") for s in stacks.values()]
        for address, size, what in areas:
            inside = memory.origin <= address < memory.origin + memory.size
            if inside and start < address + size and address < end:
                node = cores_node.child(name)
                raise (node.child("boot") if node.has("boot") else node).error(
                    f"the vector table of core {name!r} (from 0x{core.boot:08x}) runs into "
                    f"{what} at [0x{address + memory.shift(name):08x}, "
                    f"0x{address + size + memory.shift(name):08x}) in memory "
                    f"{memory.name!r}; move `boot` below it, or make the pool smaller"
                )


def _check_image_tables(
    cores_node: Node, cores: Mapping[str, Core], memories: Mapping[str, Memory]
) -> None:
    """The vector tables of one image lie at fixed addresses in its vectors memory: each one
    (16 + its lines, 4 bytes an entry) ends before the next begins, and inside the memory."""
    for owner in cores.values():
        if owner.image is not None:
            continue
        tables = sorted(
            (core.boot, core.name)
            for core in cores.values()
            if core.name == owner.name or core.image == owner.name
        )
        if len(tables) < 2:
            continue
        vectors = memories[owner.layout.vectors]
        end_of_memory = vectors.address_for(owner.name) + vectors.size
        follows = [(start, name) for start, name in tables[1:]] + [(end_of_memory, None)]
        for (start, name), (next_start, next_name) in zip(tables, follows, strict=True):
            core = cores[name]
            end = start + 4 * (FIRST_IRQ_EXCEPTION + core.interrupts)
            if end <= next_start:
                continue
            what = (
                f"the end of memory {vectors.name!r} at 0x{next_start:08x}"
                if next_name is None
                else f"the vector table of core {next_name!r} at 0x{next_start:08x}"
            )
            if core.image is None:
                # The owner's table runs into a joining core's: that one's `boot` moves it.
                node = cores_node.child(str(next_name))
                raise (node.child("boot") if node.has("boot") else node).error(
                    f"the vector table of core {name!r} ({FIRST_IRQ_EXCEPTION + core.interrupts} "
                    f"entries from 0x{start:08x}) runs into {what}; set `boot` of core "
                    f"{next_name!r} further on"
                )
            node = cores_node.child(name)
            place = node.child("interrupts") if node.has("interrupts") else node.child("image")
            raise place.error(
                f"the vector table of core {name!r} ({FIRST_IRQ_EXCEPTION + core.interrupts} "
                f"entries from 0x{start:08x}) runs into {what}; give core {name!r} fewer "
                f"interrupt lines, or a `boot` with room for them"
            )


def _check_joined_memories(
    node: Node, name: str, owner: Core, memories: Mapping[str, Memory]
) -> None:
    """The image is linked as its owner sees memory: the core that joins it must reach every
    memory of the image, and see every memory both reach at the same address."""
    for memory in dict.fromkeys(owner.layout.memories()):
        if name not in memories[memory].access:
            raise node.error(
                f"core {name!r} cannot access memory {memory!r}, which holds the image of core "
                f"{owner.name!r}; add it to that memory's access list"
            )
    for seen in memories.values():
        if name in seen.access and owner.name not in seen.access:
            raise node.error(
                f"core {name!r} reaches memory {seen.name!r}, which core {owner.name!r} does "
                f"not: the image they share is linked with one memory map; add {owner.name} to "
                f"that memory's access list"
            )
        both = name in seen.access and owner.name in seen.access
        if both and seen.address_for(name) != seen.address_for(owner.name):
            raise node.error(
                f"cores {owner.name!r} and {name!r} see memory {seen.name!r} at different "
                f"addresses, so one image cannot serve both"
            )


def _check_image_entries(specs: list[ContextSpec], cores: Mapping[str, Core]) -> None:
    """Contexts of different cores that run one image start at functions of that one image:
    each needs an entry of its own."""
    entries: dict[tuple[str, str], ContextSpec] = {}
    for spec in specs:
        core = cores[spec.core]
        first = entries.setdefault((core.image_name, spec.entry), spec)
        if first.core != spec.core:
            raise (spec.node.get("entry") or spec.node).error(
                f"context {first.name!r} of core {first.core!r} already starts at "
                f"{spec.entry}() in the image core {spec.core!r} runs too; give this context an "
                f"entry of its own (entry: NAME)"
            )
