"""Model Library Format archives as workloads: what `memplace plan` and `memplace
generate` make of one, and every way an archive is refused."""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path
from typing import Any

import pytest

from conftest import cli_error, run_cli
from memplace.board import load_board
from memplace.importers import load_workload
from memplace.project_api import Client
from memplace.project_api.handler import make_server
from mlf_archives import (
    metadata_v5,
    metadata_v7,
    v5_archive,
    v5_members,
    v7_archive,
    v7_members,
    write_archive,
)

BOARD = "qemu-mps3-an547"
DEMO = "aot_standalone_demo"


def _plan(capsys: pytest.CaptureFixture[str], archive: Path) -> dict[str, dict[str, object]]:
    code, out, err = run_cli(capsys, "plan", BOARD, archive, "--json")
    assert code == 0, err
    return {p["name"]: p for p in json.loads(out)["placements"]}


def test_a_version_5_archive_plans_its_tensors_and_a_workspace_arena(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    placements = _plan(capsys, v5_archive(tmp_path / "model.tar"))
    assert set(placements) == {"input_x", "output_y", "tvm_workspace"}
    assert placements["input_x"]["size"] == 16  # (1, 4) float32, from src/relay.txt
    assert placements["output_y"]["size"] == 16  # io_size_bytes less the input
    workspace = placements["tvm_workspace"]
    assert workspace["size"] == 32  # workspace_size_bytes of main
    assert workspace["pool"] == "dtcm_ws"  # the fastest workspace pool: the board's scopes
    assert str(workspace["reason"]).startswith("dynamic: from core cpu0's arena in dtcm_ws")


def test_usmp_pools_named_like_board_pools_are_pinned_to_them(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = v7_archive(
        tmp_path / "model.tar", constant_pool="ddr_const", workspace_pool="sram_ws"
    )
    placements = _plan(capsys, archive)
    assert set(placements) == {"input_x", "output_y", "tvm_sram_ws", "tvm_ddr_const"}
    assert placements["tvm_sram_ws"]["pool"] == "sram_ws"
    assert placements["tvm_sram_ws"]["size"] == 32
    assert placements["tvm_ddr_const"]["pool"] == "ddr_const"
    assert placements["tvm_ddr_const"]["kind"] == "constant"
    assert placements["input_x"]["pool"] == "dtcm_ws"


def test_usmp_pools_of_other_names_follow_the_boards_scopes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    placements = _plan(capsys, v7_archive(tmp_path / "model.tar"))
    assert placements["tvm_workspace_pool"]["pool"] == "dtcm_ws"
    assert placements["tvm_constant_pool"]["pool"] == "itcm_const"
    assert "tvm_workspace" not in placements  # USMP: no TVMBackendAllocWorkspace arena


def test_a_constant_pool_keeps_the_bytes_of_the_c_interface_header(tmp_path: Path) -> None:
    workload = load_workload(v7_archive(tmp_path / "model.tar"), board=load_board(BOARD))
    constant = workload.buffer("tvm_constant_pool")
    assert constant.data == bytes.fromhex("00000040") * 4  # four float32 2.0


def test_generate_writes_the_models_code_headers_and_a_demo_main(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = v5_archive(tmp_path / "model.tar")
    out = tmp_path / "p"
    code, _, err = run_cli(capsys, "generate", BOARD, archive, "--out", out, "--project-type", DEMO)
    assert code == 0, err
    written = {str(p.relative_to(out)) for p in out.rglob("*") if p.is_file()}
    assert {
        "tvm/codegen/host/src/default_lib0.c",
        "tvm/codegen/host/src/default_lib1.c",
        "tvm/codegen/host/include/tvmgen_default.h",
        "tvm/runtime/include/tvm/runtime/c_runtime_api.h",  # memplace's own: no CRT given
        "tvm/runtime/include/tvm/runtime/c_backend_api.h",
        "memplace/src/tvm_backend.c",
        "src/aot_demo.c",
    } <= written
    cmake = (out / "CMakeLists.txt").read_text()
    assert "tvm/codegen/host/src/default_lib1.c" in cmake
    assert "tvm/runtime/include tvm/codegen/host/include" in cmake
    demo = (out / "src/aot_demo.c").read_text()
    assert "tvmgen_default_run(&inputs, &outputs);" in demo
    assert ".x = TVM_DEFAULT_INPUT_X_PTR," in demo
    backend = (out / "memplace/src/tvm_backend.c").read_text()
    assert 'tvm_default_arena("global.workspace")' in backend
    assert (out / "model.tar").read_bytes() == archive.read_bytes()  # as TVM's templates keep it


def test_the_archives_own_runtime_headers_and_a_given_crt_are_used(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    members = v5_members()
    members["./runtime/include/tvm/runtime/c_runtime_api.h"] = "/* the archive's */\n"
    members["./runtime/include/tvm/runtime/c_backend_api.h"] = "/* the archive's */\n"
    members["./runtime/include/dlpack/dlpack.h"] = "/* dlpack */\n"
    archive = write_archive(tmp_path / "model.tar", members)
    out = tmp_path / "p"
    assert run_cli(capsys, "generate", BOARD, archive, "--out", out, "--project-type", DEMO)[0] == 0
    assert (out / "tvm/runtime/include/tvm/runtime/c_runtime_api.h").read_text() == (
        "/* the archive's */\n"
    )
    assert (out / "tvm/runtime/include/dlpack/dlpack.h").is_file()

    crt = tmp_path / "standalone_crt"
    (crt / "include/tvm/runtime").mkdir(parents=True)
    (crt / "include/tvm/runtime/c_backend_api.h").write_text("/* CRT */\n")
    other = tmp_path / "q"
    argv = ["generate", BOARD, archive, "--out", other, "--project-type", DEMO]
    assert run_cli(capsys, *argv, "--standalone-crt-dir", crt)[0] == 0
    assert not (other / "tvm/runtime").exists()
    assert (
        "../standalone_crt/include tvm/codegen/host/include"
        in (other / "CMakeLists.txt").read_text()
    )


def test_the_project_api_generates_a_project_from_an_archive(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    api = Client.in_memory(make_server(BOARD))
    archive = v7_archive(tmp_path / "model.tar", workspace_pool="sram_ws")
    reply = api.generate_project(archive, "p", {"project_type": DEMO})
    placements = {p["name"]: p for p in reply["plan"]["placements"]}
    assert placements["tvm_sram_ws"]["pool"] == "sram_ws"
    assert (tmp_path / "p/src/aot_demo.c").is_file()


# Refusals: one line, exit code 2, nothing written.


def _refused(capsys: pytest.CaptureFixture[str], archive: Path, tmp_path: Path) -> str:
    out = tmp_path / "never"
    line = cli_error(capsys, "generate", BOARD, archive, "--out", out, "--project-type", DEMO)
    assert not out.exists()
    return line


def _tar(path: Path, *members: tarfile.TarInfo, data: bytes = b"") -> Path:
    with tarfile.open(path, "w") as archive:
        for member in members:
            archive.addfile(member, io.BytesIO(data) if member.isfile() else None)
    return path


def test_a_missing_archive_is_named(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    line = _refused(capsys, tmp_path / "absent.tar", tmp_path)
    assert line.endswith(f"MODEL: no Model Library Format archive at {tmp_path / 'absent.tar'}")


def test_a_file_that_is_no_tar_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "model.tar"
    path.write_bytes(b"PK\x03\x04 a zip, not a tar" * 40)
    line = _refused(capsys, path, tmp_path)
    assert line.endswith(
        f"{path} is not a Model Library Format archive (a tar file, plain or compressed)"
    )


def test_an_archive_without_metadata_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    members = v5_members()
    del members["./metadata.json"]
    archive = write_archive(tmp_path / "model.tar", members)
    assert "no metadata.json: not a Model Library Format archive" in _refused(
        capsys, archive, tmp_path
    )


@pytest.mark.parametrize("version", [4, 8, "7"])
def test_an_unsupported_metadata_version_is_refused(
    version: object, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    members = v5_members()
    members["./metadata.json"] = json.dumps({**metadata_v5(), "version": version})
    archive = write_archive(tmp_path / "model.tar", members)
    line = _refused(capsys, archive, tmp_path)
    assert f"metadata version {version!r} is not one memplace reads (5, 6, 7" in line


def test_an_archive_without_c_code_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    members = {k: v for k, v in v5_members().items() if "/src/default_lib" not in k}
    members["./codegen/host/lib/default_lib0.o"] = b"\x7fELF\x01\x01\x01\xff\xfe"
    archive = write_archive(tmp_path / "model.tar", members)
    line = _refused(capsys, archive, tmp_path)
    assert "no C code in codegen/host/src (it holds object files from TVM's llvm target" in line


def test_malformed_metadata_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    members = v5_members()
    members["./metadata.json"] = "{not json"
    assert "metadata.json is not JSON" in _refused(
        capsys, write_archive(tmp_path / "a.tar", members), tmp_path
    )
    members["./metadata.json"] = json.dumps({**metadata_v5(), "executors": ["graph"]})
    assert "built for the graph executor" in _refused(
        capsys, write_archive(tmp_path / "b.tar", members), tmp_path
    )
    members["./metadata.json"] = json.dumps({**metadata_v5(), "memory": {}})
    assert "no memory.functions.main entry" in _refused(
        capsys, write_archive(tmp_path / "c.tar", members), tmp_path
    )


@pytest.mark.parametrize("name", ["../escape.c", "/etc/model.c", "./codegen/../../up.c"])
def test_members_that_would_land_outside_the_archive_are_refused(
    name: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    info = tarfile.TarInfo(name)
    info.size = 1
    archive = _tar(tmp_path / "model.tar", info, data=b"x")
    line = _refused(capsys, archive, tmp_path)
    assert f"member {name!r} would be unpacked outside the archive's folder" in line


def test_links_in_an_archive_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    link = tarfile.TarInfo("./metadata.json")
    link.type = tarfile.SYMTYPE
    link.linkname = "/etc/passwd"
    line = _refused(capsys, _tar(tmp_path / "model.tar", link), tmp_path)
    assert "member './metadata.json' is a link or a device" in line


def test_the_demo_needs_an_archive_and_its_c_interface(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], write_yaml: object
) -> None:
    workload = tmp_path / "w.yaml"
    workload.write_text(
        "memplace: workload/v1\nname: w\nbuffers:\n  - {name: a, size: 64, live: 0}\n"
    )
    line = _refused(capsys, workload, tmp_path)
    assert "project type aot_standalone_demo runs a TVM model" in line

    members = {k: v for k, v in v5_members().items() if not k.endswith(".h")}
    members["./metadata.json"] = json.dumps(
        {
            **metadata_v5(),
            "memory": {
                "functions": {
                    "main": [
                        {
                            "device": 1,
                            "io_size_bytes": 32,
                            "workspace_size_bytes": 32,
                            "inputs": {"x": {"size": 16, "dtype": "float32"}},
                            "outputs": {"y": {"size": 16, "dtype": "float32"}},
                        }
                    ]
                }
            },
        }
    )
    line = _refused(capsys, write_archive(tmp_path / "packed.tar", members), tmp_path)
    assert "no codegen/host/include/tvmgen_default.h (build with Executor('aot'" in line


def test_a_standalone_crt_folder_without_its_headers_is_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = v5_archive(tmp_path / "model.tar")
    out = tmp_path / "never"
    line = cli_error(
        capsys, "generate", BOARD, archive, "--out", out, "--project-type", DEMO,
        "--standalone-crt-dir", tmp_path,
    )  # fmt: skip
    assert f"standalone_crt_dir: no TVM standalone CRT at {tmp_path}" in line
    assert not out.exists()


def test_a_version_6_archive_reads_like_version_7(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    members = v7_members()
    members["./metadata.json"] = json.dumps(metadata_v7(version=6))
    placements = _plan(capsys, write_archive(tmp_path / "model.tar", members))
    assert placements["input_x"]["size"] == 16
    assert placements["tvm_workspace_pool"]["size"] == 32


def test_archives_memplace_cannot_run_are_refused(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    members = v7_members()
    two = metadata_v7()
    two["modules"]["second"] = two["modules"]["default"]
    members["./metadata.json"] = json.dumps(two)
    line = _refused(capsys, write_archive(tmp_path / "a.tar", members), tmp_path)
    assert "the archive holds 2 models (default, second); memplace reads archives of one" in line

    members = v7_members()
    header = str(members["./codegen/host/include/tvmgen_default.h"])
    members["./codegen/host/include/tvmgen_default.h"] = header.replace(
        "#define TVMGEN_DEFAULT_WORKSPACE_POOL_WORKSPACE_POOL_SIZE 32", ""
    )
    line = _refused(capsys, write_archive(tmp_path / "b.tar", members), tmp_path)
    assert "the C interface header gives no size for pool workspace_pool" in line

    members["./codegen/host/include/tvmgen_default.h"] = header.replace(
        "  struct tvmgen_default_inputs* inputs,\n  struct tvmgen_default_outputs* outputs,\n", ""
    )
    line = _refused(capsys, write_archive(tmp_path / "c.tar", members), tmp_path)
    assert "keeps its inputs and outputs inside its workspace pools" in line

    members["./codegen/host/include/tvmgen_default.h"] = header.replace(
        "struct tvmgen_default_workspace_pools* workspace_pools\n",
        "struct tvmgen_default_workspace_pools* workspace_pools,\n"
        "  struct tvmgen_default_devices* devices\n",
    )
    line = _refused(capsys, write_archive(tmp_path / "d.tar", members), tmp_path)
    assert "tvmgen_default_run takes devices; memplace runs models" in line


def test_generating_twice_gives_the_same_bytes(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = v7_archive(tmp_path / "model.tar", workspace_pool="sram_ws")
    trees = []
    for out in (tmp_path / "a", tmp_path / "b"):
        argv = ["generate", BOARD, archive, "--out", out, "--project-type", DEMO]
        assert run_cli(capsys, *argv)[0] == 0
        trees.append(
            {str(p.relative_to(out)): p.read_bytes() for p in out.rglob("*") if p.is_file()}
        )
    assert trees[0] == trees[1]


def test_code_that_never_asks_for_workspace_gets_no_arena(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """USMP with TVM's internal pool: the code keeps its workspace in a static array of
    its own, so the declared workspace_size_bytes needs no arena."""
    members = v5_members()
    lib1 = str(members["./codegen/host/src/default_lib1.c"])
    lib1 = lib1.replace(
        "#include <math.h>\n",
        "#include <math.h>\nstatic uint8_t global_workspace[32] __attribute__((aligned(16)));\n",
    )
    lib1 = lib1.replace(
        "TVMBackendAllocWorkspace(1, 0, (uint64_t)16, 2, 32)", "&global_workspace[16]"
    )
    lib1 = lib1.replace(
        "TVMBackendAllocWorkspace(1, 0, (uint64_t)16, 0, 8)", "&global_workspace[0]"
    )
    lib1 = lib1.replace("TVMBackendFreeWorkspace(1, 0, scaled) != 0", "0")
    lib1 = lib1.replace("TVMBackendFreeWorkspace(1, 0, sid_1) != 0", "0")
    assert "TVMBackend" not in lib1
    members["./codegen/host/src/default_lib1.c"] = lib1
    archive = write_archive(tmp_path / "model.tar", members)
    assert set(_plan(capsys, archive)) == {"input_x", "output_y"}
    out = tmp_path / "p"
    assert run_cli(capsys, "generate", BOARD, archive, "--out", out, "--project-type", DEMO)[0] == 0
    backend = (out / "memplace/src/tvm_backend.c").read_text()
    assert "never asks for workspace at run time" in backend


def test_an_unpacked_archive_reads_like_the_archive(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = v5_archive(tmp_path / "model.tar")
    folder = tmp_path / "model"
    with tarfile.open(archive) as opened:
        opened.extractall(folder, filter="data")
    assert _plan(capsys, folder) == _plan(capsys, archive)

    (folder / "src/relay.txt").unlink()
    (folder / "src/relay.txt").symlink_to("/etc/hostname")
    line = _refused(capsys, folder, tmp_path)
    assert f"{folder}: src/relay.txt is a link or not a regular file" in line


def _paths(data: Any, at: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    """Every key path of a JSON object, nested objects included (not into lists)."""
    found = []
    if isinstance(data, dict):
        for key, value in data.items():
            found += [(*at, key), *_paths(value, (*at, key))]
    return found


def _replaced(data: dict[str, Any], path: tuple[str, ...], value: Any) -> dict[str, Any]:
    copy = json.loads(json.dumps(data))
    inner = copy
    for key in path[:-1]:
        inner = inner[key]
    inner[path[-1]] = value
    return copy


@pytest.mark.parametrize("version", [5, 7])
def test_metadata_of_any_wrong_shape_is_refused_in_one_line(
    version: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Each value of metadata.json replaced by a number, a string and null in turn: the
    archive plans, or is refused in one line (exit 2), never with a traceback."""
    members = v5_members() if version == 5 else v7_members()
    metadata = metadata_v5() if version == 5 else metadata_v7()
    for index, path in enumerate(_paths(metadata)):
        for value in (3, "x", None):
            members["./metadata.json"] = json.dumps(_replaced(metadata, path, value))
            archive = write_archive(tmp_path / f"{index}-{value}.tar", members)
            code, _, err = run_cli(capsys, "plan", BOARD, archive)
            assert code in (0, 2), (path, value, err)
            assert "Traceback" not in err and len(err.strip().splitlines()) <= 1, (path, err)
