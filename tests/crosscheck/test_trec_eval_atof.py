"""``qrelkit trec_eval --trec-eval-parsing`` against trec_eval 10.0 built from its vendored source
(:mod:`tests.crosscheck.trec_eval_harness`): byte-identical standard output and the same exit code on
files whose scores and grades are spelled the ways C's ``atof`` and ``atol`` read and qrelkit otherwise
refuses (``nan``, ``inf``, ``0x1p3``, ``1.5abc``, ``abc``, a grade ``1.5``), and the refusal without it."""

from __future__ import annotations

import os
import random

import pytest

from . import trec_eval_harness as h

CASES = int(os.environ.get("QRELKIT_CROSSCHECK_ATOF_CASES", "200"))

ODD_SCORES = ("nan", "NaN", "-nan", "nan(7)", "inf", "-inf", "Infinity", "-INF", "0x1p3", "0x1.8p-1", "-0x10",
              "0x", "abc", "1.5abc", "2e", ".5x", "1e999", "-1e999", "+2", "5.", "1", "2", "0.25", "3")  # fmt: skip
ODD_GRADES = ("1.5", "2abc", "abc", "0.9", "3.", "+1", "-1.5", "1e1", "nan", "0x2", "1", "0", "2")


@pytest.fixture(scope="module")
def trec_eval_10():
    if h.compiler() is None:
        pytest.skip("no C compiler on PATH: trec_eval cannot be built from tests/data/trec_eval-src")
    return h.build("10.0")


def odd_case(seed: int) -> h.Case:
    """The harness's seeded case, with scores and grades respelled from the lists above."""
    c = h.case(seed)
    rng = random.Random(seed + 1_000_003)
    score_p, grade_p = rng.choice((0.1, 0.4, 1.0)), rng.choice((0.0, 0.2, 0.5))

    def respell(text: str, field: int, spellings: tuple[str, ...], p: float) -> str:
        out = []
        for line in text.splitlines():
            parts = line.split()
            if len(parts) > field and rng.random() < p:
                parts[field] = rng.choice(spellings)
            out.append(" ".join(parts) + "\n")
        return "".join(out)

    return h.Case(seed, respell(c.qrels, 3, ODD_GRADES, grade_p), respell(c.run, 4, ODD_SCORES, score_p),
                  c.flags, c.fault)  # fmt: skip


@pytest.mark.parametrize("block", range(4))
def test_trec_eval_parsing_prints_what_trec_eval_10_prints(block, trec_eval_10, tmp_path):
    differ, compared = [], 0
    for seed in range(block * CASES // 4, (block + 1) * CASES // 4):
        c = odd_case(seed)
        qrels, run = c.write(tmp_path / str(seed))
        want = h.comparable(h.run_trec_eval(trec_eval_10, qrels, run, c.flags))
        if h.crashed(want):
            continue
        got = h.comparable(h.run_qrelkit(qrels, run, ("--trec-eval-parsing", *c.flags)))
        compared += 1
        if got != want:
            differ.append((seed, c.flags, want.exit_code, got.exit_code))
    assert not differ, differ[:5]
    assert compared > CASES // 8


@pytest.mark.parametrize("score", ["nan", "inf", "0x1p3", "abc", "1.5abc"])
def test_each_spelling_alone_matches_and_is_refused_by_default(score, trec_eval_10, tmp_path):
    """One query, three documents: d2's score is the spelling. By hand for ``abc`` (read 0): the ranking
    is d3 (3), d1 (1), d2 (0); d2 and d3 relevant, so AP = (1/1 + 2/3) / 2 = 0.8333."""
    qrels = tmp_path / "qrels"
    run = tmp_path / "run"
    qrels.write_text("q 0 d1 0\nq 0 d2 1\nq 0 d3 1.5\n")
    run.write_text(f"q Q0 d1 1 1 t\nq Q0 d2 2 {score} t\nq Q0 d3 3 3 t\n")
    flags = ("-q", "-m", "all_trec")
    want = h.comparable(h.run_trec_eval(trec_eval_10, qrels, run, flags))
    got = h.comparable(h.run_qrelkit(qrels, run, ("--trec-eval-parsing", *flags)))
    assert (got.exit_code, got.stdout) == (want.exit_code, want.stdout) and want.exit_code == 0
    if score == "abc":
        assert b"map                   \tall\t0.8333\n" in got.stdout
    assert h.run_qrelkit(qrels, run, flags).exit_code == 2  # the default refuses, exit 2, prints nothing
