"""Where the files that ship with memplace live: in the installed wheel, or in a checkout."""

from __future__ import annotations

from pathlib import Path

_PACKAGE = Path(__file__).resolve().parent


def data_dir(name: str) -> Path:
    """The folder of bundled data called `name`: board_configs, firmware_templates, cmake
    or examples. A wheel carries them inside the package; a checkout (editable install)
    has them at the top of the repository, two levels above the package."""
    packaged = _PACKAGE / name
    if packaged.is_dir():
        return packaged
    return _PACKAGE.parent.parent / name


def bundled_boards() -> dict[str, Path]:
    """Every bundled board, by name, sorted."""
    folder = data_dir("board_configs")
    return {path.stem: path for path in sorted(folder.glob("*.yaml"))}


def demo_workload() -> Path:
    return data_dir("examples") / "demo" / "workload.yaml"
