"""FreeRTOS: its Cortex-M ports' context switch, and its tasks as a firmware image and a run
show them.

On Cortex-M a switched-out task's stack holds, beyond its own frames: the exception frame
the interrupt or the PendSV that switched it pushed (`verify.rtos.task_switch_cost`), the
registers the port's PendSV handler saves after it, and the bytes the port leaves unused
at the top when it starts a new task (one word below the end, aligned down to 8).
FreeRTOS's Cortex-M ports start the scheduler by loading the main stack pointer from the
vector table (`prvPortStartFirstTask`), so what `main` had on the main stack before is
gone once the first task runs.

Tasks are created with `xTaskCreate(entry, name, depth, ...)` or `xTaskCreateStatic(...)`
(the depth in words of `StackType_t`), and with `xTaskCreateRestricted(&parameters, ...)`
or its static twin, from a `TaskParameters_t` whose first three members are the same three
values (`verify.tasks` follows their constants). The name is the one the kernel keeps: cut
to `configMAX_TASK_NAME_LEN - 1` characters.

A running target's tasks are found as debuggers' RTOS awareness finds them: every task is
in one of the kernel's lists (`pxReadyTasksLists[]`, `xDelayedTaskList1/2`,
`xPendingReadyList`, `xSuspendedTaskList`, `xTasksWaitingTermination`); each list item's
`pvOwner` is its task's control block (TCB_t), which holds `pxStack`, the lowest address of
the task's stack, and `pcTaskName`. The offsets come from the ELF's debug information
(`tskTaskControlBlock`, `xLIST`, `xLIST_ITEM`, `xMINI_LIST_ITEM`); without it, from the
offsets FreeRTOS has on 32-bit ports without an MPU or list integrity checks.

A task's stack is filled with `tskSTACK_FILL_BYTE` (0xA5) when it is created (FreeRTOS does
so whenever stack checking, tracing or `uxTaskGetStackHighWaterMark` is on): its mark is
its size less the bytes at its low end that still hold the fill, as
`uxTaskGetStackHighWaterMark` counts them.
"""

from __future__ import annotations

from dataclasses import dataclass

from memplace.errors import InputError
from memplace.rtos import KernelStack, Port, Rtos
from memplace.verify.callgraph import CallGraph
from memplace.verify.cortexm import FPU_CPUS
from memplace.verify.image import Image
from memplace.verify.report import SYSTEM_CALL
from memplace.verify.structs import struct_members
from memplace.verify.target_memory import LatePaints, Paint, RunMemory
from memplace.verify.tasks import CreatedTask, created_tasks

FILL = 0xA5
START = ("prvPortStartFirstTask", "vPortStartFirstTask", "xPortStartScheduler")
PORTS = (
    # FreeRTOS-Kernel portable/GCC/ARM_CM3 and ARM_CM0 (r4-r7, then r8-r11): r4-r11.
    Port("freertos", "ARM_CM0", 32, 0, 8, START, "Cortex-M0/M0+", "r4-r11"),
    Port("freertos", "ARM_CM3", 32, 0, 8, START, "Cortex-M3, M4/M7 soft float", "r4-r11"),
    # ARM_CM4F and ARM_CM7: r4-r11 and EXC_RETURN, then s16-s31 when the FPU was used.
    Port("freertos", "ARM_CM4F", 36, 64, 8, START, "Cortex-M4 hard float", "r4-r11, EXC_RETURN"),
    Port("freertos", "ARM_CM7", 36, 64, 8, START, "Cortex-M7 hard float", "r4-r11, EXC_RETURN"),
    # ARM_CM3_MPU and ARM_CM4_MPU: with the v1 wrappers CONTROL and r4-r11 (and EXC_RETURN,
    # s16-s31) on the task's stack; with the v2 wrappers in the task's control block, the
    # stack keeping only the exception frame: the first holds for both.
    Port(
        "freertos",
        "ARM_CM3_MPU",
        36,
        0,
        8,
        START,
        "Cortex-M3, M4/M7 soft float, with an MPU",
        "CONTROL, r4-r11",
    ),
    Port(
        "freertos",
        "ARM_CM4_MPU",
        40,
        64,
        8,
        START,
        "Cortex-M4/M7 hard float with an MPU",
        "CONTROL, r4-r11, EXC_RETURN",
    ),
    # Armv8-M without TrustZone (ARM_CM23_NTZ, ARM_CM33_NTZ, ARM_CM55_NTZ, ARM_CM85_NTZ):
    # PSPLIM, EXC_RETURN, r4-r11, then s16-s31 when the FPU was used.
    Port(
        "freertos",
        "ARM_CM33_NTZ",
        40,
        64,
        8,
        START,
        "Armv8-M without TrustZone: M23, M33, M55, M85",
        "PSPLIM, EXC_RETURN, r4-r11",
    ),
    # The non-secure side with TrustZone (ARM_CM23, ARM_CM33, ARM_CM55, ARM_CM85): the task's
    # secure context handle too.
    Port(
        "freertos",
        "ARM_CM33",
        44,
        64,
        8,
        START,
        "the non-secure side of TrustZone: M23, M33, M55, M85",
        "xSecureContext, PSPLIM, EXC_RETURN, r4-r11",
    ),
)
_BY_NAME = {port.name: port for port in PORTS}
_V8M = frozenset(("cortex-m23", "cortex-m33", "cortex-m35p", "cortex-m55", "cortex-m85"))
_V6M = frozenset(("cortex-m0", "cortex-m0plus"))

