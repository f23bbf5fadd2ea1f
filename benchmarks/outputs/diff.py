"""Compare two captures of capture.py file by file, byte for byte after normalisation.

    python benchmarks/outputs/diff.py DIR_A DIR_B [--raw] [--lines N]

Prints how many files (and cases) were compared, then every differing case with a short unified diff of each
of its differing files, and files present on one side only. Exit status 0 when identical, 1 otherwise.

Normalisation (rules_for and NORMALISE below) replaces only what differs between two captures of the same
code: each capture's own folder and source tree paths. --raw compares the bytes as captured. _capture.json
(timings, paths) is read for those paths, never compared. _inputs.sha256 is compared: both captures must have
read the same input files.
"""

from __future__ import annotations

import argparse
import difflib
import json
import re
import signal
import sys
from pathlib import Path

signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `diff.py A B | head` ends quietly

META = "_capture.json"


Rule = tuple[re.Pattern[bytes], bytes, str]  # (regex over the bytes, replacement, why)


def rules_for(root: Path) -> list[Rule]:
    """The normalisation of one capture. Found by capturing one tree twice, into two folders, and comparing
    raw: the only bytes that differed were the capture folder's path; everything else (every number, the
    HTML reports, the JSON provenance) was identical, so nothing else is normalised."""
    meta_file = root / META
    if not meta_file.is_file():
        return []
    meta = json.loads(meta_file.read_text())
    return [
        # OUT_DIR, the folder the capture wrote to. A command given -o prints "wrote <OUT_DIR>/<case>.html
        # (...)" on stderr, and a report records its own command line ("qrelkit report ... -o
        # <OUT_DIR>/report.plain.html" in its provenance table), so two captures into two folders differ
        # exactly there. Matched only as a path prefix (followed by "/").
        (re.compile(re.escape(meta["out"].encode()) + rb"(?=/)"), b"<OUT_DIR>", "capture folder"),
        # SRC_DIR, the tree under test (another checkout's src for one capture, this repository's src for the
        # other). `qrelkit --version` prints the native library's absolute path ("native scanner: in use
        # (<SRC_DIR>/qrelkit/_native/_qkscan.so)"); a traceback would name the tree's files too. The same in
        # two captures of one tree, different between the trees by construction.
        (re.compile(re.escape(meta["src"].encode()) + rb"(?=/)"), b"<SRC_DIR>", "tree under test"),
    ]


#: Rules for every capture, beside rules_for's. None was needed: no timestamp, duration, git hash or random
#: value differed between two captures of one tree (qrelkit's version is the plain "0.1.0"; the HTML report
#: carries no generation time; compare/report draw with --seed 0; the capture fixes PYTHONHASHSEED=0).
#: Add a commented (regex, replacement, why) here if the tree under test starts writing such a field.
NORMALISE: list[Rule] = []


def normalise(data: bytes, rules: list[Rule]) -> bytes:
    for pattern, repl, _why in [*rules, *NORMALISE]:
        data = pattern.sub(repl, data)
    return data


def files(root: Path) -> set[str]:
    return {str(p.relative_to(root)) for p in root.rglob("*") if p.is_file() and p.name != META}


def case_of(rel: str) -> str:
    """The case a file belongs to: its path without the last suffix (.out/.err/.rc/.json/.html...)."""
    return rel.rsplit(".", 1)[0] if "." in Path(rel).name else rel


def short_diff(a: bytes, b: bytes, name: str, limit: int) -> list[str]:
    ta = a.decode("utf-8", "backslashreplace").splitlines()
    tb = b.decode("utf-8", "backslashreplace").splitlines()
    if len(ta) <= 3 and len(tb) <= 3 and max(map(len, ta + tb), default=0) > 400:
        # one long line (minified JSON/HTML): split it so the diff shows where it differs
        ta = re.split(r"(?<=[,>}])", "\n".join(ta))
        tb = re.split(r"(?<=[,>}])", "\n".join(tb))
    out = [
        (line[:240] + " [...]" if len(line) > 240 else line)
        for line in difflib.unified_diff(ta, tb, f"A/{name}", f"B/{name}", n=1, lineterm="")
    ]
    if len(out) > limit:
        out = [*out[:limit], f"... ({len(out) - limit} more diff lines)"]
    return out


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("a", type=Path)
    ap.add_argument("b", type=Path)
    ap.add_argument("--raw", action="store_true", help="no normalisation")
    ap.add_argument("--lines", type=int, default=24, help="diff lines shown per file")
    args = ap.parse_args()
    pa = [] if args.raw else rules_for(args.a)
    pb = [] if args.raw else rules_for(args.b)
    fa, fb = files(args.a), files(args.b)
    common = sorted(fa & fb)
    differing: dict[str, list[str]] = {}
    for rel in common:
        da, db = (args.a / rel).read_bytes(), (args.b / rel).read_bytes()
        if da == db:
            continue
        na, nb = (da, db) if args.raw else (normalise(da, pa), normalise(db, pb))
        if na != nb:
            differing.setdefault(case_of(rel), []).append(rel)
    only_a, only_b = sorted(fa - fb), sorted(fb - fa)
    cases = {case_of(r) for r in fa | fb}
    print(
        f"compared {len(common)} files ({len(cases)} cases): {sum(map(len, differing.values()))} files in "
        f"{len(differing)} cases differ; {len(only_a)} only in A, {len(only_b)} only in B"
        + (" [raw]" if args.raw else "")
    )
    for case, rels in sorted(differing.items()):
        print(f"\n=== {case}  ({', '.join(r[len(case) :] or r for r in rels)})")
        for rel in rels:
            da, db = (args.a / rel).read_bytes(), (args.b / rel).read_bytes()
            if not args.raw:
                da, db = normalise(da, pa), normalise(db, pb)
            print("\n".join(short_diff(da, db, rel, args.lines)))
    for label, rels in (("only in A", only_a), ("only in B", only_b)):
        if rels:
            print(f"\n=== {label}: {len(rels)} files")
            print("\n".join(f"  {r}" for r in rels[:50]) + ("\n  ..." if len(rels) > 50 else ""))
    return 1 if differing or only_a or only_b else 0


if __name__ == "__main__":
    sys.exit(main())
