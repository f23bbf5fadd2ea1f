"""A model labeller's ranking agreement in ``judge model status``: the runs the project holds ordered by the
people's settled calibration grades and by the model's, against nDCG@10 written out here, scipy's
kendalltau and tau_AP enumerated from its definition; information unless --gate-ranking asks for a gate;
said plainly when the project holds no runs. The model is a real HTTP server on the loopback interface
speaking the chat completions protocol (tests/app/models/helpers.py)."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np
import pytest
import scipy.stats

from tests.agreement.ranking_oracle import slow_tau_ap

from .helpers import DOCS, ChatServer, grade_calibration, make_synthetic, person, scripted

CALIBRATION_QUERIES = 8
# each run's order of a query's documents: by a score of the document's index
ORDERS = {
    "best": lambda q, d: (q + 2 * d) % 4 * 10 - d,  # the truth's order
    "worst": lambda q, d: -((q + 2 * d) % 4) * 10 + d,
    "by_index": lambda q, d: -d,
    "by_index_reversed": lambda q, d: d + (q % 3),
}


def _project_with_runs(tmp_path: Path) -> Path:
    from qrelkit.app.project import init_project

    make_synthetic(tmp_path)  # writes the rubric, queries, documents and pool, and a project without runs
    runs = []
    for name, score in ORDERS.items():
        path = tmp_path / f"{name}.run"
        with open(path, "w") as f:
            for q in range(12):
                for rank, d in enumerate(sorted(range(DOCS), key=lambda d: -score(q, d)), start=1):
                    f.write(f"q{q} Q0 d{q}-{d} {rank} {100 - rank} {name}\n")
        runs.append(path)
    db = tmp_path / "with-runs.db"
    init_project(db, rubric=tmp_path / "rubric.toml", pool=tmp_path / "pool.jsonl", docs=tmp_path / "docs.jsonl",
                 queries=tmp_path / "queries.tsv", labellers=["alice", "bob"], seed=11, min_kappa=0.3,
                 runs=runs)  # fmt: skip
    grade_calibration(db, person)
    return db


def _ndcg(grades: dict[tuple[int, int], int], q: int, score, k: int = 10) -> float:
    """nDCG@k with gains 2^g - 1 and log2 discounts, the ideal from the query's judged grades."""
    order = sorted(range(DOCS), key=lambda d: -score(q, d))
    dcg = sum((2 ** grades.get((q, d), 0) - 1) / math.log2(r + 2) for r, d in enumerate(order[:k]))
    ideal = sorted((g for (qq, _), g in grades.items() if qq == q), reverse=True)
    idcg = sum((2**g - 1) / math.log2(r + 2) for r, g in enumerate(ideal[:k]))
    return dcg / idcg if idcg else 0.0


def _run_model(cli, db: Path, answer) -> None:
    with ChatServer(answer) as srv:
        assert (
            cli("judge", "model", "add", db, "judge", "--endpoint", srv.url, "--model", "judge-1").exit_code
            == 0
        )
        result = cli("judge", "model", "run", db, "judge", "--calibration-only")
        assert result.exit_code == 0, result.output


