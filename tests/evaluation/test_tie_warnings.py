"""Under the torchmetrics profile the results say where torchmetrics' value follows its sort of tied scores,
with the same words on every path: the API, the small path, streaming, batches, DuckDB and ``qrelkit eval``.

The files, by hand. Query 1: a (relevant) 3.0, then b (not) and c (relevant) tied at 2.0 on ranks 2 and 3,
then d (unjudged) 1.0: the tied block straddles rank 2, so R@2 and P@2 are 1/2 + 1/2 * 1/2 = 0.75 averaged
and 1/2 or 1 in one order; the first relevant document, a, is alone at rank 1, so RR is 1 whatever the
order. Query 2: no ties. Query 3: p (relevant) and q (not) tied at 1.5 on ranks 1 and 2, inside rank 2:
R@2 and P@2 are 1 and 1/2 whatever the order, but AP (1 or 1/2) and RR (1 or 1/2) are not. nDCG averages
ties in torchmetrics as in the profile: never named.
"""

from __future__ import annotations

import json

import pytest

from qrelkit import evaluate, read_qrels, read_run
from qrelkit.evaluation.files import evaluate_files
from qrelkit.measures.profiles import PROFILES

from ..conftest import CLI

CONV = PROFILES["torchmetrics"].conventions
MEASURES = ["nDCG@2", "R@2", "P@2", "AP", "RR", "R@3"]

QRELS = "1 0 a 1\n1 0 b 0\n1 0 c 1\n2 0 x 1\n2 0 y 0\n3 0 p 1\n3 0 q 0\n"
RUN = [("1", "a", 3.0), ("1", "b", 2.0), ("1", "c", 2.0), ("1", "d", 1.0), ("2", "x", 2.0), ("2", "y", 1.0),
       ("3", "p", 1.5), ("3", "q", 1.5)]  # fmt: skip

TAIL = (
    "where torchmetrics' value follows the order torch.argsort or topk leaves tied documents in "
    "(neither stable nor documented); qrelkit averaged over every ordering of the tied documents "
    "(ties=average), so torchmetrics' own value for those queries may differ"
)
MIXED = "a block of tied scores holding relevant and non-relevant documents"
EXPECTED = [
    f"R(rel=1)@2 under profile 'torchmetrics': in 1 query of run 'sys' ('1') {MIXED} straddles rank 2, {TAIL}",
    f"P(rel=1)@2 under profile 'torchmetrics': in 1 query of run 'sys' ('1') {MIXED} straddles rank 2, {TAIL}",
    f"AP(rel=1) under profile 'torchmetrics': in 2 queries of run 'sys' ('1', '3') {MIXED} lies in the "
    f"ranking, {TAIL}",
    f"RR(rel=1) under profile 'torchmetrics': in 1 query of run 'sys' ('3') {MIXED} holds the first relevant "
    f"document, {TAIL}",
]


@pytest.fixture
def files(tmp_path):
    qrels, run = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qrels.write_text(QRELS)
    run.write_text("".join(f"{q} Q0 {d} {i} {s} sys\n" for i, (q, d, s) in enumerate(RUN, 1)))
    return qrels, run


def test_the_api_names_each_measure_once_with_its_queries(files):
    res = evaluate(read_qrels(files[0]), read_run(files[1]), MEASURES, CONV, strict=True)  # not a stop
    assert list(res.tie_warnings) == EXPECTED
    assert res.warnings == EXPECTED and res.profile_warnings == ()
    assert res.to_dict()["tie_warnings"] == EXPECTED
    assert res.values("R@2") == pytest.approx({"1": 0.75, "2": 1.0, "3": 1.0}, abs=1e-15)
    assert res.values("P@2") == pytest.approx({"1": 0.75, "2": 0.5, "3": 0.5}, abs=1e-15)


