"""The command line with judgments and queries named by dataset (``irds:ID``), through the real ir_datasets
package, offline: the TREC DL 2019 passage judgments and topics of tests/data/trec are placed in ir_datasets'
home folder as a user who downloaded them has them (see tests/formats/test_irds.py). Each command runs as
a real process, since ir_datasets fixes its folders when first imported."""

from __future__ import annotations

import json
import random
import sqlite3
from pathlib import Path

import pytest

from ..conftest import CLI, data_path
from ..formats.test_irds import DL19, env_for, home  # noqa: F401  (the fixture)

pytest.importorskip("ir_datasets")

QRELS = data_path("trec", "qrels.dl19-passage.txt")
RUBRIC = Path(__file__).resolve().parents[1] / "app" / "fixtures" / "rubric.toml"


def write_run(path: Path, name: str, seed: int) -> Path:
    """A run over the DL 2019 queries: each query's judged passages in a seeded order with seeded scores,
    and two passages nobody judged, scored below them."""
    rng = random.Random(seed)
    docs: dict[str, list[str]] = {}
    for line in QRELS.read_text().splitlines():
        query, _, doc, _ = line.split()
        docs.setdefault(query, []).append(doc)
    lines = []
    for query, ids in docs.items():
        ranked = rng.sample(ids, min(len(ids), 60))
        lines += [f"{query} Q0 {d} {r} {rng.uniform(0, 20):.4f} {name}" for r, d in enumerate(ranked, 1)]
        lines += [f"{query} Q0 unjudged-{query}-{i} {61 + i} {-1 - i} {name}" for i in range(2)]
    path.write_text("\n".join(lines) + "\n")
    return path


def test_eval_by_name_equals_eval_of_the_file(home: Path, tmp_path: Path) -> None:  # noqa: F811
    run = write_run(tmp_path / "bm25.run", "bm25", 1)
    measures = ["-m", "nDCG@10", "-m", "AP(rel=2)", "-m", "RR(rel=2)", "-m", "Judged@10"]
    by_name = CLI.process("eval", f"irds:{DL19}", run, *measures, "-q", "-f", "json", env=env_for(home))
    by_file = CLI.process("eval", QRELS, run, *measures, "-q", "-f", "json", env=env_for(home))
    assert by_name.returncode == 0 and by_file.returncode == 0, by_name.stderr + by_file.stderr
    named, filed = json.loads(by_name.stdout), json.loads(by_file.stdout)
    assert named["results"] == filed["results"]  # every mean and every query's value, to the last bit
    assert len(named["results"]["per_query"]["bm25"]) == 43
    assert named["qrels"]["fingerprint"]["sha256"] == filed["qrels"]["fingerprint"]["sha256"]
    assert named["qrels"]["name"] == f"irds:{DL19}"
    dataset = named["qrels"]["dataset"]
    assert dataset["id"] == DL19
    assert [f["path"] for f in dataset["files"]] == ["msmarco-passage/trec-dl-2019/qrels"]
    assert "dataset" not in filed["qrels"]
    assert named["reading"]["judgments"] == f"irds:{DL19}"
    assert "small" not in named["reading"]["readers"]


def test_compare_and_report_by_name(home: Path, tmp_path: Path) -> None:  # noqa: F811
    a, b = write_run(tmp_path / "a.run", "a", 2), write_run(tmp_path / "b.run", "b", 3)
    by_name = CLI.process("compare", f"irds:{DL19}", a, b, "-m", "nDCG@10", "-f", "json", env=env_for(home))
    by_file = CLI.process("compare", QRELS, a, b, "-m", "nDCG@10", "-f", "json", env=env_for(home))
    assert by_name.returncode == 0 and by_file.returncode == 0, by_name.stderr + by_file.stderr
    named, filed = json.loads(by_name.stdout), json.loads(by_file.stdout)
    assert named["comparison"] == filed["comparison"]  # means, differences, intervals, p-values
    assert named["qrels"]["dataset"]["id"] == DL19
    report = CLI.process("report", f"irds:{DL19}", a, b, "-o", tmp_path / "r.html", env=env_for(home))
    assert report.returncode == 0, report.stderr
    assert f"irds:{DL19}" in (tmp_path / "r.html").read_text()


