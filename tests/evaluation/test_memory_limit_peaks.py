"""``--memory-limit`` holds on every route of ``qrelkit eval``: a child's peak resident memory
(``getrusage`` of a parent of its own) stays within 10% of the smallest limit qrelkit accepts for the
files, on a run streamed (a measure with a cutoff), sorted on disk by DuckDB (a measure needing every row)
and read whole by its format's reader (JSONL); a limit below that smallest one is refused before anything
is read, naming it.

Each run is sized to take its route at that limit (held whole, it would pass the limit), so each case reads
a million lines or so: about 5-15 s each, marked slow."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.slow

MEASURE = (
    "import resource, subprocess, sys\n"
    "proc = subprocess.run(sys.argv[1:], capture_output=True, text=True)\n"
    "sys.stderr.write(proc.stderr)\n"
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss)\n"  # KiB on Linux
    "sys.exit(proc.returncode)\n"
)


def _peak(*args: str) -> tuple[subprocess.CompletedProcess[str], int]:
    """(the finished child, its peak resident memory in bytes)."""
    command = [sys.executable, "-c", MEASURE, sys.executable, "-m", "qrelkit", *args]
    proc = subprocess.run(command, capture_output=True, text=True, timeout=600)
    return proc, int(proc.stdout.split()[-1]) * 1024


def _files(tmp: Path, queries: int, depth: int, jsonl: bool = False) -> tuple[Path, Path]:
    """Judgments (20 a query) and a run of ``depth`` documents a query, its lines in no query's order."""
    qrels = tmp / "q.qrels"
    qrels.write_text(
        "".join(f"q{q} 0 doc-{q}-{d} {d % 3}\n" for q in range(queries) for d in range(0, 40, 2))
    )
    order = sorted(range(queries * depth), key=lambda i: (i * 7919) % (queries * depth))
    if jsonl:
        run = tmp / "r.jsonl"
        lines = (
            json.dumps(
                {
                    "query_id": f"q{i // depth}",
                    "doc_id": f"doc-{i // depth}-{i % depth}",
                    "score": 1000.0 - i % depth,
                }
            )
            for i in order
        )
    else:
        run = tmp / "r.run"
        lines = (
            f"q{i // depth} Q0 doc-{i // depth}-{i % depth} {i % depth + 1} {1000 - i % depth} r"
            for i in order
        )
    run.write_text("\n".join(lines) + "\n")
    return qrels, run


def _smallest(proc: subprocess.CompletedProcess[str]) -> int:
    """The smallest limit a refusal names, in bytes."""
    found = re.search(r"give --memory-limit (\d+)MB or more", proc.stderr)
    assert found, proc.stderr
    return int(found.group(1)) * 1_000_000


@pytest.mark.parametrize(
    ("route", "measure", "queries", "depth", "jsonl"),
    [
        ("streamed", "nDCG@10", 1000, 1000, False),
        ("sorted on disk", "AP", 1500, 1000, False),
        ("read whole as JSONL", "nDCG@10", 500, 1000, True),
    ],
)
def test_the_peak_stays_within_the_smallest_limit(tmp_path, route, measure, queries, depth, jsonl) -> None:
    qrels, run = _files(tmp_path, queries, depth, jsonl)
    out = tmp_path / "out.tsv"
    base = ["eval", str(qrels), str(run), "-m", measure, "-f", "tsv", "-o", str(out)]
    refused, small_peak = _peak(*base, "--memory-limit", "100MB")
    assert refused.returncode == 2, refused.stderr
    assert small_peak < 200 << 20  # refused before reading: the interpreter and its libraries only
    limit = _smallest(refused)
    if route == "sorted on disk":
        assert "sorted on disk by DuckDB" in refused.stderr, refused.stderr
    if route == "read whole as JSONL":
        assert "a JSONL run is read whole" in refused.stderr, refused.stderr
    proc, peak = _peak(*base, "--memory-limit", str(limit))
    assert proc.returncode == 0, proc.stderr
    assert peak <= 1.1 * limit, (route, peak, limit)
    # the route is taken because the run, held whole (8 bytes a byte of its text), would pass the limit
    if not jsonl:
        assert 8 * run.stat().st_size > limit - (128 << 20), (run.stat().st_size, limit)
