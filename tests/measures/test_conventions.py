"""Conventions, profiles, `qrelkit eval --profile`, `qrelkit conventions` and the refusal to compare.

Expected values come from hand arithmetic (written out next to each assertion) or from the chapter's worked
example (0.7747 with linear gains, 0.7134 with 2^g - 1, as every library gives on it).
"""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import pytest

from qrelkit import Conventions, Qrels, Run, evaluate, read_qrels, read_run
from qrelkit.errors import ConventionError, IncomparableError, ValidationError
from qrelkit.evaluation.diagnose import attribute, sweep
from qrelkit.measures.profiles import PROFILES, get_profile

from ..conftest import CLI, EXAMPLE, FIXTURES

CHAPTER = FIXTURES / "chapter"
L2 = math.log2


invoke = CLI


def write(path: Path, text: str) -> Path:
    path.write_text(text)
    return path


# ---------------------------------------------------------------------------------------- the profile table

EXPECTED_AXES = {
    # profile: (gain, discount, ideal, unjudged, ties, precision, negative, missing, extra, no_relevant, mean)
    "trec_eval": "linear log2 judged zero docid_desc double unjudged skip skip zero defined",
    "trec_eval-c": "linear log2 judged zero docid_desc double unjudged zero skip zero defined",
    "trec_eval-J": "linear log2 judged drop docid_desc double unjudged skip skip zero defined",
    "trec_eval9": "linear log2 judged zero docid_desc single unjudged skip skip zero defined",
    "pytrec_eval": "linear log2 judged zero docid_desc single unjudged skip skip zero defined",
    "ir_measures": "linear log2 judged zero docid_desc single unjudged zero skip zero defined",
    "ranx": "linear log2 judged zero file_order double unjudged zero skip zero defined",
    "ranx-burges": "exponential log2 judged zero file_order double unjudged zero skip zero defined",
    "sklearn": "linear log2 returned zero average double reject skip skip zero defined",
    "torchmetrics": "linear log2 returned zero average single gain skip skip zero defined",
    "trectools": "linear log2 judged zero docid_asc double unjudged skip skip skip_unretrieved run_queries",
    "gdeval": "exponential ln judged zero docid_desc double unjudged skip skip skip defined",
    "cwl_eval": "exponential log2 judged zero file_order double unjudged skip skip zero defined",
}


#: the measure-level axes where a profile departs from their defaults
MEASURE_DEFAULTS = {
    "cutoff_denominator": "k",
    "missing_score": "empty",
    "counts": "mean",
    "max_grade": "4",
    "persistence": "0.8",
    "rbp_gain": "binary",
    "rbp_residual": "always",
    "iprec_cutoff": "round",
    "nonpositive": "retrieved",
    "ap_denominator": "relevant",
    "printed_decimals": "none",
    "summation": "exact",
    "by_measure": "none",
}
#: trec_eval 10's rbp and rbp_resid (m_rbp.c, m_rbp_resid.c)
TREC10_RBP = {"persistence": "0.9", "rbp_gain": "scaled", "rbp_residual": "if_unjudged"}
EXPECTED_MEASURE_AXES = {
    "trec_eval": TREC10_RBP,
    "trec_eval-c": TREC10_RBP,
    "trec_eval-J": TREC10_RBP,
    "trec_eval9": {"iprec_cutoff": "truncate"},
    "pytrec_eval": {"iprec_cutoff": "truncate"},
    "ir_measures": {
        "iprec_cutoff": "truncate",
        "missing_score": "zero",
        "counts": "sum",
        "summation": "run_order",
        "by_measure": "Accuracy(ties=file_order,precision=double,no_relevant=skip,missing_score=empty); "
        "Compat(ties=docid_asc,precision=double); "
        "ERR(precision=double,printed_decimals=5,summation=numeric_order); "
        "Judged(ties=docid_asc,precision=double,negative=zero,cutoff_denominator=returned); "
        "RR@k(ties=docid_asc,precision=double); "
        "nDCG@k[gain=exponential](discount=ln,precision=double,printed_decimals=5,summation=numeric_order)",
    },
    "ranx": {"rbp_gain": "grade", "summation": "numpy", "by_measure": "bpref(negative=zero)"},
    "gdeval": {"printed_decimals": "5"},
    "cwl_eval": {"max_grade": "1", "persistence": "0.9"},
    "ranx-burges": {"rbp_gain": "grade", "summation": "numpy", "by_measure": "bpref(negative=zero)"},
    "torchmetrics": {
        "by_measure": "AP(nonpositive=not_retrieved,ap_denominator=retrieved); FallOut(no_relevant=one); "
        "P(nonpositive=not_retrieved); R(nonpositive=not_retrieved); RR(nonpositive=not_retrieved)",
    },
    "trectools": {
        "by_measure": "AP(ties=docid_desc,no_relevant=skip); Judged(ties=docid_desc); P(ties=docid_desc); "
        "R(ties=docid_desc,no_relevant=skip); RBP(ties=average); RBP_resid(ties=average); "
        "RR(ties=docid_desc); Rprec(ties=docid_desc)",
    },
}


