"""What an RTOS's context switch leaves on a task's stack, by port: data, so that another RTOS
or port is one more entry.

On Cortex-M a switched-out task's stack holds, beyond its own frames: the exception frame
the interrupt or the PendSV that switched it pushed (32 bytes; 104 when the task has a live
floating-point context, which lazy stacking reserves; one more word when the frame is
aligned to 8), the registers the port's PendSV
handler saves after it, and the bytes the port leaves unused at the top when it starts a
new task. Interrupts run on the main stack (MSP); a task's stack (PSP) receives only the
exception frame. FreeRTOS's Cortex-M ports start the scheduler by loading the main stack
pointer from the vector table (`prvPortStartFirstTask`), so what `main` had on the main
stack before is gone once the first task runs: the main stack holds either main's path up
to the scheduler start or the nesting interrupts after it, never both.
"""

from __future__ import annotations

from dataclasses import dataclass

from memplace.verify.cortexm import ENTRY_ALIGNMENT, EXCEPTION_FRAME, EXCEPTION_FRAME_FP, FPU_CPUS


@dataclass(frozen=True)
class Port:
    """One RTOS port: what its context switch saves on a task's stack."""

    rtos: str
    name: str
    saved: int
    """Bytes PendSV saves after the exception frame: core registers (and EXC_RETURN, PSPLIM
    where the port keeps them on the stack)."""
    saved_fp: int
    """Further bytes it saves when the task's floating-point context is live (s16-s31)."""
    top_slack: int
    """Bytes at the top of a new task's stack the port never uses (it starts one word
    below the end, aligned down to 8)."""
    start_symbols: tuple[str, ...]
    """Functions that start the first task, resetting the main stack pointer."""


FREERTOS_START = ("prvPortStartFirstTask", "vPortStartFirstTask", "xPortStartScheduler")
PORTS = {
    # FreeRTOS-Kernel portable/GCC/ARM_CM3 (also ARM_CM0 saves r4-r11): r4-r11.
    ("freertos", "ARM_CM3"): Port("freertos", "ARM_CM3", 32, 0, 8, FREERTOS_START),
    # ARM_CM4F and ARM_CM7: r4-r11 and EXC_RETURN, then s16-s31 when the FPU was used.
    ("freertos", "ARM_CM4F"): Port("freertos", "ARM_CM4F", 36, 64, 8, FREERTOS_START),
    # ARM_CM33_NTZ (and ARM_CM55/CM85 without TrustZone): PSPLIM, EXC_RETURN, r4-r11, then
    # s16-s31 when the FPU was used.
    ("freertos", "ARM_CM33_NTZ"): Port("freertos", "ARM_CM33_NTZ", 40, 64, 8, FREERTOS_START),
}
_V8M = frozenset(("cortex-m23", "cortex-m33", "cortex-m35p", "cortex-m55", "cortex-m85"))


def port_for(rtos: str, cpu: str, float_abi: str) -> Port:
    """The port a build for this core uses."""
    if cpu in _V8M:
        name = "ARM_CM33_NTZ"
    elif float_abi != "soft" and cpu in FPU_CPUS:
        name = "ARM_CM4F"
    else:
        name = "ARM_CM3"
    return PORTS[(rtos, name)]


def task_switch_cost(port: Port, cpu: str, float_abi: str, uses_fpu: bool = True) -> int:
    """Bytes a context switch can leave on a task's stack beyond its own frames: the
    extended frame and the floating-point registers where the task may use the FPU (on a
    core that has one, unless its code holds no floating-point instruction)."""
    floating = uses_fpu and float_abi != "soft" and cpu in FPU_CPUS
    frame = (EXCEPTION_FRAME_FP if floating else EXCEPTION_FRAME) + ENTRY_ALIGNMENT
    return frame + port.saved + (port.saved_fp if floating else 0) + port.top_slack
