"""Writing projects: all or nothing, and never over a user's edits unless told to."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from memplace import project
from memplace.cli import main
from memplace.errors import InputError
from memplace.project import LOCK, SCRATCH, WRITTEN, Project, write_project
from memplace.resources import demo_workload


def test_writes_every_file(tmp_path: Path) -> None:
    out = tmp_path / "proj"
    write_project({"a.txt": "A\n", "sub/b.txt": "B\n"}, out)
    assert (out / "a.txt").read_text() == "A\n"
    assert (out / "sub/b.txt").read_text() == "B\n"
    assert (out / WRITTEN).is_file()
    assert [p.name for p in tmp_path.iterdir()] == ["proj"]  # no scratch left behind


def test_rewriting_unchanged_files_is_fine(tmp_path: Path) -> None:
    out = tmp_path / "proj"
    write_project({"a.txt": "A\n"}, out)
    write_project({"a.txt": "A2\n"}, out)
    assert (out / "a.txt").read_text() == "A2\n"


def test_refuses_to_overwrite_an_edited_file(tmp_path: Path) -> None:
    out = tmp_path / "proj"
    write_project({"a.txt": "A\n", "b.txt": "B\n"}, out)
    (out / "a.txt").write_text("mine\n")
    with pytest.raises(
        InputError,
        match=r"a.txt was changed since memplace wrote it; pass "
        r"--force",
    ):
        write_project({"a.txt": "A2\n", "b.txt": "B2\n"}, out)
    # Nothing was half-written.
    assert (out / "a.txt").read_text() == "mine\n"
    assert (out / "b.txt").read_text() == "B\n"
    write_project({"a.txt": "A2\n", "b.txt": "B2\n"}, out, force=True)
    assert (out / "a.txt").read_text() == "A2\n"


def test_refuses_a_foreign_file_in_the_way(tmp_path: Path) -> None:
    out = tmp_path / "proj"
    out.mkdir()
    (out / "CMakeLists.txt").write_text("project(mine)\n")
    with pytest.raises(InputError, match=r"CMakeLists\.txt was changed"):
        write_project({"CMakeLists.txt": "generated\n"}, out)


def test_failed_write_leaves_no_project(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "proj"

    def broken(self: Path, text: str, encoding: str | None = None) -> int:
        if self.name == "b.txt":
            raise OSError(28, "No space left on device")
        return Path.write_bytes(self, text.encode())

    monkeypatch.setattr(Path, "write_text", broken)
    with pytest.raises(OSError):
        write_project({"a.txt": "A\n", "b.txt": "B\n"}, out)
    assert not out.exists()
    assert list(tmp_path.iterdir()) == []


def test_loading_a_folder_without_a_project(tmp_path: Path) -> None:
    with pytest.raises(InputError, match="no memplace project here"):
        Project.load(tmp_path)
    (tmp_path / "memplace.json").write_text("{not json")
    with pytest.raises(InputError, match="is not valid JSON"):
        Project.load(tmp_path)
    (tmp_path / "memplace.json").write_text('{"memplace": "project/v0"}')
    with pytest.raises(InputError, match="is not a project/v1 manifest"):
        Project.load(tmp_path)


def test_files_a_previous_workload_left_are_removed(tmp_path: Path) -> None:
    out = tmp_path / "proj"
    write_project({"a.txt": "A\n", "old.h": "old\n"}, out)
    write_project({"a.txt": "A\n", "new.h": "new\n"}, out)
    assert sorted(p.name for p in out.iterdir() if not p.name.startswith(".")) == [
        "a.txt",
        "new.h",
    ]


def test_an_edited_file_of_a_previous_workload_is_kept_and_refused(tmp_path: Path) -> None:
    out = tmp_path / "proj"
    write_project({"a.txt": "A\n", "old.h": "old\n"}, out)
    (out / "old.h").write_text("my notes\n")
    with pytest.raises(InputError, match=r"old\.h was changed since memplace wrote it"):
        write_project({"a.txt": "A\n"}, out)
    assert (out / "old.h").read_text() == "my notes\n"
    write_project({"a.txt": "A\n"}, out, force=True)
    assert not (out / "old.h").exists()


def test_a_write_killed_while_moving_files_leaves_a_folder_the_next_accepts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    out = tmp_path / "proj"
    write_project({"a.txt": "A\n", "b.txt": "B\n"}, out)
    real_replace = os.replace
    moved: list[str] = []

    def dies_after_one_file(source: Any, target: Any) -> None:
        if Path(target).name in ("a.txt", "b.txt"):
            if moved:
                raise KeyboardInterrupt  # stands for SIGKILL: nothing after it runs
            moved.append(Path(target).name)
        real_replace(source, target)

    monkeypatch.setattr(os, "replace", dies_after_one_file)
    with pytest.raises(KeyboardInterrupt):
        write_project({"a.txt": "A2\n", "b.txt": "B2\n"}, out)
    monkeypatch.undo()
    assert (out / "a.txt").read_text() == "A2\n" and (out / "b.txt").read_text() == "B\n"
    # Both the old and the new bytes are memplace's: the same write, or the old, goes on.
    write_project({"a.txt": "A2\n", "b.txt": "B2\n"}, out)
    assert (out / "b.txt").read_text() == "B2\n"
    record = json.loads((out / WRITTEN).read_text())
    assert all(isinstance(digest, str) for digest in record.values())


def test_scratch_folders_of_killed_writes_are_removed(tmp_path: Path) -> None:
    out = tmp_path / "proj"
    leftover = tmp_path / f".proj.{SCRATCH}x1y2"
    (leftover / "sub").mkdir(parents=True)
    other = tmp_path / f".proj2.{SCRATCH}x1y2"  # another project's: not ours to remove
    other.mkdir()
    write_project({"a.txt": "A\n"}, out)
    assert sorted(p.name for p in tmp_path.iterdir()) == [other.name, "proj"]


HOLD = """
import sys
from pathlib import Path
from memplace.project import locked
with locked(Path(sys.argv[1])):
    print("held", flush=True)
    sys.stdin.readline()