def test_ranking_agreement_equals_independent_values(tmp_path: Path, cli) -> None:
    db = _project_with_runs(tmp_path)
    answer = scripted(5, flip_every=3)
    _run_model(cli, db, answer)
    result = cli("judge", "model", "status", db, "judge", "--format", "json")
    assert result.exit_code == 0, result.output
    ranking = json.loads(result.stdout)["ranking_agreement"]
    assert ranking["role"] == "information" and ranking["gate"] is None
    found = ranking["decision_agreement"]

    # the people's settled grades: alice and bob agree (no adjudication was made); disputed pairs left out
    keys = [(q, d) for q in range(CALIBRATION_QUERIES) for d in range(DOCS)]
    people = {k: person("alice", f"q{k[0]}", f"d{k[0]}-{k[1]}") for k in keys
              if person("alice", f"q{k[0]}", f"d{k[0]}-{k[1]}") == person("bob", f"q{k[0]}", f"d{k[0]}-{k[1]}")}  # fmt: skip
    model = {k: answer(k[0], k[1], "") for k in people}
    assert ranking["pairs_left_out"] == len(keys) - len(people)
    queries = sorted({q for q, _ in people})
    assert found["queries"] == len(queries)
    names = sorted(ORDERS)
    means_a = [np.mean([_ndcg(people, q, ORDERS[n]) for q in queries]) for n in names]
    means_b = [np.mean([_ndcg(model, q, ORDERS[n]) for q in queries]) for n in names]
    by_run = {r["run"]: r for r in found["runs"]}
    assert [by_run[n]["mean_a"] for n in names] == pytest.approx(means_a, abs=1e-12)
    assert [by_run[n]["mean_b"] for n in names] == pytest.approx(means_b, abs=1e-12)
    expected_tau = scipy.stats.kendalltau(means_a, means_b, variant="b").statistic
    assert found["kendall_tau"]["value"] == pytest.approx(expected_tau, abs=1e-12)
    assert found["tau_ap"]["value"] == pytest.approx(float(slow_tau_ap(means_a, means_b)), abs=1e-12)
    sym = (slow_tau_ap(means_a, means_b) + slow_tau_ap(means_b, means_a)) / 2
    assert found["tau_ap_symmetric"]["value"] == pytest.approx(float(sym), abs=1e-12)
    low, high = found["kendall_tau"]["interval"]
    assert low <= found["kendall_tau"]["value"] <= high or math.isclose(low, high)
    assert found["significance"]["pairs"] == 6

    table = cli("judge", "model", "status", db, "judge").stdout
    assert "as decisions (information;" in table and "Kendall's tau-b" in table


def test_gate_ranking_is_a_gate_only_when_asked(tmp_path: Path, cli) -> None:
    db = _project_with_runs(tmp_path)
    _run_model(cli, db, scripted(5, flip_every=3))
    low = json.loads(cli("judge", "model", "status", db, "judge", "--format", "json").stdout)[
        "ranking_agreement"]["decision_agreement"]["kendall_tau"]["interval"][0]  # fmt: skip
    passing = cli(
        "judge", "model", "status", db, "judge", "--gate-ranking", str(low - 0.01), "--format", "json"
    )
    assert passing.exit_code == 0
    assert json.loads(passing.stdout)["ranking_agreement"]["gate"]["passed"] is True
    assert low < 1  # one pair of the four runs flips on these grades
    failing = cli("judge", "model", "status", db, "judge", "--gate-ranking", "1")
    assert failing.exit_code == 3
    assert "ranking gate failed: Kendall's tau interval lower end" in failing.stdout


def _settled(answer) -> tuple[dict, dict]:
    """The people's settled calibration grades (alice and bob agree; no adjudication) and the model's."""
    keys = [(q, d) for q in range(CALIBRATION_QUERIES) for d in range(DOCS)]
    people = {k: person("alice", f"q{k[0]}", f"d{k[0]}-{k[1]}") for k in keys
              if person("alice", f"q{k[0]}", f"d{k[0]}-{k[1]}") == person("bob", f"q{k[0]}", f"d{k[0]}-{k[1]}")}  # fmt: skip
    return people, {k: answer(k[0], k[1], "") for k in people}


