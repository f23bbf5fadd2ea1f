"""Build hook: compile qrelkit's native scanner (every src/qrelkit/_native/*.c) into one shared library.

The library is optional. Without a C compiler the build goes on, says so, and the streaming reader parses
with Arrow instead (same rows, slower). ``CC`` names the compiler; ``QRELKIT_NATIVE=0`` skips the build.
"""

from __future__ import annotations

import os
import shlex
import subprocess
import sys
import sysconfig
from pathlib import Path

from hatchling.builders.hooks.plugin.interface import BuildHookInterface

NATIVE = Path("src/qrelkit/_native")  # its C files, compiled together (they share the header qkscan.h)
LIBRARY = NATIVE / ("_qkscan.dll" if sys.platform == "win32" else "_qkscan.so")  # as _native/__init__.py


class NativeScannerHook(BuildHookInterface):
    PLUGIN_NAME = "custom"

    def initialize(self, version: str, build_data: dict) -> None:
        if self.target_name != "wheel" or os.environ.get("QRELKIT_NATIVE", "1") == "0":
            return
        root = Path(self.root)
        sources, library = sorted((root / NATIVE).glob("*.c")), root / LIBRARY
        compilers = [os.environ.get("CC"), sysconfig.get_config_var("CC"), "cc", "gcc", "clang"]
        errors = []
        for compiler in dict.fromkeys(c for c in compilers if c):
            command = [*shlex.split(compiler), "-O2", "-std=c99", "-fPIC", "-shared"]
            command += ["-o", str(library), *map(str, sources), "-lm"]
            try:
                subprocess.run(command, check=True, capture_output=True, text=True)
            except (OSError, subprocess.CalledProcessError) as exc:
                errors.append(f"{compiler}: {getattr(exc, 'stderr', '') or exc}".strip())
                continue
            build_data["artifacts"].append(LIBRARY.as_posix())
            if version != "editable":
                build_data["pure_python"] = False
                build_data["infer_tag"] = True
            return
        self.app.display_warning(
            "qrelkit: the native scanner was not built (no working C compiler); large runs will be parsed "
            "with Arrow instead, which gives the same numbers more slowly.\n  " + "\n  ".join(errors)
        )