# What in an image tells FreeRTOS's ports apart (a function or variable each port defines).
MPU_SYMBOLS = ("vPortStoreTaskMPUSettings", "MPU_xTaskCreate", "xPortIsAuthorizedToAccessBuffer")
FPU_SYMBOLS = ("vPortEnableVFP",)
SECURE_SYMBOLS = ("SecureContext_SaveContext", "xSecureContext")
UNMODELLED = {
    # symbol: why memplace refuses the port that defines it
    "vApplicationGenerateTaskRandomPacKey": "pointer authentication keys on the task's stack "
    "(configENABLE_PAC)",
    "pxCurrentTCBs": "several cores (configNUMBER_OF_CORES > 1)",
}


def port_for(cpu: str, float_abi: str, symbols: frozenset[str] = frozenset()) -> Port:
    """The port a build for this core uses: read from the image's `symbols` where they
    tell (an MPU port, FreeRTOS's FPU ports, the non-secure side of TrustZone), else from
    the core. A port memplace does not model is refused by name."""
    for symbol, why in UNMODELLED.items():
        if symbol in symbols:
            raise InputError(
                f"the image's FreeRTOS port has {why} ({symbol}), which memplace does not model",
                key="rtos",
            )
    mpu = any(name in symbols for name in MPU_SYMBOLS)
    fpu = any(name in symbols for name in FPU_SYMBOLS)
    if cpu in _V8M:
        name = "ARM_CM33" if any(name in symbols for name in SECURE_SYMBOLS) else "ARM_CM33_NTZ"
    elif fpu and (float_abi == "soft" or cpu not in FPU_CPUS):
        raise InputError(
            f"the image holds a FreeRTOS port for a floating-point unit (vPortEnableVFP), "
            f"but the board's {cpu} with float_abi {float_abi} has none in use: set the "
            "core's cpu and float_abi to the firmware's",
            key="rtos",
        )
    elif mpu:
        name = "ARM_CM4_MPU" if fpu or (float_abi != "soft" and cpu in FPU_CPUS) else "ARM_CM3_MPU"
    elif cpu in _V6M:
        name = "ARM_CM0"
    elif float_abi != "soft" and cpu in FPU_CPUS:
        name = "ARM_CM7" if cpu == "cortex-m7" else "ARM_CM4F"
    else:
        name = "ARM_CM3"
    return _BY_NAME[name]


# The functions that create a task, and how they take its entry, name and depth: in the
# first three argument registers, or in a TaskParameters_t the first one points at. The MPU
# ports' wrappers take the same arguments.
_DIRECT = ("xTaskCreate", "xTaskCreateStatic")
_RESTRICTED = ("xTaskCreateRestricted", "xTaskCreateRestrictedStatic")
CREATORS = {
    **{name: "arguments" for name in _DIRECT},
    **{f"MPU_{name}": "arguments" for name in _DIRECT},
    **{name: "parameters" for name in _RESTRICTED},
    **{f"MPU_{name}": "parameters" for name in _RESTRICTED},
}
# The functions a run stops at to paint the stack each creation gets (`LatePaints`).
RUN_CREATORS = {
    "xTaskCreate": "dynamic",
    "xTaskCreateRestricted": "parameters",
    "xTaskCreateStatic": "static",
    "xTaskCreateRestrictedStatic": "parameters",
}
HEAPS = ("ucHeap",)
"""FreeRTOS's heap_1, heap_2 and heap_4 array (heap_5's regions are the application's, and
named so in its own code: a `ucHeap` there is painted as well)."""
HEAP_BOUNDS = (
    ("__heap_start", "__heap_end"),
    ("_heap_bottom", "_heap_top"),
    ("__HeapBase", "__HeapLimit"),
)
"""The C library's heap (heap_3's malloc), as linker scripts name its ends; or the section
`.heap`."""

