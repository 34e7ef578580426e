"""The M-profile exception model (Armv6-M, v7-M, v8-M, v8.1-M): what an exception entry
pushes on the stack it interrupts."""

from __future__ import annotations

EXCEPTION_FRAME = 32
"""Bytes an exception entry pushes: r0-r3, r12, lr, pc, xPSR."""
EXCEPTION_FRAME_FP = 104
"""With an active floating-point context: also s0-s15, FPSCR (and VPR on Armv8.1-M) and a
reserved word."""
ENTRY_ALIGNMENT = 4
"""The frame is 8-byte aligned on entry: up to one more word."""
FPU_CPUS = frozenset(
    ("cortex-m4", "cortex-m7", "cortex-m33", "cortex-m35p", "cortex-m55", "cortex-m85")
)
"""Cores that may have a floating-point unit."""
