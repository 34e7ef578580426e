"""Builds the planner's compiled core into the wheel (a hatchling build hook).

`plugin/memplace/planner/_core.c` is plain C99 without Python headers; it is compiled with
the system C compiler (`$CC`, else `cc` or `gcc`) into `memplace/planner/_core.so`, which
`memplace.planner.core` loads with ctypes. An editable install compiles it in place, beside
its source. Without a C compiler the wheel is built without it and memplace runs the core's
pure-Python twin (slower, same plans); the build says so.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sysconfig
from pathlib import Path
from typing import Any

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

SOURCE = Path("plugin/memplace/planner/_core.c")
LIBRARY = "memplace/planner/_core.so"
FLAGS = ["-O2", "-std=c99", "-fPIC", "-shared", "-D_POSIX_C_SOURCE=199309L"]


class CoreBuildHook(BuildHookInterface):  # type: ignore[type-arg]
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict[str, Any]) -> None:
        compiler = os.environ.get("CC") or shutil.which("cc") or shutil.which("gcc")
        if compiler is None:
            self.app.display_warning(
                "memplace: no C compiler found ($CC, cc, gcc): the planner's compiled core "
                "is left out and its pure-Python twin will run instead (same plans, slower)"
            )
            return
        source = Path(self.root) / SOURCE
        if version == "editable":
            target = source.with_name("_core.so")
        else:
            target = Path(self.root) / "build" / "memplace-core" / "_core.so"
            target.parent.mkdir(parents=True, exist_ok=True)
        extra = shlex.split(os.environ.get("CFLAGS", ""))
        command = [*shlex.split(compiler), *FLAGS, *extra, str(source), "-o", str(target)]
        self.app.display_info("memplace: " + shlex.join(command))
        subprocess.run(command, check=True)
        if version != "editable":
            build_data["force_include"][str(target)] = LIBRARY
            platform = sysconfig.get_platform().replace("-", "_").replace(".", "_")
            build_data["pure_python"] = False
            build_data["tag"] = f"py3-none-{platform}"
