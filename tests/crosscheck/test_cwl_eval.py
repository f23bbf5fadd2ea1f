"""The C/W/L family against the real cwl_eval (``cwl-eval`` 1.0.12), query by query, with ``==``.

cwl_eval reads gains in [0, 1] from its gain file and ranks each query's documents in the run file's order
(it reads neither the rank nor the score column). The runs here are real-looking: every query of the TREC
2019 Deep Learning passage judgments but three, 100 to 1,000 documents a query (judged ones and unjudged
ones), full-precision float scores, written by score descending. cwl_eval's gain file holds each grade over
3, the highest grade (``repr`` of the double, which cwl_eval's ``float`` reads back exactly); qrelkit
evaluates the same run with ``max_grade=3``, and scores no query that the run lacks, as cwl_eval reports
none. cwl_eval runs as its command line's ``main`` does (its ``TrecQrelHandler``, ``RankingMaker`` and the
metric classes, depth 1000), with the values taken at full precision rather than the four decimals it prints.
"""

from __future__ import annotations

import logging
from pathlib import Path

import numpy as np
import pytest

from qrelkit import Conventions, evaluate
from qrelkit.formats import read_qrels, read_run
from qrelkit.measures.profiles import PROFILES

QRELS = Path(__file__).resolve().parents[1] / "data" / "trec" / "qrels.dl19-passage.txt"

#: qrelkit's measure -> how cwl_eval's metric class is built
MEASURES = {
    "INST": ("INSTCWLMetric", (1.0,)),
    "INST(T=3)": ("INSTCWLMetric", (3.0,)),
    "INSQ": ("INSQCWLMetric", (1.0,)),
    "INSQ(T=2.5)": ("INSQCWLMetric", (2.5,)),
    "BPM@10": ("BPMCWLMetric", (1.0, 10)),
    "BPM(T=2)@20": ("BPMCWLMetric", (2.0, 20)),
    "BPM(T=3)@1000": ("BPMCWLMetric", (3.0, 1000)),
    "NERR8@10": ("NERReq8CWLMetric", (10,)),
    "NERR9@10": ("NERReq9CWLMetric", (10,)),
    "NERR9@100": ("NERReq9CWLMetric", (100,)),
    "NERR10": ("NERReq10CWLMetric", (0.9,)),
    "NERR10(p=0.5)": ("NERReq10CWLMetric", (0.5,)),
    "NERR11": ("NERReq11CWLMetric", (1.0,)),
    "NERR11(T=2)": ("NERReq11CWLMetric", (2.0,)),
    "SDCG@5": ("NDCGCWLMetric", (5,)),
    "SDCG@10": ("NDCGCWLMetric", (10,)),
}


