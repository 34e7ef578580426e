"""What an RTOS's context switch leaves on a task's stack, from its port's record
(`memplace.rtos`: one module per RTOS, its ports as data).

On Cortex-M a switched-out task's stack holds, beyond its own frames: the exception frame
the interrupt or the PendSV that switched it pushed (32 bytes; 104 when the task has a live
floating-point context, which lazy stacking reserves; one more word when the frame is
aligned to 8), the registers the port's PendSV handler saves after it, and the bytes the
port leaves unused at the top when it starts a new task. Interrupts run on the main stack
(MSP); a task's stack (PSP) receives only the exception frame. A port that starts the
scheduler by loading the main stack pointer from the vector table (FreeRTOS's
`prvPortStartFirstTask`) ends what `main` had on the main stack once the first task runs:
the main stack holds either main's path up to the scheduler start or the nesting
interrupts after it, never both.
"""

from __future__ import annotations

from memplace import rtos
from memplace.board import Core
from memplace.rtos import Port, Rtos
from memplace.verify.cortexm import ENTRY_ALIGNMENT, EXCEPTION_FRAME, EXCEPTION_FRAME_FP, FPU_CPUS
from memplace.verify.report import SWITCH


def rtos_of(core: Core) -> Rtos | None:
    """The record of the RTOS that switches `core`'s tasks; None without one."""
    return None if core.rtos == rtos.NONE else rtos.named(core.rtos)


def port_of(core: Core, symbols: frozenset[str] = frozenset()) -> Port:
    """The port of the core's RTOS a build for it uses, told from the image's `symbols`."""
    return rtos.named(core.rtos).port_for(core.cpu, core.float_abi, symbols)


def task_switch_cost(port: Port, cpu: str, float_abi: str, uses_fpu: bool = True) -> int:
    """Bytes a context switch can leave on a task's stack beyond its own frames: the
    extended frame and the floating-point registers where the task may use the FPU (on a
    core that has one, unless its code holds no floating-point instruction)."""
    floating = uses_fpu and float_abi != "soft" and cpu in FPU_CPUS
    frame = (EXCEPTION_FRAME_FP if floating else EXCEPTION_FRAME) + ENTRY_ALIGNMENT
    return frame + port.saved + (port.saved_fp if floating else 0) + port.top_slack


def switch_label(port: Port) -> str:
    """How a task stack's report names its RTOS's context switch."""
    return f"{SWITCH} ({port.rtos} {port.name})"