LISTS = (
    "pxReadyTasksLists",
    "xDelayedTaskList1",
    "xDelayedTaskList2",
    "xPendingReadyList",
    "xSuspendedTaskList",
    "xTasksWaitingTermination",
)
STRUCTS = frozenset(("tskTaskControlBlock", "xLIST", "xLIST_ITEM", "xMINI_LIST_ITEM"))
MAX_TASKS = 1024
"""List items followed at most per list: a corrupt list must not loop for ever."""

SYSTEM_CALLS = "system calls (each task's)"
"""How the report names the system-call stack every task has under an MPU port."""


@dataclass(frozen=True)
class TaskListOffsets:
    """Offsets (bytes) of the kernel's task lists and task control blocks, as the walk
    reads them."""

    list_size: int = 20
    list_count: int = 0  # xLIST.uxNumberOfItems
    list_end: int = 8  # xLIST.xListEnd
    mini_next: int = 4  # xMINI_LIST_ITEM.pxNext
    item_next: int = 4  # xLIST_ITEM.pxNext
    item_owner: int = 12  # xLIST_ITEM.pvOwner
    tcb_stack: int = 48  # tskTaskControlBlock.pxStack
    tcb_name: int = 52  # tskTaskControlBlock.pcTaskName
    name_length: int = 16  # configMAX_TASK_NAME_LEN
    from_dwarf: bool = False  # read from the image's debug information


def task_list_offsets(image: Image) -> TaskListOffsets:
    """The offsets the image's debug information gives, else FreeRTOS's usual ones."""
    structs = struct_members(image.path, STRUCTS)
    if structs is None:
        return TaskListOffsets()
    tcb, lst = structs.get("tskTaskControlBlock"), structs.get("xLIST")
    item, mini = structs.get("xLIST_ITEM"), structs.get("xMINI_LIST_ITEM")
    if not (tcb and lst and item and mini):
        return TaskListOffsets()
    try:
        return TaskListOffsets(
            list_size=lst["<size>"],
            list_count=lst["uxNumberOfItems"],
            list_end=lst["xListEnd"],
            mini_next=mini["pxNext"],
            item_next=item["pxNext"],
            item_owner=item["pvOwner"],
            tcb_stack=tcb["pxStack"],
            tcb_name=tcb["pcTaskName"],
            name_length=tcb.get("<pcTaskName length>", 16),
            from_dwarf=True,
        )
    except KeyError:
        return TaskListOffsets()