def test_every_profile_spells_out_every_axis():
    assert set(PROFILES) == set(EXPECTED_AXES)
    for name, expected in EXPECTED_AXES.items():
        axes = PROFILES[name].conventions.axes()
        assert " ".join(list(axes.values())[:11]) == expected, name
        measure_level = {axis: axes[axis] for axis in MEASURE_DEFAULTS}
        assert measure_level == MEASURE_DEFAULTS | EXPECTED_MEASURE_AXES.get(name, {}), name
        assert PROFILES[name].conventions.to_dict()["profile"] == name
        assert PROFILES[name].evidence and PROFILES[name].crosscheck.startswith("tests/crosscheck/")
    assert PROFILES["ir_measures"].on_duplicate == "last"
    assert PROFILES["pytrec_eval"].on_duplicate == "error"


def test_rbp_and_iprec_axes_are_written_with_every_result(tmp_path):
    result = invoke("eval", "--profile", "pytrec_eval", "--rbp-residual", "if_unjudged", CHAPTER / "qrels.txt",
                    CHAPTER / "run.txt", "-m", "11pt_avg", "-m", "RBP_resid", "--format", "json")  # fmt: skip
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    conv = payload["conventions"]
    assert (conv["iprec_cutoff"], conv["rbp_residual"], conv["rbp_gain"]) == (
        "truncate",
        "if_unjudged",
        "binary",
    )
    assert conv["profile"] == "pytrec_eval with rbp_residual=if_unjudged"
    full = [m["full"] for m in payload["measures"]]
    assert full[0].endswith(",iprec_cutoff=truncate)") and full[1].endswith(",rbp_residual=if_unjudged)")
    assert invoke("eval", "--profile", "trec_eval", CHAPTER / "qrels.txt", CHAPTER / "run.txt", "-m", "rbp",
                  "-o", tmp_path / "r.tsv").exit_code == 0  # fmt: skip
    header = json.loads((tmp_path / "r.tsv").read_text().splitlines()[1].removeprefix("# conventions: "))
    assert {k: header[k] for k in ("persistence", "rbp_gain", "rbp_residual", "iprec_cutoff")} == {
        **TREC10_RBP,
        "iprec_cutoff": "round",
    }


def test_profile_label_records_changes_and_never_makes_conventions_differ():
    conv = Conventions.from_profile("trec_eval")
    spelled = Conventions(gain="linear", ties="docid_desc", missing_queries="skip", **TREC10_RBP)
    assert conv == spelled and conv.differences(spelled) == []
    changed = conv.with_(ties="average")
    assert changed.to_dict()["profile"] == "trec_eval with ties=average"
    assert Conventions.from_dict(changed.to_dict()) == changed
    assert Conventions.from_dict(changed.to_dict()).profile == "trec_eval"
    assert Conventions().to_dict()["profile"] == "none"
    with pytest.raises(ConventionError, match="did you mean 'trec_eval'"):
        get_profile("trec-eval")


