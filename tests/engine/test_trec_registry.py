"""The registry of trec_eval's measures (:data:`qrelkit.engine.trec.registry.TREC_REGISTRY`) held to the
vocabulary (:mod:`qrelkit.measures.trec_names`), to both engines' kernel modules and to the oracles of
:data:`qrelkit.engine.registry.REGISTRY`: every trec_eval measure has a numpy kernel, a lean kernel or an
explicit ``lean=False``, and an oracle (relstring, which is not a number, explicitly none)."""

from __future__ import annotations

import inspect
from pathlib import Path

import pytest

from qrelkit.engine.registry import REGISTRY
from qrelkit.engine.trec import kernels as trec_kernels
from qrelkit.engine.trec import lean_kernels as trec_lean_kernels
from qrelkit.engine.trec.registry import LEAN, LEAN_MEASURES, NUMPY, TREC_REGISTRY, kernels
from qrelkit.evaluation.trec_eval import TrecOptions, trec_eval_files
from qrelkit.evaluation.trec_lean import lean_trec_eval
from qrelkit.measures.grammar import parse
from qrelkit.measures.trec_names import ORDER, _nickname_member
from qrelkit.report.trec_eval import render_trec_eval

WRITTEN_BY_THE_OUTPUT = ("runid", "num_q")
CALLS = {"single", "cut", "fractions", "levels", "levels_mean", "utility", "beta", "length", "gains", "rbp"}
CALLS |= {"persistence"}


def test_every_trec_eval_measure_is_registered_in_trec_evals_order() -> None:
    assert list(TREC_REGISTRY) == [n for n in ORDER if n not in WRITTEN_BY_THE_OUTPUT]
    assert all(f.call in CALLS for f in TREC_REGISTRY.values())


@pytest.mark.parametrize("name", list(TREC_REGISTRY))
def test_each_measure_has_its_kernels(name: str) -> None:
    family = TREC_REGISTRY[name]
    assert kernels(NUMPY) is trec_kernels and kernels(LEAN) is trec_lean_kernels
    assert callable(getattr(trec_kernels, family.kernel))
    if family.lean:  # the same name, the same parameters first, in plain Python
        lean = getattr(trec_lean_kernels, family.kernel)
        assert callable(lean)
        ours = list(inspect.signature(lean).parameters)[1:]
        theirs = list(inspect.signature(getattr(trec_kernels, family.kernel)).parameters)[1:]
        assert ours == theirs[: len(ours)]  # (numpy's may take more, with defaults: trec_eval 9's cutoff)
        assert family.engines == (NUMPY, LEAN) and name in LEAN_MEASURES
    else:  # the lean path steps aside to the numpy one
        assert family.engines == (NUMPY,) and name not in LEAN_MEASURES


@pytest.mark.parametrize("name", list(TREC_REGISTRY))
def test_each_measure_has_an_oracle(name: str) -> None:
    family = TREC_REGISTRY[name]
    grammar = [parse(text) for text in _nickname_member(name, 1)]
    if family.oracle is None:
        assert name == "relstring" and grammar == []  # a string: the differential test checks it
        return
    assert grammar and {m.name for m in grammar} == {family.oracle}
    assert REGISTRY[family.oracle].oracle is not None


QRELS = "q1 0 d1 2\nq1 0 d2 0\nq1 0 d3 1\nq2 0 d1 1\nq2 0 d4 -1\nq3 0 d5 3\n"
RUN = "q1 Q0 d1 1 3.0 t\nq1 Q0 d9 2 2.0 t\nq1 Q0 d3 3 1.0 t\nq2 Q0 d4 1 5.0 t\nq2 Q0 d1 2 4.0 t\n"


@pytest.mark.parametrize("name", [n for n, f in TREC_REGISTRY.items() if f.lean])
def test_each_lean_kernel_gives_its_numpy_kernels_bytes(tmp_path: Path, name: str) -> None:
    (tmp_path / "q").write_text(QRELS)
    (tmp_path / "r").write_text(RUN)
    qrels, run = str(tmp_path / "q"), str(tmp_path / "r")
    options = TrecOptions(per_query=True, complete=True, measures=(name,))
    lean = lean_trec_eval(qrels, run, per_query=True, complete=True, measures=(name,))
    assert lean is not None
    assert render_trec_eval(lean) == render_trec_eval(trec_eval_files(qrels, run, options))
