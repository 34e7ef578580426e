"""benchmarks/suite.py: its row, on a command that stands in for `make test`; its busy
loops end with the run."""

from __future__ import annotations

import shlex
import signal
import subprocess
import sys
from pathlib import Path

from conftest import PATIENCE, benchmark, ended, wait_until


def test_a_row_gives_the_time_the_load_and_pytests_last_line(tmp_path: Path) -> None:
    bench = benchmark("suite")
    script = "print('collected'); print('==== 3 passed, 1 skipped in 0.50s ===='); exit(1)"
    run = bench.measure([sys.executable, "-c", script], busy=1, cwd=tmp_path)
    assert run.exit_code == 1
    assert run.result == "3 passed, 1 skipped in 0.50s"
    assert 0 <= run.load_before <= run.load_highest
    assert 0 < run.cpu_seconds < run.seconds + 1  # the command's own, not the busy loop's
    row = run.row()
    assert row.startswith(f"| `{sys.executable} -c ")
    assert row.endswith(" | 3 passed, 1 skipped in 0.50s (exit 1) |")
    assert " | 1 | " in row  # the busy loop


def test_the_busy_loops_end_with_the_run(tmp_path: Path) -> None:
    bench = benchmark("suite")
    marker = tmp_path / "pids"
    # The command lists the processes its parent (this test's) spins beside it.
    script = (
        "import os, pathlib\n"
        "def spun_by_parent(p):\n"
        "    try:\n"
        "        parent = int((p / 'stat').read_text().rsplit(')', 1)[1].split()[1])\n"
        "        return parent == os.getppid() and b'while True' in (p / 'cmdline').read_bytes()\n"
        "    except OSError:\n"
        "        return False\n"
        "pids = [p.name for p in pathlib.Path('/proc').iterdir()\n"
        "        if p.name.isdigit() and p.name != str(os.getpid()) and spun_by_parent(p)]\n"
        f"pathlib.Path({str(marker)!r}).write_text(' '.join(pids))\n"
    )
    bench.measure([sys.executable, "-c", script], busy=2, cwd=tmp_path)
    pids = [int(pid) for pid in marker.read_text().split()]
    assert len(pids) == 2
    assert all(ended(pid) for pid in pids)


def test_a_terminated_benchmark_ends_its_busy_loops_and_its_command(tmp_path: Path) -> None:
    marker = tmp_path / "running"
    wait = f"import pathlib, time; pathlib.Path({str(marker)!r}).touch(); time.sleep(1e6)"
    command = shlex.join([sys.executable, "-c", wait])
    script = Path(__file__).resolve().parents[1] / "benchmarks" / "suite.py"
    bench = subprocess.Popen([sys.executable, str(script), "--busy", "2", "--command", command])
    try:
        wait_until(marker.exists, "the command started")
        children = [pid for pid in _pids() if _parent(pid) == bench.pid]
        assert len(children) == 3  # two busy loops and the command
        bench.terminate()
        assert bench.wait(PATIENCE) == 128 + signal.SIGTERM
    finally:
        bench.kill()
        bench.wait()
    assert all(ended(pid) for pid in children)


def _pids() -> list[int]:
    return [int(p.name) for p in Path("/proc").iterdir() if p.name.isdigit()]


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[1])
    except OSError:
        return -1