# ---------------------------------------------------------------------------------- new axis values by hand


def test_negative_grades_as_negative_gains():
    # judged a=2, b=-1; the run ranks b above a. Linear gains -1 and 2.
    qrels = Qrels.from_dict({"q": {"a": 2, "b": -1}})
    run = Run.from_dict({"q": {"b": 2.0, "a": 1.0}})
    conv = Conventions(gain="linear", negative="gain")
    dcg = -1 / L2(2) + 2 / L2(3)
    idcg = 2 / L2(2) - 1 / L2(3)  # the ideal keeps the negative gain, at the bottom
    assert evaluate(qrels, run, ["nDCG@10"], conv).mean("nDCG@10") == pytest.approx(dcg / idcg, abs=1e-12)
    # as unjudged (trec_eval), b is worth 0 and leaves the ideal
    unjudged = evaluate(qrels, run, ["nDCG@10"], conv.with_(negative="unjudged")).mean("nDCG@10")
    assert unjudged == pytest.approx((2 / L2(3)) / 2, abs=1e-12)


def test_skip_unretrieved_leaves_out_queries_with_nothing_relevant_in_the_top_k():
    qrels = Qrels.from_dict({"found": {"a": 1}, "late": {"z": 1}, "none": {"n": 0}})
    docs = {f"d{i}": 20.0 - i for i in range(10)}
    run = Run.from_dict({"found": {"a": 1.0, "b": 0.5}, "late": {**docs, "z": 1.0}, "none": {"n": 1.0}})
    res = evaluate(qrels, run, ["nDCG@10"], Conventions(no_relevant="skip_unretrieved"))
    values = res.values("nDCG@10")
    assert values["found"] == 1.0
    assert math.isnan(values["late"]) and math.isnan(values["none"])
    skip = evaluate(qrels, run, ["nDCG@10"], Conventions(no_relevant="skip")).values("nDCG@10")
    assert skip["late"] == 0.0 and math.isnan(skip["none"])


def test_mean_over_run_queries_divides_by_the_runs_query_count():
    # judged: a (found at rank 1: 1.0), b (nothing relevant retrieved: undefined), c (missing from the run);
    # the run also has x, which nobody judged. Run queries: a, b, x -> 1.0 / 3.
    qrels = Qrels.from_dict({"a": {"d1": 1}, "b": {"d2": 1}, "c": {"d3": 1}})
    run = Run.from_dict({"a": {"d1": 1.0}, "b": {"z": 1.0}, "x": {"d1": 1.0}})
    conv = Conventions(no_relevant="skip_unretrieved", missing_queries="skip", mean="run_queries")
    assert evaluate(qrels, run, ["nDCG@10"], conv).mean("nDCG@10") == pytest.approx(1 / 3)
    assert evaluate(qrels, run, ["nDCG@10"], conv.with_(mean="defined")).mean("nDCG@10") == 1.0


# ----------------------------------------------------------------------------------- the chapter's example


@pytest.mark.parametrize("name", [n for n in PROFILES if n != "gdeval"])
def test_chapter_example_under_every_profile(name):
    qrels, run = read_qrels(CHAPTER / "qrels.txt"), read_run(CHAPTER / "run.txt")
    value = evaluate(qrels, run, ["nDCG@10"], PROFILES[name].conventions).mean("nDCG@10")
    if PROFILES[name].conventions.ideal == "returned":
        # the ideal from the returned documents: grades 1,3,0,2,0,(5 unjudged),2,(2 unjudged),1 -> 3,2,2,1,1
        dcg = 1 + 3 / L2(3) + 2 / L2(5) + 2 / L2(8) + 1 / L2(11)
        idcg = 3 + 2 / L2(3) + 2 / L2(4) + 1 / L2(5) + 1 / L2(6)
        assert value == pytest.approx(dcg / idcg, abs=1e-12)
    elif PROFILES[name].conventions.unjudged == "drop":
        # the three unjudged documents leave: grades 1,3,0,2,0,2,1 at ranks 1-7
        dcg = 1 + 3 / L2(3) + 2 / L2(5) + 2 / L2(7) + 1 / L2(8)
        idcg = 3 + 2 / L2(3) + 2 / L2(4) + 1 / L2(5) + 1 / L2(6)
        assert value == pytest.approx(dcg / idcg, abs=1e-12)
    elif PROFILES[name].conventions.gain == "exponential":
        assert round(value, 4) == 0.7134
    else:
        assert round(value, 4) == 0.7747


