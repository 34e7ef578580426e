"""The memory map as each core sees it, as text and as data (`memplace boards show`)."""

from __future__ import annotations

from typing import Any

from memplace.board.model import Board
from memplace.board.parts import human_size


def memory_map_data(board: Board) -> dict[str, Any]:
    """The memory map as each core sees it, as plain data (`memplace boards show --json`)."""
    return {
        "name": board.name,
        "summary": board.summary,
        "cores": {
            name: {
                "cpu": core.cpu,
                "boot": core.boot,
                "released_by": core.release.by if core.release else None,
                "copy": core.layout.copy,
                "interrupts": core.interrupts,
                "image": core.image_name,
                "memories": [
                    {
                        "name": entry.memory.name,
                        "address": entry.address,
                        "size": entry.memory.size,
                        "attrs": entry.memory.attrs,
                        "kind": entry.memory.kind,
                        "latency": entry.memory.latency,
                        "holds": list(entry.roles),
                        "shared_with": list(entry.shared_with),
                        "areas": [
                            {"kind": a.kind, "name": a.name, "address": a.address, "size": a.size}
                            for a in entry.areas
                        ],
                    }
                    for entry in board.memory_map(name)
                ],
            }
            for name, core in board.cores.items()
        },
        "devices": {
            name: {
                "kind": device.kind,
                "reaches": [m.name for m in board.memories.values() if name in m.access],
            }
            for name, device in board.devices.items()
        },
    }


def memory_map_text(board: Board) -> str:
    """The memory map as each core sees it, for people (`memplace boards show`)."""
    lines = [f"{board.name}: {board.summary}" if board.summary else board.name]
    if board.run.qemu:
        lines.append(f"runs under QEMU: -M {board.run.qemu.machine}")
    if board.run.flash:
        flash = board.run.flash
        lines.append(f"flashes with {flash.runner}: {flash.target or ' '.join(flash.config)}")
    for name, core in board.cores.items():
        start = f"released by {core.release.by}" if core.release else "starts at reset"
        if core.image is not None:
            start += f", runs the image of {core.image}"
        copier = _copier(core.layout.copy, core.release.by if core.release else None)
        if copier is not None:
            start += f"; vectors and code copied from {core.layout.load} by {copier}"
        lines += [
            "",
            f"core {name} ({core.cpu}, float {core.float_abi}): boots at "
            f"0x{core.boot:08x}, {start}",
        ]
        if core.interrupts:
            lines.append(
                f"  {core.interrupts} device interrupt lines: a vector table of "
                f"{16 + core.interrupts} entries"
            )
        for entry in board.memory_map(name):
            memory = entry.memory
            span = f"[0x{entry.address:08x}, 0x{entry.address + memory.size:08x})"
            notes = [", ".join(entry.roles)] if entry.roles else []
            notes += [f"shared with {', '.join(entry.shared_with)}"] if entry.shared_with else []
            lines.append(
                f"  {span}  {memory.name:<12} {human_size(memory.size):>6}  {memory.attrs:<3} "
                f"{memory.kind:<5} latency {memory.latency:<3} {'; '.join(notes)}".rstrip()
            )
            for area in entry.areas:
                area_span = f"[0x{area.address:08x}, 0x{area.address + area.size:08x})"
                lines.append(
                    f"      {area_span}  {area.kind} {area.name} ({human_size(area.size)})"
                )
    if board.devices:
        lines += ["", "devices"]
        for name, device in board.devices.items():
            reached = [m.name for m in board.memories.values() if name in m.access]
            lines.append(f"  {name} ({device.kind}) reaches {', '.join(reached) or 'nothing'}")
    lines += ["", "contexts"]
    for context in board.contexts.values():
        stack = (
            f"stack {human_size(context.stack.size)} in {context.stack.memory}"
            if context.stack
            else f"on the stacks of {', '.join(context.preempts)}"
        )
        threads = f", {context.threads} threads" if context.threads else ""
        irq = f", irq {context.irq}" if context.irq is not None else ""
        lines.append(
            f"  {context.name}: {context.kind} on {context.core}, entry {context.entry}(){irq}, "
            f"{stack}{threads}"
        )
    return "\n".join(lines)


def _copier(copy: str | None, releaser: str | None) -> str | None:
    """Who copies a core's vectors and code before they run, in words; None: nobody."""
    if copy == "releaser":
        return f"core {releaser}"
    return {"reset": "its reset code", "boot-rom": "the boot ROM"}.get(copy or "")
