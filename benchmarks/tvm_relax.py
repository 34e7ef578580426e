"""TVM's Relax models on the board: for each MLPerf Tiny model, the bytes of the tensors
Relax allocates as TVM's own static plan (StaticPlanBlockMemory) packs them, as memplace
plans them, and their lower bound (most bytes live at one step), and whether the outputs
of the model run under QEMU (`memplace check BOARD MODEL --frontend tvm`) equal those of
TVM's VM on the host (`tvm.compile(mod, target="llvm")`) on the same inputs: the demo's
fill, and random inputs (`--inputs`, seed 7).

    .venv/bin/python benchmarks/tvm_relax.py [--models DIR] [--markdown FILE]
"""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import sys
import tempfile
from pathlib import Path

import numpy as np
import tflite
import tvm
from tvm import relax
from tvm.relax.frontend.tflite import from_tflite

from memplace.board import load_board
from memplace.cli import main as memplace
from memplace.importers.relax import RelaxModel, read_relax
from memplace.planner import plan
from memplace.workload import Workload, WorkloadBuilder

BOARD = "qemu-mps3-an547"
MODELS = Path(__file__).resolve().parents[2] / "shared/models/mlperf-tiny"
# The one pool the storages alone are planned in (1 MiB of SRAM on the board).
POOL = "sram_ws"


def storages_only(model: RelaxModel) -> Workload:
    """The tensors Relax would allocate, and nothing else: what TVM's plan packs."""
    builder = WorkloadBuilder(model.name, steps=[step.name for step in model.steps])
    for storage in model.storages:
        builder.buffer(
            storage.name, storage.size, [storage.first, storage.last], scope=f"global.{POOL}"
        )
    return builder.build()


