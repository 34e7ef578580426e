"""Every name the loaders accept gives a project that compiles, links and runs; a name the
output could not hold is an input error at the place it is written, naming both places
when two names would clash once the generator derives its own from them."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import cli_error
from memplace import resources
from memplace.cli import main

EXTENDS = "memplace: board/v1\nextends: qemu-mps3-an547\nname: named\n"
SRAM = "{origin: 0x70000000, size: 4K, attrs: rw, kind: sram, access: [cpu0], latency: 3}"
ONE_BUFFER = "memplace: workload/v1\nname: w\nbuffers:\n  - {name: a, size: 64, live: 0}\n"


def _error(capsys: pytest.CaptureFixture[str], tmp_path: Path, board: str, work: str) -> str:
    (tmp_path / "b.yaml").write_text(board)
    (tmp_path / "w.yaml").write_text(work)
    out = tmp_path / "out"
    argv = ["generate", str(tmp_path / "b.yaml"), str(tmp_path / "w.yaml"), "--out", str(out)]
    err = cli_error(capsys, *argv)
    assert not out.exists()
    return err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (
            "pools: {const: {memory: dtcm, size: 4K, kind: workspace}}",
            "b.yaml:4:9: pools.const: 'const' is a C keyword; the generated header could not "
            "name a pool so",
        ),
        (
            "pools: {_Bool: {memory: dtcm, size: 4K, kind: workspace}}",
            "b.yaml:4:9: pools._Bool: '_Bool' is a C keyword",
        ),
        (
            "pools: {typeof: {memory: dtcm, size: 4K, kind: workspace}}",
            "b.yaml:4:9: pools.typeof: 'typeof' is a C keyword",
        ),
        (
            f"memories: {{ORIGIN: {SRAM}}}",
            "b.yaml:4:12: memories.ORIGIN: 'ORIGIN' is a word of the linker script language",
        ),
        (
            f"memories: {{stack_main: {SRAM}}}",
            "b.yaml:4:12: memories.stack_main: memory names starting with "
            "'stack_' are kept for the linker regions memplace generates",
        ),
        (
            "cores: {all: {cpu: cortex-m55, float_abi: hard, layout: "
            "{vectors: itcm, code: itcm, data: sram, load: itcm}}}",
            "b.yaml:4:9: cores.all: 'all' is a target CMake makes itself; rename the core",
        ),
        (
            "pools: {DTCM_WS: {memory: dtcm, size: 4K, kind: workspace}}",
            "b.yaml:4:9: pools.DTCM_WS: pools 'dtcm_ws' and 'DTCM_WS' would give the generated "
            "header the same macros (DTCM_WS_...)",
        ),
    ],
)
def test_board_names_the_output_cannot_hold(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, extra: str, message: str
) -> None:
    err = _error(capsys, tmp_path, EXTENDS + extra + "\n", ONE_BUFFER)
    assert message in err


@pytest.mark.parametrize(
    ("buffers", "message"),
    [
        (
            ["{name: a1, size: 64, live: 0}", "{name: A1, size: 64, live: 0}"],
            "w.yaml:5:12: A1.name: buffer 'A1' and buffer 'a1' (",
        ),
        (
            ["{name: dtcm_ws, size: 64, live: 0}"],
            "w.yaml:4:12: dtcm_ws.name: buffer 'dtcm_ws' and pool 'dtcm_ws' "
            "(BOARDS/qemu-mps3-an547.yaml:141:3) would give the generated project the same "
            "name (DTCM_WS)",
        ),
        (
            ["{name: stack_main, size: 64, live: 0}"],
            "w.yaml:4:12: stack_main.name: buffer 'stack_main' and stack 'main' would give",
        ),
        (
            [
                "{name: a, size: 32, live: 0, scope: main.stack}",
                "{name: a_stack, size: 8, live: 0}",
            ],
            "w.yaml:5:12: a_stack.name: buffer 'a_stack' and buffer 'a' (",
        ),
    ],
)
def test_workload_names_the_output_cannot_hold(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, buffers: list[str], message: str
) -> None:
    work = "memplace: workload/v1\nname: w\nbuffers:\n" + "".join(f"  - {b}\n" for b in buffers)
    err = _error(capsys, tmp_path, EXTENDS, work)
    boards = str(resources.bundled_boards()["qemu-mps3-an547"].parent)
    assert message.replace("BOARDS", boards) in err


@pytest.mark.qemu
def test_names_near_keywords_build_run_and_verify(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # Names one letter or one case away from C and linker keywords and from the names the
    # generator makes: all of them valid, none of them clashing.
    (tmp_path / "b.yaml").write_text(
        EXTENDS
        + "memories: {Origin: "
        + SRAM
        + ", stack: "
        + SRAM.replace("0x70000000", "0x70001000")
        + "}\n"
        + "pools:\n  Int: {memory: dtcm, size: 4K, kind: workspace}\n"
        + "  pool: {memory: Origin, size: 4K, kind: workspace}\n"
    )
    (tmp_path / "w.yaml").write_text(
        "memplace: workload/v1\nname: If\nbuffers:\n"
        "  - {name: static_, size: 64, live: 0, scope: global.Int}\n"
        "  - {name: Main, size: 64, live: 0, scope: global.pool}\n"
        "  - {name: ORIGIN_, size: 64, live: 0}\n"
        "  - {name: stack, size: 32, live: 0, scope: main.stack}\n"
        "  - {name: Stack_main_, size: 64, live: 0}\n"
        "  - {name: volatile, size: 64, live: 0}\n"
    )
    out = tmp_path / "out"
    code = main(["check", str(tmp_path / "b.yaml"), str(tmp_path / "w.yaml"), "--out", str(out)])
    printed = capsys.readouterr().out
    assert code == 0, printed
    assert "verify: ok" in printed
