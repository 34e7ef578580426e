"""The Model Library Format path where real archives and TVM's own client broke it: a model
left out by the default project type, the archive's CRT headers in subfolders, a run
function the header declares but the code does not define, and TVM 0.9.dev's archives
whose code has `tvmgen_default_run_model` only."""

from __future__ import annotations

from pathlib import Path

import pytest

from conftest import cli_error, run_cli
from memplace.build import build
from memplace.project_api import Client, RemoteError
from memplace.project_api.handler import make_server
from mlf_archives import EXPECTED, printed_outputs, v5_members, v5_run_model_members, write_archive

BOARD = "qemu-mps3-an547"
DEMO = "aot_standalone_demo"


def test_the_project_api_refuses_an_archive_without_a_project_type(tmp_path: Path) -> None:
    """TVM's templates require project_type; left to memplace's default, the exerciser
    would be built without the model and the run would say nothing of it."""
    archive = write_archive(tmp_path / "model.tar", v5_members())
    api = Client.in_memory(make_server(BOARD))
    with pytest.raises(RemoteError) as caught:
        api.generate_project(archive, tmp_path / "p", {})
    assert caught.value.name == "InputError"
    assert "option project_type: aot_standalone_demo (runs the model)" in str(caught.value)
    assert not (tmp_path / "p").exists()
    api.generate_project(archive, tmp_path / "q", {"project_type": "exerciser"})  # said: fine


def test_the_command_line_runs_an_archives_model_unless_told_otherwise(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    archive = write_archive(tmp_path / "model.tar", v5_members())
    assert run_cli(capsys, "generate", BOARD, archive, "--out", tmp_path / "p")[0] == 0
    assert (tmp_path / "p/src/aot_demo.c").is_file()
    argv = ["generate", BOARD, archive, "--out", tmp_path / "q", "--project-type", "exerciser"]
    assert run_cli(capsys, *argv)[0] == 0
    assert not (tmp_path / "q/src/aot_demo.c").exists()


def test_an_archives_crt_headers_in_subfolders_build_its_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """TVM 0.13's archives hold runtime/include/tvm/runtime/crt/*.h, which its code
    includes: they come into the project with the rest, no --standalone-crt-dir needed."""
    own = tmp_path / "own"
    plain = write_archive(tmp_path / "plain.tar", v5_members())
    assert run_cli(capsys, "generate", BOARD, plain, "--out", own, "--project-type", DEMO)[0] == 0
    members = v5_members()
    for header in ("c_runtime_api.h", "c_backend_api.h"):
        text = (own / "tvm/runtime/include/tvm/runtime" / header).read_text()
        members[f"./runtime/include/tvm/runtime/{header}"] = text
    members["./runtime/include/tvm/runtime/crt/error_codes.h"] = "#define kTvmErrorNoError 0\n"
    lib0 = str(members["./codegen/host/src/default_lib0.c"])
    members["./codegen/host/src/default_lib0.c"] = (
        '#include "tvm/runtime/crt/error_codes.h"\n'
        + lib0.replace(
            "return tvmgen_default___tvm_main__",
            "return kTvmErrorNoError + tvmgen_default___tvm_main__",
        )
    )
    archive = write_archive(tmp_path / "model.tar", members)
    out = tmp_path / "p"
    assert run_cli(capsys, "generate", BOARD, archive, "--out", out, "--project-type", DEMO)[0] == 0
    assert (out / "tvm/runtime/include/tvm/runtime/crt/error_codes.h").is_file()
    build(out)
    assert (out / "build/cpu0.elf").is_file()


def test_a_run_function_declared_but_never_defined_is_refused_at_read_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    members = v5_members()
    lib0 = str(members["./codegen/host/src/default_lib0.c"])
    members["./codegen/host/src/default_lib0.c"] = lib0.replace(
        "tvmgen_default_run(", "tvmgen_default_run_model("
    )
    archive = write_archive(tmp_path / "model.tar", members)
    line = cli_error(capsys, "plan", BOARD, archive)
    assert line == (
        f"memplace: error: MODEL: {archive}: codegen/host/include/tvmgen_default.h declares "
        "tvmgen_default_run, but no C file in codegen/host/src defines it (it defines "
        "tvmgen_default_run_model): the header and the code "
        "come from different builds"
    )


@pytest.mark.qemu
def test_an_archive_with_run_model_only_runs_through_the_run_memplace_defines(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """As gromero/sine_aot's model.tar (TVM 0.9.dev): the header declares tvmgen_default_run,
    the code defines tvmgen_default_run_model(void* input, void* output) only; memplace
    defines the first over the second, as TVM's later archives do themselves."""
    archive = write_archive(tmp_path / "model.tar", v5_run_model_members())
    out = tmp_path / "p"
    code, stdout, err = run_cli(capsys, "check", BOARD, archive, "--out", out)
    assert code == 0, stdout + err
    assert [round(v, 6) for v in printed_outputs(stdout)] == [round(v, 6) for v in EXPECTED]
    backend = (out / "memplace/src/tvm_backend.c").read_text()
    assert "return tvmgen_default_run_model(inputs->x, outputs->y);" in backend
    # Archives with the run function get no second one.
    plain = write_archive(tmp_path / "plain.tar", v5_members())
    assert run_cli(capsys, "generate", BOARD, plain, "--out", tmp_path / "q")[0] == 0
    assert "_run_model" not in (tmp_path / "q/memplace/src/tvm_backend.c").read_text()


def test_a_run_model_of_other_parameters_is_refused_at_read_time(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    members = v5_run_model_members()
    code = str(members["./codegen/host/src/default_lib0.c"])
    members["./codegen/host/src/default_lib0.c"] = code.replace(
        "tvmgen_default_run_model(void* x_buffer_var, void* output_buffer_var)",
        "tvmgen_default_run_model(void* x_buffer_var)",
    )
    archive = write_archive(tmp_path / "model.tar", members)
    assert "(it defines tvmgen_default_run_model)" in cli_error(capsys, "plan", BOARD, archive)
