"""``qrelkit agree``, ``leverage`` and ``adjudicate`` from the command line.

Expected numbers come from hand arithmetic (the chapter) or from independent implementations
(scikit-learn's ``cohen_kappa_score`` and ``confusion_matrix`` with the full scale as ``labels``,
statsmodels' ``cohens_kappa`` for the Fleiss-Cohen-Everitt interval).
"""

from __future__ import annotations

import hashlib
import json
from math import log2
from pathlib import Path

import numpy as np
import pytest

from ..conftest import CLI, EXAMPLE, FIXTURES

CHAPTER = FIXTURES / "chapter"
RUBRIC = FIXTURES / "rubrics" / "clean.toml"  # scale 0-3


invoke = CLI


def write_qrels(path: Path, rows: list[tuple[str, str, int]]) -> Path:
    path.write_text("".join(f"{q} 0 {d} {g}\n" for q, d, g in rows))
    return path


def read_rows(path: Path) -> dict[tuple[str, str], int]:
    out = {}
    for line in path.read_text().splitlines():
        if line.strip():
            q, _, d, g = line.split()
            out[q, d] = int(g)
    return out


@pytest.fixture
def chapter_pair(tmp_path):
    """Labeller A is the chapter's qrels; B regrades policy/key-lifetime 3 and api-keys/rotation 2."""
    a = CHAPTER / "qrels.txt"
    text = a.read_text()
    text = text.replace("policy/key-lifetime 1", "policy/key-lifetime 3")
    text = text.replace("api-keys/rotation 3", "api-keys/rotation 2")
    b = tmp_path / "second.qrels"
    b.write_text(text)
    return a, b


