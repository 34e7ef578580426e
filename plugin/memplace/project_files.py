"""The files of a generated project: where each one is, named once for the generator, the
build and the verifier (the names inside the images are `contract`'s).

Standard library only: the generator (`codegen`, `project`), the build, the verifier and the
server a project carries all find the project's files through these names, so they cannot
drift.
"""

from __future__ import annotations

from pathlib import Path

PROJECT_VERSION = "project/v1"
# What memplace knows of a project: its board, plan and images, at the project's top.
MANIFEST = "memplace.json"
# Where every image of the project puts its bytes (`memplace.imagemap`), for the verifier.
IMAGE_MAP = "memplace/image-map.json"
# Where CMake builds, inside the project folder.
BUILD_DIR = "build"
# Where a project keeps stack hints (the exerciser's own, and those its board and workload
# files gave), so that `memplace verify DIR` bounds the stacks with them as `check` does.
HINTS_DIR = "memplace/stack_hints"
# The record of the last run, inside the build folder.
RUN_RECORD = "run.json"
# The project types the generator writes (`codegen.PROJECT_TYPES`) and who defines the pool
# arrays: named here so that the command line lists them without loading the generator.
PROJECT_TYPE_NAMES = ("exerciser", "app", "library", "aot_standalone_demo")
POOL_STORAGE = ("generated", "application")
# Seconds before a run of a project is stopped, unless told otherwise.
DEFAULT_TIMEOUT = 60.0
# The user's own CMake settings (include folders, libraries, definitions): written once if
# missing, then never again, whatever `--force` says; the generated CMakeLists.txt includes it.
USER_CMAKE = "user.cmake"
USER_OWNED = (USER_CMAKE,)


def build_dir(folder: Path) -> Path:
    return folder / BUILD_DIR


def run_record(folder: Path) -> Path:
    return folder / BUILD_DIR / RUN_RECORD
