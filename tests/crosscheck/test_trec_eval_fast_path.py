"""``qrelkit trec_eval``'s fast path (:mod:`qrelkit.evaluation.trec_fast`) against its readers' path and trec_eval's
own expected outputs: the same bytes on every option, the same errors, and a step aside (never a guess)
for what it does not take.

trec_eval's test files separate fields with tabs, which the fast path leaves to the readers; here they are
rewritten with single spaces (the same fields), so that both paths run on the same content."""

from __future__ import annotations

import gzip
import random
from pathlib import Path

import pytest
from click.testing import CliRunner

from qrelkit.cli import main
from qrelkit.errors import StepAside
from qrelkit.evaluation.trec_eval import TrecOptions, trec_eval, trec_eval_files
from qrelkit.evaluation.trec_fast import fast_rel_lists
from qrelkit.formats import read_qrels, read_run, trec
from qrelkit.report.trec_eval import render_trec_eval

from ..conftest import data_path
from .test_trec_eval_dropin import CASES


def _clean(src: Path, dst: Path, grouped: bool = False) -> Path:
    """``src`` with single spaces between fields, a run's lines cut to their six fields (trec_eval ignores
    the rest: ``results.trunc`` has more), and with ``grouped`` its lines grouped by query (which changes
    no number: trec_eval sorts each query's documents itself)."""
    keep = 6 if grouped else 4
    lines = [" ".join(line.split()[:keep]) + "\n" for line in src.read_text().splitlines()]
    if grouped:
        lines.sort(key=lambda line: line.split(" ", 1)[0])  # stable: file order within a query
    dst.write_text("".join(lines))
    return dst


def _takes(qrels: Path, run: Path) -> bool:
    try:
        fast_rel_lists(qrels, run, False, None, 1, False)
    except StepAside:
        return False
    return True


def _both(qrels: Path, run: Path, options: TrecOptions) -> tuple[str, str]:
    """(output through trec_eval_files, output through the readers and the dense lists)."""
    fast = render_trec_eval(trec_eval_files(qrels, run, options))
    # trec_eval 10 skips comment lines in both files (get_qrels.c, get_trec_results.c)
    slow = render_trec_eval(
        trec_eval(read_qrels(qrels, comments=True), read_run(run, comments=True), options)
    )
    return fast, slow


@pytest.mark.parametrize("expected", list(CASES))
def test_fast_path_output_is_byte_identical_to_trec_eval(expected, tmp_path):
    options, qrels, run = CASES[expected]
    q = _clean(data_path("trec_eval-tests", qrels), tmp_path / "qrels")
    r = _clean(data_path("trec_eval-tests", run), tmp_path / "run", grouped=True)
    assert _takes(q, r)
    result = CliRunner().invoke(main, ["trec_eval", *options, str(q), str(r)])
    assert result.exit_code == 0, result.output
    assert result.output == data_path("trec_eval-tests", expected).read_text()


def _tied_run(qrels: Path, path: Path, seed: int, shuffle_within: bool = True) -> Path:
    """Tie-heavy: scores from a few values, judged and unjudged documents, a query without judgments,
    one judged query missing, lines within a query in random order."""
    rng = random.Random(seed)
    by_query: dict[str, list[str]] = {}
    for line in qrels.read_text().splitlines():
        q, _, d, _ = line.split()
        by_query.setdefault(q, []).append(d)
    lines = []
    queries = [*sorted(by_query)[1:], "unjudged-query"]
    for q in queries:
        docs = by_query.get(q, [])
        picked = rng.sample(docs, min(len(docs), 60)) + [f"U{q}-{i}" for i in range(rng.randint(0, 40))]
        if shuffle_within:
            rng.shuffle(picked)
        for d in picked:
            score = rng.choice([1, 2, 3, 0.5, 0.25, 1e-3, 17.125])
            lines.append(f"{q} Q0 {d} 0 {score} tied\n")
    path.write_text("".join(lines))
    return path


OPTIONS = [
    TrecOptions(complete=True, measures=("all_trec",)),
    TrecOptions(per_query=True, complete=True, measures=("all_trec", "relstring.30")),
    TrecOptions(per_query=True, complete=True, judged_only=True, measures=("all_trec",)),
    TrecOptions(per_query=True, complete=True, max_per_topic=7, measures=("all_trec",)),
    TrecOptions(per_query=True, complete=True, max_per_topic=0, measures=("all_trec",)),
    TrecOptions(per_query=True, complete=True, judged_only=True, max_per_topic=12, measures=("all_trec",)),
    TrecOptions(per_query=True, complete=True, rel_level=2, measures=("all_trec",)),
    TrecOptions(per_query=True, complete=True, rel_level=0, measures=("all_trec",)),
    TrecOptions(per_query=True, complete=True, rel_level=-1, measures=("all_trec",)),
    TrecOptions(per_query=True, complete=True, num_docs=5000, measures=("utility.2,-1,0.5,0.25", "G.1=0.5,2=2.5")),
    TrecOptions(per_query=True, complete=True, measures=("rbp.p=0.5", "rbp_resid.p=0.95", "ndcg.1=0.5,2=3")),
]  # fmt: skip


