"""Alignment is absolute: every buffer's address, in every core's view, is a multiple of
its alignment, whatever its pool's base; alignments and sizes no memory can honour are
input errors at the key the user wrote."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest
import yaml

from memplace import resources
from memplace.board import Board
from memplace.cli import main
from memplace.errors import InputError
from memplace.planner import plan
from memplace.workload import Workload

# qemu-mps3-an547's dtcm_ws starts at 0x2003c000: 16 KiB aligned, not 64 KiB.
ALIGNED = """\
memplace: workload/v1
name: aligned
buffers:
  - {name: small, size: 100, live: [0, 0]}
  - {name: table, size: 64, align: 65536, live: [0, 0]}
  - {name: page, size: 4096, align: 32768, live: [0, 0]}
"""


def _workload(text: str) -> Workload:
    return Workload.from_data(yaml.safe_load(text))


def _an547() -> Board:
    return Board.from_data(
        yaml.safe_load(resources.bundled_boards()["qemu-mps3-an547"].read_text())
    )


def test_addresses_are_aligned_whatever_the_pool_base() -> None:
    board = _an547()
    result = plan(board, _workload(ALIGNED), time_limit=1)
    bases = {pool.name: pool.address for pool in result.pools}
    for placement in result.placements:
        assert placement.pool is not None
        address = bases[placement.pool] + placement.offset
        assert address % placement.align == 0, placement.name
    assert bases["dtcm_ws"] % 65536 != 0  # the case that needs it


@pytest.mark.qemu
def test_a_large_alignment_builds_runs_and_verifies(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    workload = tmp_path / "aligned.yaml"
    workload.write_text(ALIGNED)
    code = main(["check", "qemu-mps3-an547", str(workload), "--out", str(tmp_path / "out")])
    out = capsys.readouterr().out
    assert code == 0, out
    assert "verify: ok" in out


def test_views_that_no_offset_aligns_are_refused() -> None:
    data: dict[str, Any] = copy.deepcopy(
        yaml.safe_load(resources.bundled_boards()["imxrt1176"].read_text())
    )
    # The M4 sees its system TCM 256 bytes past a 4 KiB boundary; the M7 on one.
    data["memories"]["cm4_sys_tcm"]["views"]["cm4"] = 0x20000100
    board = Board.from_data(data)
    workload = _workload(
        "memplace: workload/v1\nname: w\nbuffers:\n"
        "  - {name: t, size: 64, align: 4096, live: [0, 0], scope: global.cm4_ws}\n"
    )
    with pytest.raises(InputError, match=r"align 4096 cannot hold in every core's view"):
        plan(board, workload, time_limit=1)


@pytest.mark.parametrize(
    ("entry", "message"),
    [
        (
            "{name: t, size: 64, align: 1099511627776, live: [0, 0]}",
            "w.yaml:4:32: t.align: align 1099511627776 is larger than the largest memory "
            "that could hold t (16777216 bytes)",
        ),
        (
            "{name: t, size: 18446744073709551616, live: [0, 0]}",
            "w.yaml:4:21: buffers[0].size: a size is at most 4 GiB (4294967296 bytes, a 32-bit "
            "address space), got 18446744073709551616",
        ),
        (
            "{name: t, size: 4294967297, live: [0, 0]}",
            "w.yaml:4:21: buffers[0].size: a size is at most 4 GiB",
        ),
        (
            "{name: t, size: 64, align: 48, live: [0, 0]}",
            "w.yaml:4:32: buffers[0].align: align must be a power of two, got 48",
        ),
    ],
)
def test_alignments_and_sizes_no_memory_honours_are_input_errors(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], entry: str, message: str
) -> None:
    path = tmp_path / "w.yaml"
    path.write_text(f"memplace: workload/v1\nname: w\nbuffers:\n  - {entry}\n")
    code = main(["plan", "qemu-mps3-an547", str(path), "--json"])
    err = capsys.readouterr().err
    assert code == 2
    assert len(err.strip().splitlines()) == 1
    assert message in err
    assert "Traceback" not in err
    json.dumps(err)  # one plain line
