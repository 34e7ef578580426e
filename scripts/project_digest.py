"""The digest of every project memplace generates from what it bundles.

For every bundled board, every `examples/` workload (and the MLPerf Tiny keyword model),
in each project type that workload is for, this runs `memplace generate` the way a user
does and prints one line per file: the case, the file's path in the project and the
SHA-256 of its bytes; a case memplace refuses prints its error line instead. Two
checkouts whose digests are equal generate the same projects byte for byte.

    python scripts/project_digest.py > before.txt
    (change the code)
    python scripts/project_digest.py > after.txt && diff before.txt after.txt

The inputs are copied into the working folder first, so the digest names no checkout's
path; give each checkout its own `--work` when several run at once.
"""

from __future__ import annotations

import argparse
import hashlib
import re
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
MODEL = SHARED / "models" / "mlperf-tiny" / "kws_ref_model.tflite"


def cases(inputs: Path) -> list[tuple[str, list[str]]]:
    """(name, the arguments after BOARD) for every workload and project type."""
    demo = str(inputs / "demo" / "workload.yaml")
    app = str(inputs / "cmake-app" / "workload.yaml")
    found = [
        ("demo", [demo]),
        ("demo-library", [demo, "--project-type", "library"]),
        ("demo-application-pools", [demo, "--pool-storage", "application"]),
        ("cmake-app", [app]),
        ("cmake-app-app", [app, "--project-type", "app", "--sources", str(inputs / "cmake-app")]),
        ("demo-any-board", [str(inputs / "demo-any-board.yaml")]),
    ]
    if MODEL.is_file():
        found.append(("kws", [str(inputs / "kws_ref_model.tflite")]))
    return found


def copy_inputs(inputs: Path) -> None:
    shutil.rmtree(inputs, ignore_errors=True)
    for example in ("demo", "cmake-app"):
        shutil.copytree(ROOT / "examples" / example, inputs / example)
    # The demo's buffers without the devices and pools only its board has: any board holds them.
    demo = (inputs / "demo" / "workload.yaml").read_text()
    demo = re.sub(r", users: \[[^\]]*\]", "", demo)
    demo = re.sub(r", scope: global\.(?!workspace)\w+", "", demo)
    (inputs / "demo-any-board.yaml").write_text(demo)
    if MODEL.is_file():
        shutil.copy(MODEL, inputs / MODEL.name)


def digest(out: Path) -> list[str]:
    lines = []
    for path in sorted(p for p in out.rglob("*") if p.is_file()):
        sha = hashlib.sha256(path.read_bytes()).hexdigest()
        lines.append(f"{path.relative_to(out)} {sha}")
    return lines


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--boards", nargs="*", help="only these bundled boards")
    parser.add_argument(
        "--work", type=Path, default=Path("/tmp/memplace-digest"), help="folder to generate in"
    )
    args = parser.parse_args()
    work = args.work.resolve()
    memplace = Path(sys.executable).parent / "memplace"
    inputs = work / "inputs"
    copy_inputs(inputs)
    boards = args.boards or sorted(p.stem for p in (ROOT / "board_configs").glob("*.yaml"))
    for board in boards:
        for name, rest in cases(inputs):
            out = work / "out" / board / name
            shutil.rmtree(out, ignore_errors=True)
            argv = [str(memplace), "generate", board, *rest, "--out", str(out)]
            done = subprocess.run(argv, capture_output=True, text=True, cwd=work)
            case = f"{board} {name}"
            if done.returncode != 0:
                message = done.stderr.replace(str(work), "WORK").strip()
                last = message.splitlines()[-1:] or ["(no message)"]
                print(f"{case}: exit {done.returncode}: {last[0]}")
                continue
            for line in digest(out):
                print(f"{case}: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
