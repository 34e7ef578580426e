"""Shared fixtures: the default board and the demo workload as data and as files."""

from __future__ import annotations

import copy
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from memplace import resources
from memplace.board import Board, load_board
from memplace.workload import Workload, load_workload

DEFAULT_BOARD = "qemu-mps3-an547"


@pytest.fixture(scope="session")
def board() -> Board:
    return load_board(DEFAULT_BOARD)


@pytest.fixture(scope="session")
def demo_workload() -> Workload:
    return load_workload(resources.demo_workload())


@pytest.fixture
def board_data() -> dict[str, Any]:
    """The default board file as plain data, to change in a test."""
    path = resources.bundled_boards()[DEFAULT_BOARD]
    return copy.deepcopy(yaml.safe_load(path.read_text()))


@pytest.fixture
def small_workload_data() -> dict[str, Any]:
    return {
        "memplace": "workload/v1",
        "name": "small",
        "steps": ["a", "b", "c"],
        "buffers": [
            {"name": "x", "size": 1024, "live": ["a", "b"]},
            {"name": "y", "size": 2048, "live": ["b", "c"]},
            {"name": "z", "size": 512, "live": ["c", "c"]},
        ],
        "constants": [{"name": "w", "size": 300}],
    }


@pytest.fixture
def write_yaml(tmp_path: Path) -> Callable[[str, str], Path]:
    """Write text to a file in the test's folder and return its path."""

    def write(name: str, text: str) -> Path:
        path = tmp_path / name
        path.write_text(text)
        return path

    return write


def has_toolchain() -> bool:
    return all(shutil.which(tool) for tool in ("arm-none-eabi-gcc", "qemu-system-arm"))