def test_a_dataset_not_downloaded_is_one_line_and_exit_1(home: Path, tmp_path: Path) -> None:  # noqa: F811
    run = write_run(tmp_path / "bm25.run", "bm25", 1)
    done = CLI.process("eval", "irds:msmarco-passage/trec-dl-2020/judged", run, env=env_for(home))
    assert done.returncode == 1
    assert done.stdout == ""
    (line,) = done.stderr.strip().splitlines()
    assert "Traceback" not in done.stderr
    assert line.startswith("qrelkit: error: irds:msmarco-passage/trec-dl-2020/judged: the qrels of dataset")
    assert "ir_datasets export msmarco-passage/trec-dl-2020/judged qrels" in line


def test_a_dataset_name_as_diversity_judgments_is_refused(home: Path, tmp_path: Path) -> None:  # noqa: F811
    run = write_run(tmp_path / "bm25.run", "bm25", 1)
    done = CLI.process("eval", f"irds:{DL19}", run, "--diversity", env=env_for(home))
    assert done.returncode == 2
    assert "--diversity reads a file of diversity judgments, not a dataset name" in done.stderr


def test_judge_init_with_queries_by_name(home: Path, tmp_path: Path) -> None:  # noqa: F811
    run = write_run(tmp_path / "bm25.run", "bm25", 4)
    pool = tmp_path / "pool.jsonl"
    pooled = CLI.process("pool", run, "--depth", "2", "--calibration", "3", "-o", pool, env=env_for(home))
    assert pooled.returncode == 0, pooled.stderr
    pairs = [json.loads(line) for line in pool.read_text().splitlines()]
    docs = tmp_path / "docs.jsonl"
    docs.write_text("".join(
        json.dumps({"doc_id": d, "title": d, "text": f"passage {d}"}) + "\n"
        for d in sorted({p["doc_id"] for p in pairs})
    ))  # fmt: skip
    db = tmp_path / "project.db"
    done = CLI.process("judge", "init", db, "--rubric", RUBRIC, "--pool", pool, "--docs", docs,
                       "--queries", f"irds:{DL19}", "--labellers", "alice,bob", "--seed", "1",
                       env=env_for(home))  # fmt: skip
    assert done.returncode == 0, done.stderr
    topics = dict(
        line.split("\t", 1) for line in data_path("trec", "topics.dl19-passage.txt").read_text().splitlines()
    )
    with sqlite3.connect(db) as conn:
        stored = dict(conn.execute("SELECT query_id, text FROM queries").fetchall())
        record = json.loads(
            conn.execute("SELECT value FROM meta WHERE key = 'queries_dataset'").fetchone()[0]
        )
    assert stored == {q: " ".join(topics[q].split()) for q in {p["query_id"] for p in pairs}}
    assert record["id"] == DL19 and record["entity"] == "queries"
    assert "msmarco-passage/trec-dl-2019/queries.tsv" in [f["path"] for f in record["files"]]


def test_pool_against_judgments_by_name_records_the_dataset(home: Path, tmp_path: Path) -> None:  # noqa: F811
    run = write_run(tmp_path / "bm25.run", "bm25", 5)
    pool = tmp_path / "pool.jsonl"
    done = CLI.process("pool", run, "--depth", "3", "--calibration", "0", "--qrels", f"irds:{DL19}", "-o", pool,
                       env=env_for(home))  # fmt: skip
    assert done.returncode == 0, done.stderr
    meta = json.loads((tmp_path / "pool.meta.json").read_text())
    assert meta["existing_qrels"]["dataset"]["id"] == DL19
    # the run's top 3 of each query are judged passages (write_run puts the unjudged two last)
    assert all(json.loads(line)["judged"] for line in pool.read_text().splitlines())


def test_a_dataset_name_where_only_a_file_is_read(tmp_path: Path) -> None:
    """A run, and `qrelkit trec_eval`'s judgments (read as trec_eval reads them), are files only."""
    run = write_run(tmp_path / "bm25.run", "bm25", 1)
    fix = (
        "Fix: a dataset name (irds:ID) stands for judgments (eval, compare, report, pool --extend, ...) and for "
        "the queries of judge init and judge extend only; pass a file here"
    )
    as_run = CLI("eval", QRELS, "irds:msmarco-passage/trec-dl-2019/judged")
    assert as_run.exit_code == 1
    assert as_run.stderr.strip() == (
        f"qrelkit: error: irds:msmarco-passage/trec-dl-2019/judged: file not found. {fix}"
    )
    drop_in = CLI.process("trec_eval", f"irds:{DL19}", run)
    assert drop_in.returncode == 2  # trec_eval's code for a file it cannot read
    assert drop_in.stderr.strip() == f"qrelkit: error: irds:{DL19}: file not found. {fix}"


