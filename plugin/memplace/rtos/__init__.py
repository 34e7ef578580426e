"""The RTOSes memplace knows: one module each in this package, each holding one `Rtos`
record (its name, its ports' context-switch data, how a port is told from an image's
symbols, and its kernel's tasks as a firmware image and a run show them).

This module is standard library only and loads no RTOS module until one is asked for, so
the board loader and the schema read the RTOS names (`names`) without the verifier. The
names are the modules of this package: adding an RTOS is adding its module, and every
reader of the registry (the board's `rtos` choices, the schema, `memplace stacks --help`,
the documentation's tables) sees it. Each RTOS module builds on the verifier's readers
(`memplace.verify`): `memplace stacks` reaches it through `named`.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from memplace.verify.callgraph import CallGraph
    from memplace.verify.image import Image
    from memplace.verify.target_memory import LatePaints, RunMemory
    from memplace.verify.tasks import CreatedTask

NONE = "none"
"""A core's `rtos` when nothing switches tasks on it."""


@dataclass(frozen=True)
class Port:
    """One port of an RTOS: what its context switch saves on a task's stack (Cortex-M)."""

    rtos: str
    name: str
    saved: int
    """Bytes the switch (PendSV) saves after the exception frame: core registers (and
    EXC_RETURN, PSPLIM where the port keeps them on the stack)."""
    saved_fp: int
    """Further bytes it saves when the task's floating-point context is live (s16-s31)."""
    top_slack: int
    """Bytes at the top of a new task's stack the port never uses."""
    start_symbols: tuple[str, ...]
    """Functions that start the first task, resetting the main stack pointer."""
    cores: str = ""
    """The cores it serves, in words (for the documentation's table)."""
    saves: str = ""
    """What `saved` is, in words (for the documentation's table)."""


@dataclass(frozen=True)
class KernelStack:
    """A stack the kernel keeps beside the tasks' (an MPU port's system-call stack): its
    report name, its size, the functions that run on it (its bound is the deepest of them
    plus the exception frame copied there), and how the report names that frame."""

    name: str
    size: int
    roots: tuple[int, ...]
    frame_label: str


class Kernel(Protocol):
    """An RTOS's kernel as one firmware image holds it (`Rtos.kernel`)."""

    def created_tasks(self, graph: CallGraph) -> tuple[CreatedTask, ...]:
        """Every task-creating call in the image's code, with what of it is constant."""

    def check_run(self, port: Port) -> None:
        """Refuse (InputError) a run whose tasks this image cannot tell."""

    def running_tasks(self, run: RunMemory) -> dict[str, tuple[int, ...]] | None:
        """Each task name the kernel holds at the end of `run`, with the low end of the
        stack of every task of that name; None where the image has no task lists."""

    def paints(self) -> LatePaints:
        """What the run paints while the firmware runs: its heaps, and the stacks its
        creation calls are given."""

    def kernel_stacks(self, graph: CallGraph) -> tuple[KernelStack, ...]:
        """Stacks the kernel keeps beside the tasks'."""


@dataclass(frozen=True)
class Rtos:
    """One RTOS: what a board's `rtos: <name>` on a core means to `memplace stacks` and
    `verify`."""

    name: str
    ports: tuple[Port, ...]
    port_for: Callable[[str, str, frozenset[str]], Port]
    """The port a build for a core (`cpu`, `float_abi`) uses, told from the image's
    `symbols` where they tell; a port memplace does not model is an InputError."""
    kernel: Callable[[Image], Kernel]
    """The kernel as the image holds it (reads what it needs of the image once)."""
    fill: int
    """The byte the kernel fills a new task's stack with, and memplace paints task stacks
    with, so that a mark reads both."""


def names() -> tuple[str, ...]:
    """Every value a core's `rtos` takes: `none`, then the RTOSes of this package."""
    return (NONE, *sorted(info.name for info in pkgutil.iter_modules(__path__)))


def named(name: str) -> Rtos:
    """The record of the RTOS `name` (one of `names()` other than `none`)."""
    record = importlib.import_module(f"{__name__}.{name}").RTOS
    if not isinstance(record, Rtos) or record.name != name:
        raise TypeError(f"module {__name__}.{name} holds no Rtos record named {name!r}")
    return record


def every() -> Mapping[str, Rtos]:
    """Every RTOS's record, by name."""
    return {name: named(name) for name in names() if name != NONE}


def markdown_table() -> str:
    """Every RTOS's ports as the Markdown table of docs/verification.md."""
    rows = [
        "| rtos | port | cores | saved by the switch on the task's stack "
        "| with a live FPU context | unused top |",
        "|---|---|---|---|---:|---:|",
    ]
    for record in every().values():
        for port in record.ports:
            fp = f"s16-s31: {port.saved_fp}" if port.saved_fp else "-"
            cells = [f"`{record.name}`", port.name, port.cores, f"{port.saves}: {port.saved}"]
            rows.append("| " + " | ".join([*cells, fp, str(port.top_slack)]) + " |")
    return "\n".join(rows) + "\n"
