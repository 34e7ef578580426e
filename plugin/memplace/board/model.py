"""The `Board`: the parts of one board file, checked and with every address given, its
per-core view of memory, and its round trip through plain data (`to_data`,
`from_resolved`)."""

from __future__ import annotations

import copy
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from memplace.board.extends import board_path, load_with_extends
from memplace.board.parts import (
    IMAGE_PARTS,
    OPERANDS,
    Area,
    Context,
    Core,
    Device,
    FlashRun,
    ImageLayout,
    MappedMemory,
    Memory,
    Pool,
    QemuRun,
    Release,
    ReleaseStep,
    Run,
    Stack,
)
from memplace.board.reader import read_board
from memplace.errors import InputError
from memplace.hints import StackHints
from memplace.source import Document


@dataclass(frozen=True)
class Board:
    name: str
    summary: str
    cores: Mapping[str, Core]
    devices: Mapping[str, Device]
    memories: Mapping[str, Memory]
    pools: Mapping[str, Pool]
    contexts: Mapping[str, Context]
    qemu_machine: str | None
    source: str
    run: Run = field(default_factory=Run)
    # Hint sets from the board file's `stack_hints:`, in file order.
    stack_hints: tuple[StackHints, ...] = ()
    # The board file as read (None for a board read back from a project): where a rule
    # checked after loading (`checks`, the generator's rules) points its errors.
    document: Document | None = field(default=None, compare=False, repr=False)

    @classmethod
    def from_file(cls, path: Path) -> Board:
        return cls.from_document(load_with_extends(path, ()))

    @classmethod
    def from_data(cls, data: Mapping[str, Any], source: str = "<data>") -> Board:
        return cls.from_document(Document.from_data(copy.deepcopy(dict(data)), source))

    @classmethod
    def from_document(cls, doc: Document) -> Board:
        return cls(**read_board(doc), document=doc)

    @classmethod
    def from_resolved(cls, data: Mapping[str, Any], source: str = "<project>") -> Board:
        """The board `to_data` gave, back: no rule is checked again and no address computed
        (a project's manifest keeps its board so)."""
        run = _run_from(data.get("run", {}))
        return cls(
            name=data["name"],
            summary=data.get("summary", ""),
            cores={name: _core_from(name, core) for name, core in data["cores"].items()},
            devices={name: Device(name, d["kind"]) for name, d in data["devices"].items()},
            memories={name: _memory_from(name, m) for name, m in data["memories"].items()},
            pools={
                name: Pool(name, p["memory"], p["kind"], p["size"], p["address"])
                for name, p in data["pools"].items()
            },
            contexts={name: _context_from(name, c) for name, c in data["contexts"].items()},
            qemu_machine=run.qemu.machine if run.qemu else data.get("qemu_machine"),
            source=source,
            run=run,
        )

    def error(self, key: str, message: str) -> InputError:
        """An error about the board's `key` (dotted, `contexts.uart.entry`), at its place in
        the board file when the board was read from one."""
        if self.document is None or not self.document.marks:
            return InputError(message, key=key)
        return self.document.error(tuple(key.split(".")), message)

    def core_of(self, user: str) -> str | None:
        """The core a context runs on; None for a device."""
        context = self.contexts.get(user)
        return context.core if context else None

    def reaches(self, user: str, memory: str) -> bool:
        """Whether a context (through its core) or a device can access `memory`."""
        who = self.core_of(user) or user
        return who in self.memories[memory].access

    def memory_map(self, core: str) -> tuple[MappedMemory, ...]:
        """Every memory `core` reaches, at the address it sees it, lowest first, with the
        pools and stacks inside it."""
        layout = self.cores[core].layout
        mapped = []
        for memory in self.memories.values():
            if core not in memory.access:
                continue
            shift = memory.shift(core)
            areas = [
                Area("pool", pool.name, pool.address + shift, pool.size)
                for pool in self.pools.values()
                if pool.memory == memory.name
            ]
            for context in self.contexts.values():
                for label, stack in context.stacks():
                    if stack.memory == memory.name:
                        areas.append(Area("stack", label, stack.address + shift, stack.size))
            mapped.append(
                MappedMemory(
                    memory=memory,
                    address=memory.address_for(core),
                    roles=layout.roles(memory.name),
                    shared_with=tuple(who for who in memory.access if who != core),
                    areas=tuple(sorted(areas, key=lambda area: area.address)),
                )
            )
        return tuple(sorted(mapped, key=lambda entry: entry.address))

    def to_data(self) -> dict[str, Any]:
        """The resolved board as plain data, with every computed address filled in."""
        return {
            "name": self.name,
            "summary": self.summary,
            "qemu_machine": self.qemu_machine,
            "cores": {name: _core_data(core) for name, core in self.cores.items()},
            "devices": {name: {"kind": device.kind} for name, device in self.devices.items()},
            "memories": {
                name: {
                    "origin": memory.origin,
                    "size": memory.size,
                    "attrs": memory.attrs,
                    "kind": memory.kind,
                    "access": list(memory.access),
                    "latency": memory.latency,
                    "views": dict(memory.views),
                }
                for name, memory in self.memories.items()
            },
            "pools": {
                name: {
                    "memory": pool.memory,
                    "kind": pool.kind,
                    "size": pool.size,
                    "address": pool.address,
                }
                for name, pool in self.pools.items()
            },
            "contexts": {name: _context_data(context) for name, context in self.contexts.items()},
            "run": _run_data(self.run),
        }