def filled(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """The demo's fill (codegen.relax.FILL)."""
    count = int(np.prod(shape))
    if dtype == "float32":
        return (0.5 + 0.25 * (np.arange(count) % 8)).astype(np.float32).reshape(shape)
    data = ((np.arange(count * np.dtype(dtype).itemsize) * 13 + 7) % 256).astype(np.uint8)
    return data.view(dtype).reshape(shape)


def random(shape: tuple[int, ...], dtype: str) -> np.ndarray:
    """Random inputs, the same on every run: any value of an integer type, N(0, 1) floats."""
    rng = np.random.default_rng(7)
    if dtype.startswith("float"):
        return rng.standard_normal(shape).astype(dtype)
    info = np.iinfo(dtype)
    return rng.integers(info.min, info.max, shape, dtype=dtype, endpoint=True)


def host_outputs(path: Path, inputs: list[np.ndarray]) -> list[np.ndarray]:
    """TVM's VM on the host, built for llvm, on `inputs`."""
    module = from_tflite(tflite.Model.GetRootAsModel(path.read_bytes(), 0))
    machine = relax.VirtualMachine(tvm.compile(module, target="llvm"), tvm.cpu())
    result = machine["main"](*(tvm.runtime.tensor(x) for x in inputs))
    return [item.numpy() for item in (result if isinstance(result, (list, tuple)) else [result])]


def largest_difference(got: list[np.ndarray], expected: list[np.ndarray]) -> int | None:
    """The largest difference of any output value, in steps of int8 (None: no outputs)."""
    if not got or len(got) != len(expected):
        return None
    return max(
        int(np.abs(g.astype(np.int64) - e.reshape(-1).astype(np.int64)).max())
        for g, e in zip(got, expected, strict=True)
    )


def run(path: Path, out: Path, inputs: Path | None = None) -> tuple[int, list[np.ndarray]]:
    """`memplace check BOARD MODEL --frontend tvm` (on `inputs`, else the fill): its exit
    code and the outputs it reports."""
    argv = ["check", BOARD, str(path), "--frontend", "tvm", "--out", str(out), "--json"]
    stdout = io.StringIO()
    with contextlib.redirect_stdout(stdout):
        code = memplace([*argv, *(("--inputs", str(inputs)) if inputs else ())])
    report = json.loads(stdout.getvalue()) if code in (0, 1) else {"outputs": []}
    return code, [np.array(o["values"]) for o in report.get("outputs", [])]


def measure(path: Path, folder: Path) -> dict[str, object]:
    board = load_board(BOARD)
    model = read_relax(path)
    planned = plan(board, storages_only(model))
    usage = next(pool for pool in planned.pools if pool.name == POOL)
    fill = [filled(t.shape, t.dtype) for t in model.inputs]
    code, got = run(path, folder / model.name)
    drawn = {t.buffer: random(t.shape, t.dtype) for t in model.inputs}
    np.savez(folder / f"{model.name}.npz", **drawn)  # type: ignore[arg-type]
    random_code, random_got = run(
        path, folder / f"{model.name}_random", folder / f"{model.name}.npz"
    )
    return {
        "model": model.name,
        "steps": len(model.steps),
        "tvm": model.tvm_plan_bytes,
        "memplace": usage.used,
        "bound": usage.lower_bound,
        "workspace": model.workspace,
        "check": max(code, random_code),
        "fill": largest_difference(got, host_outputs(path, fill)),
        "random": largest_difference(random_got, host_outputs(path, list(drawn.values()))),
    }


def folded(path: Path) -> dict[str, object]:
    """The same with TVM's FoldConstant in the lowering (weights folded to float32), planned
    only: the plan the issue's numbers measured."""
    board = load_board(BOARD)
    model = read_relax(path, fold_constants=True)
    usage = next(p for p in plan(board, storages_only(model)).pools if p.name == POOL)
    constants = sum(len(constant.data) for constant in model.constants)
    return {
        "model": model.name,
        "steps": len(model.steps),
        "tvm": model.tvm_plan_bytes,
        "memplace": usage.used,
        "bound": usage.lower_bound,
        "constants": constants,
    }


def folded_markdown(rows: list[dict[str, object]]) -> str:
    lines = [
        "| model | steps | TVM's static plan | memplace | lower bound | constants (float32) |",
        "|---|---:|---:|---:|---:|---:|",
    ]
    for row in rows:
        lines.append(
            f"| {row['model']} | {row['steps']} | {row['tvm']} | {row['memplace']} | "
            f"{row['bound']} | {row['constants']} |"
        )
    return "\n".join(lines) + "\n"


def markdown(rows: list[dict[str, object]]) -> str:
    lines = [
        "| model | steps | TVM's static plan | memplace | lower bound | kernel workspace "
        "(arena) | check on qemu-mps3-an547 | outputs vs TVM's VM (llvm), fill | random inputs |",
        "|---|---:|---:|---:|---:|---:|---|---|---|",
    ]
    for row in rows:
        checked = "passed" if row["check"] == 0 else f"exit {row['check']}"
        lines.append(
            f"| {row['model']} | {row['steps']} | {row['tvm']} | {row['memplace']} | "
            f"{row['bound']} | {row['workspace']} | {checked} | {_same(row['fill'])} | "
            f"{_same(row['random'])} |"
        )
    return "\n".join(lines) + "\n"


def _same(difference: object) -> str:
    if difference is None:
        return "no outputs"
    return "equal" if difference == 0 else f"within {difference} (int8 steps)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--models", type=Path, default=MODELS)
    parser.add_argument("--markdown", type=Path)
    args = parser.parse_args(argv)
    models = sorted(args.models.glob("*.tflite"))
    with tempfile.TemporaryDirectory() as folder:
        rows = [measure(path, Path(folder)) for path in models]
    table = (
        markdown(rows)
        + "\nWith FoldConstant:\n\n"
        + folded_markdown([folded(path) for path in models])
    )
    sys.stdout.write(table)
    if args.markdown is not None:
        args.markdown.write_text(table, encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
