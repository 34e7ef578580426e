"""Unpacking archives into a project: nothing may land outside it."""

from __future__ import annotations

import io
import tarfile
from pathlib import Path

import pytest

from memplace.errors import InputError
from memplace.project_api.archive import unpack_archive


def _archive(path: Path, *members: tarfile.TarInfo | tuple[str, bytes]) -> Path:
    with tarfile.open(path, "w") as tar:
        for member in members:
            if isinstance(member, tarfile.TarInfo):
                tar.addfile(member)
                continue
            name, data = member
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return path


def _special(name: str, kind: bytes, link: str = "") -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.type = kind
    info.linkname = link
    return info


def test_files_and_folders_are_unpacked(tmp_path: Path) -> None:
    folder = tarfile.TarInfo("docs")
    folder.type = tarfile.DIRTYPE
    archive = _archive(tmp_path / "a.tar", folder, ("docs/a.txt", b"A"), ("src/b/c.c", b"int x;"))
    into = tmp_path / "project"
    into.mkdir()
    written = unpack_archive(archive, into)
    assert written == [(into / "docs/a.txt").resolve(), (into / "src/b/c.c").resolve()]
    assert (into / "src/b/c.c").read_bytes() == b"int x;"


@pytest.mark.parametrize(
    ("member", "message"),
    [
        (("/etc/evil", b"x"), "member '/etc/evil' is an absolute path"),
        (("../evil", b"x"), "member '../evil' would land outside"),
        (("src/../../evil", b"x"), "member 'src/../../evil' would land outside"),
        (_special("link", tarfile.SYMTYPE, "/etc/passwd"), "member 'link' is a link"),
        (_special("inside", tarfile.SYMTYPE, "docs"), "member 'inside' is a link"),
        (_special("hard", tarfile.LNKTYPE, "../../x"), "member 'hard' is a link"),
        (_special("fifo", tarfile.FIFOTYPE), "member 'fifo' is not a file or folder"),
        (_special("dev", tarfile.CHRTYPE), "member 'dev' is not a file or folder"),
    ],
)
def test_members_that_could_escape_are_refused_before_anything_is_written(
    tmp_path: Path, member: tarfile.TarInfo | tuple[str, bytes], message: str
) -> None:
    archive = _archive(tmp_path / "a.tar", ("first.txt", b"1"), member)
    into = tmp_path / "project"
    into.mkdir()
    with pytest.raises(InputError, match=message) as caught:
        unpack_archive(archive, into)
    assert caught.value.key == "extra_files_tar"
    assert list(into.iterdir()) == []
    assert not (tmp_path / "evil").exists()


def test_a_member_may_not_replace_a_file(tmp_path: Path) -> None:
    into = tmp_path / "project"
    into.mkdir()
    (into / "CMakeLists.txt").write_text("mine")
    archive = _archive(tmp_path / "a.tar", ("CMakeLists.txt", b"theirs"))
    with pytest.raises(InputError, match=r"member 'CMakeLists\.txt' would replace"):
        unpack_archive(archive, into)
    assert (into / "CMakeLists.txt").read_text() == "mine"


def test_what_is_not_an_archive_is_an_input_error(tmp_path: Path) -> None:
    (tmp_path / "a.tar").write_bytes(b"this is not a tar file at all" * 40)
    with pytest.raises(InputError, match=r"cannot unpack .*a\.tar"):
        unpack_archive(tmp_path / "a.tar", tmp_path)
    with pytest.raises(InputError, match=r"cannot unpack .*missing\.tar"):
        unpack_archive(tmp_path / "missing.tar", tmp_path)