@pytest.mark.parametrize("options", OPTIONS, ids=range(len(OPTIONS)))
@pytest.mark.parametrize("qrels_name", ["qrels.test", "qrels.rel_level"])
def test_both_paths_print_the_same_bytes_on_tie_heavy_runs(options, qrels_name, tmp_path):
    qrels = _clean(data_path("trec_eval-tests", qrels_name), tmp_path / "qrels")
    run = _tied_run(qrels, tmp_path / "run", seed=len(str(options)))
    assert _takes(qrels, run)
    fast, slow = _both(qrels, run, options)
    assert fast == slow


def test_real_judgments_with_negative_grades_and_gzip(tmp_path):
    """TREC-COVID's complete judgments hold grade -1 twice ("in the pool, unjudged" for trec_eval); a gzip
    run streams."""
    original = data_path("trec", "qrels.covid-complete.txt")
    qrels = _clean(original, tmp_path / "qrels")
    run = _tied_run(qrels, tmp_path / "run", seed=3)
    options = OPTIONS[1]
    assert render_trec_eval(trec_eval_files(original, run, options)) == _both(qrels, run, options)[0]
    gz = tmp_path / "run.gz"
    gz.write_bytes(gzip.compress(run.read_bytes()))
    assert _takes(qrels, run) and _takes(qrels, gz)
    for options in OPTIONS[:3]:
        fast, slow = _both(qrels, run, options)
        assert fast == slow
        assert render_trec_eval(trec_eval_files(qrels, gz, options)) == fast


def _error(call) -> str:
    try:
        output = call()
    except Exception as exc:
        return f"{type(exc).__name__}: {exc}"
    return render_trec_eval(output)


def test_what_the_fast_path_does_not_take_goes_to_the_readers_with_the_same_result(tmp_path):
    qrels = _clean(data_path("trec_eval-tests", "qrels.test"), tmp_path / "qrels")
    run = _tied_run(qrels, tmp_path / "run", seed=5)
    lines = run.read_text().splitlines(keepends=True)
    options = TrecOptions(per_query=True, complete=True, measures=("all_trec",))
    variants = {  # name: (text, whether the fast path takes it)
        "ungrouped": ("".join(lines[1::2] + lines[::2]), False),
        "a score written +1": ("".join([*lines[:-1], lines[-1].replace(" 0.", " +0.")]), False),
        # fields after the sixth, which trec_eval ignores (get_trec_results.c), and comment lines, which
        # trec_eval 10 skips: taken
        "a seventh field": ("".join([*lines[:-1], lines[-1].replace("\n", " extra\n")]), True),
        "comment lines": ("# a run\n" + "".join(lines[:3]) + "#\n" + "".join(lines[3:]), True),
    }
    for name, (text, taken) in variants.items():
        path = tmp_path / name.replace(" ", "_")
        path.write_text(text)
        assert _takes(qrels, path) == taken, name
        fast, slow = _both(qrels, path, options)
        assert fast == slow, name


def test_errors_are_the_readers_errors(tmp_path):
    qrels = _clean(data_path("trec_eval-tests", "qrels.test"), tmp_path / "qrels")
    run = _tied_run(qrels, tmp_path / "run", seed=9)
    lines = run.read_text().splitlines(keepends=True)
    cases = {}
    dup_doc = tmp_path / "dup_doc"
    dup_doc.write_text("".join([lines[0], *lines]))
    cases["a document twice"] = (qrels, dup_doc)
    dup_judgment = tmp_path / "dup_judgment"
    q_lines = qrels.read_text().splitlines(keepends=True)
    dup_judgment.write_text("".join([*q_lines, q_lines[3]]))
    cases["a judgment twice"] = (dup_judgment, run)
    cases["a judged query missing without -c"] = (qrels, run)
    two_tags = tmp_path / "two_tags"
    two_tags.write_text("".join([*lines[:-1], lines[-1].replace("tied", "other")]))
    cases["two tags"] = (qrels, two_tags)
    outcomes = {}
    for name, (q, r) in cases.items():
        # the run leaves out query 301: -c lets trec_eval go on to the duplicates
        options = TrecOptions(measures=("all_trec",), complete="without -c" not in name)
        fast = _error(lambda q=q, r=r, options=options: trec_eval_files(q, r, options))
        # read as the trec_eval route reads: duplicates recorded (trec_eval stops at their query), the
        # last line's tag names a run of several
        slow = _error(
            lambda q=q, r=r, options=options: trec_eval(
                trec.read_qrels(q, comments=True, on_duplicate="first"),
                trec.read_run(r, comments=True, on_duplicate="max", mixed_tags=True),
                options,
            )
        )
        assert fast == slow, name
        outcomes[name] = fast
    assert "ranks a document twice" in outcomes["a document twice"]
    assert "judges a document twice" in outcomes["a judgment twice"]
    assert "is not in the run" in outcomes["a judged query missing without -c"]
    assert "runid                 \tall\tother\n" in outcomes["two tags"]
