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

from memplace.errors import InputError
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
    # FreeRTOS-Kernel portable/GCC/ARM_CM3 and ARM_CM0 (r4-r7, then r8-r11): r4-r11.
    ("freertos", "ARM_CM3"): Port("freertos", "ARM_CM3", 32, 0, 8, FREERTOS_START),
    ("freertos", "ARM_CM0"): Port("freertos", "ARM_CM0", 32, 0, 8, FREERTOS_START),
    # ARM_CM4F and ARM_CM7: r4-r11 and EXC_RETURN, then s16-s31 when the FPU was used.
    ("freertos", "ARM_CM4F"): Port("freertos", "ARM_CM4F", 36, 64, 8, FREERTOS_START),
    ("freertos", "ARM_CM7"): Port("freertos", "ARM_CM7", 36, 64, 8, FREERTOS_START),
    # ARM_CM3_MPU and ARM_CM4_MPU: with the v1 wrappers CONTROL and r4-r11 (and EXC_RETURN,
    # s16-s31) on the task's stack; with the v2 wrappers in the task's control block, the
    # stack keeping only the exception frame: the first holds for both.
    ("freertos", "ARM_CM3_MPU"): Port("freertos", "ARM_CM3_MPU", 36, 0, 8, FREERTOS_START),
    ("freertos", "ARM_CM4_MPU"): Port("freertos", "ARM_CM4_MPU", 40, 64, 8, FREERTOS_START),
    # Armv8-M without TrustZone (ARM_CM23_NTZ, ARM_CM33_NTZ, ARM_CM55_NTZ, ARM_CM85_NTZ):
    # PSPLIM, EXC_RETURN, r4-r11, then s16-s31 when the FPU was used.
    ("freertos", "ARM_CM33_NTZ"): Port("freertos", "ARM_CM33_NTZ", 40, 64, 8, FREERTOS_START),
    # The non-secure side with TrustZone (ARM_CM23, ARM_CM33, ARM_CM55, ARM_CM85): the task's
    # secure context handle too.
    ("freertos", "ARM_CM33"): Port("freertos", "ARM_CM33", 44, 64, 8, FREERTOS_START),
}
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


def port_for(rtos: str, cpu: str, float_abi: str, symbols: frozenset[str] = frozenset()) -> Port:
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
    return PORTS[(rtos, name)]


def task_switch_cost(port: Port, cpu: str, float_abi: str, uses_fpu: bool = True) -> int:
    """Bytes a context switch can leave on a task's stack beyond its own frames: the
    extended frame and the floating-point registers where the task may use the FPU (on a
    core that has one, unless its code holds no floating-point instruction)."""
    floating = uses_fpu and float_abi != "soft" and cpu in FPU_CPUS
    frame = (EXCEPTION_FRAME_FP if floating else EXCEPTION_FRAME) + ENTRY_ALIGNMENT
    return frame + port.saved + (port.saved_fp if floating else 0) + port.top_slack
