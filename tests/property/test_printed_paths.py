"""Every reading path gives the same floats under ``printed_decimals`` and ``summation``.

The ir_measures profile's ERR@k and ``nDCG(dcg='exp-log2')@k`` (five printed decimals, added in numeric
query order) and the gdeval profile (five printed decimals), on generated runs with tied scores: the small
path (``evaluate_files`` on a small file), the native scanner and Arrow's parse streaming in blocks of a
line or two, the API's readers, the same under a memory limit (streamed or sorted on disk by DuckDB),
DuckDB's batches themselves, and the command line (``qrelkit eval -f json``, with and without
``--memory-limit``) give the robust reader's floats bit for bit, per query and in the mean.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from qrelkit import Conventions
from qrelkit.measures.conventions import PROFILE_AXES
from qrelkit.measures.profiles import PROFILES

from ..conftest import CLI
from .test_run_order import _paths, _same_batches

MEASURES = {
    "ir_measures": ["ERR@10", "nDCG(dcg='exp-log2')@10", "nDCG(gain=exponential)@3", "nDCG@10", "ERR@2"],
    "gdeval": ["nDCG@10", "ERR@10", "nDCG@3"],
}


def _conventions(profile: str) -> tuple[Conventions, list[str]]:
    """The profile's conventions and the command line's options for them. The gdeval profile's refusals
    read every row, so it reads each run whole (no small path, no memory limit): its axes are given as
    axes here, which every path takes."""
    if profile == "gdeval":
        axes = Conventions.from_profile("gdeval").axes()
        flags = [f"--{a.replace('_', '-')}={axes[a]}" for a in ("gain", "discount", "ties", "missing_queries",
                 "no_relevant", "printed_decimals")]  # fmt: skip
        return Conventions(**PROFILE_AXES["gdeval"]), flags
    return PROFILES[profile].conventions, ["--profile", profile]


@st.composite
def cases(draw):
    """(qrels text, run text): numeric query ids (gdeval's), grades 0 to 4 and -1, scores on a coarse grid
    (ties), a judged query the run lacks, and a run query nobody judged."""
    qrels, run = [], []
    n_queries = draw(st.integers(1, 6))
    for q in range(n_queries):
        qid = str(draw(st.integers(1, 300)))
        docs = [f"d{i}" for i in range(draw(st.integers(1, 12)))]
        for d in docs:
            if draw(st.booleans()):
                qrels.append(f"{qid} 0 {d} {draw(st.integers(-1, 4))}")
        if not any(line.startswith(f"{qid} ") for line in qrels):
            qrels.append(f"{qid} 0 {docs[0]} {draw(st.integers(0, 4))}")
        if q == 0 and n_queries > 1 and draw(st.booleans()):
            continue  # judged, missing from the run
        for rank, d in enumerate(docs + [f"u{i}" for i in range(draw(st.integers(0, 4)))], start=1):
            if any(line.startswith(f"{qid} Q0 {d} ") for line in run):
                continue  # an id drawn twice
            run.append(f"{qid} Q0 {d} {rank} {draw(st.sampled_from(['1', '0.5', '2', '2.0', '0.25']))} sys")
    run.append("999 Q0 orphan 1 1 sys")
    seen, unique = set(), []
    for line in qrels:  # one judgment per (query, document): the first drawn
        key = tuple(line.split()[::2][:2])
        if key not in seen:
            seen.add(key)
            unique.append(line)
    return "\n".join(unique) + "\n", "\n".join(run) + "\n"


def _bits(values: dict[str, float]) -> dict[str, int]:
    return {q: int(np.float64(v).view(np.int64)) for q, v in values.items()}


@settings(max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(case=cases(), profile=st.sampled_from(sorted(MEASURES)))
def test_printed_decimals_give_the_same_floats_on_every_path(tmp_path, monkeypatch, case, profile):
    qrels_text, run_text = case
    qpath, rpath = tmp_path / "qrels.txt", tmp_path / "run.txt"
    qpath.write_text(qrels_text)
    rpath.write_text(run_text)
    conv, flags = _conventions(profile)
    measures = MEASURES[profile]
    got = _paths(qpath, rpath, measures, conv, monkeypatch, PROFILES[profile].on_duplicate)
    robust = got.pop("robust")
    _same_batches(got.pop("duckdb"), got.pop("robust-run"))
    assert robust[0] == "values", robust
    reference = robust[1]
    assert got["files"][1].runs[0].meta["reader"] == "small"
    for name, outcome in got.items():
        assert outcome[0] == "values", (name, outcome)
        for m in reference.measure_names:
            assert _bits(outcome[1].values(m)) == _bits(reference.values(m)), (name, m)
            assert outcome[1].mean(m) == reference.mean(m) or (
                math.isnan(outcome[1].mean(m)) and math.isnan(reference.mean(m))
            ), (name, m)
    # the rounding reached every value it applies to: five decimals at most
    for m in reference.measure_names:
        if "ERR" in m or profile == "gdeval" or "exponential" in m:
            for v in reference.values(m).values():
                assert math.isnan(v) or v == float(f"{v:.5f}"), (m, v)
    asked = [part for m in measures for part in ("-m", m)]
    for extra in ([], ["--memory-limit", "256MB"]):
        out = CLI("eval", *flags, qpath, rpath, *asked, "-f", "json", "-q", *extra)
        assert out.exit_code == 0, out.output
        payload = json.loads(out.stdout)["results"]
        for m in reference.measure_names:
            per_query = {q: v[m] for q, v in payload["per_query"]["sys"].items()}
            want = {q: (None if math.isnan(v) else v) for q, v in reference.values(m).items()}
            assert per_query == want, (extra, m)
            mean = payload["means"]["sys"][m]["mean"]
            assert mean == reference.mean(m) or (mean is None and math.isnan(reference.mean(m))), (extra, m)


def test_the_exponential_ndcg_entry_leaves_plain_ndcg_alone(tmp_path):
    """Under the ir_measures profile nDCG@10 (pytrec_eval's: linear gain, single precision, added in the
    run's order) is not rounded; nDCG(dcg='exp-log2')@10 (gdeval's) is, added by topic number."""
    conv = PROFILES["ir_measures"].conventions
    from qrelkit.measures.grammar import parse

    plain, exp = parse("nDCG@10").conventions(conv), parse("nDCG(dcg='exp-log2')@10").conventions(conv)
    assert (plain.gain, plain.precision, plain.printed_decimals, plain.summation) == (
        "linear",
        "single",
        None,
        "run_order",
    )
    assert (exp.gain, exp.axes()["discount"], exp.precision, exp.printed_decimals, exp.summation) == (
        "exponential",
        "ln",
        "double",
        5,
        "numeric_order",
    )
    # without a cutoff ir_measures has no gdeval measure: the entry is for nDCG@k only
    assert parse("nDCG(gain=exponential)").conventions(conv).printed_decimals is None
    # the profile with --gain exponential: plain nDCG@10 is then ir_measures' nDCG(dcg='exp-log2')@10
    assert parse("nDCG@10").conventions(conv.with_(gain="exponential")).printed_decimals == 5


@pytest.mark.parametrize(
    "written",
    [
        "nDCG@k[gain=exponential](discount=ln)",
        "nDCG@k[ gain = exponential ](discount=ln)",
        {"nDCG@k[gain=exponential]": {"discount": "ln"}},
    ],
)
def test_a_family_with_conditions_reads_back(written):
    from qrelkit import Conventions

    conv = Conventions(by_measure=written)
    assert conv.axes()["by_measure"] == "nDCG@k[gain=exponential](discount=ln)"
    assert Conventions.from_dict(conv.to_dict()) == conv


@pytest.mark.parametrize(
    ("written", "message"),
    [
        ("nDCG@k[colour=red](discount=ln)", "axis 'colour' cannot be set per measure"),
        ("nDCG@k[gain=huge](discount=ln)", "unknown gain 'huge'"),
        ("nDCG@k[](discount=ln)", "has empty conditions"),
        ("nDCG@k[gain](discount=ln)", "has no value"),
    ],
)
def test_a_family_with_bad_conditions_is_refused(written, message):
    from qrelkit import Conventions
    from qrelkit.errors import ConventionError

    with pytest.raises(ConventionError, match=message):
        Conventions(by_measure=written)