"""


def _holder(folder: Path) -> subprocess.Popen[str]:
    """Another process holding `folder`, until a line comes on its standard input."""
    holder = subprocess.Popen(
        [sys.executable, "-c", HOLD, str(folder)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    assert holder.stdout is not None and holder.stdout.readline() == "held\n"
    return holder


def test_a_folder_in_use_is_waited_for_then_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "proj"
    out.mkdir()
    monkeypatch.setattr(project, "LOCK_WAIT", 0.5)
    holder = _holder(out)
    try:
        code = main(["generate", "qemu-mps3-an547", str(demo_workload()), "--out", str(out)])
    finally:
        holder.kill()
        holder.wait()
    assert code == 3
    err = capsys.readouterr().err.strip()
    assert err == (
        f"memplace: error: {out} is in use by another memplace command (waited 0.5 s); "
        "run this one when it is done"
    )
    assert sorted(p.name for p in out.iterdir()) == [LOCK]


def test_a_folder_freed_while_waiting_is_taken(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    out = tmp_path / "proj"
    out.mkdir()
    holder = _holder(out)
    assert holder.stdin is not None
    waits: list[float] = []

    def free_it(seconds: float) -> None:
        # The command found the folder held and waits: the holder lets go now.
        waits.append(seconds)
        if holder.poll() is None:
            holder.communicate("done\n")

    monkeypatch.setattr(project, "time", SimpleNamespace(monotonic=time.monotonic, sleep=free_it))
    try:
        code = main(["generate", "qemu-mps3-an547", str(demo_workload()), "--out", str(out)])
    finally:
        holder.kill()
        holder.wait()
    assert waits, "the command never waited"
    assert code == 0
    assert (out / "memplace.json").is_file()