def test_without_stored_runs_the_pools_record_of_ranks_serves(tmp_path: Path, cli) -> None:
    from qrelkit.app.models.ranking import ranking_inputs
    from qrelkit.app.project import init_project
    from qrelkit.app.store import Store
    from qrelkit.compare.decisions import model_ranking

    make_synthetic(tmp_path)
    lines = []  # the pool as `qrelkit pool` records it: each run's rank of each pooled pair
    for line in (tmp_path / "pool.jsonl").read_text().splitlines():
        entry = json.loads(line)
        q, d = int(entry["query_id"][1:]), int(entry["doc_id"].split("-")[1])
        ranks = {
            n: 1 + sorted(range(DOCS), key=lambda x, s=s, q=q: -s(q, x)).index(d) for n, s in ORDERS.items()
        }
        lines.append(json.dumps(entry | {"runs": ranks, "best_rank": min(ranks.values())}))
    (tmp_path / "pool.jsonl").write_text("\n".join(lines) + "\n")
    db = tmp_path / "pooled.db"
    init_project(db, rubric=tmp_path / "rubric.toml", pool=tmp_path / "pool.jsonl", docs=tmp_path / "docs.jsonl",
                 queries=tmp_path / "queries.tsv", labellers=["alice", "bob"], seed=11, min_kappa=0.3)  # fmt: skip
    grade_calibration(db, person)
    answer = scripted(5, flip_every=3)
    _run_model(cli, db, answer)
    # nDCG@10 needs each run's top 10; the pool's record reaches rank 5
    status = json.loads(cli("judge", "model", "status", db, "judge", "--format", "json").stdout)
    assert status["ranking_agreement"]["note"] == (
        "the pool's record of ranks reaches rank 5, short of the measure's cutoff 10 (judge init --runs stores "
        "whole runs)"
    )
    table = cli("judge", "model", "status", db, "judge").stdout
    assert "ranking agreement (information): not measured: the pool's record of ranks reaches rank 5" in table
    gated = cli("judge", "model", "status", db, "judge", "--gate-ranking", "0.5")
    assert gated.exit_code == 3 and "ranking gate not measurable: the pool's record of ranks" in gated.stdout
    # nDCG@5 reads the top 5 the pool holds
    with Store(db, read_only=True) as store:
        inputs = ranking_inputs(store, "judge", depth=5)
    assert inputs.measure == "nDCG(ties=docid_desc)@5"
    found = model_ranking(inputs, "nDCG@5")
    assert found["runs_from"] == (
        "the pooled runs' rankings (the pool's record of ranks: tied scores in the pool's order, doc id descending)"
    )
    doc = found["decision_agreement"]
    people, model = _settled(answer)
    queries = sorted({q for q, _ in people})
    names = sorted(ORDERS)
    means_a = [np.mean([_ndcg(people, q, ORDERS[n], 5) for q in queries]) for n in names]
    means_b = [np.mean([_ndcg(model, q, ORDERS[n], 5) for q in queries]) for n in names]
    by_run = {r["run"]: r for r in doc["runs"]}
    assert [by_run[n]["mean_a"] for n in names] == pytest.approx(means_a, abs=1e-12)
    assert [by_run[n]["mean_b"] for n in names] == pytest.approx(means_b, abs=1e-12)
    assert doc["kendall_tau"]["value"] == pytest.approx(
        scipy.stats.kendalltau(means_a, means_b, variant="b").statistic, abs=1e-12
    )


def test_a_model_with_no_settled_pair_says_so(tmp_path: Path, cli) -> None:
    db = make_synthetic(tmp_path)  # the people have not graded: nothing is settled
    with ChatServer(scripted(2)) as srv:
        assert (
            cli("judge", "model", "add", db, "judge", "--endpoint", srv.url, "--model", "judge-1").exit_code
            == 0
        )
    ranking = json.loads(cli("judge", "model", "status", db, "judge", "--format", "json").stdout)[
        "ranking_agreement"]  # fmt: skip
    assert ranking["note"] == "no calibration pair has both the people's settled grade and the model's"


