"""Flashing with OpenOCD: `openocd -f CONFIG -c "program FILE verify reset exit"`."""

from __future__ import annotations

import re

from memplace.errors import InputError
from memplace.runners.base import Runner
from memplace.runners.registry import Capabilities, Record

# Words Tcl reads as they are; anything else goes inside braces.
_PLAIN_WORD = re.compile(r"[A-Za-z0-9_./:+=@%-]+")


class OpenocdRunner(Runner):
    record = Record(
        name="openocd",
        tool="openocd",
        install="apt-get install openocd",
        capabilities=Capabilities(
            flash=True,
            settings=frozenset({"config", "probe", "frequency"}),
            needs=frozenset({"config"}),
        ),
        usage='`openocd -f C... [-c "adapter serial P"] [-c "adapter speed KHZ"] '
        '-c "program IMAGE verify reset exit"`',
        rank=20,
    )

    def _flash_argv(self, images: list[str]) -> list[str]:
        """Each image is programmed and verified in turn; the board is reset and OpenOCD
        exits after the last one."""
        request = self.request
        argv = [self.record.tool]
        for config in request.config:
            argv += ["-f", config]
        if request.probe:
            argv += ["-c", f"adapter serial {_tcl_word(request.probe)}"]
        if request.frequency:
            argv += ["-c", f"adapter speed {max(1, request.frequency // 1000)}"]
        *first, last = [_tcl_word(image) for image in images]
        argv += [arg for image in first for arg in ("-c", f"program {image} verify")]
        return [*argv, "-c", f"program {last} verify reset exit"]


RUNNER = OpenocdRunner


def _tcl_word(text: str) -> str:
    if _PLAIN_WORD.fullmatch(text):
        return text
    if any(ch in text for ch in "{}\\\n"):
        raise InputError(f"OpenOCD cannot be given {text!r}: braces, backslashes or newlines")
    return "{" + text + "}"
