"""trec_eval's own test suite: its expected outputs, query by query, for every measure qrelkit implements.

trec_eval's conventions, spelled out: linear gain, ties by document id descending, negative grades mean
"in the pool, unjudged"; without -c it skips judged queries the run lacks, with -c it scores them 0.
Values in the expected files are printed to 4 decimals, so agreement is to 5e-5.
"""

from __future__ import annotations

import re

import pytest

from qrelkit import Conventions, evaluate, read_qrels, read_run

from ..conftest import data_path

TREC = Conventions(gain="linear", ties="docid_desc", negative="unjudged", missing_queries="skip")


def _expected(path):
    rows = {}
    for line in path.read_text().splitlines():
        measure, query, value = (part.strip() for part in line.split("\t"))
        rows[(measure, query)] = value
    return rows


def _qrelkit_name(trec_name: str, rel: int) -> str | None:
    fixed = {
        "map": f"AP(rel={rel})",
        "Rprec": f"Rprec(rel={rel})",
        "recip_rank": f"RR(rel={rel})",
        "ndcg": "nDCG",
        "num_rel": f"NumRel(rel={rel})",
        "num_ret": "NumRet",
        "num_rel_ret": f"NumRelRet(rel={rel})",
    }
    if trec_name in fixed:
        return fixed[trec_name]
    m = re.fullmatch(r"(P|recall|ndcg_cut|map_cut)_(\d+)", trec_name)
    if not m:
        return None
    kind, k = m.groups()
    return {"P": f"P(rel={rel})", "recall": f"R(rel={rel})", "ndcg_cut": "nDCG", "map_cut": f"AP(rel={rel})"}[
        kind
    ] + f"@{k}"


CASES = [
    ("out.test.aq", "qrels.test", "results.test", TREC, 1),
    ("out.test.aqc", "qrels.test", "results.trunc", TREC.with_(missing_queries="zero"), 1),
    ("out.test.aql", "qrels.rel_level", "results.test", TREC, 2),
]


@pytest.mark.parametrize(("expected", "qrels", "run", "conv", "rel"), CASES, ids=[c[0] for c in CASES])
def test_matches_trec_eval_expected_output(expected, qrels, run, conv, rel):
    rows = _expected(data_path("trec_eval-tests", expected))
    wanted: dict[str, list[tuple[str, str]]] = {}
    for (trec_name, query), value in rows.items():
        name = _qrelkit_name(trec_name, rel)
        if name is not None:
            wanted.setdefault(name, []).append((query, value))
    assert len(wanted) >= 25, sorted(wanted)
    res = evaluate(
        read_qrels(data_path("trec_eval-tests", qrels)),
        read_run(data_path("trec_eval-tests", run)),
        list(wanted),
        conv,
    )
    checked = 0
    for name, items in wanted.items():
        values = res.values(name)
        for query, text in items:
            if query != "all":
                got = values[query]
            elif name.startswith("Num"):  # trec_eval sums the counts over queries
                got = sum(values.values())
            else:
                got = res.mean(name)
            assert abs(got - float(text)) <= 5e-5 + 1e-12, (name, query, got, text)
            checked += 1
    assert checked > 100
