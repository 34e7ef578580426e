"""The RTOS registry: an RTOS is one module of `memplace.rtos`, and everything that reads
RTOSes (the board's `rtos` choices, the schema, `memplace stacks` and its help, the
documentation's port table) finds it there. A throwaway RTOS, written as a module of its
own in a folder the test adds to the package, is taken up by `memplace stacks` on the
example firmware (examples/rtos-stacks, built by GCC as its users build it): its port is
told from the image's symbols, and its frame sizes go into each task's bound."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import memplace.rtos
from conftest import build_rtos_example, run_cli
from memplace.rtos import markdown_table

REPO = Path(__file__).resolve().parents[1]

# The RTOS a user would add, as docs/architecture.md writes it: one module, built on
# FreeRTOS's kernel (its task finder and reader) with ports of its own, one of them told by
# a function the image defines (`vTinyBig`).
ARCHITECTURE = (REPO / "docs" / "architecture.md").read_text()
THROWAWAY = ARCHITECTURE.split("## Adding an RTOS or a port")[1].split("```python\n")[1]
THROWAWAY = THROWAWAY.split("```")[0]
BOARD = """\
memplace: board/v1
extends: qemu-mps2-an385
name: tiny-app
cores:
  cpu0: {{rtos: {rtos}}}
contexts:
  rx:      {{core: cpu0, kind: task, entry: vRxTask, task: Rx, stack: {{size: 512}}}}
  tx:      {{core: cpu0, kind: task, entry: vTxTask, task: Tx, stack: {{size: 256}}}}
  systick: {{core: cpu0, kind: isr, entry: SysTick_Handler, priority: 255}}
  timer0:  {{core: cpu0, kind: isr, entry: TIMER0_Handler, irq: 8, priority: 64}}
"""


@pytest.fixture(scope="module")
def firmware(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The example firmware built by its own commands, with GCC's two stack reports."""
    build = tmp_path_factory.mktemp("tiny") / "build"
    build.mkdir()
    return build_rtos_example(build)


def _added(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, tell: str) -> Iterator[None]:
    folder = tmp_path / "rtos_modules"
    folder.mkdir()
    assert '"vTinyBig" in symbols' in THROWAWAY
    (folder / "tinyos.py").write_text(THROWAWAY.replace('"vTinyBig"', repr(tell)))
    monkeypatch.setattr(memplace.rtos, "__path__", [*memplace.rtos.__path__, str(folder)])
    yield
    sys.modules.pop("memplace.rtos.tinyos", None)


@pytest.fixture
def tinyos(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The throwaway RTOS, its big port told by a function the example defines."""
    yield from _added(tmp_path, monkeypatch, "vRxTask")


@pytest.fixture
def tinyos_untold(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """The throwaway RTOS, its big port told by a function the example does not define."""
    yield from _added(tmp_path, monkeypatch, "vTinyBig")


def _stacks(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, firmware: Path, rtos: str
) -> dict[str, dict[str, object]]:
    board = tmp_path / f"{rtos}.yaml"
    board.write_text(BOARD.format(rtos=rtos))
    code, out, err = run_cli(capsys, "stacks", firmware, "--board", board, "--json")
    assert code == 0, err or out
    return {stack["context"]: stack for stack in json.loads(out)["stacks"]}


def test_a_port_of_a_new_rtos_is_told_from_the_image_and_bounds_its_tasks(
    firmware: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], tinyos: None
) -> None:
    freertos = _stacks(capsys, tmp_path, firmware, "freertos")
    tiny = _stacks(capsys, tmp_path, firmware, "tinyos")
    # TINY_BIG: the exception frame (32) and its alignment (4), 100 saved, 4 unused at the top.
    for task in ("rx", "tx"):
        assert tiny[task]["interrupts"] == [
            {"context": "context switch (tinyos TINY_BIG)", "bytes": 140}
        ]
        assert freertos[task]["interrupts"] == [
            {"context": "context switch (freertos ARM_CM3)", "bytes": 76}
        ]
        assert tiny[task]["path"] == freertos[task]["path"]
        assert tiny[task]["static_bound"] == freertos[task]["static_bound"] - 76 + 140
    # The port's start function resets the main stack: main's bound is FreeRTOS's.
    assert tiny["main"]["static_bound"] == freertos["main"]["static_bound"]


def test_without_its_tell_the_new_rtos_takes_its_other_port(
    firmware: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], tinyos_untold: None
) -> None:
    tiny = _stacks(capsys, tmp_path, firmware, "tinyos")
    assert tiny["rx"]["interrupts"] == [
        {"context": "context switch (tinyos TINY_PLAIN)", "bytes": 32 + 4 + 8}
    ]


def test_the_board_the_schema_the_help_and_the_docs_table_list_the_new_rtos(
    firmware: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], tinyos: None
) -> None:
    code, out, _ = run_cli(capsys, "schema", "board")
    assert code == 0
    schema = json.loads(out)
    assert schema["$defs"]["core"]["properties"]["rtos"]["enum"] == ["none", "freertos", "tinyos"]
    with pytest.raises(SystemExit):
        run_cli(capsys, "stacks", "--help")
    assert "may name in the board: none, freertos, tinyos" in capsys.readouterr().out
    board = tmp_path / "board.yaml"
    board.write_text(BOARD.format(rtos="tinyo"))
    code, _, err = run_cli(capsys, "stacks", firmware, "--board", board)
    assert code == 2
    assert err == (
        f"memplace: error: {board}:5:16: cores.cpu0.rtos: 'tinyo' is not allowed; "
        "did you mean 'tinyos'? valid: freertos, none, tinyos\n"
    )
    assert "| `tinyos` | TINY_BIG | any Cortex-M | r4-r11, a scratch area: 100 | - | 4 |" in (
        markdown_table()
    )


def test_without_the_module_the_rtos_is_unknown(
    firmware: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    board = tmp_path / "board.yaml"
    board.write_text(BOARD.format(rtos="tinyos"))
    code, _, err = run_cli(capsys, "stacks", firmware, "--board", board)
    assert code == 2
    assert err == (
        f"memplace: error: {board}:5:16: cores.cpu0.rtos: 'tinyos' is not allowed; "
        "valid: freertos, none\n"
    )


def test_the_docs_table_is_the_registry() -> None:
    text = (REPO / "docs" / "verification.md").read_text()
    table = text.split("<!-- rtos-ports:begin -->\n")[1].split("<!-- rtos-ports:end -->")[0]
    assert table == markdown_table(), (
        "docs/verification.md is out of date: paste the output of\n"
        "  .venv/bin/python -c 'from memplace.rtos import markdown_table as t; "
        'print(t(), end="")\'\nbetween its rtos-ports markers'
    )
