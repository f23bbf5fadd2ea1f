"""Peak memory of reading one TREC run whole, by each reader, as whole processes in one invocation.

Each reader runs in a child process that imports qrelkit, reads the run with ``read_run`` and exits; the
kernel's accounting of the child (``ru_maxrss``) gives its peak resident memory. A child that only imports
the readers gives the floor (interpreter and libraries), so the table reports bytes a line above it and each
reader's ratio to the streaming reader:

* ``streaming``: ``read_run`` as the API calls it (the native scanner, else Arrow's parse);
* ``robust``: ``read_run(reader="robust")``, a good run read in chunks of whole lines;
* ``robust-whole``: the robust reader's whole-file reading (the one that words an error).

    python benchmarks/reader_memory.py --run benchmarks/data/7m/run00.run --lines 3000000 --repeat 3
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = {
    "floor": "import qrelkit.formats, qrelkit.formats.trec.robust, qrelkit.data.values",
    "streaming": "from qrelkit.formats import read_run; r = read_run(PATH, comments=COMMENTS)",
    "robust": "from qrelkit.formats import read_run; r = read_run(PATH, reader='robust', comments=COMMENTS)",
    "robust-whole": (
        "from qrelkit.formats.trec import robust; from qrelkit.data.values import finish_run\n"
        "raw, fp = robust.read_bytes(PATH); frame = robust.parse_run_text(raw, str(PATH), COMMENTS)\n"
        "r = finish_run(frame, fp, None, str(PATH), 'error', '--on-duplicate')"
    ),
}


#: Runs a child script (its argument) and prints the child's peak resident memory (kilobytes on Linux):
#: a fresh parent for each child, so that the peak is that child's alone.
WRAPPER = (
    "import resource, subprocess, sys\n"
    "subprocess.run([sys.executable, '-c', sys.argv[1]], check=True)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)"
)


def measure(code: str, path: Path, comments: bool) -> tuple[float, int]:
    """(wall seconds, peak RSS in bytes) of one child process running ``code``."""
    script = f"from pathlib import Path\nPATH = Path({str(path)!r})\nCOMMENTS = {comments}\n{code}\n"
    start = time.perf_counter()
    out = subprocess.run([sys.executable, "-c", WRAPPER, script], check=True, capture_output=True, text=True)
    return time.perf_counter() - start, int(out.stdout.split()[-1]) * 1024


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--run", type=Path, required=True, help="a TREC run file")
    parser.add_argument("--lines", type=int, default=None, help="read only its first N lines (a copy)")
    parser.add_argument("--comments", action="store_true", help="put a comment line first and skip it")
    parser.add_argument("--repeat", type=int, default=1)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        path = args.run
        if args.lines is not None or args.comments:
            path = Path(tmp) / "run.txt"
            with args.run.open("rb") as source, path.open("wb") as out:
                if args.comments:
                    out.write(b"# a comment line\n")
                for i, line in enumerate(source):
                    if args.lines is not None and i >= args.lines:
                        break
                    out.write(line)
        with path.open("rb") as handle:
            lines = sum(1 for _ in handle)
        results: dict[str, tuple[float, int]] = {}
        for name, code in CHILD.items():
            runs = [measure(code, path, args.comments) for _ in range(args.repeat)]
            results[name] = (statistics.median(w for w, _ in runs), statistics.median(m for _, m in runs))
    floor = results["floor"][1]
    stream = max(results["streaming"][1] - floor, 1)
    print(
        f"### {args.run.name}: {lines:,} lines{', one comment line first' if args.comments else ''}; median of {args.repeat}\n"
    )
    print("| reader | wall | peak RSS | bytes a line above the floor | / streaming |")
    print("|---|---|---|---|---|")
    for name in ("streaming", "robust", "robust-whole", "floor"):
        wall, peak = results[name]
        above = peak - floor
        ratio = "" if name == "floor" else f"{above / stream:.2f}x"
        print(f"| {name} | {wall:.2f} s | {peak / 2**20:,.0f} MB | {above / lines:,.0f} | {ratio} |")


if __name__ == "__main__":
    main()
