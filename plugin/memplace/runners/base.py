"""What every runner has in common: its record (`registry.Record`: name, tool, install
hint, capabilities), and the one place that refuses a setting a runner does not take.

The board loader loads runner modules (through the registry) to read their records, so
this module level imports only the model's error classes; a tool is run through
`memplace.process`, loaded by the method that runs it."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import asdict, dataclass, fields, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from memplace.errors import InputError, ToolError
from memplace.runners.registry import Record

if TYPE_CHECKING:
    from memplace.board import FlashRun

# How long programming a board may take, in seconds.
FLASH_TIMEOUT = 300.0


@dataclass(frozen=True)
class RunResult:
    """A finished run: the image's exit code and everything it printed."""

    exit_code: int
    output: str


@dataclass(frozen=True)
class FlashRequest:
    """How to program a board. Unset settings (None, empty, False) are left to the runner."""

    target: str | None = None  # pyOCD target type, e.g. stm32h743xx
    config: tuple[str, ...] = ()  # OpenOCD configuration files, e.g. board/stm32h7x3i_eval.cfg
    probe: str | None = None  # serial number (unique ID) of the debug probe
    frequency: int | None = None  # SWD/JTAG clock, Hz
    erase: bool = False  # erase the whole chip before programming

    @classmethod
    def from_values(cls, values: Mapping[str, Any]) -> FlashRequest:
        """From option values by name (command line or Project API); others are ignored."""
        chosen: dict[str, Any] = {}
        for item in fields(cls):
            value = values.get(item.name)
            if value is None:
                continue
            if item.name == "config":
                value = (value,) if isinstance(value, str) else tuple(value)
            chosen[item.name] = value
        return cls(**chosen)

    def given(self) -> list[str]:
        """The names of the settings this request sets."""
        return [item.name for item in fields(self) if getattr(self, item.name)]

    def over(self, board: FlashRun) -> FlashRequest:
        """This request with the board's `run.flash` settings filling what it leaves unset."""
        base = FlashRequest.from_values(asdict(board))
        return replace(base, **{name: getattr(self, name) for name in self.given()})


class Runner:
    """Runs or flashes the images of one project. One subclass per tool, each declaring
    its `record`; `for_flashing` checks a request against its capabilities."""

    record: ClassVar[Record]
    name: ClassVar[str]

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if "record" in cls.__dict__:
            cls.name = cls.record.name

    def __init__(self, request: FlashRequest | None = None) -> None:
        self.request = request or FlashRequest()

    @classmethod
    def for_flashing(cls, request: FlashRequest) -> Runner:
        """A runner that will flash with `request`, or the reason it cannot."""
        caps = cls.record.capabilities
        if not caps.flash:
            why = "; it runs images itself: use `memplace run DIR`" if caps.run else ""
            raise InputError(f"runner {cls.name} does not flash boards{why}", key="--runner")
        refused = [name for name in request.given() if name not in caps.settings]
        if refused:
            flags = ", ".join(_flag(name) for name in refused)
            takes = ", ".join(_flag(name) for name in sorted(caps.settings))
            raise InputError(
                f"runner {cls.name} does not take {flags}; it takes {takes}", key="--runner"
            )
        for name in sorted(caps.needs):
            if name not in request.given():
                raise InputError(
                    f"runner {cls.name} needs a {name}: set run.flash.{name} in the board "
                    f"file or pass {_flag(name)}",
                    key=_flag(name),
                )
        return cls(request)

    def run(
        self,
        images: Mapping[str, Path],
        timeout: float,
        on_line: Callable[[str], None] | None = None,
    ) -> RunResult:
        """Run the images to completion; the first core's image is the one that boots. Each
        line of their console goes to `on_line` as it comes."""
        raise InputError(f"runner {self.name} does not run images; it flashes boards")

    def flash_command(self, images: Mapping[str, Path]) -> list[str]:
        """The exact argv that programs `images` (by core, the booting core first)."""
        if not images:
            raise InputError("no image to flash", key="DIR")
        return self._flash_argv([str(image) for image in dict.fromkeys(images.values())])

    def _flash_argv(self, images: list[str]) -> list[str]:
        raise InputError(f"runner {self.name} does not flash boards", key="--runner")

    def flash(self, images: Mapping[str, Path], timeout: float = FLASH_TIMEOUT) -> str:
        """Program the board; returns what the tool printed."""
        from memplace import process

        argv = self.flash_command(images)
        argv[0] = process.find_tool(self.record.tool, self.record.install)
        done = process.run(argv, timeout=timeout)
        if done.returncode != 0:
            tail = "\n".join(done.output.rstrip().splitlines()[-20:])
            raise ToolError(
                f"{self.name} could not flash the board (exit code {done.returncode}):\n{tail}"
            )
        return done.output


def _flag(name: str) -> str:
    return "--" + name.replace("_", "-")
