"""What each runner does and which settings it takes, declared as data.

Standard library only: each runner class carries its own entry, and the board loader and
the schema read the same entries to check a board file's `run.flash` (which runners flash,
which settings each needs and takes), so a runner's needs are written once.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Capabilities:
    """What a runner does: `run` images to completion (an emulator) or `flash` them into a
    board; which flash settings it takes, and which of them it cannot do without."""

    run: bool = False
    flash: bool = False
    settings: frozenset[str] = frozenset()
    needs: frozenset[str] = frozenset()


# The flash settings a board file's `run.flash` may fix; the others (the probe, erasing)
# belong to one flashing and come from its command line or options.
BOARD_SETTINGS = ("target", "config", "frequency")

DECLARED = {
    "qemu": Capabilities(run=True),
    "pyocd": Capabilities(
        flash=True,
        settings=frozenset({"target", "probe", "frequency", "erase"}),
        needs=frozenset({"target"}),
    ),
    "openocd": Capabilities(
        flash=True,
        settings=frozenset({"config", "probe", "frequency"}),
        needs=frozenset({"config"}),
    ),
}


def flash_runners() -> tuple[str, ...]:
    """The runners that program a board, as a board file's `run.flash.runner` names them."""
    return tuple(name for name, caps in DECLARED.items() if caps.flash)
