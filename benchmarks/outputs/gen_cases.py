"""Generate the fixed input files the capture runs on, once, into CASES_DIR (deterministic, seeded).

    python benchmarks/outputs/gen_cases.py CASES_DIR [--data-repo REPO] [--harness-tree TREE]

capture.py runs it into WORK/cases when that folder has no MANIFEST.sha256. --data-repo is the repository whose
examples/ and tests/data/ are rewritten (default: the one holding this file); --harness-tree is the tree whose
tests/crosscheck/trec_eval_harness.py generates the harness cases (default: the same repository).

Only the standard library is used (plus gzip), so the files do not depend on the qrelkit under test:
  cases/harness/<seed>/{qrels,run,flags.json}  tests/crosscheck/trec_eval_harness.case(seed), seeds 0..N-1
  cases/trec/<name>.run                      seeded runs for the NIST qrels in tests/data/trec (which has no runs)
  cases/readers/...                          the docsearch qrels/run rewritten in every layout the TREC readers
                                             distinguish (gzip, tabs, CRLF, comments, BOM, duplicates, faults...)
  cases/tabular/...                          the docsearch qrels/runs as CSV, TSV, JSONL (hand-written) and Parquet
  cases/big/...                              a run past the small path's 32 MB bound (streaming / DuckDB routes)
Re-running overwrites with identical bytes (check: cases/MANIFEST.sha256).
"""

from __future__ import annotations

import argparse
import gzip
import hashlib
import importlib.util
import json
import random
import sys
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
OUT = Path()  # CASES_DIR; DATA_REPO and HARNESS_REPO too are set from the command line in main()
DATA_REPO = REPO
HARNESS_REPO = REPO
HARNESS_CASES = 60


def write(path: Path, data: bytes | str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data.encode() if isinstance(data, str) else data)


def gz(data: bytes) -> bytes:
    return gzip.compress(data, compresslevel=6, mtime=0)  # mtime=0: identical bytes each time


# ------------------------------------------------------------------------------------ harness cases
def harness() -> None:
    spec = importlib.util.spec_from_file_location(
        "trec_eval_harness", HARNESS_REPO / "tests/crosscheck/trec_eval_harness.py"
    )
    mod = importlib.util.module_from_spec(spec)
    sys.modules["trec_eval_harness"] = mod  # dataclasses looks the module up
    spec.loader.exec_module(mod)
    for seed in range(HARNESS_CASES):
        c = mod.case(seed)
        folder = OUT / "harness" / f"{seed:03d}"
        c.write(folder)
        write(folder / "flags.json", json.dumps({"flags": list(c.flags), "fault": c.fault}) + "\n")


# ------------------------------------------------------------------------------- runs for NIST qrels
def read_qrels_by_query(path: Path) -> dict[str, list[str]]:
    out: dict[str, list[str]] = {}
    for line in path.read_text().splitlines():
        f = line.split()
        if len(f) >= 4:
            out.setdefault(f[0], []).append(f[2])
    return out


def generated_run(qrels: Path, seed: int, depth: tuple[int, int], tag: str) -> str:
    """Per judged query a mix of judged and unjudged documents, scores on a 0.1 grid (ties) with a few
    near-ties 1e-9 apart; about one judged query in ten left out; one run query nobody judged."""
    rng = random.Random(seed)
    lines = []
    for qid, docs in read_qrels_by_query(qrels).items():
        if rng.random() < 0.1:
            continue
        n = rng.randint(*depth)
        judged = rng.sample(docs, min(len(docs), int(n * rng.uniform(0.3, 0.9))))
        chosen = judged + [f"U{qid}x{i}" for i in range(n - len(judged))]
        rng.shuffle(chosen)
        scores = [round(rng.gauss(10, 3), 1) + (1e-9 if rng.random() < 0.05 else 0.0) for _ in chosen]
        order = sorted(range(len(chosen)), key=lambda i: -scores[i])
        lines += [f"{qid} Q0 {chosen[i]} {r} {scores[i]!r} {tag}" for r, i in enumerate(order, 1)]
    lines += [f"77777 Q0 orphan{i} {i + 1} {float(5 - i)!r} {tag}" for i in range(5)]
    return "\n".join(lines) + "\n"


