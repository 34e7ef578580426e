"""One contract of names between the generator and the verifier: a section or symbol name
changed in `memplace.contract` alone changes it in the C, the linker scripts, the image
map and the checks at once, and a project still generates, builds, runs and verifies."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
import yaml

from conftest import AN521_COPIED_CPU1, AN521_SHARED_DATA, has_toolchain, run_cli
from memplace import contract
from memplace.board import load_board
from memplace.codegen import render
from memplace.planner import plan
from memplace.project_files import BUILD_DIR
from memplace.verify.image import Image
from memplace.workload import Workload

REPO = Path(__file__).resolve().parent.parent
DEMO = REPO / "examples" / "demo" / "workload.yaml"

DUO = """\
memplace: workload/v1
name: duo
steps: [s0, s1, s2]
buffers:
  - {name: a, size: 4K, live: [s0, s1], users: [main]}
  - {name: b, size: 2K, live: [s1, s2], users: [main1]}
  - {name: tmp, size: 256, live: [s1, s1], scope: local, users: [main1]}
constants:
  - {name: k, size: 64}
"""

needs_toolchain = pytest.mark.skipif(not has_toolchain(), reason="needs arm-none-eabi-gcc, QEMU")

# (name in memplace.contract, a new value, the board, the ELF sections the new name makes)
RENAMES = [
    ("POOL_SECTION", ".mp_pool.", "qemu-mps3-an547", r"\.mp_pool\.\w+"),
    ("STACK_SECTION", ".mp_stack.", "qemu-mps3-an547", r"\.mp_stack\.main"),
    ("VECTORS", ".isr_vector", "qemu-mps3-an547", r"\.isr_vector"),
    ("COPY_TABLE", ".mp_copies", "qemu-mps3-an547", r"\.mp_copies"),
    ("RELEASE_TABLE", ".mp_release", "copied-cpu1", r"\.mp_release"),
    ("POOL_SECTION", ".mp_pool.", "copied-cpu1", r"\.mp_pool\.\w+"),
    ("STACK_SECTION", ".mp_stack.", "shared-data", r"\.mp_stack\.main1"),
]
OLD = {name: getattr(contract, name) for name, *_ in RENAMES}


def _inputs(tmp_path: Path, board: str) -> list[str | Path]:
    if board not in ("copied-cpu1", "shared-data"):
        return [board, DEMO]
    (tmp_path / "board.yaml").write_text(
        AN521_COPIED_CPU1 if board == "copied-cpu1" else AN521_SHARED_DATA
    )
    (tmp_path / "duo.yaml").write_text(DUO)
    return [tmp_path / "board.yaml", tmp_path / "duo.yaml"]


@needs_toolchain
@pytest.mark.qemu
@pytest.mark.parametrize(("name", "new", "board", "made"), RENAMES)
def test_a_name_changed_in_the_contract_alone_still_checks(
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    name: str,
    new: str,
    board: str,
    made: str,
) -> None:
    monkeypatch.setattr(contract, name, new)
    out = tmp_path / "p"
    code, stdout, err = run_cli(capsys, "check", *_inputs(tmp_path, board), "--out", out)
    assert code == 0, stdout + err
    assert "run: passed" in stdout and "verify: ok" in stdout
    # The images hold the new name, and nothing of the old one.
    elfs = sorted((out / BUILD_DIR).glob("*.elf"))
    sections = [s.name for elf in elfs for s in Image.from_file(elf).sections]
    assert len(elfs) == (1 if board.startswith("qemu-") else 2)
    assert not [s for s in sections if s.startswith(OLD[name])], sections
    assert any(re.fullmatch(made, s) for s in sections), sections
    # Verify found the sections by the new name: the placement report names them so.
    code, stdout, _ = run_cli(capsys, "verify", out, "--json")
    assert code == 0 and json.loads(stdout)["ok"]


@needs_toolchain
@pytest.mark.qemu
def test_the_verifier_reads_the_name_from_the_contract(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The other half: a project built with the names of today, verified by a contract that
    says otherwise, is refused, so the passing checks above did read the new name."""
    out = tmp_path / "p"
    code, stdout, err = run_cli(capsys, "check", "qemu-mps3-an547", DEMO, "--out", out)
    assert code == 0, stdout + err
    built = contract.pool_section("dtcm_ws")
    monkeypatch.setattr(contract, "POOL_SECTION", ".other_pool.")
    code, stdout, _ = run_cli(capsys, "verify", out, "--json")
    assert code == 1
    messages = [f["message"] for f in json.loads(stdout)["findings"]]
    wanted = f"demo_pool_dtcm_ws is in section {built}, not .other_pool.dtcm_ws"
    assert wanted in messages, messages


def test_the_templates_take_every_name_from_the_contract(
    monkeypatch: pytest.MonkeyPatch, demo_workload: Workload
) -> None:
    """Every name of the contract, changed at once: no generated file still holds a default
    one (the templates write no name of their own)."""
    renamed = {}
    for name, value in vars(contract).copy().items():
        if name.isupper() and isinstance(value, str) and "memplace" in value:
            renamed[name] = value
            monkeypatch.setattr(contract, name, value.replace("memplace", "zz"))
    assert {"STACK_START", "MAILBOX_SYMBOL", "ZERO_TABLE_START"} <= set(renamed)
    for board_name in ("qemu-mps3-an547", "qemu-mps2-an521", "imxrt1176", "stm32h747", "alif-e7"):
        chosen = load_board(board_name)
        workload = demo_workload if board_name == "qemu-mps3-an547" else _any_board_demo()
        result = plan(chosen, workload)
        fill = {
            "stack": "|".join(s.c_name for s in result.stacks),
            "workload": result.workload,
            "pool": "|".join(p.name for p in result.pools),
        }
        files = render(chosen, result)
        for path, text in files.items():
            if path.endswith((".ld", ".c", ".h")):
                left = sorted({v for v in renamed.values() if _holds(text, v, fill)})
                assert left == [], (board_name, path, left)


def _holds(text: str, name: str, fill: dict[str, str]) -> bool:
    """Whether `text` holds `name`, its `{stack}`, `{workload}` and `{pool}` filled in with
    those of the project."""
    pattern = re.sub(r"\\\{(\w+)\\\}", lambda m: f"(?:{fill[m[1]]})", re.escape(name))
    return re.search(rf"(?<![\w.]){pattern}(?![\w])", text) is not None


def _any_board_demo() -> Workload:
    """The demo's buffers without the devices and pools only its board has."""
    text = DEMO.read_text()
    text = re.sub(r", users: \[[^\]]*\]", "", text)
    text = re.sub(r", scope: global\.(?!workspace)\w+", "", text)
    return Workload.from_data(yaml.safe_load(text), source=str(DEMO), base_dir=DEMO.parent)
