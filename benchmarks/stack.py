"""Stack bounds on real builds: memplace's static bound, the mark the run painted, and
puncover's whole-program number, on the same ELF files.

    .venv/bin/python benchmarks/stack.py [--out out/bench-stack] [--markdown FILE]

It builds the programs of tests/test_stack_soundness.py (each writes every byte of its
frames, so the painted mark is its real depth), the demo exerciser and an exerciser with
two nesting ISRs, runs each under QEMU, verifies it, and runs puncover
(PyPI `puncover`, installed into a virtual environment of its own, as it brings Flask) on
the same ELF with the reset handler as the root. A bound below the measured mark is an
unsound one; memplace's must never be.
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import venv
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))

from memplace import workflow  # noqa: E402
from memplace.board import load_board  # noqa: E402
from memplace.build import build  # noqa: E402
from memplace.importers import load_workload  # noqa: E402
from memplace.project import Project  # noqa: E402
from memplace.verify import verify  # noqa: E402
from test_stack_soundness import PROGRAMS, build_program, hints_for  # noqa: E402

PUNCOVER = "puncover==0.8.0"
ISR_BOARD = """memplace: board/v1
extends: qemu-mps3-an547
name: qemu-mps3-an547-isr
contexts:
  tick: {core: cpu0, kind: isr, entry: SysTick_Handler, preempts: [main], priority: 2}
  pend: {core: cpu0, kind: isr, entry: PendSV_Handler, preempts: [main, tick], priority: 1}
"""
NOTES = {
    "chain": "three frames, 1.5 KB deep",
    "variadic": "a variadic function (register save area)",
    "alloca": "a VLA, bounded by an alloca hint",
    "recursion": "recursion, depth hinted (10)",
    "indirect": "a call through a table, targets hinted",
    "printf": "snprintf from newlib-nano (bundled hints)",
    "demo": "the demo exerciser",
    "isr": "exerciser with two nesting ISRs",
}


@dataclass(frozen=True)
class Row:
    name: str
    bound: int | None
    unhinted: int | None
    measured: int
    puncover: int | None

    def cells(self) -> list[str]:
        def show(value: int | None) -> str:
            return "unbounded" if value is None else str(value)

        puncover = show(self.puncover) if self.puncover is not None else "n/a"
        verdict = (
            "below the mark" if self.puncover is not None and self.puncover < self.measured else ""
        )
        return [
            self.name,
            NOTES.get(self.name, ""),
            str(self.measured),
            show(self.bound),
            show(self.unhinted),
            f"{puncover} {verdict}".strip(),
        ]


def puncover_venv(folder: Path) -> Path | None:
    """puncover's command in a virtual environment of its own; None if it will not install."""
    command = folder / "bin" / "puncover"
    if command.is_file():
        return command
    venv.create(folder, with_pip=True)
    result = subprocess.run(
        [str(folder / "bin" / "pip"), "install", "-q", PUNCOVER], capture_output=True, text=True
    )
    if result.returncode != 0 or not command.is_file():
        print(f"puncover did not install, its column is left out:\n{result.stderr[-800:]}")
        return None
    return command


def tools_prefix() -> str:
    """Where arm-none-eabi-gcc is, as the path prefix puncover wants."""
    gcc = shutil.which("arm-none-eabi-gcc") or "/usr/bin/arm-none-eabi-gcc"
    return gcc[: -len("gcc")]


def puncover_bound(command: Path | None, folder: Path, root: str) -> int | None:
    if command is None:
        return None
    report = folder / "puncover-report"
    result = subprocess.run(
        [
            str(command),
            "--elf_file",
            str(folder / "build" / "cpu0.elf"),
            "--build_dir",
            str(folder / "build"),
            "--src_root",
            str(folder),
            "--gcc-tools-base",
            tools_prefix(),
            "--generate-report",
            "--report-filename",
            str(report),
            "--report-max-static-stack-usage",
            root,
            "--non-interactive",
        ],
        capture_output=True,
        text=True,
        timeout=600,
    )
    if result.returncode != 0:
        print(f"puncover failed on {folder}:\n{result.stdout[-800:]}{result.stderr[-800:]}")
        return None
    data = json.loads(report.with_suffix(".json").read_text())
    entry = next(iter(data.values()))["stack_report"].get(root)
    return None if entry is None else int(entry["max_static_stack_size"])


def exerciser(out: Path, name: str, board_text: str | None) -> tuple[Path, int, int | None]:
    board = load_board("qemu-mps3-an547")
    if board_text is not None:
        path = out / f"{name}.yaml"
        path.write_text(board_text)
        board = load_board(path)
    folder = out / name
    workload = load_workload(ROOT / "examples" / "demo" / "workload.yaml")
    workflow.generate(workflow.ProjectRequest(board, workload, folder, force=True))
    build(folder)
    log = workflow.run(folder)
    report = verify(Project.load(folder), log)
    return folder, log.stacks["main"], report.stacks[0].static_bound


def measure(out: Path) -> list[Row]:
    command = puncover_venv(out / "puncover-venv")
    rows = []
    for name, body in PROGRAMS.items():
        probe = build_program(out, name, body, hints=hints_for(out, name))
        unhinted = verify(Project.load(probe.folder), probe.run).stacks[0].static_bound
        rows.append(
            Row(
                name,
                probe.bound,
                unhinted,
                probe.measured,
                puncover_bound(command, probe.folder, "Reset_Handler"),
            )
        )
    for name, board_text in (("demo", None), ("isr", ISR_BOARD)):
        folder, measured, bound = exerciser(out, name, board_text)
        rows.append(
            Row(name, bound, bound, measured, puncover_bound(command, folder, "Reset_Handler"))
        )
    return rows


def markdown(rows: list[Row]) -> str:
    header = [
        "program",
        "what it does",
        "measured",
        "memplace bound",
        "memplace, no hints",
        "puncover",
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row.cells()) + " |" for row in rows]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--out", type=Path, default=ROOT / "out" / "bench-stack")
    parser.add_argument("--markdown", type=Path, help="also write the table to this file")
    args = parser.parse_args()
    args.out.mkdir(parents=True, exist_ok=True)
    rows = measure(args.out)
    table = markdown(rows)
    print(table)
    if args.markdown:
        args.markdown.write_text(table + "\n")
    unsound = [row.name for row in rows if row.bound is not None and row.bound < row.measured]
    if unsound:
        print(f"memplace's bound is below the measured mark for: {', '.join(unsound)}")
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
