"""`memplace stacks` on C++ firmware memplace did not generate: built by the user's own
commands (arm-none-eabi-g++, a start-up and linker script of its own, newlib's semihosting
library), it throws from a virtual function and catches by type. Its stacks are bounded
from the image alone: the runtime's indirect calls and the virtual calls are resolved from
it, the runtime's type matching reaching only type_info's methods."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import PATIENCE
from memplace import process
from memplace.cli import main

pytestmark = pytest.mark.qemu

SOURCES = Path(__file__).parent / "firmware" / "cxx_bare"
CPU = ["-mcpu=cortex-m3", "-mthumb"]
BOARD = """\
memplace: board/v1
extends: qemu-mps2-an385
name: cxx-bare
contexts: {}
"""


@pytest.fixture(scope="module", params=["-O0", "-O2"])
def firmware(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The program built at one optimisation level, with the two flags `memplace stacks`
    needs."""
    out = tmp_path_factory.mktemp("cxx" + request.param)
    flags = [*CPU, request.param, "-g", "-fstack-usage", "-fcallgraph-info=su,da"]
    for compiler, source in (("arm-none-eabi-g++", "app.cpp"), ("arm-none-eabi-gcc", "start.c")):
        target = out / Path(source).with_suffix(".o").name
        argv = [compiler, *flags, "-c", str(SOURCES / source), "-o", str(target)]
        assert process.run(argv, timeout=PATIENCE).returncode == 0
    elf = out / "app.elf"
    objects = [str(out / "app.o"), str(out / "start.o")]
    link = ["-T", str(SOURCES / "link.ld"), "--specs=rdimon.specs", "-nostartfiles"]
    argv = ["arm-none-eabi-g++", *CPU, *link, *objects, "-o", str(elf)]
    assert process.run(argv, timeout=PATIENCE).returncode == 0
    return elf


def test_cxx_firmware_is_bounded_from_its_image(
    firmware: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = tmp_path / "board.yaml"
    board.write_text(BOARD)
    argv = ["stacks", str(firmware), "--board", str(board), "--stack-hints", "newlib"]
    code = main([*argv, "--run", "--timeout", f"{PATIENCE:g}", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report["findings"]
    (stack,) = report["stacks"]
    # The run threw through the unwinder: its frames sit on the thrower's stack.
    assert 700 <= stack["measured"] <= stack["static_bound"]
    assert "__gxx_personality_v0" in stack["path"]
    said = report["assumptions"]
    matching = [a for a in said if a.startswith("virtual call in __cxa_type_match at ")]
    assert matching and all("of the type_info classes' vtables: " in a for a in matching)
    assert not any("_ZNK4Rect4areaEv" in a for a in matching)
    program = [a for a in said if a.startswith("virtual call in main at ")]
    assert program and all("_ZNK4Rect4areaEv" in a for a in program), said


def test_without_the_newlib_set_semihostings_recursion_is_named(
    firmware: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # newlib's semihosting opens files through _swiopen, which may ask _stat, which opens
    # the file: a recursion the image cannot bound, which the newlib set does.
    board = tmp_path / "board.yaml"
    board.write_text(BOARD)
    assert main(["stacks", str(firmware), "--board", str(board), "--json"]) == 1
    (finding,) = json.loads(capsys.readouterr().out)["findings"]
    assert finding["check"] == "stack-unbounded"
    assert "recursion _stat > _swiopen > _stat has no depth" in finding["message"]