def test_memory_limit_counts_the_files_the_dataset_is_read_from(home: Path, tmp_path: Path) -> None:  # noqa: F811
    """--memory-limit's smallest limit counts the judgments' text: the same for the name as for the file
    ir_datasets reads (8.5 times its 187,092 bytes: 2 MB)."""
    run = write_run(tmp_path / "bm25.run", "bm25", 1)
    by_name = CLI.process(
        "eval", f"irds:{DL19}", run, "-m", "AP", "--memory-limit", "100MB", env=env_for(home)
    )
    by_file = CLI.process("eval", QRELS, run, "-m", "AP", "--memory-limit", "100MB", env=env_for(home))
    assert by_name.returncode == by_file.returncode == 2
    assert by_name.stderr == by_file.stderr
    assert "the judgments 2 MB" in by_name.stderr


def test_pool_extend_and_judge_extend_read_a_dataset_by_name(home: Path, tmp_path: Path) -> None:  # noqa: F811
    """A project pooled from a run whose only unjudged passages are in its first query: every other query's
    pairs were judged before pooling, so the project holds no text for them. A second run brings two
    unjudged passages per query: `pool --extend irds:ID` lists what `pool --extend` of the file lists, and
    `judge extend --queries irds:ID` takes the texts of the 42 queries the project lacks from the dataset."""
    env = env_for(home)
    lines = write_run(tmp_path / "a.run", "a", 4).read_text().splitlines()
    first = lines[0].split()[0]
    kept = [ln for ln in lines if "unjudged-" not in ln or ln.startswith(f"{first} ")]
    run_a = tmp_path / "a.run"
    run_a.write_text("\n".join(kept) + "\n")
    run_b = write_run(tmp_path / "b.run", "b", 5)
    run_b.write_text("".join(ln + "\n" for ln in run_b.read_text().splitlines() if "unjudged-" in ln))
    pool = tmp_path / "pool.jsonl"
    pooled = CLI.process("pool", run_a, "--depth", "62", "--calibration", "0", "--qrels", QRELS, "-o", pool,
                         env=env)  # fmt: skip
    assert pooled.returncode == 0, pooled.stderr
    docs = tmp_path / "docs.jsonl"
    queries = {line.split()[0] for line in lines}
    every = {json.loads(line)["doc_id"] for line in pool.read_text().splitlines()}
    every |= {f"unjudged-{q}-{i}" for q in queries for i in range(2)}
    docs.write_text(
        "".join(json.dumps({"doc_id": d, "title": d, "text": f"passage {d}"}) + "\n" for d in sorted(every))
    )
    db = tmp_path / "project.db"
    done = CLI.process("judge", "init", db, "--rubric", RUBRIC, "--pool", pool, "--docs", docs, "--queries",
                       f"irds:{DL19}", "--labellers", "alice,bob", "--seed", "1", "--no-calibration", env=env)  # fmt: skip
    assert done.returncode == 0, done.stderr
    with sqlite3.connect(db) as conn:
        assert [r[0] for r in conn.execute("SELECT query_id FROM queries")] == [first]

    by_name = CLI.process("pool", "--extend", f"irds:{DL19}", run_b, "--depth", "2", env=env)
    by_file = CLI.process("pool", "--extend", QRELS, run_b, "--depth", "2", env=env)
    assert by_name.returncode == 0 and by_file.returncode == 0, by_name.stderr + by_file.stderr
    assert by_name.stdout == by_file.stdout and len(by_name.stdout.splitlines()) == 2 * 43
    assert "gate" not in by_name.stderr  # a qrels file or dataset has no gate

    extended = CLI.process("judge", "extend", db, run_b, "--depth", "2", "--docs", docs, "--queries",
                           f"irds:{DL19}", env=env)  # fmt: skip
    assert extended.returncode == 0, extended.stderr
    assert "segment 2: 84 new pairs in 42 queries from b" in extended.stdout
    assert "texts added: 84 documents, 42 queries" in extended.stdout
    topics = dict(
        line.split("\t", 1) for line in data_path("trec", "topics.dl19-passage.txt").read_text().splitlines()
    )
    with sqlite3.connect(db) as conn:
        stored = dict(conn.execute("SELECT query_id, text FROM queries").fetchall())
    assert stored == {q: " ".join(topics[q].split()) for q in queries}
    missing = CLI.process("judge", "extend", db, run_b, "--queries", tmp_path / "nope.tsv", env=env)
    assert missing.returncode == 2 and "nope.tsv" in missing.stderr and "irds:ID" in missing.stderr