def test_chapter_two_labeller_case(chapter_pair):
    a, b = chapter_pair
    result = invoke("agree", a, b, "--runs", CHAPTER / "run.txt", "-k", "10", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    (row,) = data["metric_agreement"]["per_query"]
    dcg_a = 1 + 7 / log2(3) + 3 / log2(5) + 3 / log2(8) + 1 / log2(11)
    idcg_a = 7 + 3 / log2(3) + 3 / log2(4) + 1 / log2(5) + 1 / log2(6)
    dcg_b = 7 + 3 / log2(3) + 3 / log2(5) + 3 / log2(8) + 1 / log2(11)
    idcg_b = 7 + 3 / log2(3) + 3 / log2(4) + 3 / log2(5) + 1 / log2(6)
    assert row["ndcg_a"] == pytest.approx(dcg_a / idcg_a, abs=1e-12)
    assert round(row["ndcg_a"], 4) == 0.7134
    assert row["ndcg_b"] == pytest.approx(dcg_b / idcg_b, abs=1e-12)
    # exact arithmetic gives 0.95048; the chapter prints 0.951 from its rounded intermediate terms
    assert round(row["ndcg_b"], 5) == 0.95048
    assert row["recall_a"] == row["recall_b"] == 1.0  # five of five under both labellers
    assert row["recall_identical"] is True and row["ndcg_moves_recall_not"] is True
    means = data["metric_agreement"]["means"]["chapter"]
    assert means["queries_ndcg_moves_recall_not"] == 1
    # and the table says so
    table = invoke("agree", a, b, "--runs", CHAPTER / "run.txt", "-k", "10")
    assert "0.7134 -> 0.9505" in table.stdout
    assert "* chapter" in table.stdout


def test_json_carries_identity(chapter_pair):
    a, b = chapter_pair
    data = json.loads(invoke("agree", a, b, "--rubric", RUBRIC, "--format", "json").stdout)
    assert data["scale"] == [0, 1, 2, 3] and data["scale_source"] == "rubric"
    assert data["weights"] == "linear"
    assert len(data["rubric"]["content_hash"]) == 64
    for who, path in (("a", a), ("b", b)):
        assert (
            data["labellers"][who]["fingerprint"]["sha256"] == hashlib.sha256(path.read_bytes()).hexdigest()
        )
    assert data["agreement"]["n_pairs"] == 7
    assert len(data["agreement"]["disagreements"]) == 2


def test_unused_grade_scale_from_rubric(tmp_path):
    from sklearn.metrics import cohen_kappa_score

    # Nobody uses grade 3, so without the rubric the scale ends at 2.
    ga = [0, 0, 1, 2, 2, 1, 0, 2, 1, 0]
    gb = [0, 1, 1, 2, 1, 1, 0, 2, 2, 0]
    a = write_qrels(tmp_path / "a.qrels", [("q1" if i < 5 else "q2", f"d{i}", g) for i, g in enumerate(ga)])
    b = write_qrels(tmp_path / "b.qrels", [("q1" if i < 5 else "q2", f"d{i}", g) for i, g in enumerate(gb)])
    with_rubric = invoke("agree", a, b, "--rubric", RUBRIC, "--format", "json")
    assert with_rubric.exit_code == 0
    assert "warning" not in with_rubric.stderr
    data = json.loads(with_rubric.stdout)
    assert data["scale"] == [0, 1, 2, 3]
    confusion = np.array(data["agreement"]["kappa"]["confusion"])
    assert confusion.shape == (4, 4) and confusion[3].sum() == confusion[:, 3].sum() == 0
    full = cohen_kappa_score(ga, gb, labels=[0, 1, 2, 3], weights="linear")
    assert data["agreement"]["kappa"]["kappa"] == pytest.approx(full, abs=1e-12)
    without = invoke("agree", a, b, "--format", "json")
    assert without.exit_code == 0
    assert "warning" in without.stderr and "cannot be known" in without.stderr
    assert json.loads(without.stdout)["scale"] == [0, 1, 2]


def test_grade_outside_the_rubric_is_one_line_with_file_and_line(tmp_path):
    a = write_qrels(tmp_path / "a.qrels", [("q1", "d1", 1), ("q1", "d2", 4)])
    result = invoke("agree", a, a, "--rubric", RUBRIC)
    assert result.exit_code == 1
    assert f"{a}:2" in result.stderr and len(result.stderr.strip().splitlines()) == 1


@pytest.fixture(scope="module")
def example():
    alice, bob = EXAMPLE / "judgments" / "alice.qrels", EXAMPLE / "judgments" / "bob.qrels"
    if not alice.exists():
        pytest.skip("the bundled example is not present")
    return alice, bob, EXAMPLE / "rubric.toml", sorted((EXAMPLE / "runs").glob("*.run"))


def test_gate_exit_codes(example):
    from sklearn.metrics import confusion_matrix
    from statsmodels.stats.inter_rater import cohens_kappa

    alice, bob, rubric, _ = example
    ra, rb = read_rows(alice), read_rows(bob)
    keys = sorted(ra.keys() & rb.keys())
    table = confusion_matrix([ra[k] for k in keys], [rb[k] for k in keys], labels=[0, 1, 2, 3])
    sm = cohens_kappa(table, wt="linear")
    low, kappa = sm.kappa_low, sm.kappa
    assert low < kappa
    between = round((low + kappa) / 2, 4)  # above the lower bound, below the point estimate
    assert invoke("agree", alice, bob, "--rubric", rubric).exit_code == 0  # no gate asked for
    passed = invoke("agree", alice, bob, "--rubric", rubric, "--min-kappa", round(low - 0.01, 4))
    assert passed.exit_code == 0 and "PASS" in passed.stdout
    failed = invoke("agree", alice, bob, "--rubric", rubric, "--min-kappa", between)
    assert failed.exit_code == 3 and "FAIL" in failed.stdout
    assert "3" in invoke("agree", "--help").stdout.split("Exit status")[1]


def test_bundled_example_agreement(example):
    from sklearn.metrics import cohen_kappa_score, confusion_matrix

    alice, bob, rubric, runs = example
    result = invoke("agree", alice, bob, "--rubric", rubric, "--runs", *runs, "-k", "10", "--format", "json")
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    ra, rb = read_rows(alice), read_rows(bob)
    keys = sorted(ra.keys() & rb.keys())
    ga, gb = [ra[k] for k in keys], [rb[k] for k in keys]
    kappa = data["agreement"]["kappa"]
    assert kappa["n"] == len(keys)
    assert kappa["kappa"] == pytest.approx(cohen_kappa_score(ga, gb, labels=[0, 1, 2, 3], weights="linear"))
    assert kappa["confusion"] == confusion_matrix(ga, gb, labels=[0, 1, 2, 3]).tolist()
    assert len(data["agreement"]["disagreements"]) == sum(x != y for x, y in zip(ga, gb, strict=True))
    assert kappa["ci_low"] < kappa["kappa"] < kappa["ci_high"]
    metric = data["metric_agreement"]
    assert sorted(metric["means"]) == ["bm25", "dense", "hybrid", "rerank"]
    queries = {q for q, _ in keys}
    assert {r["query_id"] for r in metric["per_query"]} == queries
    for r in metric["per_query"]:
        assert r["ndcg_moves_recall_not"] == (
            abs(r["ndcg_b"] - r["ndcg_a"]) > 1e-12 and r["recall_a"] == r["recall_b"]
        )


def test_leverage_command(chapter_pair):
    a, _ = chapter_pair
    result = invoke("leverage", a, CHAPTER / "run.txt", "-k", "10", "--top", "3", "--format", "tsv")
    assert result.exit_code == 0, result.output
    head, full, *lines = result.stdout.splitlines()  # the two '#' lines of a pipe first
    assert head.startswith("# qrelkit ") and full.startswith("# full provenance")
    assert lines[0].split("\t") == [
        "query_id",
        "doc_id",
        "grade",
        "regrade",
        "leverage_max",
        "leverage_mean",
        "retrieved",
    ]
    assert len(lines) == 4
    first = lines[1].split("\t")
    assert first[1:4] == ["policy/key-lifetime", "1", "2"] and first[6] == "chapter:1"


def test_adjudicate_queue_and_merge(tmp_path, chapter_pair):
    a, b = chapter_pair
    queue = tmp_path / "queue.tsv"
    result = invoke("adjudicate", a, b, "--runs", CHAPTER / "run.txt", "-o", queue)
    assert result.exit_code == 0, result.output
    rows = [line.split("\t") for line in queue.read_text().splitlines()]
    assert rows[0][:6] == ["query_id", "doc_id", "grade_a", "grade_b", "leverage_max", "leverage_mean"]
    assert [r[1] for r in rows[1:]] == ["policy/key-lifetime", "api-keys/rotation"]
    assert rows[1][-1] == "chapter:1" and rows[2][-1] == "chapter:2"

    decisions = tmp_path / "decisions.tsv"
    decisions.write_text("key-rotation\tpolicy/key-lifetime\t1\n")
    final = tmp_path / "final.qrels"
    missing = invoke("adjudicate", a, b, "--decisions", decisions, "-o", final)
    assert missing.exit_code == 1
    assert (
        "1 disputed pair(s) have no decision" in missing.stderr
        and "api-keys/rotation" in missing.stderr
        and "--allow-unresolved leave-out" in missing.stderr
    )
    assert not final.exists()
    done = invoke(
        "adjudicate", a, b, "--decisions", decisions, "--default", "a", "--rubric", RUBRIC, "-o", final
    )
    assert done.exit_code == 0, done.output
    assert read_rows(final) == read_rows(a)  # the decision and the default both chose A's grades
    manifest = json.loads((tmp_path / "final.qrels.manifest.json").read_text())
    assert manifest["adjudication"] == {
        "agreed": 5,
        "adjudicated": 1,
        "overridden": 0,
        "defaulted": 1,
        "single_labeller": 0,
        "unresolved_left_out": 0,
        "ungraded_left_out": 0,
        "total": 7,
        "undecided_policy": "a",
        "override_allowed": False,
    }
    assert manifest["labellers"] == ["qrels", "second"]
    assert manifest["scale"] == [0, 1, 2, 3] and manifest["rubric"]["name"] == "docsearch"
    assert manifest["qrels"]["sha256"] == hashlib.sha256(final.read_bytes()).hexdigest()
    assert manifest["calibration"]["n_pairs"] == 7 and "gate" in manifest["calibration"]


def test_adjudicate_usage(chapter_pair, tmp_path):
    a, b = chapter_pair
    neither = invoke("adjudicate", a, b, "-o", tmp_path / "x")
    assert neither.exit_code == 2 and "not both" not in neither.stderr
    assert (
        "pass --runs RUN... to write the adjudication queue, or --decisions FILE to merge decisions into final qrels"
        in (neither.stderr)
    )
    both = invoke("adjudicate", a, b, "--runs", CHAPTER / "run.txt", "--decisions", a, "-o", tmp_path / "x")
    assert both.exit_code == 2 and "not both" in both.stderr
    assert invoke("agree", a).exit_code == 2


def test_quadratic_and_unweighted_match_scikit_learn(example, tmp_path):
    from sklearn.metrics import cohen_kappa_score

    alice, bob, rubric, _ = example
    ra, rb = read_rows(alice), read_rows(bob)
    keys = sorted(ra.keys() & rb.keys())
    ga, gb = [ra[k] for k in keys], [rb[k] for k in keys]
    for option, sk in (("quadratic", "quadratic"), ("unweighted", None)):
        out = tmp_path / f"{option}.json"
        result = invoke("agree", alice, bob, "--rubric", rubric, "--weights", option, "-o", out)
        assert result.exit_code == 0 and result.stdout == ""
        data = json.loads(out.read_text())  # -o with a .json suffix writes JSON
        assert data["weights"] == option
        expected = cohen_kappa_score(ga, gb, labels=[0, 1, 2, 3], weights=sk)
        assert data["agreement"]["kappa"]["kappa"] == pytest.approx(expected, abs=1e-12)


def test_runs_option_takes_several_files_or_repeats(chapter_pair):
    a, b = chapter_pair
    run = CHAPTER / "run.txt"
    grouped = invoke("agree", a, b, "--runs", run, "-k", "5", "--format", "json")
    repeated = invoke("agree", a, b, "--format", "json", "--runs", run, "-k", "5")
    assert grouped.exit_code == repeated.exit_code == 0
    one = json.loads(grouped.stdout)["metric_agreement"]
    assert one["measures"] == ["nDCG@5", "R(rel=1)@5"]
    assert one == json.loads(repeated.stdout)["metric_agreement"]


def test_bundled_example_adjudication_reproduces_its_final_qrels(example, tmp_path):
    """Deciding every disagreement as the example's final qrels.txt did gives back qrels.txt."""
    alice, bob, rubric, runs = example
    final_rows = read_rows(EXAMPLE / "qrels.txt")
    ra, rb = read_rows(alice), read_rows(bob)
    disputed = sorted(k for k in ra.keys() & rb.keys() if ra[k] != rb[k])
    queue = tmp_path / "queue.tsv"
    assert invoke("adjudicate", alice, bob, "--runs", *runs, "-o", queue).exit_code == 0
    listed = [tuple(line.split("\t")[:2]) for line in queue.read_text().splitlines()[1:]]
    assert sorted(listed) == disputed
    leverage = [float(line.split("\t")[4]) for line in queue.read_text().splitlines()[1:]]
    assert leverage == sorted(leverage, reverse=True)
    decisions = tmp_path / "decisions.tsv"
    decisions.write_text("".join(f"{q}\t{d}\t{final_rows[q, d]}\n" for q, d in disputed))
    out = tmp_path / "final.qrels"
    result = invoke("adjudicate", alice, bob, "--decisions", decisions, "--rubric", rubric, "-o", out)
    assert result.exit_code == 0, result.output
    merged = read_rows(out)
    assert merged == {k: v for k, v in final_rows.items() if k in ra.keys() | rb.keys()}
    manifest = json.loads((tmp_path / "final.qrels.manifest.json").read_text())
    assert manifest["adjudication"]["adjudicated"] == len(disputed)
    assert manifest["labellers"] == ["alice", "bob"]
    assert manifest["calibration"]["gate"]["passed"] is True


def test_three_files_gate_on_the_chosen_statistic_and_usage_errors(example, tmp_path):
    """Three files: the pairwise matrix holds each two files' kappa; the gate on the mean pairwise kappa
    exits 3 when the lower end of its query-bootstrap interval is below the threshold."""
    from sklearn.metrics import cohen_kappa_score

    alice, bob, rubric, _ = example
    rows = read_rows(alice)
    carol = write_qrels(tmp_path / "carol.qrels",
                        [(q, d, min(3, g + 1) if i % 4 == 0 else g) for i, ((q, d), g) in enumerate(sorted(rows.items()))])  # fmt: skip
    out = invoke("agree", alice, bob, carol, "--rubric", rubric, "-f", "json")
    assert out.exit_code == 0, out.output
    group = json.loads(out.stdout)["group"]
    assert group["statistic"] == "mean_kappa" and group["labellers"] == ["alice", "bob", "carol"]
    files = {"alice": read_rows(alice), "bob": read_rows(bob), "carol": read_rows(carol)}
    expected = []
    for i, j in ((0, 1), (0, 2), (1, 2)):
        a, b = files[group["labellers"][i]], files[group["labellers"][j]]
        keys = sorted(a.keys() & b.keys())
        k = cohen_kappa_score(
            [a[x] for x in keys], [b[x] for x in keys], labels=[0, 1, 2, 3], weights="linear"
        )
        assert group["kappa_matrix"][i][j] == pytest.approx(k, abs=1e-12)
        expected.append(k)
    assert group["value"] == pytest.approx(np.mean(expected), abs=1e-12)
    low = group["bootstrap_low"]
    passed = invoke("agree", alice, bob, carol, "--rubric", rubric, "--min-kappa", round(low - 0.001, 4))
    assert passed.exit_code == 0 and "gate on mean pairwise weighted kappa" in passed.stdout
    failed = invoke("agree", alice, bob, carol, "--rubric", rubric, "--min-kappa", round(low + 0.001, 4))
    assert failed.exit_code == 3 and "FAIL" in failed.stdout
    alpha = invoke(
        "agree", alice, bob, carol, "--rubric", rubric, "--statistic", "alpha_interval", "-f", "json"
    )
    assert json.loads(alpha.stdout)["group"]["value"] == group["statistics"]["alpha_interval"]["value"]
    assert invoke("agree", alice).exit_code == 2
    assert invoke("agree", alice, bob, carol, "--runs", alice).exit_code == 2


def test_two_sets_of_grades_with_no_query_in_common_are_one_line(tmp_path):
    """agree's metric agreement and its decision agreement read the two files on their common queries (one
    owner: qrelkit.data.values.on_common_queries); none in common is one line naming both files."""
    a = write_qrels(tmp_path / "a.qrels", [("q1", "d1", 1), ("q1", "d2", 0)])
    b = write_qrels(tmp_path / "b.qrels", [("q2", "d1", 1), ("q2", "d2", 0)])
    run = tmp_path / "r.run"
    run.write_text("q1 Q0 d1 1 2.0 r\nq1 Q0 d2 2 1.0 r\nq2 Q0 d1 1 2.0 r\nq2 Q0 d2 2 1.0 r\n")
    other = run.with_name("s.run")
    other.write_text(run.read_text().replace(" r\n", " s\n"))
    for runs in ((run,), (run, other)):  # the metric agreement alone, then with the decision agreement
        result = invoke("agree", a, b, "--runs", *runs)
        assert result.exit_code != 0
        assert "judge no query in common" in result.stderr, result.stderr
        assert "a.qrels and b.qrels" in result.stderr and "Traceback" not in result.stderr