def test_pooled_runs_with_tied_scores_are_measured_as_the_pool_ordered_them(tmp_path: Path, cli) -> None:
    """A run that gives every document of a query the same score: ``qrelkit pool`` ranks them by doc id
    descending (d4 first), and the pool keeps only those ranks. The pooled runs are measured under that
    order and the measure names it (``nDCG(ties=docid_desc)@5``: five documents a query): its means are
    nDCG@5 written out here over the order d4, d3, ..., d0, and ``qrelkit agree --runs`` on the run files
    gives the same numbers with that measure."""
    make_synthetic(tmp_path)
    flat = {"flat": lambda q, d: 0, **{k: v for k, v in ORDERS.items() if k in ("best", "worst")}}
    runs = []
    for name, score in flat.items():
        path = tmp_path / f"{name}.run"
        with open(path, "w") as f:
            for q in range(12):
                for d in range(DOCS):
                    f.write(f"q{q} Q0 d{q}-{d} 0 {score(q, d)} {name}\n")
        runs.append(path)
    docs_pool = tmp_path / "built.jsonl"
    built = cli("pool", *[str(r) for r in runs], "--depth", "10", "-o", docs_pool)
    assert built.exit_code == 0, built.output
    lines = []  # the calibration queries as the synthetic project has them
    for line in docs_pool.read_text().splitlines():
        entry = json.loads(line)
        lines.append(json.dumps(entry | {"calibration": int(entry["query_id"][1:]) < CALIBRATION_QUERIES}))
    (tmp_path / "pool.jsonl").write_text("\n".join(lines) + "\n")
    from qrelkit.app.project import init_project

    db = tmp_path / "pooled.db"
    init_project(db, rubric=tmp_path / "rubric.toml", pool=tmp_path / "pool.jsonl", docs=tmp_path / "docs.jsonl",
                 queries=tmp_path / "queries.tsv", labellers=["alice", "bob"], seed=11, min_kappa=0.3)  # fmt: skip
    grade_calibration(db, person)
    answer = scripted(5, flip_every=3)
    _run_model(cli, db, answer)
    from qrelkit.app.models.ranking import ranking_inputs
    from qrelkit.app.store import Store
    from qrelkit.compare.decisions import model_ranking

    with Store(db, read_only=True) as store:  # five documents a query: the pool's record reaches rank 5
        inputs = ranking_inputs(store, "judge", depth=5)
    assert inputs.measure == "nDCG(ties=docid_desc)@5"
    found = model_ranking(inputs, inputs.measure)["decision_agreement"]
    assert found["measure"] == "nDCG(ties=docid_desc)@5"
    people, model = _settled(answer)
    queries = sorted({q for q, _ in people})
    pooled_order = {"flat": lambda q, d: d, **{k: v for k, v in flat.items() if k != "flat"}}  # d4 first
    names = sorted(flat)
    means_a = [np.mean([_ndcg(people, q, pooled_order[n], 5) for q in queries]) for n in names]
    means_b = [np.mean([_ndcg(model, q, pooled_order[n], 5) for q in queries]) for n in names]
    by_run = {r["run"]: r for r in found["runs"]}
    assert [by_run[n]["mean_a"] for n in names] == pytest.approx(means_a, abs=1e-12)
    assert [by_run[n]["mean_b"] for n in names] == pytest.approx(means_b, abs=1e-12)
    # from files, the same numbers with the measure the status names
    for who, grades in (("people", people), ("model", model)):
        (tmp_path / f"{who}.qrels").write_text(
            "".join(f"q{q} 0 d{q}-{d} {g}\n" for (q, d), g in sorted(grades.items()))
        )
    agreed = cli("agree", tmp_path / "people.qrels", tmp_path / "model.qrels", "--runs", *runs,
                 "--measure", "nDCG(ties=docid_desc)@5", "--format", "json")  # fmt: skip
    assert agreed.exit_code == 0, agreed.output
    from_files = {r["run"]: r for r in json.loads(agreed.stdout)["decision_agreement"]["runs"]}
    for n in names:
        assert from_files[n]["mean_a"] == pytest.approx(by_run[n]["mean_a"], abs=1e-12)
        assert from_files[n]["mean_b"] == pytest.approx(by_run[n]["mean_b"], abs=1e-12)
    averaged = cli("agree", tmp_path / "people.qrels", tmp_path / "model.qrels", "--runs", *runs,
                   "--measure", "nDCG@5", "--format", "json")  # fmt: skip
    flat_averaged = next(
        r for r in json.loads(averaged.stdout)["decision_agreement"]["runs"] if r["run"] == "flat"
    )
    assert flat_averaged["mean_a"] != pytest.approx(
        by_run["flat"]["mean_a"], abs=1e-6
    )  # why the name matters