def _write_inputs(tmp: Path, seed: int) -> tuple[Path, Path, Path]:
    """(qrels, cwl_eval's gain file, run) for one seed."""
    rng = np.random.default_rng(seed)
    judged: dict[str, dict[str, int]] = {}
    for line in QRELS.read_text().splitlines():
        q, _, d, g = line.split()
        judged.setdefault(q, {})[d] = int(g)
    gains = tmp / "gains.txt"
    gains.write_text("".join(f"{q} 0 {d} {g / 3!r}\n" for q, docs in judged.items() for d, g in docs.items()))
    lines = []
    queries = sorted(judged)
    for q in queries[3:]:  # three judged queries the run lacks
        n = int(rng.integers(100, 1001))
        pool = list(judged[q])
        take = [pool[i] for i in rng.permutation(len(pool))[: min(len(pool), int(rng.integers(n // 4, n)))]]
        docs = take + [f"u{q}_{i}" for i in range(n - len(take))]
        scores = rng.normal(size=len(docs)) + np.array([judged[q].get(d, 0) for d in docs]) * 0.7
        order = np.argsort(-scores, kind="stable")
        lines += [
            f"{q} Q0 {docs[i]} {r} {float(scores[i])!r} run\n" for r, i in enumerate(order.tolist(), start=1)
        ]
    run = tmp / "run.txt"
    run.write_text("".join(lines))
    qrels = tmp / "qrels.txt"
    qrels.write_text(QRELS.read_text())
    return qrels, gains, run


#: trec_eval's families under --profile cwl_eval -> cwl_eval's class
PROFILE_MEASURES = {
    "P@1": ("PrecisionCWLMetric", (1,)),
    "P@10": ("PrecisionCWLMetric", (10,)),
    "P@1000": ("PrecisionCWLMetric", (1000,)),
    "RR": ("RRCWLMetric", ()),
    "AP": ("APCWLMetric", ()),
    "RBP": ("RBPCWLMetric", (0.9,)),
    "RBP(persistence=0.5)": ("RBPCWLMetric", (0.5,)),
}


def _cwl_eval(gains: Path, run: Path, measures=MEASURES) -> dict[str, dict[str, float]]:
    """cwl_eval's values, query by query, as its ``main`` computes them (file order, depth 1000)."""
    from cwl.ruler import cwl_ruler
    from cwl.ruler.ranking import RankingMaker
    from cwl.seeker.trec_qrel_handler import TrecQrelHandler

    logging.getLogger("cwl").disabled = True
    qrh = TrecQrelHandler(str(gains))
    qrh.validate_gains(min_gain=0.0, max_gain=1.0)
    by_query: dict[str, list[str]] = {}
    for line in run.read_text().splitlines():
        q, _, d, *_ = line.split()
        by_query.setdefault(q, []).append(d)
    out: dict[str, dict[str, float]] = {m: {} for m in measures}
    for q, docs in by_query.items():
        maker = RankingMaker(q, qrh, None, max_gain=1.0, max_cost=1.0, min_cost=1.0, max_n=1000)
        for d in docs:
            maker.add(d, "_")
        ranking = maker.get_ranking()
        for name, (cls, args) in measures.items():
            out[name][q] = getattr(cwl_ruler, cls)(*args).measure(ranking)
    return out


@pytest.mark.parametrize("seed", [1, 2])
def test_cwl_family_equals_cwl_eval_to_the_bit(tmp_path, seed):
    pytest.importorskip("cwl")
    qrels_path, gains, run_path = _write_inputs(tmp_path, seed)
    theirs = _cwl_eval(gains, run_path)
    conv = Conventions(max_grade=3, missing_queries="skip", ties="file_order")
    res = evaluate(read_qrels(qrels_path), read_run(run_path), list(MEASURES), conv)
    compared = 0
    for measure, values in theirs.items():
        ours = res.values(measure)
        assert set(ours) == set(values), measure
        for q, want in values.items():
            assert ours[q] == want, (seed, measure, q, ours[q], want)
            compared += 1
    print(f"cwl_eval: {compared} values compared with == (seed {seed})")
    assert compared == len(MEASURES) * 40


def test_cwl_eval_profile_equals_cwl_eval_to_the_bit(tmp_path):
    """``--profile cwl_eval`` (with ``max_grade=3``, the gain file's scale) gives cwl_eval's own P@k, RR, AP
    and RBP over graded gains, and its C/W/L family, query by query with ``==``."""
    pytest.importorskip("cwl")
    qrels_path, gains, run_path = _write_inputs(tmp_path, 3)
    measures = PROFILE_MEASURES | MEASURES
    theirs = _cwl_eval(gains, run_path, measures)
    conv = PROFILES["cwl_eval"].conventions.with_(max_grade=3)
    res = evaluate(read_qrels(qrels_path), read_run(run_path), list(measures), conv)
    compared = 0
    for measure, values in theirs.items():
        ours = res.values(measure)
        assert set(ours) == set(values), measure
        for q, want in values.items():
            assert ours[q] == want, (measure, q, ours[q], want)
            compared += 1
    print(f"cwl_eval profile: {compared} values compared with ==")
    assert compared == len(measures) * 40


#: ir_measures' spellings (its cwl_eval provider: grades clipped to [min_rel, max_rel] and scaled to [0, 1])
IRM = (
    "INST(T=3.0,max_rel=3)",
    "INSQ(max_rel=3)",
    "BPM(T=2.0,max_rel=3)@20",
    "NERR8(max_rel=3)@10",
    "NERR9(max_rel=3)@10",
    "NERR10(p=0.9,max_rel=3)",
    "NERR11(max_rel=3)",
    "SDCG(max_rel=3)@10",
)


def test_ir_measures_cwl_provider_per_query(tmp_path):
    """ir_measures' names for the family, read by qrelkit under ``--profile ir_measures``, give its cwl_eval
    provider's values query by query with ``==``, the three judged queries the run lacks included (0 in
    both: ir_measures' default, the profile's ``missing_queries=zero``)."""
    ir_measures = pytest.importorskip("ir_measures")
    pytest.importorskip("cwl")
    qrels_path, _, run_path = _write_inputs(tmp_path, 4)
    measures = [ir_measures.parse_measure(n) for n in IRM]
    qrels = list(ir_measures.read_trec_qrels(str(qrels_path)))
    run = list(ir_measures.read_trec_run(str(run_path)))
    theirs: dict[str, dict[str, float]] = {}
    for r in ir_measures.iter_calc(measures, qrels, run):
        theirs.setdefault(str(r.measure), {})[r.query_id] = r.value
    res = evaluate(read_qrels(qrels_path), read_run(run_path), list(IRM), PROFILES["ir_measures"].conventions)
    compared = 0
    for name, m in zip(IRM, measures, strict=True):
        ours = res.values(name)
        assert set(ours) == set(theirs[str(m)]), name
        for q, want in theirs[str(m)].items():
            assert ours[q] == want, (name, q, ours[q], want)
            compared += 1
    print(f"ir_measures cwl_eval provider: {compared} values compared with ==")
    assert compared == len(IRM) * 43
