"""``qrelkit budget replay`` from the command line: the table, TSV to a pipe, JSON (rows with the keys as
documented, the provenance with every input's fingerprint and the measure's conventions), the HTML page with
its budget curves, the progress lines, the pool-depth note, the grade probabilities side file, and each bad
input as one line."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from scipy import stats

import qrelkit
from qrelkit.budget import STRATEGIES, Estimate, Selection
from qrelkit.formats.probabilities import write_probabilities

from ..conftest import CLI

invoke = CLI.under("budget", "replay")
ROW_KEYS = {"strategy", "budget", "human_pairs", "kendall_tau", "tau_ap", "coverage_means",
            "coverage_differences", "decided_pairs", "wrong_sign"}  # fmt: skip


@pytest.fixture
def files(tmp_path):
    """FULL and MODEL over 8 queries x 20 documents, 4 runs ranking every document (seeded)."""
    rng = np.random.default_rng(17)
    full, model = [], []
    grades = {}
    for q in range(8):
        for d in range(20):
            g = int(rng.choice(4, p=[0.5, 0.25, 0.15, 0.1]))
            grades[f"q{q}", f"d{d}"] = g
            full.append(f"q{q} 0 d{d} {g}")
            model.append(f"q{q} 0 d{d} {int(np.clip(g + rng.integers(-1, 2), 0, 3))}")
    (tmp_path / "full.qrels").write_text("\n".join(full) + "\n")
    (tmp_path / "model.qrels").write_text("\n".join(model) + "\n")
    runs = []
    for r, w in enumerate([0.3, 0.8, 1.3, 2.0]):
        lines = []
        for q in range(8):
            scores = {f"d{d}": w * grades[f"q{q}", f"d{d}"] + float(rng.standard_normal()) for d in range(20)}
            for rank, (d, s) in enumerate(sorted(scores.items(), key=lambda kv: -kv[1]), 1):
                lines.append(f"q{q} Q0 {d} {rank} {s!r} run{r}")
        path = tmp_path / f"run{r}.run"
        path.write_text("\n".join(lines) + "\n")
        runs.append(str(path))
    return tmp_path, [str(tmp_path / "full.qrels"), str(tmp_path / "model.qrels"), *runs], grades


FAST = ["--repeat", "3", "--budget", "10%,40%"]


def test_table(files):
    _, args, _ = files
    result = invoke(*args, *FAST, "-f", "table")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("nDCG@10: 4 runs, 8 queries, 160 pooled pairs (pool depth 20; 0 of FULL's")
    body = [line.split() for line in lines if line.split() and line.split()[0] in STRATEGIES]
    assert [(b[0], b[1], b[2]) for b in body] == [
        ("random-queries", "10%", "0"),  # 16 pairs: no query of 20 pairs fits
        ("random-queries", "40%", "60"),  # three queries of 20 fit in 64 pairs
        ("random-pairs", "10%", "16"),
        ("random-pairs", "40%", "64"),
        ("pool-order", "10%", "16"),
        ("pool-order", "40%", "64"),
        ("mtc", "10%", "16"),
        ("mtc", "40%", "64"),
        ("bandit", "10%", "16"),
        ("bandit", "40%", "64"),
        ("active", "10%", "16"),
        ("active", "40%", "64"),
    ]
    assert "ppi++ (random queries)" in result.stdout


def test_format_named_writes_a_file_of_any_suffix(files):
    tmp, args, _ = files
    target = tmp / "replay.out"
    result = invoke(*args, *FAST, "--strategy", "pool-order", "-f", "json", "-o", str(target))
    assert result.exit_code == 0, result.output
    assert [r["strategy"] for r in json.loads(target.read_text())["results"]] == ["pool-order", "pool-order"]


def test_json_rows_and_provenance(files):
    tmp, args, _ = files
    result = invoke(*args, *FAST, "--strategy", "pool-order,random-pairs", "-f", "json", "--seed", "4")
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["tool"]["name"] == "qrelkit"
    assert doc["full"]["fingerprint"]["source"].endswith("full.qrels")
    assert (
        len(doc["full"]["fingerprint"]["sha256"]) == 64 and len(doc["model"]["fingerprint"]["sha256"]) == 64
    )
    assert [r["name"] for r in doc["runs"]] == ["run0", "run1", "run2", "run3"]
    assert doc["conventions"]["ties"] == "average" and doc["conventions"]["gain"] == "exponential"
    assert doc["measures"][0]["name"] == "nDCG@10" and "gain=exponential" in doc["measures"][0]["full"]
    assert doc["replay"]["seed"] == 4 and doc["replay"]["repeat"] == 3
    assert doc["replay"]["budgets"] == [{"budget": "10%", "pairs": 16}, {"budget": "40%", "pairs": 64}]
    assert doc["pool"] == {"depth": 20, "queries": 8, "runs": 4, "pairs": 160, "full_pairs_below_depth": 0,
                           "max_grade": 3}  # fmt: skip
    rows = doc["results"]
    assert [(r["strategy"], r["budget"]) for r in rows] == [
        ("pool-order", "10%"), ("pool-order", "40%"), ("random-pairs", "10%"), ("random-pairs", "40%")
    ]  # fmt: skip
    for r in rows:
        assert set(r) >= ROW_KEYS
        assert set(r["kendall_tau"]) == {"median", "p10"} and set(r["tau_ap"]) == {"median", "p10"}
    assert rows[0]["coverage_means"] is None  # pool order: no interval, written as null
    # the model alone: scipy's tau-b of the runs' means under qrelkit.evaluate of the two files
    full, model = (qrelkit.read_qrels(tmp / f) for f in ("full.qrels", "model.qrels"))
    runs = [qrelkit.read_run(p) for p in sorted(tmp.glob("run*.run"))]
    people = qrelkit.evaluate(full, runs, ["nDCG@10"])
    judge = qrelkit.evaluate(model, runs, ["nDCG@10"])
    names = [r.name for r in runs]
    expected = stats.kendalltau(
        [people.mean("nDCG@10", n) for n in names], [judge.mean("nDCG@10", n) for n in names]
    )
    assert doc["model_alone"]["kendall_tau"] == pytest.approx(expected.statistic, abs=1e-12)
    # the same seed gives the same rows, written to a file by its suffix
    out = tmp / "replay.json"
    again = invoke(*args, *FAST, "--strategy", "pool-order,random-pairs", "--seed", "4", "-o", out)
    assert again.exit_code == 0, again.output
    assert json.loads(out.read_text())["results"] == rows


def test_tsv_to_a_pipe_and_progress(files):
    _, args, _ = files
    result = invoke(*args, *FAST, "--strategy", "pool-order")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0].startswith("# qrelkit ") and "qrels=" in lines[0] and "run0=" in lines[0]
    assert lines[1].startswith("# full provenance")
    assert lines[2].split("\t")[:3] == ["strategy", "budget", "human_pairs"]
    assert [line.split("\t")[:3] for line in lines[3:]] == [
        ["pool-order", "10%", "16"],
        ["pool-order", "40%", "64"],
    ]
    assert "qrelkit: budget replay: 100% (6/6 repetitions)" in result.stderr


def test_html_page_draws_a_curve_per_strategy(files):
    tmp, args, _ = files
    out = tmp / "replay.html"
    result = invoke(
        *args,
        "--repeat",
        "3",
        "--budget",
        "30%,60%",
        "--strategy",
        "random-pairs,pool-order,random-queries",
        "-o",
        out,
    )
    assert result.exit_code == 0, result.output
    page = out.read_text()
    assert page.startswith("<!doctype html>")
    assert "Kendall&#x27;s tau against people&#x27;s pairs (nDCG@10)" in page
    curves = page.split("<svg")[1:]
    assert len(curves) == 2
    assert curves[0].count('<path d="M') == 3  # one line per strategy (two budgets each)
    assert curves[1].count('<path d="M') == 1  # widths: random-queries only (random-pairs has none for nDCG)
    assert "no interval: random-pairs, pool-order" in page


def test_pool_depth_leaves_out_pairs_and_says_so(files):
    _, args, _ = files
    result = invoke(
        *args, "--repeat", "2", "--budget", "10", "--strategy", "pool-order", "--depth", "5", "-f", "json"
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    pooled = doc["pool"]["pairs"]
    assert pooled < 160 and doc["pool"]["full_pairs_below_depth"] == 160 - pooled
    assert f"note: {160 - pooled} of FULL's judged pairs lie below depth 5 of every run" in result.stderr


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--budget", "150%"], "budget 150% is above 100% of the 160 pooled pairs"),
        (["--budget", "0"], "budget 0 is below one pair"),
        (["--budget", "0.1%"], "budget 0.1% is below one pair"),
        (["--budget", "161"], "budget 161 is above the 160 pooled pairs"),
        (["--strategy", "random-pair"], "unknown strategy 'random-pair' (did you mean 'random-pairs'?)"),
        (["--budget", "5%,8"], "budgets 5% and 8 are both 8 of the 160 pooled pairs"),
    ],
)
def test_bad_input_is_one_line(files, extra, message):
    _, args, _ = files
    result = invoke(*args, "--repeat", "1", *extra)
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1 and message in result.stderr, result.stderr
    assert "Traceback" not in result.output


def test_model_missing_pairs_is_one_line(files):
    tmp, args, _ = files
    lines = (tmp / "model.qrels").read_text().splitlines()
    (tmp / "model.qrels").write_text("\n".join(lines[:5] + lines[8:]) + "\n")  # q0 d5, d6, d7 ungraded
    result = invoke(*args, "--repeat", "1")
    assert result.exit_code == 1
    assert result.stderr.count("\n") == 1
    assert (
        "model.qrels lacks 3 of the 160 pooled pairs full.qrels judged; the first: query q0 document d5"
        in result.stderr
    )
    assert "model.qrels" in result.stderr


class _NeedsProbabilities:
    """A strategy that reads the model's grade probabilities: buys the pairs whose most likely grade is least
    certain, estimates nothing beyond the filled grades."""

    name = "least-certain"
    needs_probabilities = True

    def select(self, problem, state, budget, rng):
        known = state.known(problem.n_pairs)
        order = np.argsort(problem.probabilities.max(axis=1), kind="stable")
        take = order[~known[order]][: budget - state.spent]
        return Selection(take.astype(np.int64), np.ones(len(take)))

    def estimate(self, problem, state, alpha):
        return Estimate.without_intervals("filled", problem.means(state.grade_vector(problem.model)))


def test_a_strategy_needing_probabilities(files, monkeypatch):
    tmp, args, grades = files
    monkeypatch.setitem(STRATEGIES, "least-certain", _NeedsProbabilities)
    refused = invoke(*args, "--repeat", "1", "--strategy", "least-certain")
    assert refused.exit_code == 1 and refused.stderr.count("\n") == 1
    assert (
        "strategy least-certain needs the model's grade probabilities, and none were given" in refused.stderr
    )
    probs = {
        pair: (0.7, 0.1, 0.1, 0.1) if i % 2 else (0.25, 0.25, 0.25, 0.25)
        for i, pair in enumerate(sorted(grades))
    }
    side = write_probabilities(tmp / "model.qrels.probabilities.tsv", probs, 3)
    result = invoke(*args, "--repeat", "1", "--budget", "50", "--strategy", "least-certain", "--probabilities", side,
                    "-f", "json")  # fmt: skip
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    assert doc["probabilities"]["source"] == str(side)
    assert doc["results"][0]["human_pairs"] == 50


def test_p_at_k_gives_random_pairs_an_interval(files):
    _, args, _ = files
    result = invoke(
        *args,
        "--repeat",
        "3",
        "--budget",
        "40%",
        "--strategy",
        "random-pairs",
        "-m",
        "P(rel=2)@5",
        "-f",
        "json",
    )
    assert result.exit_code == 0, result.output
    doc = json.loads(result.stdout)
    row = doc["results"][0]
    assert doc["measures"][0]["name"] == "P(rel=2)@5"
    assert row["estimator"] == "difference estimator under simple random sampling of pairs (random pairs)"
    assert row["coverage_means"] is not None and row["interval_width"] > 0


def test_probabilities_missing_a_pair_is_one_line(files, monkeypatch):
    tmp, args, grades = files
    monkeypatch.setitem(STRATEGIES, "least-certain", _NeedsProbabilities)
    probs = {pair: (0.25, 0.25, 0.25, 0.25) for pair in sorted(grades)[1:]}
    side = write_probabilities(tmp / "partial.probabilities.tsv", probs, 3)
    result = invoke(*args, "--repeat", "1", "--strategy", "least-certain", "--probabilities", side)
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert (
        "partial.probabilities.tsv: the grade probabilities lack 1 of the 160 pooled pairs; the first: query q0 document d0"
        in result.stderr
    )


def test_an_unsupported_measure_is_one_line(files):
    _, args, _ = files
    result = invoke(*args, "--repeat", "1", "-m", "AP@10")
    assert result.exit_code == 1 and result.stderr.count("\n") == 1
    assert "are of nDCG@k, P@k and R@k" in result.stderr


def test_the_default_strategies_are_the_librarys_and_every_registered_one():
    """--help spells the default without importing numpy; it is the library's list, which names every
    registered strategy but any a test registers."""
    from qrelkit.budget import STRATEGIES
    from qrelkit.budget.replay import DEFAULT_STRATEGIES
    from qrelkit.cli.budget import DEFAULT_STRATEGIES as SPELT

    assert tuple(SPELT.split(",")) == DEFAULT_STRATEGIES
    assert set(DEFAULT_STRATEGIES) == {
        "random-queries",
        "random-pairs",
        "pool-order",
        "mtc",
        "bandit",
        "active",
    }
    assert set(DEFAULT_STRATEGIES) <= set(STRATEGIES)


def test_a_model_on_another_scale_is_refused(files):
    """People grade 0..3; a model grading 0..9 would be ranked beside them: one line naming the file, both
    scales and the fix. A lenient model within 0..3 is on the same scale (the fixture's model never refused)."""
    tmp, args, _ = files
    wide = tmp / "model10.qrels"
    wide.write_text(
        "".join(
            f"{q} {it} {d} {int(g) * 3}\n"
            for q, it, d, g in (ln.split() for ln in Path(args[1]).read_text().splitlines())
        )
    )
    result = invoke(args[0], str(wide), *args[2:], "--repeat", "1")
    assert result.exit_code == 1
    line = result.stderr.strip()
    assert "\n" not in line and str(wide) in line, line
    assert "model10.qrels grades 0..9 but full.qrels's people grade 0..3: different grade scales" in line
    assert "map the model's grades to the people's scale" in line


def test_a_rubric_gives_the_scale_the_people_did_not_use_whole(files):
    """People who never gave 3 beside a model that did: refused on FULL's own span 0..2, taken when the rubric
    says the scale is 0..3."""
    tmp, args, _ = files
    capped = tmp / "full02.qrels"
    capped.write_text(
        "".join(
            f"{q} {it} {d} {min(int(g), 2)}\n"
            for q, it, d, g in (ln.split() for ln in Path(args[0]).read_text().splitlines())
        )
    )
    refused = invoke(str(capped), *args[1:], "--repeat", "1", "--strategy", "pool-order")
    assert refused.exit_code == 1 and "different grade scales" in refused.stderr
    assert "--rubric rubric.toml" in refused.stderr
    rubric = Path(__file__).resolve().parents[2] / "examples" / "docsearch" / "rubric.toml"  # scale 0..3
    taken = invoke(
        str(capped), *args[1:], "--repeat", "1", "--strategy", "pool-order", "--rubric", str(rubric)
    )
    assert taken.exit_code == 0, taken.output


def test_intervals_stay_within_the_measures_range(files):
    """On a draw of eight pairs, active's linearised interval reached far past [0, 1] (widths in the
    hundreds); cut to the measure's range it is at most 1 wide, and a difference's at most 2."""
    _, args, _ = files
    result = invoke(*args, "--repeat", "3", "--budget", "8", "--strategy", "active", "-f", "json")
    assert result.exit_code == 0, result.output
    (row,) = json.loads(result.stdout)["results"]
    assert row["interval_width"] is None or row["interval_width"] <= 1.0


def test_estimate_within_cuts_every_interval_and_keeps_none():
    """Hand values: means' intervals cut to [0, 1], differences' to [-1, 1], NaN (no interval) kept."""
    from qrelkit.budget.base import Estimate

    nan = float("nan")
    est = Estimate(
        "e",
        np.array([0.5, 0.9]),
        np.array([-3.0, nan]),
        np.array([5.0, nan]),
        np.array([[0.0, -0.4], [0.4, 0.0]]),
        np.array([[nan, -7.0], [0.1, nan]]),
        np.array([[nan, 0.3], [9.0, nan]]),
    ).within(0.0, 1.0)
    assert est.low.tolist()[0] == 0.0 and est.high.tolist()[0] == 1.0 and np.isnan(est.low[1])
    assert est.diff_low[0, 1] == -1.0 and est.diff_high[1, 0] == 1.0 and est.diff_low[1, 0] == 0.1
    assert np.isnan(est.diff_low[0, 0]) and est.means.tolist() == [0.5, 0.9]


def test_with_every_pair_bought_every_interval_holds(files):
    """At 100% of the pairs the people's grades are all known: every interval that is reported holds the
    people's value, though the estimator adds its terms in another order than the truth does."""
    _, args, _ = files
    result = invoke(
        *args, "--repeat", "1", "--budget", "100%", "--strategy", "active,random-queries", "-f", "json"
    )
    assert result.exit_code == 0, result.output
    for row in json.loads(result.stdout)["results"]:
        assert row["coverage_means"] in (None, 1.0), row
        assert row["coverage_differences"] in (None, 1.0) and row["wrong_sign"] == 0.0, row


def test_an_output_in_a_missing_folder_is_refused_before_the_replay(files, tmp_path):
    """The error write_output would give after the whole replay, given at the start: one line naming the
    file and the missing folder, and nothing written."""
    _, args, _ = files
    out = tmp_path / "no-such-folder" / "replay.json"
    result = invoke(*args, "--repeat", "1", "-o", str(out))
    assert result.exit_code != 0
    line = result.stderr.strip()
    assert "\n" not in line and str(out) in line and "does not exist" in line, line
    assert not out.parent.exists()
