"""Rules for the native scanner's C sources (src/qrelkit/_native): each file stays small, and the functions
they export are exactly those the ctypes loader (_native/__init__.py) declares, so that no entry point is
lost or left unlisted when code moves between the files; the helpers the files share stay hidden."""

from __future__ import annotations

import re

from .conftest import ROOT

NATIVE = ROOT / "src" / "qrelkit" / "_native"
MAX_LINES = 600

# A function defined at file level (the files' layout: a definition starts at column 0, its body is
# indented), with the name in group 1; `static` ones are not exported.
DEFINITION = re.compile(r"^(?!static\b)(?:[A-Za-z_]\w*[\s*]+)+?([A-Za-z_]\w*)\s*\([^()]*\)\s*\{", re.M)
# What the loader declares: every function it uses gets its restype set in _load.
DECLARED = re.compile(r"\blib\.(qk_\w+)\.restype\b")
# A helper shared between the files: declared in the header with QK_INTERNAL (hidden from the exports).
INTERNAL = re.compile(r"^QK_INTERNAL\b[^;(]*?\b([A-Za-z_]\w*)\s*[(\[]", re.M)


def _sources() -> list:
    sources = sorted([*NATIVE.glob("*.c"), *NATIVE.glob("*.h")])
    assert any(p.suffix == ".c" for p in sources) and (NATIVE / "qkscan.h") in sources, sources
    return sources


def _defined() -> dict[str, str]:
    """Every non-static function defined in a .c file, with its file."""
    found: dict[str, str] = {}
    for path in NATIVE.glob("*.c"):
        for name in DEFINITION.findall(path.read_text()):
            assert name not in found, f"{name} is defined in {found[name]} and {path.name}"
            found[name] = path.name
    return found


def test_native_sources_stay_small():
    for path in _sources():
        lines = len(path.read_text().splitlines())
        assert lines <= MAX_LINES, f"{path.relative_to(ROOT)} has {lines} lines: split it"


def test_the_loader_declares_every_exported_function_and_no_other():
    exported = {name for name in _defined() if name.startswith("qk_")}
    declared = set(DECLARED.findall((NATIVE / "__init__.py").read_text()))
    assert "qk_scan_run" in exported and "qk_abi" in declared  # the patterns still find what they look for
    assert not exported - declared, f"exported but not declared by the loader: {sorted(exported - declared)}"
    assert not declared - exported, f"declared by the loader but not defined: {sorted(declared - exported)}"


def test_the_helpers_the_files_share_are_hidden():
    internal = set(INTERNAL.findall((NATIVE / "qkscan.h").read_text()))
    assert {"split_line", "BYTE_CLASS", "append_row"} <= internal
    helpers = {name: file for name, file in _defined().items() if not name.startswith("qk_")}
    unhidden = sorted(f"{name} ({file})" for name, file in helpers.items() if name not in internal)
    assert not unhidden, f"neither static nor declared QK_INTERNAL in qkscan.h (so exported): {unhidden}"