TREC_QRELS = [
    "qrels.dl19-passage.txt",
    "qrels.dl20-passage.txt",
    "qrels.dl19-doc.txt",
    "qrels.dl20-doc.txt",
    "qrels.covid-complete.txt",
    "qrels.covid-round1.txt",
    "qrels.covid-round2.txt",
]


def trec_runs() -> None:
    for i, name in enumerate(TREC_QRELS):
        stem = name[len("qrels.") : -len(".txt")]
        q = DATA_REPO / "tests/data/trec" / name
        write(OUT / "trec" / f"{stem}.run", generated_run(q, 1000 + i, (1, 150), f"gen-{stem}"))
    # one run at a usual TREC depth (1000 per query)
    q = DATA_REPO / "tests/data/trec/qrels.dl19-passage.txt"
    write(OUT / "trec" / "dl19-passage.deep.run", generated_run(q, 2000, (900, 1000), "gen-deep"))


# ------------------------------------------------------------------------------ reader layout fixtures
def reader_fixtures() -> None:
    base_run = (DATA_REPO / "examples/docsearch/runs/bm25.run").read_bytes()
    base_qrels = (DATA_REPO / "examples/docsearch/qrels.txt").read_bytes()
    rl = base_run.decode().splitlines()
    ql = base_qrels.decode().splitlines()
    rng = random.Random(7)
    d = OUT / "readers"

    def run_text(lines, sep=" ", end="\n", final=True):
        s = end.join(sep.join(line.split(" ")) for line in lines)
        return s + (end if final else "")

    runs = {
        "clean": base_run,
        "gzip.run.gz": gz(base_run),
        "tabs": run_text(rl, "\t"),
        "multispace": "".join(f"  {'   '.join(line.split(' '))}  \n" for line in rl),
        "crlf": run_text(rl, end="\r\n"),
        "blanklines": "\n".join(line + ("\n" if i % 50 == 0 else "") for i, line in enumerate(rl)) + "\n\n",
        "trailing_fields": "".join(
            line + (" extra junk" if i % 3 == 0 else "") + "\n" for i, line in enumerate(rl)
        ),
        "comments": "# a comment line\n"
        + "".join(line + "\n" + ("#x Q0 y 1 1 c\n" if i % 97 == 0 else "") for i, line in enumerate(rl)),
        "bom_start": b"\xef\xbb\xbf" + base_run,
        "bom_later": base_run + "\ufeffq01 Q0 bomdoc 999 0.1 bm25\n".encode(),
        "no_final_newline": base_run.rstrip(b"\n"),
        "shuffled": run_text(rng.sample(rl, len(rl))),
        "reversed": run_text(rl[::-1]),
        "duplicates": run_text([*rl[:40], rl[3].replace("6.", "9.", 1), rl[10], *rl[40:]]),
        "spellings": run_text(
            [
                " ".join([*f[:4], ["+1", ".5", "5.", "-0.0", "1e-3", "2E2", "0x1p3", "7"][i % 8], *f[5:]])
                for i, f in enumerate(line.split(" ") for line in rl)
            ]
        ),
        "plus_scores": run_text(
            [" ".join([*f[:4], "+" + f[4], *f[5:]]) for f in (line.split(" ") for line in rl)]
        ),
        "nan_score": run_text([*rl[:5], rl[5].rsplit(" ", 2)[0] + " nan bm25", *rl[6:]]),
        "inf_score": run_text([*rl[:5], rl[5].rsplit(" ", 2)[0] + " inf bm25", *rl[6:]]),
        "bad_score": run_text([*rl[:5], rl[5].rsplit(" ", 2)[0] + " 1.5abc bm25", *rl[6:]]),
        "bad_rank": run_text([*rl[:5], " ".join([*rl[5].split(" ")[:3], "x", "1.0", "bm25"]), *rl[6:]]),
        "short_line": run_text([*rl[:7], "q01 Q0 shortdoc 1", *rl[7:]]),
        "two_tags": run_text(rl[:300] + [line.replace(" bm25", " other") for line in rl[300:]]),
        "nul_byte": base_run[:200] + b"\x00" + base_run[200:],
        "latin1": base_run + "q01 Q0 caf\xe9 999 0.1 bm25\n".encode("latin-1"),
        "nbsp_id": base_run + "q01 Q0 a\u00a0b 999 0.1 bm25\n".encode(),
        "cr_inside": base_run[:100] + b"\r" + base_run[100:],
        "long_id": base_run + f"q01 Q0 {'d' * 5000} 999 0.1 bm25\n".encode(),
        "unicode_ids": base_run + "q01 Q0 dokument-ü-東京 999 0.1 bm25\n".encode(),
        "empty": b"",
        "only_comments": b"# nothing\n# here\n",
        "unjudged_query": base_run + b"qzz Q0 x 1 1.0 bm25\nqzz Q0 y 2 0.5 bm25\n",
        "truncated_gzip.run.gz": gz(base_run)[:-40],
        "shuffled_gzip.run.gz": gz(run_text(rng.sample(rl, len(rl))).encode()),
        "crlf_gzip.run.gz": gz(run_text(rl, end="\r\n").encode()),
        "vtab_ff": run_text(rl, "\x0b").replace("\n", "\x0c\n", 5),
    }
    for name, data in runs.items():
        write(d / "runs" / (name if "." in name else f"{name}.run"), data)

    def q_text(lines, sep=" ", end="\n"):
        return end.join(sep.join(line.split(" ")) for line in lines) + end

    qrels = {
        "clean": base_qrels,
        "gzip.qrels.gz": gz(base_qrels),
        "tabs": q_text(ql, "\t"),
        "crlf": q_text(ql, end="\r\n"),
        "comments": "# judged by alice\n" + q_text(ql),
        "bom_start": b"\xef\xbb\xbf" + base_qrels,
        "duplicates": q_text([*ql[:20], ql[5].rsplit(" ", 1)[0] + " 3", *ql[20:]]),
        "duplicates_same": q_text([*ql[:20], ql[5], *ql[20:]]),
        "bad_grade": q_text([*ql[:3], ql[3].rsplit(" ", 1)[0] + " 1.5", *ql[4:]]),
        "out_of_rubric": q_text([*ql[:3], ql[3].rsplit(" ", 1)[0] + " 7", *ql[4:]]),
        "negative": q_text([*ql[:3], ql[3].rsplit(" ", 1)[0] + " -1", *ql[4:]]),
        "round_iteration": q_text(
            [" ".join([f[0], "4.5", f[2], f[3]]) for f in (line.split(" ") for line in ql)]
        ),
        "q0_iteration": q_text(
            [" ".join([f[0], "Q0", f[2], f[3]]) for f in (line.split(" ") for line in ql)]
        ),
        "five_fields": q_text([line + " extra" for line in ql]),
        "shuffled": q_text(rng.sample(ql, len(ql))),
        "empty": b"",
    }
    for name, data in qrels.items():
        write(d / "qrels" / (name if "." in name else f"{name}.qrels"), data)


