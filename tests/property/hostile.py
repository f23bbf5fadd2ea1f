"""The hostile-input corpus: files that once brought a reader down (a traceback, a hang, a NaN mean, memory
without bound) or could, built in a folder by :func:`build`. Each entry is judgments and a run, one of them
hostile, the other clean; the tests feed every entry to every engine and every command that reads files."""

from __future__ import annotations

import gzip
import os
from pathlib import Path

QRELS = b"q1 0 d1 2\nq1 0 d2 0\nq1 0 d3 1\nq2 0 d4 3\nq2 0 d5 1\n"
RUN = (
    b"q1 Q0 d1 1 2.5 sys\nq1 Q0 d2 2 1.5 sys\nq1 Q0 d9 3 1.25 sys\n"
    b"q2 Q0 d5 1 0.75 sys\nq2 Q0 d4 2 0.5 sys\nq2 Q0 d6 3 -1 sys\n"
)

#: name -> (which file is hostile, its bytes); the FIFO and /dev/zero are added by :func:`build`.
HOSTILE_RUNS: dict[str, bytes] = {
    "nul at the start": b"\x00" * 4096,
    "nul after a line": RUN[:19] + b"\x00" + RUN[19:],
    "invalid utf-8": RUN + b"q2 Q0 d\xff 4 -2 sys\n",
    "a 2 MiB line": RUN + b"q2 Q0 " + b"x" * (2 << 20) + b" 4 -2 sys\n",
    "a 513-byte id": RUN + b"q2 Q0 " + b"y" * 513 + b" 4 -2 sys\n",
    "a NaN score": RUN + b"q2 Q0 d7 4 nan sys\n",
    "an infinite score": RUN + b"q2 Q0 d7 4 inf sys\n",
    "a rank past 64 bits": RUN + b"q2 Q0 d7 99999999999999999999 -2 sys\n",
    "five fields": RUN + b"q2 Q0 d7 4 -2\n",
    "empty": b"",
    "two tags": RUN + b"q2 Q0 d7 4 -2 other\n",
    "a document twice": RUN + b"q2 Q0 d5 4 -2 sys\n",
    "a gzip bomb": gzip.compress(b"\x00" * (80 << 20), 9),
}

HOSTILE_QRELS: dict[str, bytes] = {
    "grade 1024": QRELS + b"q2 0 d6 1024\n",
    "a fractional grade": QRELS + b"q2 0 d6 1.5\n",
    "a grade past 64 bits": QRELS + b"q2 0 d6 99999999999999999999\n",
    "nul in the judgments": QRELS[:10] + b"\x00" + QRELS[10:],
    "a judgment twice": QRELS + b"q1 0 d1 1\n",
    "three fields": QRELS + b"q2 0 d6\n",
}


def build(folder: Path) -> dict[str, tuple[Path, Path]]:
    """Write the corpus under ``folder``: name -> (judgments, run), one of the two hostile."""
    folder.mkdir(parents=True, exist_ok=True)
    good_qrels, good_run = folder / "good.qrels", folder / "good.run"
    good_qrels.write_bytes(QRELS)
    good_run.write_bytes(RUN)
    corpus: dict[str, tuple[Path, Path]] = {}
    for i, (name, data) in enumerate(HOSTILE_RUNS.items()):
        path = folder / (f"run{i}.run.gz" if data[:2] == b"\x1f\x8b" else f"run{i}.run")
        path.write_bytes(data)
        corpus[name] = (good_qrels, path)
    for i, (name, data) in enumerate(HOSTILE_QRELS.items()):
        path = folder / f"qrels{i}.qrels"
        path.write_bytes(data)
        corpus[name] = (path, good_run)
    fifo = folder / "fifo.run"
    os.mkfifo(fifo)  # no writer: opening it would block
    corpus["a FIFO with no writer"] = (good_qrels, fifo)
    corpus["/dev/zero"] = (good_qrels, Path("/dev/zero"))
    return corpus