def test_gdeval_refuses_non_numeric_query_ids_like_gdeval():
    qrels, run = read_qrels(CHAPTER / "qrels.txt"), read_run(CHAPTER / "run.txt")
    with pytest.raises(ValidationError, match="refuses"):
        PROFILES["gdeval"].check(qrels, run)
    result = invoke(
        "eval", "--profile", "gdeval", CHAPTER / "qrels.txt", CHAPTER / "run.txt", "-m", "nDCG@10"
    )
    assert result.exit_code == 1 and "not a whole number" in result.output


# ------------------------------------------------------------------------------------- eval --profile NAME


def _flags(name: str) -> list[str]:
    profile = PROFILES[name]
    out = ["--on-duplicate", profile.on_duplicate]
    for axis, value in profile.conventions.axes().items():
        out += [f"--{axis.replace('_', '-')}", value]
    return out


def _numbers(payload: dict) -> tuple:
    return payload["results"]["means"], payload["results"]["per_query"]


@pytest.mark.parametrize("name", [n for n in PROFILES if n != "gdeval"])  # gdeval: numeric ids only
def test_profile_and_its_explicit_flags_give_identical_numbers(name, tmp_path):
    qrels = EXAMPLE / "qrels.txt"
    runs = sorted((EXAMPLE / "runs").glob("*.run"))[:2]
    if not runs:
        qrels, runs = CHAPTER / "qrels.txt", [CHAPTER / "run.txt"]
    common = ["-m", "nDCG@10", "-m", "nDCG@5", "-q", "--format", "json"]
    by_profile = invoke("eval", "--profile", name, qrels, *runs, *common)
    by_flags = invoke("eval", qrels, *runs, *common, *_flags(name))
    assert by_profile.exit_code == 0, by_profile.output
    assert by_flags.exit_code == 0, by_flags.output
    a, b = json.loads(by_profile.stdout), json.loads(by_flags.stdout)
    assert _numbers(a) == _numbers(b)
    assert a["conventions"]["profile"] == name and b["conventions"]["profile"] == "none"
    assert {k: v for k, v in a["conventions"].items() if k != "profile"} == {
        k: v for k, v in b["conventions"].items() if k != "profile"
    }
    assert f"profile: {name}" in by_profile.stderr


def test_explicit_flags_override_one_axis_of_a_profile():
    result = invoke(
        "eval", "--profile", "trec_eval", "--ties", "average", CHAPTER / "qrels.txt", CHAPTER / "run.txt",
        "-m", "nDCG@10", "--format", "json",
    )  # fmt: skip
    assert result.exit_code == 0, result.output
    conv = json.loads(result.stdout)["conventions"]
    assert conv["ties"] == "average" and conv["gain"] == "linear"
    assert conv["profile"] == "trec_eval with ties=average"


def test_profile_reader_option_applies_unless_overridden(tmp_path):
    qrels = write(tmp_path / "q.txt", "1 0 a 2\n1 0 b 1\n")
    run = write(tmp_path / "r.txt", "1 Q0 a 1 3.0 t\n1 Q0 b 2 2.0 t\n1 Q0 a 3 0.5 t\n")
    refused = invoke("eval", "--profile", "pytrec_eval", qrels, run, "-m", "nDCG@10", "--format", "json")
    assert refused.exit_code == 1
    kept_last = invoke("eval", "--profile", "ir_measures", qrels, run, "-m", "nDCG@10", "--format", "json")
    assert kept_last.exit_code == 0, kept_last.output
    # last line wins: b (1) at rank 1, a (2) at rank 2 -> (1 + 2/log2(3)) / (2 + 1/log2(3))
    mean = json.loads(kept_last.stdout)["results"]["means"]["t"]["nDCG@10"]["mean"]
    assert mean == pytest.approx((1 + 2 / L2(3)) / (2 + 1 / L2(3)), abs=1e-12)
    assert "on_duplicate=last" in kept_last.stderr