def tabular() -> None:
    """CSV/TSV/JSONL by hand (columns query_id, doc_id, score / grade); Parquet with pyarrow when present."""
    d = OUT / "tabular"
    src = DATA_REPO / "examples/docsearch"
    runs = {
        p.stem: [line.split() for line in p.read_text().splitlines()]
        for p in sorted((src / "runs").glob("*.run"))
    }
    qrels = [line.split() for line in (src / "qrels.txt").read_text().splitlines()]
    for name, rows in runs.items():
        write(d / f"{name}.csv", "query_id,doc_id,score\n" + "".join(f"{r[0]},{r[2]},{r[4]}\n" for r in rows))
        write(
            d / f"{name}.tsv",
            "query_id\tdoc_id\tscore\n" + "".join(f"{r[0]}\t{r[2]}\t{r[4]}\n" for r in rows),
        )
        write(
            d / f"{name}.jsonl",
            "".join(
                json.dumps({"query_id": r[0], "doc_id": r[2], "score": float(r[4])}) + "\n" for r in rows
            ),
        )
    write(d / "qrels.csv", "query_id,doc_id,grade\n" + "".join(f"{r[0]},{r[2]},{r[3]}\n" for r in qrels))
    write(d / "qrels.tsv", "query_id\tdoc_id\tgrade\n" + "".join(f"{r[0]}\t{r[2]}\t{r[3]}\n" for r in qrels))
    write(
        d / "qrels.jsonl",
        "".join(json.dumps({"query_id": r[0], "doc_id": r[2], "grade": int(r[3])}) + "\n" for r in qrels),
    )
    write(d / "bm25.csv.gz", gz((d / "bm25.csv").read_bytes()))
    write(d / "bad.csv", "query_id,doc_id\nq01,a\n")
    write(d / "bad.jsonl", '{"query_id": "q01", "doc_id": "a", "score": 1.0}\n{not json\n')
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:
        return
    for name, rows in runs.items():
        table = pa.table(
            {
                "query_id": [r[0] for r in rows],
                "doc_id": [r[2] for r in rows],
                "score": [float(r[4]) for r in rows],
            }
        )
        pq.write_table(table, d / f"{name}.parquet", compression="none")
    table = pa.table(
        {
            "query_id": [r[0] for r in qrels],
            "doc_id": [r[2] for r in qrels],
            "grade": [int(r[3]) for r in qrels],
        }
    )
    pq.write_table(table, d / "qrels.parquet", compression="none")


