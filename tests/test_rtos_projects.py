"""Generated projects with RTOS tasks: each task's stack placed by memplace (any entry
function, a size of its own), a linker region and header macros for the RTOS to create the
task on, and verify's bound with what the RTOS's context switch leaves there."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from conftest import run_cli
from memplace.cli import main

pytestmark = pytest.mark.qemu

BOARD = """\
memplace: board/v1
extends: qemu-mps2-an385
name: rtos-app
cores:
  cpu0: {rtos: freertos}
contexts:
  worker: {core: cpu0, kind: task, entry: vWorker, task: Worker, stack: {memory: ssram23, size: 1K}}
  logger: {core: cpu0, kind: task, entry: vLogger, stack: {size: 512}}
"""
WORKLOAD = """\
memplace: workload/v1
name: w
buffers:
  - {name: samples, size: 256, live: 0}
"""
APP = """\
#include <stdint.h>
#include "w_memplace.h"

volatile uint32_t sink;
void (*volatile started)(void *);

void vWorker(void *argument)
{
    volatile uint8_t frame[100];
    frame[0] = (uint8_t)(uintptr_t)argument;
    sink = frame[0];
}

int app_main(void)
{
    /* What an RTOS would be given: the task's function and its stack. */
    started = vWorker;
    sink = (uint32_t)(uintptr_t)W_STACK_WORKER + W_STACK_WORKER_BUDGET;
    return 0;
}
"""


def test_a_task_stack_is_placed_declared_and_bounded(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "board.yaml").write_text(BOARD)
    (tmp_path / "w.yaml").write_text(WORKLOAD)
    (tmp_path / "app").mkdir()
    (tmp_path / "app" / "app.c").write_text(APP)
    out = tmp_path / "project"
    argv = ["check", str(tmp_path / "board.yaml"), str(tmp_path / "w.yaml"), "--out", str(out)]
    argv += ["--project-type", "app", "--sources", str(tmp_path / "app"), "--json"]
    code, printed, _ = run_cli(capsys, *argv)
    report = json.loads(printed)
    assert code == 0, report["findings"]
    header = (out / "memplace" / "include" / "w_memplace.h").read_text()
    assert "#define W_STACK_WORKER (memplace_stack_worker)\n" in header
    assert "#define W_STACK_WORKER_BUDGET 1024u\n" in header
    assert 'xTaskCreateStatic(vWorker, "Worker",' in header
    assert "void vWorker(void *argument);\n" in header
    linker = (out / "memplace" / "cpu0" / "linker.ld").read_text()
    assert "stack_worker" in linker
    # A task whose stack the RTOS allocates (logger) gets nothing generated.
    assert "LOGGER" not in header and "logger" not in linker
    worker = next(s for s in report["stacks"] if s["context"] == "worker")
    assert worker["budget"] == 1024
    assert worker["interrupts"] == [{"context": "context switch (freertos ARM_CM3)", "bytes": 76}]
    assert worker["static_bound"] >= 100 + 76
    # The stack was painted and never used: nothing measured on it.
    assert worker["measured"] == 0


def test_the_exerciser_refuses_tasks(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "board.yaml").write_text(BOARD)
    (tmp_path / "w.yaml").write_text(WORKLOAD)
    out = tmp_path / "project"
    code = main(
        ["generate", str(tmp_path / "board.yaml"), str(tmp_path / "w.yaml"), "--out", str(out)]
    )
    assert code == 2
    err = capsys.readouterr().err
    board = tmp_path / "board.yaml"
    line = next(n for n, text in enumerate(BOARD.splitlines(), 1) if text.startswith("  worker:"))
    assert err.startswith(
        f"memplace: error: {board}:{line}:3: contexts.worker: the exerciser does not start RTOS "
        "tasks (worker, logger): generate an app or library project (--project-type)"
    ), err
    assert not out.exists()