def _stack_data(stack: Stack | None) -> dict[str, Any] | None:
    if stack is None:
        return None
    return {"memory": stack.memory, "size": stack.size, "address": stack.address}


def _core_data(core: Core) -> dict[str, Any]:
    release = None
    if core.release is not None:
        release = {
            "by": core.release.by,
            "steps": [
                {step.action: step.address, OPERANDS[step.action]: step.value}
                for step in core.release.steps
            ],
        }
        if core.release.handshake:
            release["handshake"] = core.release.handshake
    layout: dict[str, Any] = dict(zip(IMAGE_PARTS, core.layout.memories(), strict=True))
    if core.layout.copy is not None:
        layout["copy"] = core.layout.copy
    data: dict[str, Any] = {
        "cpu": core.cpu,
        "float_abi": core.float_abi,
        "layout": layout,
        "boot": core.boot,
        "release": release,
        "rtos": core.rtos,
        "interrupts": core.interrupts,
    }
    if core.interrupt_names:
        data["interrupt_names"] = {str(line): name for line, name in core.interrupt_names}
    if core.image is not None:
        data["image"] = core.image
    return data


def _context_data(context: Context) -> dict[str, Any]:
    return {
        "core": context.core,
        "kind": context.kind,
        "entry": context.entry,
        "stack": _stack_data(context.stack),
        "threads": context.threads,
        "thread_stacks": [_stack_data(stack) for stack in context.thread_stacks],
        "max_stack_alloca": context.max_stack_alloca,
        "preempts": list(context.preempts),
        "priority": context.priority,
        "task": context.task,
        "budget": context.budget,
        "irq": context.irq,
    }


def _run_data(run: Run) -> dict[str, Any]:
    data: dict[str, Any] = {}
    if run.qemu is not None:
        data["qemu"] = {"machine": run.qemu.machine}
    if run.flash is not None:
        flash: dict[str, Any] = {"runner": run.flash.runner}
        if run.flash.target is not None:
            flash["target"] = run.flash.target
        if run.flash.config:
            flash["config"] = list(run.flash.config)
        if run.flash.frequency is not None:
            flash["frequency"] = run.flash.frequency
        data["flash"] = flash
    if run.simulator is not None:
        data["simulator"] = run.simulator
    if run.on_exit != "spin":
        data["on_exit"] = run.on_exit
    return data


def _memory_from(name: str, data: Mapping[str, Any]) -> Memory:
    return Memory(
        name=name,
        origin=data["origin"],
        size=data["size"],
        attrs=data["attrs"],
        kind=data["kind"],
        access=tuple(data["access"]),
        latency=data["latency"],
        views=dict(data.get("views", {})),
    )


def _core_from(name: str, data: Mapping[str, Any]) -> Core:
    release = None
    if data.get("release") is not None:
        steps = []
        for step in data["release"]["steps"]:
            action = next(key for key in step if key in OPERANDS)
            steps.append(ReleaseStep(action, step[action], step[OPERANDS[action]]))
        release = Release(data["release"]["by"], tuple(steps), data["release"].get("handshake"))
    return Core(
        name=name,
        cpu=data["cpu"],
        float_abi=data["float_abi"],
        layout=ImageLayout(
            **{key: data["layout"][key] for key in IMAGE_PARTS}, copy=data["layout"].get("copy")
        ),
        boot=data.get("boot", 0),
        release=release,
        rtos=data.get("rtos", "none"),
        interrupts=data.get("interrupts", 0),
        interrupt_names=tuple(
            sorted((int(line), name) for line, name in data.get("interrupt_names", {}).items())
        ),
        image=data.get("image"),
    )


def _stack_from(data: Mapping[str, Any] | None) -> Stack | None:
    return None if data is None else Stack(data["memory"], data["size"], data["address"])


def _context_from(name: str, data: Mapping[str, Any]) -> Context:
    thread_stacks = tuple(_stack_from(stack) for stack in data.get("thread_stacks", []))
    return Context(
        name=name,
        core=data["core"],
        kind=data["kind"],
        entry=data["entry"],
        stack=_stack_from(data.get("stack")),
        max_stack_alloca=data.get("max_stack_alloca", 0),
        preempts=tuple(data.get("preempts", [])),
        priority=data.get("priority", 0),
        threads=data.get("threads", 0),
        thread_stacks=tuple(stack for stack in thread_stacks if stack is not None),
        task=data.get("task"),
        budget=data.get("budget"),
        irq=data.get("irq"),
    )


def _run_from(data: Mapping[str, Any]) -> Run:
    qemu = data.get("qemu")
    flash = data.get("flash")
    return Run(
        qemu=QemuRun(qemu["machine"]) if qemu else None,
        flash=FlashRun(
            runner=flash["runner"],
            target=flash.get("target"),
            config=tuple(flash.get("config", [])),
            frequency=flash.get("frequency"),
        )
        if flash
        else None,
        simulator=data.get("simulator"),
        on_exit=data.get("on_exit", "spin"),
    )


def load_board(spec: str | Path) -> Board:
    """A board by bundled name or by path to a board file."""
    return Board.from_file(board_path(spec))