def big() -> None:
    """A run past 32 MB (DL19 passage judgments: 43 queries (about 39 kept) x 24000 documents, about 39 MB), grouped by query,
    its gzip, and a shuffled gzip (ungrouped: sorted on disk by DuckDB when every row is needed)."""
    q = DATA_REPO / "tests/data/trec/qrels.dl19-passage.txt"
    text = generated_run(q, 3000, (24000, 24000), "gen-big").encode()
    write(OUT / "big" / "dl19-big.run", text)
    write(OUT / "big" / "dl19-big.run.gz", gz(text))
    lines = text.splitlines(keepends=True)
    random.Random(3001).shuffle(lines)
    write(OUT / "big" / "dl19-big-shuffled.run.gz", gz(b"".join(lines)))


def manifest() -> None:
    rows = []
    for p in sorted(OUT.rglob("*")):
        if p.is_file() and p.name != "MANIFEST.sha256":
            rows.append(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {p.relative_to(OUT)}\n")
    write(OUT / "MANIFEST.sha256", "".join(rows))


def main() -> None:
    global OUT, DATA_REPO, HARNESS_REPO
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("cases_dir", type=Path)
    ap.add_argument("--data-repo", type=Path, default=REPO)
    ap.add_argument("--harness-tree", type=Path, default=REPO)
    args = ap.parse_args()
    OUT, DATA_REPO, HARNESS_REPO = (
        args.cases_dir.resolve(),
        args.data_repo.resolve(),
        args.harness_tree.resolve(),
    )
    harness()
    trec_runs()
    reader_fixtures()
    tabular()
    big()
    manifest()
    print(f"wrote {sum(1 for p in OUT.rglob('*') if p.is_file())} files under {OUT}")


if __name__ == "__main__":
    main()
