"""The Python API: docs/python-api.md runs as written, and a workload built in code is
checked by the same rules, and comes out the same, as one read from a file."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

import memplace
from memplace.board import Board
from memplace.errors import InputError
from memplace.importers import load_workload
from memplace.workload import Workload, WorkloadBuilder

DOC = Path(__file__).resolve().parent.parent / "docs" / "python-api.md"


def _python_blocks(text: str) -> list[str]:
    return re.findall(r"^```python\n(.*?)^```$", text, flags=re.S | re.M)


def test_the_documented_example_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    blocks = _python_blocks(DOC.read_text())
    assert len(blocks) >= 4
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": "python_api_doc"}
    for block in blocks:
        exec(compile(block, str(DOC), "exec"), namespace)
    out = capsys.readouterr().out
    assert "act1     dtcm_ws    @" in out
    assert "huge: scope global.sram_ws" in out
    assert not list(tmp_path.iterdir()), "the API wrote files"


def test_built_equals_loaded(tmp_path: Path) -> None:
    (tmp_path / "w.bin").write_bytes(b"\x01\x02\x03")
    path = tmp_path / "w.yaml"
    path.write_text(
        "memplace: workload/v1\nname: w\nsteps: [a, b]\nbuffers:\n"
        "  - {name: x, size: 1K, live: [a, b], users: [main, npu0], pools: [sram_ws]}\n"
        "  - {name: y, size: 64, live: 1, scope: local, align: 8, dynamic: false}\n"
        "  - {name: z, size: 64, live: 0, dynamic: true}\n"
        "constants:\n  - {name: c, data_file: w.bin}\n  - {name: d, size: 32}\n"
    )
    built = (
        WorkloadBuilder("w", steps=["a", "b"], base_dir=tmp_path)
        .buffer("x", "1K", ("a", "b"), users=["main", "npu0"], pools=("sram_ws",))
        .buffer("y", 64, 1, scope="local", align=8)
        .buffer("z", 64, 0, dynamic=True)
        .constant("c", data_file="w.bin")
        .constant("d", size=32)
        .build()
    )
    loaded = load_workload(path)
    assert (built.name, built.steps, built.buffers) == (loaded.name, loaded.steps, loaded.buffers)
    assert built.source == "<python>"


def test_constant_bytes_from_code(board: Board) -> None:
    workload = WorkloadBuilder("w").constant("c", data=bytearray(b"abc")).build()
    assert workload.buffer("c").data == b"abc"
    assert workload.steps == ("0",)
    placement = memplace.plan(board, workload).placement("c")
    assert placement.contents == b"abc"


def test_steps_as_a_count_and_by_default() -> None:
    assert WorkloadBuilder("w", steps=3).buffer("a", 8, 0).build().steps == ("0", "1", "2")
    assert WorkloadBuilder("w").buffer("a", 8, (0, 4)).build().steps == tuple("01234")


def _error(builder: WorkloadBuilder) -> str:
    with pytest.raises(InputError) as caught:
        builder.build()
    return str(caught.value)


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: WorkloadBuilder("w"), "a workload needs at least one buffer or constant"),
        (lambda: WorkloadBuilder("1w").buffer("a", 8, 0), "name: '1w' is not a C identifier"),
        (lambda: WorkloadBuilder("w").buffer("a-b", 8, 0), "is not a C identifier"),
        (lambda: WorkloadBuilder("w").buffer("a", 0, 0), "a.size: a size must be positive"),
        (lambda: WorkloadBuilder("w").buffer("a", "lots", 0), "a.size: expected a size"),
        (lambda: WorkloadBuilder("w").buffer("a", 8, 0, align=3), "a.align: align must be a"),
        (
            lambda: WorkloadBuilder("w", steps=["p", "q"]).buffer("a", 8, ("p", "r")),
            "a.live[1]: no step 'r'; valid: p, q",
        ),
        (
            lambda: WorkloadBuilder("w").buffer("a", 8, (3, 1)),
            "a.live: the last step comes before the first (1 < 3)",
        ),
        (
            lambda: WorkloadBuilder("w").buffer("a", 8, (0, 1, 2)),
            "a.live: live is [first, last], two steps",
        ),
        (
            lambda: WorkloadBuilder("w").buffer("a", 8, 0).buffer("a", 8, 0),
            "a.name: name used twice in the workload",
        ),
        (lambda: WorkloadBuilder("w").buffer("a", 8, 0, users=[]), "a.users: users lists at"),
        (lambda: WorkloadBuilder("w").buffer("a", 8, 0, scope=""), "a.scope: a scope is not"),
        (lambda: WorkloadBuilder("w").constant("c"), "c: a constant needs a size or a data_file"),
        (lambda: WorkloadBuilder("w").constant("c", data=b""), "c.data: data is empty"),
        (
            lambda: WorkloadBuilder("w").constant("c", data="abc"),  # type: ignore[arg-type]
            "c.data: data is bytes, got str",
        ),
        (
            lambda: WorkloadBuilder("w").constant("c", data=b"a", data_file="x.bin"),
            "c.data: give data or data_file, not both",
        ),
        (
            lambda: WorkloadBuilder("w").constant("c", data=b"abc", size=4),
            "c.size: the constant's data holds 3 bytes",
        ),
        (
            lambda: WorkloadBuilder("w").constant("c", data_file="none.bin"),
            "c.data_file: cannot read",
        ),
    ],
)
def test_builder_errors_name_the_buffer(
    make: object, message: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert callable(make)
    text = _error(make())
    assert text.startswith(message) or message in text, text
    assert "<python>" not in text


def test_a_built_workload_is_frozen() -> None:
    workload = WorkloadBuilder("w").buffer("a", 8, 0).build()
    assert isinstance(workload, Workload)
    with pytest.raises(AttributeError):
        workload.buffer("a").size = 9  # type: ignore[misc]
