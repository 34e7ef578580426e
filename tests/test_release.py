"""How the generated startup code starts the cores that do not start at reset: register
steps, the RP2040's launch handshake, and a clear refusal where the board says neither."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from memplace.board import Board, load_board
from memplace.cli import main
from memplace.codegen import render
from memplace.errors import InputError
from memplace.planner import plan
from memplace.scopes import resolve
from memplace.workload import Workload

WORKLOAD = {
    "memplace": "workload/v1",
    "name": "duo",
    "steps": 2,
    "buffers": [{"name": "a", "size": 1024, "live": [0, 1]}],
}


def _render(board: Board) -> dict[str, str]:
    workload = Workload.from_data(WORKLOAD)
    users = {c.buffer.name: c.users for c in resolve(board, workload)}
    return render(board, plan(board, workload), users=users)


def _extending(tmp_path: Path, base: str, release: str) -> Path:
    core = {"rp2040": "core1", "qemu-mps2-an521": "cpu1"}[base]
    path = tmp_path / "board.yaml"
    path.write_text(
        f"memplace: board/v1\nextends: {base}\nname: mine\ncores:\n  {core}:\n"
        f"    release: {release}\n"
    )
    return path


def test_rp2040_core0_launches_core1_through_the_sio_fifo() -> None:
    board = load_board("rp2040")
    release = board.cores["core1"].release
    assert release is not None and release.handshake == "rp2040-sio-fifo" and not release.steps
    files = _render(board)
    startup = files["memplace/core0/startup.c"]
    assert "#define MEMPLACE_SIO_FIFO_ST (*(volatile uint32_t *)0xD0000050u)" in startup
    assert "#define MEMPLACE_SIO_FIFO_WR (*(volatile uint32_t *)0xD0000054u)" in startup
    assert "#define MEMPLACE_SIO_FIFO_RD (*(volatile uint32_t *)0xD0000058u)" in startup
    launch = startup[startup.index("static void memplace_launch_core1(") :]
    launch = launch[: launch.index("\n}\n")]
    # 0, 0, 1, then core 1's vector table and the stack pointer and entry it holds.
    assert "{0u, 0u, 1u, vectors, table[0], table[1]}" in launch
    # Before each 0: drain what core 1 sent, then wake it.
    drain = launch.index("if (word == 0u)")
    assert launch.index("(void)MEMPLACE_SIO_FIFO_RD;", drain) < launch.index('"sev"', drain)
    # Each word waits for room, is sent, and must come back, else the sequence restarts.
    assert "MEMPLACE_SIO_FIFO_WR = word;" in launch
    assert "at = MEMPLACE_SIO_FIFO_RD == word ? at + 1u : 0u;" in launch
    start = startup[startup.index("void memplace_start(void)") :]
    # Core 1 runs core 0's image from a vector table of its own, 2K past core 0's.
    call = "memplace_launch_core1(0x10000900u, (const volatile uint32_t *)0x10000900u);"
    assert call in start
    assert start.index(call) < start.index("int code = main();")
    # Core 1 launches nobody; it reports to core 0 through the mailbox.
    core1 = files["memplace/core1/startup.c"]
    assert "memplace_launch_core1" not in core1
    assert "memplace_mailbox[0].done = MEMPLACE_MAILBOX_DONE;" in core1


def test_imxrt1176_cm7_points_the_m4_vtor_and_releases_it_through_the_src() -> None:
    startup = _render(load_board("imxrt1176"))["memplace/cm7/startup.c"]
    block = startup[startup.index("/* Release core cm4. */") :]
    lines = [line.strip() for line in block.splitlines()[1:4]]
    assert lines == [
        "*(volatile uint32_t *)0x40c0c000u = 0x00000000u;",
        "*(volatile uint32_t *)0x40c0c004u = 0x00002020u;",
        "*(volatile uint32_t *)0x40c04000u |= 0x00000001u;",
    ]


def test_a_release_the_startup_code_cannot_perform_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = load_board(_extending(tmp_path, "qemu-mps2-an521", "{by: cpu0, steps: []}"))
    with pytest.raises(InputError) as caught:
        _render(board)
    # A rule of the board (`board.checks`), found when the project is rendered and shown
    # where the board file says it.
    assert str(caught.value) == (
        f"{tmp_path / 'board.yaml'}:6:14: "
        "cores.cpu1.release: core cpu1 is released by cpu0, but the board lists no release "
        "steps or handshake, so the generated startup code cannot start it; add the register "
        "`steps` that release it, or `handshake: rp2040-sio-fifo`"
    )
    workload = tmp_path / "duo.yaml"
    workload.write_text(
        "memplace: workload/v1\nname: duo\nbuffers:\n  - {name: a, size: 64, live: 0}\n"
    )
    out = tmp_path / "p"
    code = main(["generate", str(tmp_path / "board.yaml"), str(workload), "--out", str(out)])
    assert code == 2
    assert "cores.cpu1.release: core cpu1 is released by cpu0, but" in capsys.readouterr().err
    assert not out.exists()


def test_an_unknown_handshake_is_refused_where_it_is_written(tmp_path: Path) -> None:
    path = _extending(tmp_path, "rp2040", "{by: core0, handshake: rp2040-sio}")
    with pytest.raises(InputError) as caught:
        load_board(path)
    message = str(caught.value)
    assert re.match(rf"{re.escape(str(path))}:6:\d+: ", message), message
    assert "'rp2040-sio' is not allowed; did you mean 'rp2040-sio-fifo'" in message


def test_a_release_has_steps_or_a_handshake_not_both(tmp_path: Path) -> None:
    path = _extending(tmp_path, "qemu-mps2-an521", "{by: cpu0, handshake: rp2040-sio-fifo}")
    with pytest.raises(InputError, match="a release has steps or a handshake, not both"):
        load_board(path)
    data = load_board("rp2040").to_data()
    assert data["cores"]["core1"]["release"] == {
        "by": "core0",
        "steps": [],
        "handshake": "rp2040-sio-fifo",
    }