@dataclass(frozen=True)
class Kernel:
    """FreeRTOS as one image holds it."""

    image: Image
    offsets: TaskListOffsets

    def created_tasks(self, graph: CallGraph) -> tuple[CreatedTask, ...]:
        return created_tasks(self.image, graph, CREATORS, self.offsets.name_length)

    def check_run(self, port: Port) -> None:
        if port.name.endswith("_MPU") and not self.offsets.from_dwarf:
            raise InputError(
                f"FreeRTOS's {port.name} port starts its task control blocks with the task's "
                f"MPU settings, which only the image's debug information lays out: build "
                f"{self.image.path.name} with -g to read its tasks from a run",
                key="--run",
            )

    def running_tasks(self, run: RunMemory) -> dict[str, tuple[int, ...]] | None:
        if not any(self.image.get_symbol(name) is not None for name in (*LISTS, "pxCurrentTCB")):
            return None
        return task_stacks(self.image, run, self.offsets)

    def paints(self) -> LatePaints:
        """Its heap at `main` (after the startup code zeroed it, before any task is
        created), and each stack handed to a static creation when the call is made. Every
        task stack then holds the fill below its deepest use, whatever the kernel's
        configuration fills."""
        image = self.image
        functions = {name: f.address for f in image.iter_functions() for name in f.names}
        heaps = [
            Paint(symbol.address, symbol.size, FILL)
            for name in HEAPS
            if (symbol := image.get_symbol(name)) is not None and symbol.size
        ]
        heaps += [Paint(low, high - low, FILL) for low, high in _library_heap(image)]
        creators = tuple(
            (functions[name], kind) for name, kind in RUN_CREATORS.items() if name in functions
        )
        current = image.get_symbol("pxCurrentTCB")
        return LatePaints(
            functions.get("main"),
            tuple(heaps),
            creators,
            FILL,
            self.offsets.name_length,
            functions.get("pvPortMalloc"),
            current.address if current is not None else None,
        )

    def kernel_stacks(self, graph: CallGraph) -> tuple[KernelStack, ...]:
        """The system-call stack of the MPU ports with the v2 wrappers: each task has one,
        which a system call switches to, copying the exception frame there, to run the
        call's `MPU_...Impl` function; its size configSYSTEM_CALL_STACK_SIZE words."""
        impls = sorted(
            address
            for name, address in graph.by_name.items()
            if name.startswith("MPU_") and name.endswith("Impl")
        )
        if not impls:
            return ()
        info = struct_members(self.image.path, frozenset(("SYSTEM_CALL_STACK_INFO",)))
        words = (
            (info or {}).get("SYSTEM_CALL_STACK_INFO", {}).get("<ulSystemCallStackBuffer length>")
        )
        if words is None:
            raise InputError(
                f"{self.image.path.name} makes FreeRTOS MPU system calls (MPU_...Impl), whose "
                "stack size (configSYSTEM_CALL_STACK_SIZE) only the image's debug information "
                "gives: build it with -g",
                key="FIRMWARE.elf",
            )
        return (KernelStack(SYSTEM_CALLS, 4 * words, tuple(dict.fromkeys(impls)), SYSTEM_CALL),)


def task_stacks(
    image: Image, memory: RunMemory, offsets: TaskListOffsets
) -> dict[str, tuple[int, ...]]:
    """Each task name and the lowest address of the stack of every task of that name
    (FreeRTOS lets tasks share one), from the kernel's lists."""
    tcbs: list[int] = []
    for name in LISTS:
        symbol = image.get_symbol(name)
        if symbol is None:
            continue
        count = max(1, symbol.size // offsets.list_size)
        for index in range(count):
            tcbs += _owners(memory, symbol.address + index * offsets.list_size, offsets)
    current = image.get_symbol("pxCurrentTCB")
    running = memory.word(current.address) if current is not None else None
    if running:
        tcbs.append(running)
    stacks: dict[str, list[int]] = {}
    for tcb in dict.fromkeys(tcbs):
        raw = memory.read(tcb + offsets.tcb_name, offsets.name_length)
        stack = memory.word(tcb + offsets.tcb_stack)
        if raw is None or stack is None:
            continue
        named = stacks.setdefault(raw.split(b"\0")[0].decode(errors="replace"), [])
        if stack not in named:
            named.append(stack)
    return {name: tuple(found) for name, found in stacks.items()}


def _owners(memory: RunMemory, address: int, offsets: TaskListOffsets) -> list[int]:
    """The owners of the items of the list at `address`."""
    count = memory.word(address + offsets.list_count)
    end = address + offsets.list_end
    item = memory.word(end + offsets.mini_next)
    owners: list[int] = []
    if count is None or count > MAX_TASKS:
        return owners
    for _ in range(count):
        if item is None or item == end:
            break
        owner = memory.word(item + offsets.item_owner)
        if owner:
            owners.append(owner)
        item = memory.word(item + offsets.item_next)
    return owners


def _library_heap(image: Image) -> list[tuple[int, int]]:
    """The C library's heap, [low, high), where the linker script says where it is."""
    section = image.get_section(".heap")
    if section is not None and section.size:
        return [(section.address, section.end)]
    for low_name, high_name in HEAP_BOUNDS:
        low, high = image.get_symbol(low_name), image.get_symbol(high_name)
        if low is not None and high is not None and low.address < high.address:
            return [(low.address, high.address)]
    return []


def _kernel(image: Image) -> Kernel:
    return Kernel(image, task_list_offsets(image))


RTOS = Rtos(
    name="freertos",
    ports=PORTS,
    port_for=port_for,
    kernel=_kernel,
    fill=FILL,
)
