"""`memplace stacks` on C++ firmware memplace did not generate: built by the user's own
commands (arm-none-eabi-g++, a start-up and linker script of its own, newlib's semihosting
library), it throws from a virtual function and catches by type. Its stacks are bounded
from the image alone: the runtime's indirect calls and the virtual calls are resolved from
it, the runtime's type matching reaching only type_info's methods. On every profile: each
core's multilib of libgcc, libstdc++ and newlib is code of its own (Armv6-M's unwinder
returns through `bx r3` and its switches jump through tables in data, Armv8-M Baseline's
libstdc++ moves constants in with `movw`/`movt`, Armv7E-M's strcmp branches back before
its entry)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import PATIENCE
from memplace import process
from memplace.cli import main

pytestmark = pytest.mark.qemu

SOURCES = Path(__file__).parent / "firmware" / "cxx_bare"
BOARD = """\
memplace: board/v1
extends: qemu-mps2-an385
name: cxx-bare
contexts: {}
"""


def build(out: Path, cpu: str, *options: str) -> Path:
    """The program built for `cpu` with `options`, and the two flags `memplace stacks`
    needs."""
    target = [f"-mcpu={cpu}", "-mthumb"]
    flags = [*target, *options, "-g", "-fstack-usage", "-fcallgraph-info=su,da"]
    for compiler, source in (("arm-none-eabi-g++", "app.cpp"), ("arm-none-eabi-gcc", "start.c")):
        built = out / Path(source).with_suffix(".o").name
        argv = [compiler, *flags, "-c", str(SOURCES / source), "-o", str(built)]
        assert process.run(argv, timeout=PATIENCE).returncode == 0
    elf = out / "app.elf"
    objects = [str(out / "app.o"), str(out / "start.o")]
    link = ["-T", str(SOURCES / "link.ld"), "--specs=rdimon.specs", "-nostartfiles"]
    argv = ["arm-none-eabi-g++", *target, *link, *objects, "-o", str(elf)]
    assert process.run(argv, timeout=PATIENCE).returncode == 0
    return elf


# Armv6-M's code is Armv7-M's too, so the Cortex-M0 build runs on the AN385's Cortex-M3.
@pytest.fixture(
    scope="module",
    params=[("cortex-m3", "-O0"), ("cortex-m3", "-O2"), ("cortex-m0", "-Os")],
    ids=lambda param: "".join(param),
)
def firmware(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Path:
    cpu, level = request.param
    return build(tmp_path_factory.mktemp(cpu + level), cpu, level)


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


# (cpu and options, an assumption the report must make): builds that only load here
# (their profile is not the AN385's), each with a runtime of its own.
PROFILES = [
    # Armv8-M Baseline: libstdc++ passes a thrown object's destructor in with movw/movt.
    (
        ("cortex-m23", "-Os"),
        "calls a thrown object's destructor: _ZNSt10bad_typeidD1Ev, ",
    ),
    # Armv7E-M: newlib's strcmp branches back to its exit, before its aligned entry (the
    # type matching calls it: before, "strcmp calls 0x... which is no function").
    (("cortex-m7", "-Os"), "__gxx_personality_v0"),
    # Armv7-M with constants kept out of flash: the program's own throw uses movw/movt.
    (
        ("cortex-m3", "-mpure-code", "-O2"),
        "calls a thrown object's destructor: _ZNSt10bad_typeidD1Ev, ",
    ),
    (("cortex-m0plus", "-O2"), "__gxx_personality_v0"),
]


@pytest.mark.parametrize(("options", "said"), PROFILES, ids=["".join(o) for o, _ in PROFILES])
def test_cxx_firmware_of_other_profiles_is_bounded(
    options: tuple[str, ...], said: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    elf = build(tmp_path, *options)
    board = tmp_path / "board.yaml"
    board.write_text(BOARD)
    code = main(["stacks", str(elf), "--board", str(board), "--stack-hints", "newlib", "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report["findings"]
    (stack,) = report["stacks"]
    assert 1300 <= stack["static_bound"] <= 1700
    text = "\n".join(report["assumptions"]) + " ".join(stack["path"])
    assert said in text


def test_the_constructors_start_up_code_runs_are_read_from_the_image(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    # A C program whose start-up calls newlib's __libc_init_array (as CMSIS and vendor
    # start-up files do): its calls through .init_array reach the program's constructor,
    # read from the image, with no hint.
    source = tmp_path / "app.c"
    source.write_text(
        "volatile int sink;\n"
        "__attribute__((constructor)) static void setup(void) { sink = 5; }\n"
        "int main(void) { return sink - 5; }\n"
    )
    flags = ["-mcpu=cortex-m3", "-mthumb", "-O2", "-g", "-fstack-usage", "-fcallgraph-info=su,da"]
    for name, path in (("app", source), ("start", SOURCES / "start.c")):
        argv = ["arm-none-eabi-gcc", *flags, "-c", str(path), "-o", str(tmp_path / f"{name}.o")]
        assert process.run(argv, timeout=PATIENCE).returncode == 0
    elf = tmp_path / "app.elf"
    link = ["-T", str(SOURCES / "link.ld"), "--specs=rdimon.specs", "-nostartfiles"]
    objects = [str(tmp_path / "app.o"), str(tmp_path / "start.o")]
    argv = ["arm-none-eabi-gcc", *flags[:2], *link, *objects, "-o", str(elf)]
    assert process.run(argv, timeout=PATIENCE).returncode == 0
    board = tmp_path / "board.yaml"
    board.write_text(BOARD)
    code = main(["stacks", str(elf), "--board", str(board), "--json"])
    report = json.loads(capsys.readouterr().out)
    assert code == 0, report["findings"]
    (said,) = [a for a in report["assumptions"] if a.startswith("__libc_init_array calls ")]
    assert said.startswith(
        "__libc_init_array calls the .preinit_array and .init_array functions "
        "(static constructors): "
    )
    assert "setup" in said
