"""The importer registry: one record per importer, found in `memplace.importers`; the CLI's
help and the docs' table list the same records, and an importer registered from outside
(here, one for a suffix memplace does not know) is read by `memplace plan` like the others.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from memplace.board import Board, load_board
from memplace.cli import main
from memplace.errors import InputError
from memplace.importers import Importer, importer_for, importers, load_workload, register
from memplace.workload import Workload, WorkloadBuilder

REPO = Path(__file__).resolve().parent.parent
BOARD = "qemu-mps3-an547"


def test_each_importer_module_declares_its_record() -> None:
    assert list(importers()) == ["mlf", "relax", "tflite", "workload"]
    assert importer_for(Path("m.tflite")).name == "tflite"
    assert importer_for(Path("m.TAR.GZ")).name == "mlf"
    assert importer_for(Path("w.yaml")).name == "workload"
    assert importer_for(Path("w.anything")).name == "workload"  # read as a workload file
    assert importer_for(Path("m.tflite"), frontend="tvm").name == "relax"


def test_a_frontend_that_is_not_there() -> None:
    with pytest.raises(InputError, match=r"^--frontend: no frontend 'onnx'; choose from tvm$"):
        importer_for(Path("m.onnx"), frontend="onnx")


def _docs_rows() -> dict[str, list[str]]:
    text = (REPO / "docs" / "workloads.md").read_text(encoding="utf-8")
    table = text.split("<!-- importers:")[1].split("<!-- end of importers -->")[0]
    rows = [line for line in table.splitlines() if line.startswith("| `")]
    cells = [[cell.strip() for cell in row.strip("|").split("|")] for row in rows]
    return {cell[0].strip("`"): cell for cell in cells}


def test_the_docs_table_lists_every_importer() -> None:
    rows = _docs_rows()
    assert sorted(rows) == sorted(importers())
    for name, importer in importers().items():
        _, reads, suffixes, chosen_by, project = rows[name]
        assert reads.startswith(importer.describes), name
        assert suffixes.split() == [f"`{suffix}`" for suffix in importer.suffixes], name
        assert project == f"`{importer.project_type}`", name
        if importer.frontend is not None:
            assert chosen_by == f"`--frontend {importer.frontend}`", name


def test_the_cli_help_lists_every_importer(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["plan", "--help"])
    help_text = " ".join(capsys.readouterr().out.split())
    for importer in importers().values():
        assert " ".join(importer.formats.split()) in help_text


# -- an importer from outside: a suffix memplace does not know ------------------------------


class StepList:
    """What the throwaway importer reads: one `name size first last` line per buffer."""

    def __init__(self, lines: list[str]) -> None:
        self.lines = lines


def read_steps(path: Path, board: Board | None, data_root: Path | None) -> Workload:
    lines = path.read_text(encoding="utf-8").split("\n")
    origin = StepList([line for line in lines if line.strip()])
    builder = WorkloadBuilder(path.stem, 3, source=str(path), origin=origin)
    for line in origin.lines:
        name, size, first, last = line.split()
        builder.buffer(name, int(size), (int(first), int(last)))
    return builder.build()


STEPS = Importer(
    name="steplist", suffixes=(".steps",), describes="a list of steps", read=read_steps
)


def test_an_importer_registered_from_outside_is_read_by_plan(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "tiny.steps"
    path.write_text("a 4096 0 1\nb 2048 1 2\nc 1024 2 2\n", encoding="utf-8")
    with register(STEPS):
        assert main(["plan", BOARD, str(path), "--json"]) == 0
        out = capsys.readouterr().out
        workload = load_workload(path, board=load_board(BOARD))
        with pytest.raises(SystemExit):
            main(["plan", "--help"])
        assert "a list of steps (.steps)" in " ".join(capsys.readouterr().out.split())
    placed = {p["name"]: p["size"] for p in json.loads(out)["placements"]}
    assert placed == {"a": 4096, "b": 2048, "c": 1024}
    assert isinstance(workload.origin, StepList)
    assert workload.origin.lines[0] == "a 4096 0 1"
    assert "steplist" not in importers()  # the registration ends with its block
    # Without it, the file is read as a workload file, and refused as one.
    assert main(["plan", BOARD, str(path)]) == 2
    assert re.search(r"tiny\.steps.*a workload file is a mapping", capsys.readouterr().err)


def test_a_name_registered_twice_is_refused() -> None:
    twice = Importer("tflite", (".x",), "x", read_steps)
    with (
        pytest.raises(ValueError, match="an importer named 'tflite' is registered already"),
        register(twice),
    ):
        pass


def test_the_workload_carries_what_it_was_read_from(tmp_path: Path) -> None:
    from memplace.importers.tflite import Model

    model = REPO.parent / "shared" / "models" / "mlperf-tiny" / "kws_ref_model.tflite"
    if not model.is_file():
        pytest.skip(f"no {model}")
    workload = load_workload(model)
    assert isinstance(workload.origin, Model)
    assert workload.origin.graph is not None and workload.origin.graph.source == str(model)
    example = REPO / "examples" / "demo" / "workload.yaml"
    assert load_workload(example).origin is None


# -- nothing reads the file again -----------------------------------------------------------

KWS = REPO.parent / "shared" / "models" / "mlperf-tiny" / "kws_ref_model.tflite"


def test_generate_reads_the_model_off_the_workload_not_its_file(tmp_path: Path) -> None:
    """The file a workload came from is gone by the time the project is written: the
    project still gets the model's TFLite Micro arena, and an archive's project its bytes."""
    from memplace.workflow import ProjectRequest, generate
    from mlf_archives import v5_archive

    if not KWS.is_file():
        pytest.skip(f"no {KWS}")
    board = load_board(BOARD)
    model = tmp_path / "kws.tflite"
    model.write_bytes(KWS.read_bytes())
    workload = load_workload(model, board=board)
    model.unlink()
    generate(ProjectRequest(board, workload, tmp_path / "kws"))
    header = (tmp_path / "kws" / "memplace" / "include" / "kws_memplace.h").read_text()
    assert "#define KWS_TFLM_ARENA_SIZE 22784u" in header  # `memplace tflm`'s figure

    archive = v5_archive(tmp_path / "model.tar")
    data = archive.read_bytes()
    workload = load_workload(archive, board=board)
    archive.unlink()
    generate(ProjectRequest(board, workload, tmp_path / "mlf", "aot_standalone_demo"))
    assert (tmp_path / "mlf" / "model.tar").read_bytes() == data


def test_a_relax_model_read_from_a_tflite_file_gets_no_tflite_micro_arena(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Its project runs TVM's kernels: TFLite Micro's arena would be a figure for nothing."""
    pytest.importorskip("tvm")
    if not KWS.is_file():
        pytest.skip(f"no {KWS}")
    out = tmp_path / "relax"
    assert main(["generate", BOARD, str(KWS), "--frontend", "tvm", "--out", str(out)]) == 0
    header = (out / "memplace" / "include" / "kws_ref_model_memplace.h").read_text()
    assert "TFLM_ARENA" not in header
