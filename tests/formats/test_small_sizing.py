"""The small path's id matrices are rows x the longest id: a file whose one long id would make them many
times its size steps aside to the streaming readers (memory by total bytes; measured by
benchmarks/small_path_memory.py), with the same numbers. A small file with a long id stays on it."""

from __future__ import annotations

from pathlib import Path

import pytest

from qrelkit.errors import StepAside
from qrelkit.evaluation.core import evaluate
from qrelkit.evaluation.files import evaluate_files
from qrelkit.formats import read_qrels, read_run
from qrelkit.formats.trec.small import MAX_COLUMN_BYTES_RATIO, read_columns


def _write(folder: Path, long_id: bool, rows: int = 30_000) -> tuple[Path, Path]:
    qrels = folder / "qrels.txt"
    qrels.write_text("".join(f"q{q} 0 d{q}-{d} {d % 3}\n" for q in range(30) for d in range(20)))
    lines = [f"q{i % 30} Q0 d{i % 30}-{i // 30} {i // 30 + 1} {1000 - i // 30}.25 sys\n" for i in range(rows)]
    lines.sort(key=lambda line: int(line.split()[0][1:]))  # grouped by query
    if long_id:
        lines[0] = lines[0].replace(lines[0].split()[2], "L" * 512)
    run = folder / ("long.run" if long_id else "short.run")
    run.write_text("".join(lines))
    return qrels, run


def test_one_long_id_among_many_rows_steps_aside_with_the_same_numbers(tmp_path: Path) -> None:
    qrels, long_run = _write(tmp_path, True)
    text = long_run.stat().st_size
    assert MAX_COLUMN_BYTES_RATIO * text + (1 << 20) < 30_000 * (3 + 512)  # the matrices the file would need
    with pytest.raises(StepAside):
        read_columns(long_run, "run")
    got = evaluate_files(qrels, [long_run], ["nDCG@10", "AP"])
    assert got.runs[0].meta["reader"] != "small"
    # the same numbers as the robust reader's, read independently of both fast paths
    robust = evaluate(
        read_qrels(qrels, reader="robust"), [read_run(long_run, reader="robust")], ["nDCG@10", "AP"]
    )
    assert got.per_query.equals(robust.per_query)
    assert got.mean("AP") == robust.mean("AP")


def test_a_short_file_with_a_long_id_stays_on_the_small_path(tmp_path: Path) -> None:
    qrels, run = _write(tmp_path, True, rows=300)
    assert evaluate_files(qrels, [run], ["nDCG@10"]).runs[0].meta["reader"] == "small"