# ------------------------------------------------------------------------------------ qrelkit conventions


def test_conventions_table_on_the_example_moves_gain_ideal_unjudged_and_ties():
    qrels = EXAMPLE / "qrels.txt"
    run = EXAMPLE / "runs" / "bm25.run"
    if not run.exists():
        pytest.skip("the bundled example has no runs")
    result = invoke("conventions", qrels, run, "-m", "nDCG@10", "--format", "json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    assert payload["qrels"]["fingerprint"]["sha256"] and payload["run"]["fingerprint"]["sha256"]
    rows = {r["label"]: r for r in payload["rows"]}
    assert set(PROFILES) <= set(rows)
    for label in ("gain=linear", "ideal=returned", "unjudged=drop"):
        assert rows[label]["direction"] in ("up", "down"), label
        assert rows[label]["queries_moved"] > 0
    assert any(rows[f"ties={t}"]["direction"] != "none" for t in ("docid_desc", "docid_asc", "optimistic"))
    assert rows["ideal=returned"]["direction"] == "up"  # can only raise the score
    assert rows["unjudged=drop"]["direction"] in ("up", "none")
    assert rows["ideal=returned"]["optimistic"] == ["ideal=returned"]
    assert rows["sklearn"]["optimistic"] == ["ideal=returned"]
    for row in payload["rows"]:
        assert row["conventions"]["gain"] and "profile" in row["conventions"]
        if row["mean"] is not None and row["label"] != "default":
            assert row["diff"] == pytest.approx(row["mean"] - rows["default"]["mean"], abs=1e-12)


def test_returned_only_ideal_reaches_one_for_a_run_that_found_one_relevant_document(tmp_path):
    qrels = write(tmp_path / "q.txt", "1 0 a 1\n1 0 b 1\n1 0 c 1\n")
    run = write(tmp_path / "r.txt", "1 Q0 a 1 2.0 t\n1 Q0 x 2 1.0 t\n")
    variants = {v.label: v for v in sweep(read_qrels(qrels), read_run(run), "nDCG@10")}
    # default: DCG = 1, IDCG = 1 + 1/log2(3) + 1/log2(4)
    assert variants["default"].mean == pytest.approx(1 / (1 + 1 / L2(3) + 0.5), abs=1e-12)
    assert variants["ideal=returned"].mean == 1.0
    assert variants["ideal=returned"].perfect == 1 and variants["default"].perfect == 0
    assert variants["ideal=returned"].direction == "up"
    table = invoke("conventions", qrels, run)
    assert table.exit_code == 0 and "optimistic: ideal=returned" in table.stdout


def test_the_conventions_table_reads_in_a_terminal(tmp_path):
    """Numbers first, the conventions last and wrapped (no line past 120 characters); --hide-unmoved leaves
    out the profiles and axes that move no query and names them."""
    qrels = write(tmp_path / "q.txt", "1 0 a 1\n1 0 b 1\n1 0 c 1\n")
    run = write(tmp_path / "r.txt", "1 Q0 a 1 2.0 t\n1 Q0 x 2 1.0 t\n")
    full = invoke("conventions", qrels, run, "-f", "table").stdout.splitlines()
    assert full[1].split() == [
        "mean",
        "diff",
        "direction",
        "moved",
        "at",
        "1.0",
        "kind",
        "conventions;",
        "flag",
    ]
    assert max(len(line) for line in full) <= 120
    shown = invoke("conventions", qrels, run, "-f", "table", "--hide-unmoved").stdout.splitlines()
    rows = [line for line in shown[3:] if re.match(r"\d\.\d{4} ", line)]
    # default: DCG 1, IDCG 1 + 1/log2(3) + 1/2, so 0.4693; the returned-only ideal: 1 (+0.5307), one query
    assert rows[0].split() == ["0.4693", "0", "default", "default"]
    assert rows[-1].split() == ["1.0000", "+0.5307", "up", "1", "1", "axis", "ideal=returned;", "optimistic:",
                                "ideal=returned"]  # fmt: skip
    labels = [row.split()[6].rstrip(":;") for row in rows[1:]]
    assert labels == ["sklearn", "torchmetrics", "gdeval", "ideal=returned"]  # gdeval: printed to 5 decimals
    left_out = " ".join(shown[shown.index(next(x for x in shown if "move no query left out" in x)) :])
    assert left_out.startswith("38 profiles and axes that move no query left out: trec_eval, trec_eval-c,")
    assert "gain=linear" in left_out and "discount=log10" in left_out


def test_diff_attributes_each_query_to_the_axis_that_explains_it(tmp_path):
    # q1: no ties, two judged documents, the run found one -> only the ideal separates trec_eval and sklearn
    # q2: a tie between two judged documents -> docid descending vs averaged ties
    qrels = write(tmp_path / "q.txt", "1 0 a 2\n1 0 b 1\n2 0 c 1\n2 0 d 0\n2 0 e 3\n")
    run = write(
        tmp_path / "r.txt", "1 Q0 a 1 2.0 t\n1 Q0 x 2 1.0 t\n2 Q0 e 1 5 t\n2 Q0 c 2 1 t\n2 Q0 d 3 1 t\n"
    )
    att = attribute(read_qrels(qrels), read_run(run), "nDCG@10", PROFILES["trec_eval"].conventions,
                    PROFILES["sklearn"].conventions)  # fmt: skip
    by_query = {q.query_id: q for q in att.queries}
    assert set(by_query) == {"1", "2"}
    assert by_query["1"].axes == ("ideal",)
    assert by_query["1"].a == pytest.approx(2 / (2 + 1 / L2(3)), abs=1e-12) and by_query["1"].b == 1.0
    # q2 under trec_eval: e, d, c (docid descending); averaged: c and d share ranks 2-3
    assert by_query["2"].a == pytest.approx((3 + 0 + 1 / L2(4)) / (3 + 1 / L2(3)), abs=1e-12)
    assert "ties" in by_query["2"].axes
    result = invoke("conventions", qrels, run, "--diff", "trec_eval", "sklearn", "--format", "json")
    assert result.exit_code == 0, result.output
    payload = json.loads(result.stdout)
    # and trec_eval's RBP axes, which do not move nDCG
    assert {d["axis"] for d in payload["differing_axes"]} == {"ideal", "ties", "negative", *TREC10_RBP}
    assert all(payload["mean_effects"][axis] == 0.0 for axis in TREC10_RBP)
    assert all(set(q["axes"]) <= {"ideal", "ties", "negative"} for q in payload["queries"])
    assert {q["query_id"] for q in payload["queries"]} == {"1", "2"}
    tsv = invoke("conventions", qrels, run, "--diff", "trec_eval", "sklearn", "--format", "tsv")
    assert tsv.stdout.splitlines()[2].split("\t") == ["query", "trec_eval", "sklearn", "diff", "explained by"]


def test_conventions_list_shows_every_profile():
    result = invoke("conventions", "--list", "--format", "json")
    assert result.exit_code == 0
    assert [p["name"] for p in json.loads(result.stdout)] == list(PROFILES)


# -------------------------------------------------------------------------------- refusal to compare


def test_results_under_different_conventions_are_refused_naming_each_axis():
    qrels, run = read_qrels(CHAPTER / "qrels.txt"), read_run(CHAPTER / "run.txt")
    a = evaluate(qrels, run, ["nDCG@10"], PROFILES["trec_eval"].conventions)
    b = evaluate(qrels, run, ["nDCG@10"], PROFILES["sklearn"].conventions)
    with pytest.raises(IncomparableError) as info:
        a.check_comparable(b)
    message = str(info.value)
    for axis in ("ideal: judged vs returned", "ties: docid_desc vs average", "negative: unjudged vs reject"):
        assert axis in message
    assert not re.search(r"\bgain:", message)  # both linear
    assert "rbp_gain: scaled vs binary" in message  # trec_eval 10's rbp


def test_same_conventions_under_a_profile_name_and_spelled_out_are_comparable():
    qrels, run = read_qrels(CHAPTER / "qrels.txt"), read_run(CHAPTER / "run.txt")
    a = evaluate(qrels, run, ["nDCG@10"], PROFILES["trec_eval"].conventions)
    b = evaluate(
        qrels,
        run,
        ["nDCG@10"],
        Conventions(gain="linear", ties="docid_desc", missing_queries="skip", **TREC10_RBP),
    )
    a.check_comparable(b)  # no error: the profile label is not an axis
    c = evaluate(
        qrels,
        run,
        ["nDCG@10"],
        Conventions(gain="linear", ties="docid_desc", mean="run_queries", **TREC10_RBP),
    )
    with pytest.raises(
        IncomparableError, match="missing_queries: skip vs zero; mean: defined vs run_queries"
    ):
        b.check_comparable(c)


def test_gdeval_profile_and_its_explicit_flags_give_identical_numbers(tmp_path):
    qrels = write(tmp_path / "q.txt", "101 0 a 3\n101 0 b 1\n101 0 c 0\n102 0 d 2\n102 0 e 4\n103 0 f 0\n")
    run = write(
        tmp_path / "r.txt",
        "101 Q0 b 1 2.0 t\n101 Q0 a 2 2.0 t\n101 Q0 x 3 1.0 t\n102 Q0 e 1 1e-3 t\n102 Q0 d 2 2e-3 t\n"
        "103 Q0 f 1 1 t\n104 Q0 g 1 1 t\n",
    )
    common = ["-m", "nDCG@10", "-q", "--format", "json"]
    by_profile = invoke("eval", "--profile", "gdeval", qrels, run, *common)
    by_flags = invoke("eval", qrels, run, *common, *_flags("gdeval"))
    assert by_profile.exit_code == 0 and by_flags.exit_code == 0, by_profile.output + by_flags.output
    a, b = json.loads(by_profile.stdout), json.loads(by_flags.stdout)
    assert _numbers(a) == _numbers(b)
    values = a["results"]["per_query"]["t"]
    # 101: a (7) and b (1) tie, docid descending puts b first: (1 + 7/log2(3)) / (7 + 1/log2(3)) =
    # 0.709809741..., printed with five decimals as gdeval.pl prints it
    assert (1 + 7 / L2(3)) / (7 + 1 / L2(3)) == pytest.approx(0.7098097414, abs=1e-10)
    assert values["101"]["nDCG@10"] == 0.70981
    # 102: d (3) at rank 1, e (15) at rank 2: (3 + 15/log2(3)) / (15 + 3/log2(3)) = 0.737826424...;
    # 103 has nothing relevant
    assert (3 + 15 / L2(3)) / (15 + 3 / L2(3)) == pytest.approx(0.7378264247, abs=1e-10)
    assert values["102"]["nDCG@10"] == 0.73783
    assert values["103"]["nDCG@10"] is None


def test_profile_names_listed_for_the_command_line_match_the_profiles():
    from qrelkit.measures.conventions import PROFILE_NAMES

    assert tuple(PROFILES) == PROFILE_NAMES


def test_every_tie_convention_has_one_ordering_rule_for_both_encoders():
    from typing import get_args

    from qrelkit.engine.encoding.encoded import TIE_KEYS
    from qrelkit.measures.conventions import Ties

    assert set(TIE_KEYS) == set(get_args(Ties))
