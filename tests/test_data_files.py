"""A constant's `data_file` is a regular file inside the workload's folder (or the folder
`--data-root` allows), read no further than its declared size: a workload from someone else
cannot pull any file of the machine into an image, nor make memplace read without end."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from conftest import cli_error
from memplace.cli import main
from memplace.errors import InputError
from memplace.importers import load_workload

BOARD = "qemu-mps3-an547"


def _workload(folder: Path, data_file: str, size: int | None = None) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    sized = f", size: {size}" if size is not None else ""
    path = folder / "w.yaml"
    path.write_text(
        "memplace: workload/v1\nname: w\nconstants:\n"
        f"  - {{name: table, data_file: {data_file}{sized}}}\n"
    )
    return path


def _plan_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    return cli_error(capsys, "plan", BOARD, *argv)


@pytest.mark.parametrize("data_file", ["/etc/passwd", "../../../../../../etc/passwd", "../x.bin"])
def test_a_file_outside_the_workload_folder_is_refused(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, data_file: str
) -> None:
    (tmp_path / "x.bin").write_bytes(b"abc")
    path = _workload(tmp_path / "w", data_file)
    err = _plan_error(capsys, str(path))
    assert "w.yaml:4:30: constants[0].data_file: " in err
    assert err.endswith(
        f"is outside {(tmp_path / 'w').resolve()}: data files come from the workload's own "
        "folder; allow another with --data-root DIR"
    )


def test_data_root_allows_another_folder(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    (tmp_path / "x.bin").write_bytes(b"abc")
    path = _workload(tmp_path / "w", "../x.bin")
    assert main(["plan", BOARD, str(path), "--data-root", str(tmp_path), "--json"]) == 0
    assert '"name": "table"' in capsys.readouterr().out
    assert load_workload(path, data_root=tmp_path).buffer("table").data == b"abc"


def test_a_link_out_of_the_folder_is_outside_too(tmp_path: Path) -> None:
    (tmp_path / "secret").write_bytes(b"key")
    (tmp_path / "w").mkdir()
    os.symlink(tmp_path / "secret", tmp_path / "w" / "table.bin")
    with pytest.raises(InputError, match="is outside"):
        load_workload(_workload(tmp_path / "w", "table.bin"))


@pytest.mark.parametrize("special", ["/dev/zero", "fifo"])
def test_only_regular_files_are_read(tmp_path: Path, special: str) -> None:
    folder = tmp_path / "w"
    folder.mkdir()
    if special == "fifo":
        os.mkfifo(folder / "fifo")  # opening it would wait for a writer
        target = "fifo"
    else:
        os.symlink(special, folder / "zero")
        target = "zero"
    with pytest.raises(InputError, match=r"constants\[0\].data_file: .* is not a regular file"):
        load_workload(_workload(folder, target, size=64), data_root="/")


def test_a_file_longer_than_its_size_is_refused_without_reading_it_all(tmp_path: Path) -> None:
    folder = tmp_path / "w"
    folder.mkdir()
    with (folder / "big.bin").open("wb") as handle:
        handle.truncate(64 * 1024 * 1024)  # sparse: reading it whole would take a while
    with pytest.raises(InputError, match=r"holds more than the constant's size \(16 bytes\)"):
        load_workload(_workload(folder, "big.bin", size=16))
