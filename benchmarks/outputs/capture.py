"""Capture qrelkit's outputs for a fixed list of cases, to compare two source trees byte for byte.

    python benchmarks/outputs/capture.py SRC_DIR OUT_DIR [--work DIR] [--harness-tree TREE] [--jobs N]
        [--only SUBSTRING]

SRC_DIR is a tree's ``src`` folder (e.g. this repository's src, or another checkout's src): every case runs
``<this interpreter> -m qrelkit ...`` with PYTHONPATH=SRC_DIR and cwd=REPO, the repository holding this file
(repo-relative paths for examples/ and tests/data/, absolute paths for the generated inputs in WORK/cases).

Per command-line case: OUT_DIR/<id>.out, .err, .rc, plus any file the case writes with -o (OUT_DIR/<id>.<ext>).
Per API case: OUT_DIR/api/<id>.json (floats as repr), OUT_DIR/api/<id>.err, OUT_DIR/api/<id>.rc.
OUT_DIR/_inputs.sha256: digests of every input file (compared too: both captures must read the same inputs).
OUT_DIR/_capture.json: paths, timings (not compared).
Compare two captures with diff.py. The inputs under WORK/cases come from gen_cases.py (run once; capture.py
runs it when the folder is missing). Capture both trees with the same WORK: the inputs' absolute paths appear
in some outputs (API specs, error messages), and are not normalised.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]  # cwd of every case: examples/ and tests/data/ are read from here
PY = sys.executable
HERE = Path(__file__).resolve().parent
WORK = Path(tempfile.gettempdir()) / "qrelkit-outputs"  # default --work: generated inputs and bytecode
TIMEOUT = 300
HARNESS_CASES = 60  # gen_cases.py writes seeds 0..59

E = "examples/docsearch"
QR = f"{E}/qrels.txt"
RUNS = [f"{E}/runs/{n}.run" for n in ("bm25", "dense", "hybrid", "rerank")]
NOISE = ["--noise-floor", f"{E}/judgments/alice.qrels", f"{E}/judgments/bob.qrels"]
MODEL, HUMAN = f"{E}/estimate/model.qrels", f"{E}/estimate/human.qrels"
RUBRIC = f"{E}/rubric.toml"
TE = "tests/data/trec_eval-tests"
TD = "tests/data/trec"

PROFILES = [
    "trec_eval",
    "trec_eval-c",
    "trec_eval-J",
    "trec_eval9",
    "pytrec_eval",
    "ir_measures",
    "ranx",
    "ranx-burges",
    "sklearn",
    "torchmetrics",
    "trectools",
    "gdeval",
]  # fmt: skip  (qrelkit eval --help)
TIES = ["average", "docid_desc", "docid_asc", "file_order", "optimistic", "pessimistic"]


def ms(*names: str) -> list[str]:
    return [a for n in names for a in ("-m", n)]


M4 = ms("nDCG@10", "R@100", "AP", "Judged@10")
MANY = ms(
    "P@5", "P@10", "P(rel=2)@10", "RR", "RR@10", "Rprec", "nDCG", "nDCG@5", "nDCG(gain=linear)@10", "ERR@10",
    "RBP", "NumRel", "NumRet", "NumRelRet", "R(rel=2)@100", "AP@100", "AP(rel=2)", "DCG@10", "Success@5",
    "Judged@5", "SetP", "SetF", "RBP(p=0.5)", "gm_map", "RBP_resid", "ERR",
)  # fmt: skip
TIE_ORDERED = ms("bpref", "infAP", "IPrec(recall=0.1)", "IPrec(recall=0.5)")  # refused under ties=average
MSETS = {"dflt": [], "m4": M4, "many": MANY}


@dataclass
class Case:
    id: str
    argv: list[str]  # after `python -m qrelkit`; "@OUT/" at the start of an argument names OUT_DIR
    env: dict[str, str] = field(default_factory=dict)
    api: dict | None = None  # an API case's spec (api_worker.py) instead of argv
    batch: list[tuple[str, dict]] | None = None  # several API calls in one process: (id, spec) pairs
    weight: float = 1.0  # rough cost, to start the slow ones first


def build_cases(cases_dir: Path) -> list[Case]:
    C = cases_dir  # generated inputs (gen_cases.py)
    cases: list[Case] = []
    ids: set[str] = set()

    def add(cid: str, argv: list[str], env: dict | None = None, weight: float = 1.0) -> None:
        assert cid not in ids, cid
        assert all(ch.isalnum() or ch in "._-+=" for ch in cid), cid
        ids.add(cid)
        cases.append(Case(cid, list(argv), dict(env or {}), None, weight=weight))

    def api(cid: str, spec: dict, weight: float = 2.0) -> None:
        cid = "api." + cid
        assert cid not in ids, cid
        ids.add(cid)
        cases.append(Case(cid, [], {}, spec, weight=weight))

    readers: list[tuple[str, dict]] = []  # read_run/read_qrels calls: stateless, batched (see the end)

    def api_read(cid: str, spec: dict, weight: float = 1.0) -> None:
        cid = "api." + cid
        assert cid not in ids, cid
        ids.add(cid)
        readers.append((cid, spec))

    # ------------------------------------------------------------------------------ general / help
    add("version", ["--version"])
    add("help", ["--help"])
    for cmd in ("eval", "compare", "report", "explain", "conventions", "trec_eval"):
        add(f"help.{cmd}", [cmd, "--help"])

    # ------------------------------------------------------------------------------ eval on docsearch
    fmts = [None, "table", "json", "tsv", "csv", "trec", "markdown", "html"]
    for mname, mset in MSETS.items():
        for f in fmts:
            add(f"eval.ds.{mname}.f-{f or 'none'}", ["eval", QR, *RUNS, *mset, *(["-f", f] if f else [])])
        for f in ("tsv", "json", "table", "csv"):
            add(f"eval.ds.{mname}.q.f-{f}", ["eval", QR, *RUNS, *mset, "-q", "-f", f])
        add(f"eval.ds.{mname}.per-query", ["eval", QR, *RUNS, *mset, "--per-query"])
    for mname in ("dflt", "m4"):
        for f in ("tsv", "json", "table", "markdown", "csv"):
            add(f"eval.ds.{mname}.bounds.f-{f}", ["eval", QR, *RUNS, *MSETS[mname], "--bounds", "-f", f])
        add(f"eval.ds.{mname}.bounds.q", ["eval", QR, *RUNS, *MSETS[mname], "--bounds", "-q", "-f", "json"])
        add(
            f"eval.ds.{mname}.no-bounds.table",
            ["eval", QR, *RUNS, *MSETS[mname], "--no-bounds", "-f", "table"],
        )
    for single in RUNS:
        name = Path(single).stem
        add(f"eval.ds.single-{name}.m4.q", ["eval", QR, single, *M4, "-q"])
    # every profile
    for p in PROFILES:
        for mname, mset in MSETS.items():
            add(f"eval.ds.profile-{p}.{mname}", ["eval", QR, *RUNS, "--profile", p, *mset])
        add(f"eval.ds.profile-{p}.m4.json", ["eval", QR, *RUNS, "--profile", p, *M4, "-f", "json"])
        add(f"eval.ds.profile-{p}.m4.q", ["eval", QR, *RUNS, "--profile", p, *M4, "-q"])
        if p in ("trec_eval", "trec_eval-J", "ranx", "gdeval", "pytrec_eval", "trectools"):
            add(f"eval.ds.profile-{p}.strict", ["eval", QR, *RUNS, "--profile", p, "--strict"])
    # ties
    for t in TIES:
        for mname in ("m4", "many"):
            add(f"eval.ds.ties-{t}.{mname}", ["eval", QR, *RUNS, "--ties", t, *MSETS[mname]])
        add(f"eval.ds.ties-{t}.m4.q", ["eval", QR, *RUNS, "--ties", t, *M4, "-q"])
        add(f"eval.ds.ties-{t}.tie-ordered.q", ["eval", QR, *RUNS, "--ties", t, *TIE_ORDERED, "-q"])
    # memory limit
    for lim in ("2GB", "500MB", "200MB", "1MB"):
        add(f"eval.ds.mem-{lim}.dflt", ["eval", QR, *RUNS, "--memory-limit", lim])
        add(f"eval.ds.mem-{lim}.m4.json", ["eval", QR, *RUNS, "--memory-limit", lim, *M4, "-f", "json"])
    add("eval.ds.mem-2GB.many.q", ["eval", QR, *RUNS, "--memory-limit", "2GB", *MANY, "-q"])
    add(
        "eval.ds.mem-2GB.profile-trec_eval.m4",
        ["eval", QR, *RUNS, "--memory-limit", "2GB", "--profile", "trec_eval", *M4],
    )
    add("eval.ds.mem-2GB.profile-gdeval", ["eval", QR, *RUNS, "--memory-limit", "2GB", "--profile", "gdeval"])
    add("eval.ds.mem-bogus", ["eval", QR, *RUNS, "--memory-limit", "lots"])
    # duplicates
    R = C / "readers"
    for od in ("error", "first", "last", "max"):
        add(
            f"eval.dup.run.{od}",
            ["eval", QR, str(R / "runs/duplicates.run"), "--on-duplicate", od, *M4, "-q"],
        )
        add(
            f"eval.dup.run.{od}.json",
            ["eval", QR, str(R / "runs/duplicates.run"), "--on-duplicate", od, "-f", "json"],
        )
        add(
            f"eval.dup.qrels.{od}",
            ["eval", str(R / "qrels/duplicates.qrels"), RUNS[0], "--on-duplicate", od, *M4, "-q"],
        )
        add(
            f"eval.dup.qrels-same.{od}",
            ["eval", str(R / "qrels/duplicates_same.qrels"), RUNS[0], "--on-duplicate", od, "-f", "json"],
        )
        add(f"eval.dup.clean.{od}", ["eval", QR, *RUNS, "--on-duplicate", od])
        add(
            f"eval.dup.run.{od}.mem",
            ["eval", QR, str(R / "runs/duplicates.run"), "--on-duplicate", od, "--memory-limit", "2GB", *M4],
        )
    for p in ("trec_eval", "pytrec_eval", "ranx", "ir_measures"):
        add(f"eval.dup.run.profile-{p}", ["eval", QR, str(R / "runs/duplicates.run"), "--profile", p, *M4])
    # comments
    for cm in ("--comments", "--no-comments", None):
        tag = cm.strip("-") if cm else "unset"
        extra = [cm] if cm else []
        add(f"eval.comments.run.{tag}", ["eval", QR, str(R / "runs/comments.run"), *extra, *M4, "-f", "json"])
        add(f"eval.comments.qrels.{tag}", ["eval", str(R / "qrels/comments.qrels"), RUNS[0], *extra, *M4])
        add(f"eval.comments.clean.{tag}", ["eval", QR, *RUNS, *extra])
        add(
            f"eval.comments.run.{tag}.profile-trec_eval",
            ["eval", QR, str(R / "runs/comments.run"), *extra, "--profile", "trec_eval", *M4],
        )
    # rubric
    add("eval.rubric.dflt", ["eval", QR, *RUNS, "--rubric", RUBRIC])
    add("eval.rubric.json", ["eval", QR, *RUNS, "--rubric", RUBRIC, "-f", "json"])
    add("eval.rubric.m4.q", ["eval", QR, *RUNS, "--rubric", RUBRIC, *M4, "-q"])
    add("eval.rubric.bounds", ["eval", QR, *RUNS, "--rubric", RUBRIC, "--bounds", "-f", "json"])
    add("eval.rubric.out-of-scale", ["eval", str(R / "qrels/out_of_rubric.qrels"), *RUNS, "--rubric", RUBRIC])
    add("eval.rubric.missing", ["eval", QR, *RUNS, "--rubric", f"{E}/nope.toml"])
    add(
        "eval.rubric.trec-dl",
        [
            "eval",
            f"{TD}/qrels.dl19-passage.txt",
            str(C / "trec/dl19-passage.run"),
            "--rubric",
            f"{E}/trec-dl-rubric.toml",
            "-f",
            "json",
        ],
    )
    add("eval.rubric.trec-dl-on-ds", ["eval", QR, *RUNS, "--rubric", f"{E}/trec-dl-rubric.toml"])
    # convention axes
    axes = {
        "gain-linear": ["--gain", "linear"], "gain-map": ["--gain", "{0:0,1:1,2:3,3:7}"],
        "discount-ln": ["--discount", "ln"], "discount-log10": ["--discount", "log10"],
        "ideal-returned": ["--ideal", "returned"], "unjudged-drop": ["--unjudged", "drop"],
        "precision-single": ["--precision", "single"], "negative-zero": ["--negative", "zero"],
        "missing-queries-skip": ["--missing-queries", "skip"], "extra-queries-reject": ["--extra-queries", "reject"],
        "no-relevant-skip": ["--no-relevant", "skip"], "no-relevant-one": ["--no-relevant", "one"],
        "no-relevant-skip_unretrieved": ["--no-relevant", "skip_unretrieved"],
        "mean-run_queries": ["--mean", "run_queries"], "cutoff-denominator-returned": ["--cutoff-denominator", "returned"],
        "missing-score-zero": ["--missing-score", "zero"], "counts-sum": ["--counts", "sum"],
        "max-grade-3": ["--max-grade", "3"], "persistence-0.5": ["--persistence", "0.5"],
        "rbp-gain-grade": ["--rbp-gain", "grade"], "rbp-residual-if_unjudged": ["--rbp-residual", "if_unjudged"],
        "iprec-truncate": ["--iprec-cutoff", "truncate", "--ties", "docid_desc", "-m", "IPrec(recall=0.3)"],
        "nonpositive-not_retrieved": ["--nonpositive", "not_retrieved"], "ap-denominator-retrieved": ["--ap-denominator", "retrieved"],
        "printed-decimals-4": ["--printed-decimals", "4"], "summation-numeric_order": ["--summation", "numeric_order"],
        "by-measure": ["--by-measure", "RR@k(ties=docid_asc)"],
    }  # fmt: skip
    for name, flags in axes.items():
        add(f"eval.ds.axis-{name}", ["eval", QR, *RUNS, *flags, *MANY, "-q"])
    add(
        "eval.ds.extra-queries-reject.unjudged",
        ["eval", QR, str(R / "runs/unjudged_query.run"), "--extra-queries", "reject"],
    )
    add("eval.ds.extra-queries.unjudged", ["eval", QR, str(R / "runs/unjudged_query.run"), "-f", "json"])
    add("eval.negative.reject", ["eval", str(R / "qrels/negative.qrels"), *RUNS, "--negative", "reject"])
    for neg in ("unjudged", "zero", "gain"):
        add(
            f"eval.negative.{neg}",
            ["eval", str(R / "qrels/negative.qrels"), *RUNS, "--negative", neg, *M4, "-q"],
        )
    # outputs written with -o (the file is captured as OUT_DIR/<id>.<ext>)
    for ext in ("json", "tsv", "csv", "md", "html", "trec", "txt"):
        cid = f"eval.ds.o-{ext}"
        add(cid, ["eval", QR, *RUNS, *M4, "-o", f"@OUT/{cid}.{ext}"])
    add("eval.ds.o-json.bounds", ["eval", QR, *RUNS, "--bounds", "-o", "@OUT/eval.ds.o-json.bounds.json"])
    add("eval.ds.o-json.q", ["eval", QR, *RUNS, "-q", "-o", "@OUT/eval.ds.o-json.q.json"])
    # errors
    add("eval.err.missing-qrels", ["eval", f"{E}/nope.txt", *RUNS])
    add("eval.err.missing-run", ["eval", QR, RUNS[0], f"{E}/runs/nope.run"])
    add("eval.err.bad-measure", ["eval", QR, *RUNS, "-m", "nDCG@ten"])
    add("eval.err.unknown-measure", ["eval", QR, *RUNS, "-m", "Foo@10"])
    add("eval.err.bad-measure-param", ["eval", QR, *RUNS, "-m", "nDCG(gain=cubic)@10"])
    add("eval.err.run-is-qrels", ["eval", QR, QR])
    add("eval.err.run-is-qrels-2", ["eval", QR, RUNS[0], f"{E}/judgments/alice.qrels"])
    add("eval.err.qrels-is-run", ["eval", RUNS[0], *RUNS])
    add("eval.err.same-run-twice", ["eval", QR, RUNS[0], RUNS[0]])
    add("eval.err.folder", ["eval", QR, f"{E}/runs"])
    add("eval.err.bad-profile", ["eval", QR, *RUNS, "--profile", "nope"])
    add("eval.err.bad-format", ["eval", QR, *RUNS, "-f", "xml"])
    add("eval.err.no-runs", ["eval", QR])
    add("eval.err.no-args", ["eval"])
    add("eval.err.diversity-measure", ["eval", QR, *RUNS, "-m", "alpha_nDCG@20"])
    add("eval.err.tie-ordered-average", ["eval", QR, *RUNS, *TIE_ORDERED])
    add("eval.err.o-bad-suffix", ["eval", QR, *RUNS, "-o", "@OUT/eval.err.o-bad-suffix.xyz"])
    add("eval.err.human-missing", ["eval", MODEL, *RUNS, "--human", f"{E}/estimate/nope.qrels"])

    # ------------------------------------------------------------------------------ eval --human
    for est in ("ppi++", "ppi", "human", "model"):
        add(f"eval.human.{est}", ["eval", MODEL, *RUNS, "--human", HUMAN, "--estimator", est])
        add(
            f"eval.human.{est}.json",
            ["eval", MODEL, *RUNS, "--human", HUMAN, "--estimator", est, *M4, "-f", "json"],
            weight=2,
        )
    add("eval.human.dflt.q", ["eval", MODEL, *RUNS, "--human", HUMAN, "-q"])
    add("eval.human.dflt.table", ["eval", MODEL, *RUNS, "--human", HUMAN, "-f", "table"])
    add("eval.human.dflt.markdown", ["eval", MODEL, *RUNS, "--human", HUMAN, "-f", "markdown"])
    add("eval.human.profile-trec_eval", ["eval", MODEL, *RUNS, "--human", HUMAN, "--profile", "trec_eval"])
    add("eval.model-only", ["eval", MODEL, *RUNS, *M4, "-q"])

    # ------------------------------------------------------------------------------ readers: layouts
    run_fixtures = sorted(p.name for p in (R / "runs").iterdir())
    for fx in run_fixtures:
        path = str(R / "runs" / fx)
        base = fx.replace(".run.gz", "-gz").replace(".run", "")
        add(f"rd.run.{base}.json", ["eval", QR, path, "-f", "json"])
        add(f"rd.run.{base}.all.q", ["eval", QR, path, "-m", "AP", "-m", "nDCG", "-m", "NumRet", "-q"])
        add(f"rd.run.{base}.native0.json", ["eval", QR, path, "-f", "json"], env={"QRELKIT_NATIVE": "0"})
        add(
            f"rd.run.{base}.mem.all",
            ["eval", QR, path, "-m", "AP", "-m", "nDCG@10", "--memory-limit", "2GB", "-f", "json"],
        )
        add(f"rd.run.{base}.trec_eval", ["trec_eval", "-q", "-m", "all_trec", QR, path])
        if base in (
            "clean",
            "spellings",
            "plus_scores",
            "bad_score",
            "nan_score",
            "inf_score",
            "bad_rank",
            "crlf",
        ):
            add(f"rd.run.{base}.trec_eval.parsing", ["trec_eval", "--trec-eval-parsing", QR, path])
        if "comments" in base or base in ("clean", "bom_start", "crlf"):
            add(f"rd.run.{base}.comments", ["eval", QR, path, "--comments", "-m", "AP", "-q"])
            add(
                f"rd.run.{base}.comments.native0",
                ["eval", QR, path, "--comments", "-m", "AP", "-q"],
                env={"QRELKIT_NATIVE": "0"},
            )
        if base in ("clean", "gzip-gz", "shuffled", "tabs"):
            add(
                f"rd.run.{base}.compare",
                ["compare", QR, RUNS[1], path, "-f", "json", "--permutations", "2000", "--bootstrap", "500"],
                weight=3,
            )
    qrels_fixtures = sorted(p.name for p in (R / "qrels").iterdir())
    for fx in qrels_fixtures:
        path = str(R / "qrels" / fx)
        base = fx.replace(".qrels.gz", "-gz").replace(".qrels", "")
        add(f"rd.qrels.{base}.json", ["eval", path, RUNS[0], "-f", "json"])
        add(f"rd.qrels.{base}.m4.q", ["eval", path, *RUNS, *M4, "-q"])
        add(f"rd.qrels.{base}.native0", ["eval", path, *RUNS, *M4], env={"QRELKIT_NATIVE": "0"})
        if base in ("clean", "comments", "duplicates", "q0_iteration", "round_iteration", "negative"):
            add(
                f"rd.qrels.{base}.profile-trec_eval",
                ["eval", path, *RUNS, "--profile", "trec_eval", "-f", "json"],
            )
        add(f"rd.qrels.{base}.trec_eval", ["trec_eval", "-q", "-m", "all_trec", path, RUNS[0]])
    # native scanner off for the main example too
    add("eval.ds.native0.dflt", ["eval", QR, *RUNS], env={"QRELKIT_NATIVE": "0"})
    add("eval.ds.native0.many.q", ["eval", QR, *RUNS, *MANY, "-q"], env={"QRELKIT_NATIVE": "0"})
    add("version.native0", ["--version"], env={"QRELKIT_NATIVE": "0"})

    # ------------------------------------------------------------------------------ tabular formats
    T = C / "tabular"
    for fmt in ("csv", "tsv", "jsonl", "parquet"):
        truns = [str(T / f"{n}.{fmt}") for n in ("bm25", "dense", "hybrid", "rerank")]
        add(f"tab.{fmt}.both", ["eval", str(T / f"qrels.{fmt}"), *truns, *M4, "-q"])
        add(f"tab.{fmt}.runs", ["eval", QR, *truns, "-f", "json"])
        add(f"tab.{fmt}.qrels", ["eval", str(T / f"qrels.{fmt}"), *RUNS])
        add(f"tab.{fmt}.native0", ["eval", str(T / f"qrels.{fmt}"), *truns, *M4], env={"QRELKIT_NATIVE": "0"})
        add(f"tab.{fmt}.mem", ["eval", str(T / f"qrels.{fmt}"), *truns, *M4, "--memory-limit", "2GB"])
    add("tab.csv-gz", ["eval", QR, str(T / "bm25.csv.gz"), *M4, "-q"])
    add("tab.forced-trec-on-csv", ["eval", QR, str(T / "bm25.csv"), "--input-format", "trec"])
    add("tab.forced-csv-on-trec", ["eval", QR, RUNS[0], "--input-format", "csv"])
    add("tab.bad-csv", ["eval", QR, str(T / "bad.csv")])
    add("tab.bad-jsonl", ["eval", QR, str(T / "bad.jsonl")])
    add(
        "tab.compare.parquet",
        [
            "compare",
            str(T / "qrels.parquet"),
            *[str(T / f"{n}.parquet") for n in ("bm25", "rerank")],
            "-f",
            "json",
        ],
        weight=3,
    )

    # ------------------------------------------------------------------------------ compare
    cmp_base = ["compare", QR, *RUNS]
    for f in ("json", "table", "markdown", "latex", "html"):
        add(f"compare.f-{f}", [*cmp_base, "-f", f], weight=3)
        add(f"compare.noise.f-{f}", [*cmp_base, *NOISE, "-f", f], weight=4)
    add("compare.dflt", cmp_base, weight=3)
    for f in ("json", "table", "markdown"):
        add(f"compare.human.f-{f}", ["compare", MODEL, *RUNS, "--human", HUMAN, "-f", f], weight=4)
        add(f"compare.bounds.f-{f}", [*cmp_base, "--bounds", "-f", f], weight=4)
    add("compare.no-bounds.table", [*cmp_base, "--no-bounds", "-f", "table"], weight=3)
    for t in ("t", "wilcoxon", "bootstrap", "randomization"):
        add(f"compare.test-{t}.json", [*cmp_base, "--test", t, *M4, "-f", "json"], weight=3)
    for corr in ("bonferroni", "bh", "none"):
        add(f"compare.correction-{corr}", [*cmp_base, "--correction", corr, "--family", "pairs"], weight=3)
    add("compare.all-pairs.json", [*cmp_base, "--all-pairs", "-f", "json"], weight=4)
    add("compare.baseline-rerank", [*cmp_base, "--baseline", "rerank", *M4], weight=3)
    add(
        "compare.permutations-exact",
        ["compare", QR, RUNS[2], RUNS[3], "--permutations", "exact", "-m", "nDCG@10", "-f", "json"],
        weight=3,
    )
    add(
        "compare.permutations-5000",
        [*cmp_base, "--permutations", "5000", "--seed", "7", "-f", "json"],
        weight=3,
    )
    add("compare.power", [*cmp_base, "--power", "-f", "json"], weight=3)
    add(
        "compare.multi-randomized",
        [*cmp_base, "--multi", "randomized-tukey", "--permutations", "2000", "-f", "json"],
        weight=5,
    )
    add("compare.profile-trec_eval", [*cmp_base, "--profile", "trec_eval", *M4, "-f", "json"], weight=3)
    add(
        "compare.noise.human.json",
        ["compare", MODEL, *RUNS, "--human", HUMAN, *NOISE, "-f", "json"],
        weight=4,
    )
    add("compare.o-json", [*cmp_base, *NOISE, "-o", "@OUT/compare.o-json.json"], weight=4)
    add("compare.o-html", [*cmp_base, *NOISE, "-o", "@OUT/compare.o-html.html"], weight=4)
    add("compare.err.one-run", ["compare", QR, RUNS[0]])
    add("compare.err.bad-baseline", [*cmp_base, "--baseline", "nope"])
    add(
        "compare.err.missing-noise",
        [*cmp_base, "--noise-floor", f"{E}/judgments/alice.qrels", f"{E}/nope.qrels"],
    )
    add(
        "compare.dup-max",
        ["compare", QR, RUNS[1], str(R / "runs/duplicates.run"), "--on-duplicate", "max", "-f", "json"],
        weight=3,
    )

    # ------------------------------------------------------------------------------ report
    rep = ["report", QR, *RUNS]
    add("report.plain", [*rep, "-o", "@OUT/report.plain.html"], weight=4)
    add("report.noise", [*rep, *NOISE, "-o", "@OUT/report.noise.html"], weight=5)
    add("report.human", ["report", MODEL, *RUNS, "--human", HUMAN, "-o", "@OUT/report.human.html"], weight=5)
    add("report.m4", [*rep, *M4, *NOISE, "-o", "@OUT/report.m4.html"], weight=5)
    add(
        "report.profile-trec_eval",
        [*rep, "--profile", "trec_eval", "-o", "@OUT/report.profile-trec_eval.html"],
        weight=4,
    )
    add(
        "report.baseline-rerank",
        [*rep, "--baseline", "rerank", "--test", "t", "-o", "@OUT/report.baseline-rerank.html"],
        weight=4,
    )
    add("report.rubric", [*rep, "--rubric", RUBRIC, *NOISE, "-o", "@OUT/report.rubric.html"], weight=5)
    add("report.err.no-output", rep)

    # ------------------------------------------------------------------------------ explain
    for run in RUNS:
        name = Path(run).stem
        for q in ("q01", "q05", "q15", "q27"):
            add(f"explain.{name}.{q}", ["explain", QR, run, "--query", q])
        add(f"explain.{name}.q01.json", ["explain", QR, run, "--query", "q01", "-f", "json"])
        add(
            f"explain.{name}.q15.ties-docid_desc",
            ["explain", QR, run, "--query", "q15", "--ties", "docid_desc"],
        )
    add("explain.rerank.q01.ndcg5", ["explain", QR, RUNS[3], "--query", "q01", "-m", "nDCG@5"])
    add("explain.rerank.q01.dcg20", ["explain", QR, RUNS[3], "--query", "q01", "-m", "DCG@20", "-f", "json"])
    add(
        "explain.rerank.q01.profile-trec_eval",
        ["explain", QR, RUNS[3], "--query", "q01", "--profile", "trec_eval"],
    )
    add("explain.rerank.q01.gain-linear", ["explain", QR, RUNS[3], "--query", "q01", "--gain", "linear"])
    add(
        "explain.dup.max",
        ["explain", QR, str(R / "runs/duplicates.run"), "--query", "q01", "--on-duplicate", "max"],
    )
    add("explain.err.unknown-query", ["explain", QR, RUNS[0], "--query", "q99"])
    add("explain.err.not-dcg", ["explain", QR, RUNS[0], "--query", "q01", "-m", "AP"])
    add(
        "explain.dl19",
        [
            "explain",
            f"{TD}/qrels.dl19-passage.txt",
            str(C / "trec/dl19-passage.run"),
            "--query",
            "1037798",
            "-f",
            "json",
        ],
    )

    # ------------------------------------------------------------------------------ conventions
    add("conventions.list", ["conventions", "--list"])
    add("conventions.list.json", ["conventions", "--list", "-f", "json"])
    add("conventions.list.tsv", ["conventions", "--list", "-f", "tsv"])
    for f in ("table", "json", "tsv"):
        add(f"conventions.ds.f-{f}", ["conventions", QR, *RUNS, "-f", f], weight=2)
    add("conventions.ds.ap", ["conventions", QR, *RUNS, "-m", "AP"], weight=2)
    add("conventions.ds.rr10", ["conventions", QR, *RUNS, "-m", "RR@10", "-f", "json"], weight=2)
    add("conventions.ds.base-trec_eval", ["conventions", QR, *RUNS, "--profile", "trec_eval"], weight=2)
    for a, b in (("trec_eval", "default"), ("pytrec_eval", "ir_measures"), ("ranx", "ranx-burges"),
                 ("sklearn", "trectools"), ("trec_eval", "trec_eval9"), ("torchmetrics", "default")):  # fmt: skip
        add(f"conventions.diff.{a}.{b}", ["conventions", QR, *RUNS, "--diff", a, b], weight=2)
        add(
            f"conventions.diff.{a}.{b}.json",
            ["conventions", QR, *RUNS, "--diff", a, b, "-f", "json"],
            weight=2,
        )
    add("conventions.err.diff-gdeval", ["conventions", QR, *RUNS, "--diff", "gdeval", "default"])
    add(
        "conventions.diff.ap.trec_eval.default",
        ["conventions", QR, *RUNS, "-m", "AP", "--diff", "trec_eval", "default"],
        weight=2,
    )
    add("conventions.err.diff-unknown", ["conventions", QR, *RUNS, "--diff", "trec_eval", "nope"])
    add(
        "conventions.dl19",
        ["conventions", f"{TD}/qrels.dl19-passage.txt", str(C / "trec/dl19-passage.run"), "-f", "json"],
        weight=2,
    )
    add(
        "conventions.dl19.diff",
        [
            "conventions",
            f"{TD}/qrels.dl19-passage.txt",
            str(C / "trec/dl19-passage.run"),
            "--diff",
            "trec_eval",
            "default",
        ],
        weight=2,
    )

    # ------------------------------------------------------------------------------ trec_eval's own suite
    official = {
        "out.test": [f"{TE}/qrels.test", f"{TE}/results.test"],
        "out.test.a": ["-m", "all_trec", f"{TE}/qrels.test", f"{TE}/results.test"],
        "out.test.aq": ["-m", "all_trec", "-q", f"{TE}/qrels.test", f"{TE}/results.test"],
        "out.test.aqc": ["-m", "all_trec", "-q", "-c", f"{TE}/qrels.test", f"{TE}/results.trunc"],
        "out.test.aql": ["-m", "all_trec", "-m", "relstring.20", "-q", "-l", "2", f"{TE}/qrels.rel_level", f"{TE}/results.test"],
        "out.test.meas_params": [
            "-q", "-m", "iprec_at_recall..10,.20,.25,.75,.50", "-m", "P.5,7,3", "-m", "recall.20,2000",
            "-m", "Rprec_mult.5.0,0.2,0.35", "-m", "utility.2,-1,0,0", "-m", "11pt_avg..25,.5,.75",
            "-m", "ndcg.1=3,2=9,4=4.5", "-m", "ndcg_cut.10,20,23.4", "-m", "success.2,5,20",
            f"{TE}/qrels.test", f"{TE}/results.test",
        ],
    }  # fmt: skip
    for name, args in official.items():
        add(f"te.suite.{name}", ["trec_eval", *args])
    flagsets = {
        "plain": [], "q": ["-q"], "all": ["-m", "all_trec"], "qall": ["-q", "-m", "all_trec"], "c": ["-c"],
        "J": ["-J"], "l2": ["-l", "2"], "M100": ["-M", "100"], "n": ["-n", "-q"], "qcJ": ["-q", "-c", "-J", "-m", "all_trec"],
        "set": ["-N", "5000", "-m", "set", "-m", "utility.2,-1,0,0"],
    }  # fmt: skip
    pairs = {
        "test": (f"{TE}/qrels.test", f"{TE}/results.test"),
        "rel_level": (f"{TE}/qrels.rel_level", f"{TE}/results.test"),
        "trunc": (f"{TE}/qrels.test", f"{TE}/results.trunc"),
    }
    for pname, (q, r) in pairs.items():
        for fname, flags in flagsets.items():
            add(f"te.suite.{pname}.{fname}", ["trec_eval", *flags, q, r])
        for prof in ("trec_eval", "trec_eval-c", None):
            ptag = prof or "default"
            pflags = ["--profile", prof] if prof else []
            add(f"eval.suite.{pname}.{ptag}", ["eval", q, r, *pflags])
            add(f"eval.suite.{pname}.{ptag}.many.q.json", ["eval", q, r, *pflags, *MANY, "-q", "-f", "json"])
        add(
            f"eval.suite.{pname}.trec_eval.native0",
            ["eval", q, r, "--profile", "trec_eval", *M4, "-q"],
            env={"QRELKIT_NATIVE": "0"},
        )
        add(
            f"te.suite.{pname}.qall.native0",
            ["trec_eval", "-q", "-m", "all_trec", q, r],
            env={"QRELKIT_NATIVE": "0"},
        )

    # ------------------------------------------------------------------------------ NIST qrels (DL, COVID)
    nist = {
        "dl19-passage": f"{TD}/qrels.dl19-passage.txt",
        "dl20-passage": f"{TD}/qrels.dl20-passage.txt",
        "dl19-doc": f"{TD}/qrels.dl19-doc.txt",
        "dl20-doc": f"{TD}/qrels.dl20-doc.txt",
        "covid-complete": f"{TD}/qrels.covid-complete.txt",
        "covid-round1": f"{TD}/qrels.covid-round1.txt",
        "covid-round2": f"{TD}/qrels.covid-round2.txt",
    }
    te_flags = {"plain": [], "q": ["-q"], "all": ["-m", "all_trec"], "c": ["-c"], "J": ["-J"], "l2": ["-l", "2"],
                "M100": ["-M", "100"], "qall": ["-q", "-m", "all_trec"]}  # fmt: skip
    nist_runs = [(n, q, str(C / f"trec/{n}.run")) for n, q in nist.items()]
    nist_runs.append(("dl19-passage.deep", nist["dl19-passage"], str(C / "trec/dl19-passage.deep.run")))
    for n, q, r in nist_runs:
        for fname, flags in te_flags.items():
            add(f"te.nist.{n}.{fname}", ["trec_eval", *flags, q, r])
        add(f"te.nist.{n}.c.l2.all", ["trec_eval", "-c", "-l", "2", "-m", "all_trec", q, r])
        for prof in ("trec_eval", None):
            ptag = prof or "default"
            pflags = ["--profile", prof] if prof else []
            add(f"eval.nist.{n}.{ptag}", ["eval", q, r, *pflags])
            add(f"eval.nist.{n}.{ptag}.many.q.json", ["eval", q, r, *pflags, *MANY, "-q", "-f", "json"])
        add(
            f"eval.nist.{n}.ties-docid_desc.tie-ordered",
            ["eval", q, r, "--ties", "docid_desc", *TIE_ORDERED, *M4],
        )
        add(f"eval.nist.{n}.mem", ["eval", q, r, "--memory-limit", "2GB", *M4, "-f", "json"])
    add("eval.nist.qrels-as-run", ["eval", nist["dl19-passage"], nist["dl19-passage"]])
    add("te.nist.qrels-as-run", ["trec_eval", nist["dl19-passage"], nist["dl19-passage"]])
    add(
        "eval.nist.covid-complete.negative-gain",
        ["eval", nist["covid-complete"], str(C / "trec/covid-complete.run"), "--negative", "gain", *M4, "-q"],
    )

    # ------------------------------------------------------------------------------ large runs (> 32 MB)
    B = C / "big"
    dlq = nist["dl19-passage"]
    big = {
        "plain": str(B / "dl19-big.run"),
        "gz": str(B / "dl19-big.run.gz"),
        "shufgz": str(B / "dl19-big-shuffled.run.gz"),
    }
    for bname, path in big.items():
        add(f"big.{bname}.dflt.json", ["eval", dlq, path, "-f", "json"], weight=3)
        add(f"big.{bname}.ap.json", ["eval", dlq, path, "-m", "AP", "-m", "nDCG", "-f", "json"], weight=5)
        add(
            f"big.{bname}.mem400.ap",
            ["eval", dlq, path, "-m", "AP", "--memory-limit", "400MB", "-q"],
            weight=6,
        )
        add(f"big.{bname}.mem300.ap", ["eval", dlq, path, "-m", "AP", "--memory-limit", "300MB"], weight=3)
        add(
            f"big.{bname}.mem200.dflt", ["eval", dlq, path, "--memory-limit", "200MB", "-f", "json"], weight=3
        )
        add(f"big.{bname}.trec_eval", ["trec_eval", "-q", "-c", dlq, path], weight=5)
        add(
            f"big.{bname}.native0.dflt",
            ["eval", dlq, path, *M4[:2], "-q"],
            env={"QRELKIT_NATIVE": "0"},
            weight=5,
        )
    add("big.plain.dup-max.ap", ["eval", dlq, big["plain"], "--on-duplicate", "max", "-m", "AP"], weight=5)
    add(
        "big.plain.profile-trec_eval",
        ["eval", dlq, big["plain"], "--profile", "trec_eval", "-f", "json"],
        weight=5,
    )

    # ------------------------------------------------------------------------------ differential harness cases
    H = C / "harness"
    for folder in sorted(H.iterdir())[:HARNESS_CASES]:
        q, r = str(folder / "qrels"), str(folder / "run")
        info = json.loads((folder / "flags.json").read_text())
        s = folder.name
        add(f"h.{s}.te.qall", ["trec_eval", "-q", "-m", "all_trec", q, r])
        add(f"h.{s}.eval.te.q.json", ["eval", "--profile", "trec_eval", "-q", "-f", "json", q, r])
        add(
            f"h.{s}.te.own", ["trec_eval", *info["flags"], q, r]
        )  # the case's own flags, as the harness runs it

    # ------------------------------------------------------------------------------ Python API
    api("surface", {"kind": "surface"}, weight=1)
    for tag, entry in (
        ("toplevel", "qrelkit.evaluate_files"),
        ("files", "qrelkit.evaluation.files.evaluate_files"),
    ):
        api(f"ef.{tag}.ds.dflt", {"kind": "evaluate_files", "entry": entry, "qrels": QR, "runs": RUNS})
    EF = "qrelkit.evaluation.files.evaluate_files"

    def ef(cid, qrels, runs, measures=None, profile=None, **kw):
        api(f"ef.{cid}", {"kind": "evaluate_files", "entry": EF, "qrels": qrels, "runs": runs,
                          "measures": measures, "profile": profile, "kwargs": kw})  # fmt: skip

    def names(flags):
        return flags[1::2]

    ef("ds.m4", QR, RUNS, names(M4))
    ef("ds.many", QR, RUNS, names(MANY))
    ef("ds.many.mem2GB", QR, RUNS, names(MANY), memory_limit="2GB")
    ef("ds.m4.mem200MB", QR, RUNS, names(M4), memory_limit="200MB")
    for p in PROFILES:
        ef(f"ds.profile-{p}", QR, RUNS, names(M4), p)
    for od in ("error", "first", "last", "max"):
        ef(f"dup.{od}", QR, [str(R / "runs/duplicates.run")], names(M4), on_duplicate=od)
    ef("comments.true", QR, [str(R / "runs/comments.run")], names(M4), comments=True)
    ef("comments.false", QR, [str(R / "runs/comments.run")], names(M4), comments=False)
    ef("comments.profile", QR, [str(R / "runs/comments.run")], names(M4), "trec_eval")
    ef("rubric-scale", QR, RUNS, names(M4), scale=[0, 1, 2, 3])
    for fx in ("gzip.run.gz", "tabs.run", "crlf.run", "shuffled.run", "trailing_fields.run", "bom_start.run",
               "spellings.run", "blanklines.run", "multispace.run", "shuffled_gzip.run.gz", "vtab_ff.run"):  # fmt: skip
        ef(f"rd.{fx}", QR, [str(R / "runs" / fx)], names(M4))
    for fmt in ("csv", "tsv", "jsonl", "parquet"):
        ef(
            f"tab.{fmt}",
            str(T / f"qrels.{fmt}"),
            [str(T / f"{n}.{fmt}") for n in ("bm25", "rerank")],
            names(M4),
        )
    for n, q, r in nist_runs:
        ef(
            f"nist.{n}.trec_eval",
            q,
            [r],
            ["AP", "P@10", "nDCG", "nDCG@10", "RR", "Rprec", "bpref", "R@1000"],
            "trec_eval",
        )
        ef(f"nist.{n}.dflt", q, [r], names(M4))
    ef("suite.trec_eval", f"{TE}/qrels.test", [f"{TE}/results.test"], names(MANY), "trec_eval")
    ef("suite.rel_level.trec_eval", f"{TE}/qrels.rel_level", [f"{TE}/results.test"], names(MANY), "trec_eval")
    for bname, path in big.items():
        ef(f"big.{bname}.ap", dlq, [path], ["AP", "nDCG@10"])
        ef(f"big.{bname}.dflt.mem400", dlq, [path], None, memory_limit="400MB")
    ef("err.missing", QR, [f"{E}/runs/nope.run"])
    ef("err.run-is-qrels", QR, [QR])
    ef("err.bad-measure", QR, RUNS, ["nDCG@ten"])
    # in memory: read_qrels + read_run + evaluate
    api("inmem.ds.m4", {"kind": "evaluate_inmem", "qrels": QR, "runs": RUNS, "measures": names(M4)})
    api(
        "inmem.ds.many.trec_eval",
        {
            "kind": "evaluate_inmem",
            "qrels": QR,
            "runs": RUNS,
            "measures": names(MANY),
            "profile": "trec_eval",
        },
    )
    api(
        "inmem.dl19.m4",
        {
            "kind": "evaluate_inmem",
            "qrels": dlq,
            "runs": [str(C / "trec/dl19-passage.deep.run")],
            "measures": names(M4),
        },
    )
    # compare_files
    api("cf.ds.dflt", {"kind": "compare_files", "qrels": QR, "runs": RUNS}, weight=4)
    api(
        "cf.ds.m4.t",
        {"kind": "compare_files", "qrels": QR, "runs": RUNS, "measures": names(M4), "kwargs": {"test": "t"}},
        weight=4,
    )
    api(
        "cf.ds.trec_eval",
        {"kind": "compare_files", "qrels": QR, "runs": RUNS, "measures": names(M4), "profile": "trec_eval"},
        weight=4,
    )
    api(
        "cf.dup.max",
        {
            "kind": "compare_files",
            "qrels": QR,
            "runs": [RUNS[1], str(R / "runs/duplicates.run")],
            "kwargs": {"on_duplicate": "max"},
        },
        weight=4,
    )
    # readers one by one (auto and robust must agree; both recorded)
    for fx in run_fixtures:
        for reader in ("auto", "robust"):
            api_read(
                f"read_run.{fx}.{reader}",
                {"kind": "read_run", "path": str(R / "runs" / fx), "kwargs": {"reader": reader}},
                weight=1,
            )
        if "comments" in fx or fx.startswith(("clean", "crlf")):
            api_read(
                f"read_run.{fx}.comments",
                {"kind": "read_run", "path": str(R / "runs" / fx), "kwargs": {"comments": True}},
                weight=1,
            )
        if fx.startswith(("clean", "shuffled", "gzip", "tabs", "spellings")):
            api_read(
                f"read_run.{fx}.keep_top5",
                {"kind": "read_run", "path": str(R / "runs" / fx), "kwargs": {"keep_top": 5}},
                weight=1,
            )
    for od in ("first", "last", "max"):
        api_read(
            f"read_run.duplicates.run.{od}",
            {"kind": "read_run", "path": str(R / "runs/duplicates.run"), "kwargs": {"on_duplicate": od}},
            weight=1,
        )
        api_read(
            f"read_qrels.duplicates.qrels.{od}",
            {"kind": "read_qrels", "path": str(R / "qrels/duplicates.qrels"), "kwargs": {"on_duplicate": od}},
            weight=1,
        )
    for fx in qrels_fixtures:
        for reader in ("auto", "robust"):
            api_read(
                f"read_qrels.{fx}.{reader}",
                {"kind": "read_qrels", "path": str(R / "qrels" / fx), "kwargs": {"reader": reader}},
                weight=1,
            )
        if fx.startswith(("comments", "clean")):
            api_read(
                f"read_qrels.{fx}.comments",
                {"kind": "read_qrels", "path": str(R / "qrels" / fx), "kwargs": {"comments": True}},
                weight=1,
            )
    api_read(
        "read_qrels.scale",
        {
            "kind": "read_qrels",
            "path": str(R / "qrels/out_of_rubric.qrels"),
            "kwargs": {"scale": [0, 1, 2, 3]},
        },
        weight=1,
    )
    for n, q in nist.items():
        api_read(f"read_qrels.nist.{n}", {"kind": "read_qrels", "path": q}, weight=1)
    for fmt in ("csv", "tsv", "jsonl", "parquet"):
        api_read(f"read_run.tab.{fmt}", {"kind": "read_run", "path": str(T / f"bm25.{fmt}")}, weight=1)
        api_read(f"read_qrels.tab.{fmt}", {"kind": "read_qrels", "path": str(T / f"qrels.{fmt}")}, weight=1)
    for bname, path in big.items():
        api(f"read_run.big.{bname}", {"kind": "read_run", "path": path}, weight=5)
        api(
            f"read_run.big.{bname}.keep_top10",
            {"kind": "read_run", "path": path, "kwargs": {"keep_top": 10}},
            weight=4,
        )
    for i in range(0, len(readers), 15):
        chunk = readers[i : i + 15]
        cases.append(Case(f"api.batch-{i // 15:02d}", [], {}, None, batch=chunk, weight=3.0))
    return cases


# ---------------------------------------------------------------------------------------------------- running
def environment(src: Path, extra: dict[str, str], work: Path) -> dict[str, str]:
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.startswith(("QRELKIT_", "PYTHON", "POLARS_", "COLUMNS", "LINES"))
    }
    env.update(
        PYTHONPATH=str(src),
        PYTHONPYCACHEPREFIX=str(
            work / ".pycache"
        ),  # bytecode kept in WORK, not in either tree (nothing written there)
        # str hashing fixed, so any set iteration order is identical between runs (OUTCMP_HASHSEED=random
        # to check that nothing depends on it: a capture of another checkout's src so compared identical)
        PYTHONHASHSEED=os.environ.get("OUTCMP_HASHSEED", "0"),
        PYTHONUTF8="1",
        LC_ALL="C.UTF-8",
        TZ="UTC",
        COLUMNS="120",
        NO_COLOR="1",
        TERM="dumb",
    )
    env.update(extra)
    return env


def run_case(case: Case, src: Path, out: Path, work: Path) -> tuple[str, float, str, float]:
    t0 = time.monotonic()
    env = environment(src, case.env, work)
    if case.batch is not None:
        pairs = [[spec, str(out / "api" / f"{cid[4:]}.json")] for cid, spec in case.batch]
        argv = [PY, str(HERE / "api_worker.py"), json.dumps(pairs)]
        stem = out / "api" / case.id[4:]
    elif case.api is not None:
        target = out / "api" / f"{case.id[4:]}.json"
        argv = [PY, str(HERE / "api_worker.py"), json.dumps(case.api), str(target)]
        stem = out / "api" / case.id[4:]
    else:
        args = [str(out) + "/" + a[5:] if a.startswith("@OUT/") else a for a in case.argv]
        argv = [PY, "-m", "qrelkit", *args]
        stem = out / case.id
    out_path, err_path = Path(f"{stem}.out"), Path(f"{stem}.err")
    with open(out_path, "wb") as fo, open(err_path, "wb") as fe:
        p = subprocess.Popen(argv, cwd=REPO, env=env, stdin=subprocess.DEVNULL, stdout=fo, stderr=fe)
        killed: list[bool] = []
        timer = threading.Timer(TIMEOUT, lambda: (killed.append(True), p.kill()))
        timer.start()
        _, status, usage = os.wait4(p.pid, 0)  # this child's own CPU time, whatever else the machine runs
        timer.cancel()
        p.returncode = os.waitstatus_to_exitcode(status)
    rc = f"killed after {TIMEOUT}s" if killed else str(p.returncode)
    if (case.api is not None or case.batch is not None) and out_path.stat().st_size == 0:
        out_path.unlink()  # the API worker prints nothing: no .out file unless it did
    Path(f"{stem}.rc").write_text(rc + "\n")
    return case.id, time.monotonic() - t0, rc, usage.ru_utime + usage.ru_stime


def inputs_manifest(cases: list[Case], cases_dir: Path) -> str:
    """sha256 of every input file the cases name (in REPO: the example's and tests/data's files given as
    arguments; all of WORK/cases), so that a capture made after an input changed is told apart."""
    named: set[Path] = {p for p in cases_dir.rglob("*") if p.is_file()}
    for case in cases:
        specs = [case.api] if case.api else [spec for _, spec in case.batch or ()]
        words = list(case.argv)
        for spec in specs:
            words += [spec.get("qrels"), spec.get("path"), *spec.get("runs", [])]
        for w in words:
            if isinstance(w, str) and not w.startswith("-"):
                path = REPO / w  # relative to the cases' cwd; an absolute path stays itself
                if path.is_file():
                    named.add(path)
    lines = []
    for p in sorted(named):
        name = str(p.relative_to(REPO)) if p.is_relative_to(REPO) else str(p)
        lines.append(f"{hashlib.sha256(p.read_bytes()).hexdigest()}  {name}\n")
    return "".join(lines)


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("src", type=Path)
    ap.add_argument("out", type=Path)
    ap.add_argument(
        "--work", type=Path, default=WORK, help=f"generated inputs (WORK/cases) and bytecode (default {WORK})"
    )
    ap.add_argument(
        "--harness-tree",
        type=Path,
        default=REPO,
        help="the tree whose tests/crosscheck/trec_eval_harness.py generates the differential harness's cases "
        "(default this repository); used only when WORK/cases is generated",
    )
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--only", default=None, help="run only the cases whose id contains this")
    args = ap.parse_args()
    src, out, work = args.src.resolve(), args.out.resolve(), args.work.resolve()
    cases_dir = work / "cases"
    if not (src / "qrelkit" / "__init__.py").is_file():
        sys.exit(f"{src} has no qrelkit package")
    if not (src / "qrelkit/_native/_qkscan.so").is_file():
        print(
            f"warning: {src}/qrelkit/_native/_qkscan.so missing: the native scanner will be off",
            file=sys.stderr,
        )
    if not (cases_dir / "MANIFEST.sha256").is_file():
        gen = [PY, str(HERE / "gen_cases.py"), str(cases_dir), "--data-repo", str(REPO)]
        subprocess.run([*gen, "--harness-tree", str(args.harness_tree.resolve())], check=True)
    # the interpreter must take qrelkit from SRC_DIR, not from the venv's editable install
    where = subprocess.run(
        [PY, "-c", "import qrelkit; print(qrelkit.__file__)"], cwd=REPO, env=environment(src, {}, work),
        capture_output=True, text=True, check=True,
    ).stdout.strip()  # fmt: skip
    if Path(where).resolve() != (src / "qrelkit/__init__.py").resolve():
        sys.exit(f"qrelkit imports from {where}, not {src}")
    cases = build_cases(cases_dir)
    if args.only:
        cases = [c for c in cases if args.only in c.id]
    if out.exists():
        shutil.rmtree(out)
    (out / "api").mkdir(parents=True)
    (out / "_inputs.sha256").write_text(inputs_manifest(cases, cases_dir))
    t0 = time.monotonic()
    order = sorted(cases, key=lambda c: -c.weight)  # slow ones first
    timings: dict[str, float] = {}
    cpu: dict[str, float] = {}
    rcs: dict[str, object] = {}
    with ThreadPoolExecutor(args.jobs) as pool:
        for i, (cid, dt, rc, cpu_s) in enumerate(pool.map(lambda c: run_case(c, src, out, work), order), 1):
            timings[cid], rcs[cid], cpu[cid] = round(dt, 3), rc, round(cpu_s, 3)
            if i % 100 == 0:
                print(f"  {i}/{len(order)} cases, {time.monotonic() - t0:.0f}s", file=sys.stderr)
    total = time.monotonic() - t0
    meta = {
        "src": str(src),
        "out": str(out),
        "work": str(work),
        "qrelkit_from": where,
        "cases": sum(c.api is None and c.batch is None for c in cases)
        + sum(c.api is not None for c in cases)
        + sum(len(c.batch or ()) for c in cases),
        "cli_cases": sum(c.api is None and c.batch is None for c in cases),
        "api_cases": sum(c.api is not None for c in cases) + sum(len(c.batch or ()) for c in cases),
        "processes": len(cases),
        "seconds": round(total, 1),
        "cpu_seconds": round(sum(cpu.values()), 1),  # the cases' own CPU time (user + system)
        "started": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(time.time() - total)),
        "slowest": sorted(timings.items(), key=lambda kv: -kv[1])[:15],
        "timings": dict(sorted(timings.items())),
        "cpu": dict(sorted(cpu.items())),
    }
    (out / "_capture.json").write_text(json.dumps(meta, indent=1) + "\n")
    n_files = sum(1 for p in out.rglob("*") if p.is_file())
    nonzero = sum(1 for v in rcs.values() if v != "0")
    n_cases = meta["cli_cases"] + meta["api_cases"]
    print(f"captured {n_cases} cases ({meta['cli_cases']} CLI, {meta['api_cases']} API calls in {meta['api_cases'] and len(cases) - meta['cli_cases']} processes; {nonzero} exit non-zero) "
          f"into {out}: {n_files} files, {total:.1f}s wall, {meta['cpu_seconds']:.0f}s CPU in the cases")  # fmt: skip
    return 0


if __name__ == "__main__":
    sys.exit(main())
