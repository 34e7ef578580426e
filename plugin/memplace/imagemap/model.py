"""The image map: where every image of a project puts its bytes, as one frozen value.

Saved with the project (`IMAGE_MAP`, JSON) and read back by the verifier; the templates
only format it. Addresses are system addresses unless a field says it is as a core sees
it (`origin` of a region, `address` of a mailbox view). Ranges are half-open.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

IMAGE_MAP_VERSION = "image-map/v1"


@dataclass(frozen=True)
class Region:
    """A region of a core's linker script: `origin` as that core sees it."""

    name: str
    memory: str
    attrs: str
    origin: int
    length: int

    @property
    def end(self) -> int:
        return self.origin + self.length


@dataclass(frozen=True)
class Slice:
    """An image's own part of a memory: [start, end) in system addresses."""

    memory: str
    start: int
    end: int


@dataclass(frozen=True)
class FreeSection:
    """The application's sections in the largest free region of a writable memory
    (`<section>.data`, copied at reset, and `<section>.bss`, zeroed)."""

    memory: str
    region: str
    section: str
    macro: str
    bytes: int


@dataclass(frozen=True)
class Mailbox:
    """Where released cores report to the core that released them: `size` bytes at
    `system_address` of `memory`; a slot per released core (in `cores` order) and the
    releaser's own last."""

    memory: str
    releaser: str
    size: int
    system_address: int
    done: int
    cores: tuple[str, ...]
    slots: int

    def step_slot(self, core: str) -> int | None:
        """The slot where `core` says which step it finished."""
        if core in self.cores:
            return self.cores.index(core)
        return len(self.cores) if core == self.releaser else None


@dataclass(frozen=True)
class ReleaseEntry:
    """A section the releaser copies: the offsets (as linker script text, "" or
    " + 0x...") that turn the image's own view of its load and run addresses into the
    releaser's."""

    section: str
    load_shift: str
    run_shift: str


@dataclass(frozen=True)
class ReleaseTable:
    """What the linker script writes at the start of an image its releaser copies."""

    releaser: str
    magic: int
    entries: tuple[ReleaseEntry, ...]


@dataclass(frozen=True)
class ReleaseStep:
    action: str
    address: int
    value: int


@dataclass(frozen=True)
class Release:
    """A core this image's core releases: the stack it starts on, its vector table as it
    sees it (`vectors`) and as the releaser does (`vectors_seen`), the register steps or
    handshake that start it, and where the releaser reads its image's release table
    (`copy_table`, as the releaser sees it; None when the releaser copies nothing)."""

    core: str
    context: str
    budget: int
    handshake: str | None
    vectors: int
    vectors_seen: int
    steps: tuple[ReleaseStep, ...]
    copy_table: int | None


@dataclass(frozen=True)
class VectorTable:
    """The vector table a core starts from: its symbol, where it is (as the core sees
    it), its alignment and the handler of each device interrupt line."""

    symbol: str
    address: int
    align: int
    lines: tuple[str, ...]


@dataclass(frozen=True)
class CoreMap:
    """One core's part of the map: its image (the one it runs, possibly another core's),
    the regions of its linker script, its image's slices of the memories it reaches,
    its vector table, the sections its reset handler copies and zeroes, its room for the
    application, the release table of an image its releaser copies, and the cores it
    releases."""

    core: str
    image: str
    regions: tuple[Region, ...]
    slices: tuple[Slice, ...]
    vectors: VectorTable
    copies: tuple[str, ...]
    zeroes: tuple[str, ...]
    free: tuple[FreeSection, ...]
    release_table: ReleaseTable | None
    releases: tuple[Release, ...]

    def region(self, name: str) -> Region | None:
        return next((r for r in self.regions if r.name == name), None)


@dataclass(frozen=True)
class ImageMap:
    """Every image's map, by core in board order; the mailbox; and the measured bytes
    each image takes of each memory several images share (memory -> core -> bytes), the
    input that sized their slices (None: not measured, the slices are shared evenly)."""

    cores: tuple[CoreMap, ...]
    mailbox: Mailbox | None
    shared_memories: tuple[str, ...]
    image_sizes: Mapping[str, Mapping[str, int]] | None

    def core(self, name: str) -> CoreMap:
        return next(c for c in self.cores if c.core == name)

    def to_data(self) -> dict[str, Any]:
        return {
            "memplace": IMAGE_MAP_VERSION,
            "shared_memories": list(self.shared_memories),
            "image_sizes": (
                None
                if self.image_sizes is None
                else {m: dict(sizes) for m, sizes in self.image_sizes.items()}
            ),
            "mailbox": None if self.mailbox is None else _plain(self.mailbox),
            "cores": [_plain(core) for core in self.cores],
        }

    def dumps(self) -> str:
        """The map as the project keeps it: the same map, the same bytes."""
        return json.dumps(self.to_data(), indent=2) + "\n"

    @classmethod
    def from_data(cls, data: Mapping[str, Any]) -> ImageMap:
        """Read back what `to_data` wrote; KeyError or TypeError on anything else."""
        if data.get("memplace") != IMAGE_MAP_VERSION:
            raise TypeError(f"not an {IMAGE_MAP_VERSION} map")
        box = data["mailbox"]
        sizes = data["image_sizes"]
        return cls(
            cores=tuple(_core_from(core) for core in data["cores"]),
            mailbox=None if box is None else Mailbox(**{**box, "cores": tuple(box["cores"])}),
            shared_memories=tuple(data["shared_memories"]),
            image_sizes=None if sizes is None else {m: dict(s) for m, s in sizes.items()},
        )


def _plain(value: Any) -> Any:
    """A frozen value as JSON data: dataclasses as objects in field order, tuples as lists."""
    fields = getattr(value, "__dataclass_fields__", None)
    if fields is not None:
        return {name: _plain(getattr(value, name)) for name in fields}
    if isinstance(value, tuple | list):
        return [_plain(item) for item in value]
    return value


def _core_from(data: Mapping[str, Any]) -> CoreMap:
    table = data["release_table"]
    return CoreMap(
        core=data["core"],
        image=data["image"],
        regions=tuple(Region(**r) for r in data["regions"]),
        slices=tuple(Slice(**s) for s in data["slices"]),
        vectors=VectorTable(**{**data["vectors"], "lines": tuple(data["vectors"]["lines"])}),
        copies=tuple(data["copies"]),
        zeroes=tuple(data["zeroes"]),
        free=tuple(FreeSection(**f) for f in data["free"]),
        release_table=(
            None
            if table is None
            else ReleaseTable(
                table["releaser"],
                table["magic"],
                tuple(ReleaseEntry(**e) for e in table["entries"]),
            )
        ),
        releases=tuple(
            Release(**{**r, "steps": tuple(ReleaseStep(**s) for s in r["steps"])})
            for r in data["releases"]
        ),
    )
