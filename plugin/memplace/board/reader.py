"""Reading a board file into the parts of a `Board`.

A board file is checked in three passes, as west checks a manifest: the version gate, then
the shape of every key (the tables of `keys`), then the rules that tie names together
(`checks`). What comes out is the fields of a `Board`, every address given."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from memplace import names
from memplace.board.addresses import ContextSpec, PoolSpec, reserve
from memplace.board.checks import (
    check_alloca,
    check_contexts,
    check_copied_parts,
    check_copiers,
    check_image_entries,
    check_image_tables,
    check_irqs,
    check_joined_memories,
    check_layout_attrs,
    check_macro_names,
    check_releases,
    check_rom_copies,
    check_runs_in_place,
    check_shared_layouts,
    check_tables_below_areas,
    check_vector_move,
    check_vector_tables,
    check_version,
    check_views,
)
from memplace.board.keys import (
    BOARD_KEYS,
    CONTEXT_KEYS,
    CORE_KEYS,
    DEVICE_KEYS,
    FLASH_KEYS,
    INTERRUPT_KEYS,
    LAYOUT_FIELDS,
    MEMORY_KEYS,
    POOL_KEYS,
    QEMU_KEYS,
    RELEASE_KEYS,
    RUN_KEYS,
    STACK_KEYS,
    STEP_KEYS,
    key_names,
    required_keys,
)
from memplace.board.parts import (
    ADDRESS_SPACE,
    BOARD_NAME,
    CONTEXT_KINDS,
    COPIERS,
    CPUS,
    DEVICE_KINDS,
    FLOAT_ABIS,
    IMAGE_PARTS,
    JOINED_VECTORS_OFFSET,
    MAX_INTERRUPTS,
    MAX_PRIORITY,
    MEMORY_KINDS,
    ON_EXIT,
    OPERANDS,
    POOL_KINDS,
    RELEASE_HANDSHAKES,
    STACK_ALIGN,
    Core,
    Device,
    FlashRun,
    ImageLayout,
    Memory,
    QemuRun,
    Release,
    ReleaseStep,
    Run,
)
from memplace.hints import read_stack_hints
from memplace.rtos import names as rtos_names
from memplace.runners import registry
from memplace.source import Document, Node, is_identifier, name_problem, suggest

# Cores that never have a floating-point unit: only `float_abi: soft` makes sense on them.
CPUS_WITHOUT_FPU = ("cortex-m0", "cortex-m0plus", "cortex-m3", "cortex-m23")

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
# fmt: on


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
        check_version(root)
        root.mapping(key_names(BOARD_KEYS), required=required_keys(BOARD_KEYS))
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
        check_releases(cores_node, cores)
        check_copiers(cores_node, cores, memories)
        check_shared_layouts(cores_node, cores, memories)
        check_views(root.child("memories"), cores, memories)
        check_vector_tables(cores_node, cores)
        check_image_tables(cores_node, cores, memories)
        pools_node = root.get("pools")
        pool_specs = [
            self._pool(key, node, memories, cores)
            for key, node in (pools_node.items() if pools_node else iter(()))
        ]
        if pools_node:
            check_macro_names(pools_node)
        contexts_node = root.child("contexts")
        context_specs = [
            self._context(key, node, cores, devices, memories)
            for key, node in contexts_node.items()
        ]
        if not context_specs:
            raise contexts_node.error("a board needs at least one context")
        check_contexts(contexts_node, context_specs, cores)
        check_irqs(context_specs, cores)
        check_image_entries(context_specs, cores)
        pools, stacks = reserve(pool_specs, context_specs, memories, cores, self.doc.file)
        check_tables_below_areas(cores_node, cores, memories, pools, stacks)
        contexts = {spec.name: spec.build(stacks) for spec in context_specs}
        run = self._run()
        check_rom_copies(cores_node, cores, run)
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
            item.mapping(key_names(DEVICE_KEYS), required=required_keys(DEVICE_KEYS))
            devices[key] = Device(_name(item, key), item.child("kind").choice(DEVICE_KINDS))
        return devices

    def _memories(self, cores: list[str], devices: Mapping[str, Device]) -> dict[str, Memory]:
        memories: dict[str, Memory] = {}
        users = [*cores, *devices]
        for key, item in self.root.child("memories").items():
            item.mapping(key_names(MEMORY_KEYS), required=required_keys(MEMORY_KEYS))
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
        item.mapping(key_names(CORE_KEYS), required=required_keys(CORE_KEYS))
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
        check_vector_move(item.child("layout"), cpu, layout)
        # A core whose reset code copies its image boots where the image is programmed.
        boots_from = layout.load if layout.copy == "reset" else layout.vectors
        boot = memories[boots_from].address_for(name)
        if item.has("boot"):
            role = "load" if layout.copy == "reset" else "vectors"
            boot = _boot(item.child("boot"), name, memories[boots_from], role)
        release = _release(item.child("release")) if item.has("release") else None
        rtos = item.child("rtos").choice(rtos_names()) if item.has("rtos") else "none"
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
        item.mapping(key_names(POOL_KEYS), required=required_keys(POOL_KEYS))
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
        item.mapping(key_names(CONTEXT_KEYS), required=required_keys(CONTEXT_KEYS))
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
        check_alloca(item, alloca, stack)
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
        run.mapping(key_names(RUN_KEYS), required=required_keys(RUN_KEYS))
        qemu = run.get("qemu")
        flash = run.get("flash")
        if qemu is not None:
            qemu.mapping(key_names(QEMU_KEYS), required=required_keys(QEMU_KEYS))
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


def _layout(node: Node, core: str, memories: Mapping[str, Memory]) -> ImageLayout:
    node.mapping(key_names(LAYOUT_FIELDS), required=required_keys(LAYOUT_FIELDS))
    chosen: dict[str, str] = {}
    for key in IMAGE_PARTS:
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
        check_layout_attrs(part, key, memories[memory])
        chosen[key] = memory
    copy = node.child("copy").choice(COPIERS) if node.has("copy") else None
    if copy is None:
        check_runs_in_place(node, chosen)
    else:
        check_copied_parts(node, copy, chosen, memories)
    return ImageLayout(**chosen, copy=copy)


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
    node.mapping(key_names(RELEASE_KEYS), required=required_keys(RELEASE_KEYS))
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
    node.mapping(key_names(STEP_KEYS))
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
            f"a task runs under an RTOS; say which on core {core.name!r} "
            f"(rtos: {' or '.join(rtos_names()[1:])})"
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
    node.mapping(key_names(STACK_KEYS), required=required_keys(STACK_KEYS))
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
        node.mapping(key_names(INTERRUPT_KEYS), required=required_keys(INTERRUPT_KEYS))
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


def _irq(node: Node | None, kind: str) -> int | None:
    if node is None:
        return None
    if kind != "isr":
        raise node.key_error(
            f"irq is the device interrupt line of an isr; a {kind} context has none "
            "(remove it, or set kind: isr)"
        )
    return node.integer()


def _flash(node: Node) -> FlashRun:
    node.mapping(key_names(FLASH_KEYS), required=required_keys(FLASH_KEYS))
    runner = node.child("runner").choice(registry.flash_runners())
    caps = registry.records()[runner].capabilities  # what the runner's own record says
    for needed in sorted(caps.needs):
        if not node.has(needed):
            raise node.error(f"runner {runner} needs `{needed}`")
    for key in registry.BOARD_SETTINGS:
        if node.has(key) and key not in caps.settings:
            taken = [name for name in registry.BOARD_SETTINGS if name in caps.settings]
            listed = ", ".join(f"`{name}`" for name in taken)
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


def _runs_other_image(node: Node) -> bool:
    return isinstance(node.value, dict) and node.has("image")


def _joined_core(
    item: Node, memories: Mapping[str, Memory], owners: Mapping[str, Core], names: list[str]
) -> Core:
    """A core that runs the image of another (`image: OWNER`), as the Pico SDK's two cores
    run one image: the owner's layout, the owner's cpu and float ABI, started by the owner
    once its reset code has set the image's data up, from a vector table of its own."""
    name = _name(item, item.path[-1])
    item.mapping(key_names(CORE_KEYS), required=required_keys(CORE_KEYS))
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
    check_joined_memories(image_node, name, owner, memories)
    if not item.has("release"):
        raise item.error(
            f"core {name!r} runs the image of core {image!r}, which starts it once the image's "
            f"data is set up: add release: {{by: {image}, ...}}"
        )
    release = _release(item.child("release"))
    if release.by != image:
        raise (
            item.child("release")
            .child("by")
            .error(
                f"core {name!r} runs the image of core {image!r}: core {image!r} releases it, "
                f"after its reset code has set the image's data up"
            )
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
    rtos = item.child("rtos").choice(rtos_names()) if item.has("rtos") else "none"
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
