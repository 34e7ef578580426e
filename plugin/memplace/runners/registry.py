"""The runners memplace knows: one record each, kept in the runner's own module.

A module of `memplace.runners` is a runner when it names its runner class `RUNNER`; the
class's `record` says what it is (its name, tool and how to install it, what it does and
which settings it takes) and the class builds its commands. Everything that lists runners
asks here: the board loader and the schema (which runners flash, which `run.flash`
settings each needs and takes), the command's `--runner` choices and help, the Project
API's options and the docs' table (`markdown_table`). So adding a runner is adding its
module (and its tests and docs); nothing else names it.

Standard library only, importing nothing of memplace but the runner modules, which it
finds on first use: the board loader reads it, so a runner module keeps its module level
to its class and record, and loads what runs a tool (`memplace.process`) in the methods
that run one.
"""

from __future__ import annotations

import importlib
import pkgutil
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from memplace.runners.base import Runner


@dataclass(frozen=True)
class Capabilities:
    """What a runner does: `run` images to completion (an emulator) or `flash` them into a
    board; which flash settings it takes, and which of them it cannot do without."""

    run: bool = False
    flash: bool = False
    settings: frozenset[str] = frozenset()
    needs: frozenset[str] = frozenset()


# The settings a flashing can be given (`FlashRequest`'s fields), in the order they are listed.
SETTINGS = ("target", "config", "probe", "frequency", "erase")
# The flash settings a board file's `run.flash` may fix; the others (the probe, erasing)
# belong to one flashing and come from its command line or options.
BOARD_SETTINGS = ("target", "config", "frequency")


@dataclass(frozen=True)
class Record:
    """One runner: its `name` (as `--runner` and a board's `run.flash.runner` give it), the
    `tool` it runs and how to `install` it, what it does and takes (`capabilities`), the
    command it runs as the docs show it (`usage`), and `rank`: runners are listed and
    offered in rising rank."""

    name: str
    tool: str
    install: str
    capabilities: Capabilities
    usage: str
    rank: int

    def __post_init__(self) -> None:
        # Said to whoever writes a runner, when its module is first loaded.
        caps = self.capabilities
        unknown = sorted(caps.settings - set(SETTINGS))
        if unknown:
            raise ValueError(f"runner {self.name}: no setting {unknown}; settings: {SETTINGS}")
        if not caps.needs <= caps.settings:
            raise ValueError(f"runner {self.name}: it needs settings it does not take")


# Modules of the package that are not runners.
_NOT_RUNNERS = frozenset({"base", "registry"})

_found: dict[str, type[Runner]] = {}


def runners() -> dict[str, type[Runner]]:
    """Every runner class by name, in rising rank: those of the package's modules, found on
    first use, and those `register` added."""
    if not _found:
        folder = str(Path(__file__).resolve().parent)
        for module in pkgutil.iter_modules([folder]):
            if module.name not in _NOT_RUNNERS:
                loaded = importlib.import_module(f"{__package__}.{module.name}")
                runner = getattr(loaded, "RUNNER", None)
                if runner is None:
                    continue
                if runner.record.name in _found:
                    raise ValueError(f"two runner modules name runner {runner.record.name}")
                _found[runner.record.name] = runner
    return dict(sorted(_found.items(), key=lambda item: (item[1].record.rank, item[0])))


def register(runner: type[Runner]) -> None:
    """Add a runner from outside the package (a plug-in, a test); `unregister` removes it."""
    runners()
    _found[runner.record.name] = runner


def unregister(name: str) -> None:
    _found.pop(name, None)


def records() -> dict[str, Record]:
    """Every runner's record by name, in rising rank."""
    return {name: runner.record for name, runner in runners().items()}


def flash_runners() -> tuple[str, ...]:
    """The runners that program a board, as a board file's `run.flash.runner` names them."""
    return tuple(name for name, record in records().items() if record.capabilities.flash)


def flash_help() -> str:
    """What each flash runner takes and needs, as `memplace flash --help` ends."""
    said = []
    for name, record in records().items():
        caps = record.capabilities
        if caps.flash:
            takes = ", ".join(_flags(caps.settings))
            needs = f" and needs {', '.join(_flags(caps.needs))}" if caps.needs else ""
            said.append(f"{name} takes {takes}{needs}")
    return "Runners: " + "; ".join(said) + "."


def install_hints() -> dict[str, str]:
    """How to install each runner's tool, by the tool's name."""
    return {record.tool: record.install for record in records().values()}


def markdown_table() -> str:
    """The runners as the table of docs/project-api.md: what each programs with (or that
    it runs images itself), which settings it takes and which it needs, and how its tool
    is installed."""
    rows = [
        "| runner | programs with | takes | needs | its tool, installed with |",
        "|---|---|---|---|---|",
    ]
    for name, record in records().items():
        caps = record.capabilities
        install = f"`{record.install}`"
        cells = [f"`{name}`", record.usage, _listed(caps.settings), _listed(caps.needs), install]
        rows.append("|" + "|".join(f" {cell} " if cell else " " for cell in cells) + "|")
    return "\n".join(rows) + "\n"


def _listed(settings: frozenset[str]) -> str:
    return ", ".join(name for name in SETTINGS if name in settings)


def _flags(settings: frozenset[str]) -> list[str]:
    return ["--" + name for name in SETTINGS if name in settings]