def test_nothing_is_said_without_a_tie_that_matters_or_under_another_profile(files):
    qrels, run = read_qrels(files[0]), read_run(files[1])
    assert evaluate(qrels, run, ["nDCG@2", "nDCG", "R@3", "P@3", "Success@2", "R", "P"], CONV).warnings == []
    for profile in ("sklearn", "trec_eval", "ranx"):
        assert evaluate(qrels, run, MEASURES, PROFILES[profile].conventions).warnings == []
    assert evaluate(qrels, run, MEASURES).warnings == []


def test_a_tie_order_chosen_by_hand_is_said_as_such(files):
    res = evaluate(read_qrels(files[0]), read_run(files[1]), ["R@2"], CONV.with_(ties="docid_asc"))
    (warning,) = res.warnings
    assert warning.startswith("R(rel=1)@2 under profile 'torchmetrics': in 1 query of run 'sys' ('1') ")
    assert "qrelkit ordered the tied documents by ties=docid_asc, so torchmetrics' own value" in warning


def test_every_path_says_the_same(files, monkeypatch):
    from qrelkit.evaluation import core, plan
    from qrelkit.formats import external
    from qrelkit.formats.trec import small

    qrels, run = files
    got = evaluate_files(qrels, [run], MEASURES, CONV)
    assert got.runs[0].meta["reader"] == "small" and list(got.warnings) == EXPECTED
    with monkeypatch.context() as patch:
        patch.setattr(small, "SMALL_FILE_BYTES", 0)  # past the small path: streamed
        got = evaluate_files(qrels, [run], MEASURES, CONV)
        assert got.runs[0].meta["reader"] == "fast" and list(got.warnings) == EXPECTED
        patch.setattr(core, "ENCODE_BATCH_ROWS", 3)  # encoded in batches of whole queries
        assert list(evaluate_files(qrels, [run], MEASURES, CONV).warnings) == EXPECTED
        assert list(evaluate(read_qrels(qrels), read_run(run), MEASURES, CONV).warnings) == EXPECTED
    with monkeypatch.context() as patch:
        patch.setattr(plan, "IN_MEMORY_FACTOR", 10**12)  # every file too big to hold: DuckDB
        patch.setattr(external, "BATCH_ROWS", 3)  # in batches of whole queries
        got = evaluate_files(qrels, [run], MEASURES, CONV, memory_limit="500MB")
        assert got.runs[0].meta["reader"] == "duckdb" and list(got.warnings) == EXPECTED


def test_qrelkit_eval_prints_each_warning_on_stderr_and_writes_it_in_json(files):
    qrels, run = files
    args = ["eval", qrels, run, "--profile", "torchmetrics", *(a for m in MEASURES for a in ("-m", m))]
    out = CLI(*args, "-f", "tsv")
    assert out.exit_code == 0, out.output
    warned = [line for line in out.stderr.splitlines() if line.startswith("warning:")]
    assert warned == [f"warning: {w}" for w in EXPECTED]
    assert [f"# warning: {w}" for w in EXPECTED] == [
        line for line in out.stdout.splitlines() if line.startswith("# warning:")
    ]
    written = CLI(*args, "-f", "json")
    assert json.loads(written.stdout)["tie_warnings"] == EXPECTED


def test_each_run_is_named_with_its_count_and_first_queries(tmp_path):
    """Five queries of run A straddle rank 1, one of run B: one warning for both runs."""
    qrels = tmp_path / "qrels.txt"
    qrels.write_text("".join(f"{q} 0 r 1\n{q} 0 n 0\n" for q in range(1, 6)))
    runs = []
    for name, tied in (("A", range(1, 6)), ("B", [4])):
        path = tmp_path / f"{name}.txt"
        path.write_text("".join(f"{q} Q0 r 1 1.0 {name}\n{q} Q0 n 2 {1.0 if q in tied else 0.5} {name}\n"
                                for q in range(1, 6)))  # fmt: skip
        runs.append(path)
    (warning,) = evaluate_files(qrels, runs, ["P@1"], CONV).warnings
    assert warning.startswith(
        "P(rel=1)@1 under profile 'torchmetrics': in 5 queries of run 'A' ('1', '2', '3', ... 2 more) and "
        "1 query of run 'B' ('4') a block of tied scores"
    )
