"""Writing projects: all or nothing, and never over a user's edits unless told to."""

from __future__ import annotations

from pathlib import Path

import pytest

from memplace.errors import InputError
from memplace.project import WRITTEN, Project, write_project


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
