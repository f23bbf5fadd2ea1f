"""Judging budgets: which few pairs people should judge, and a replay that measures how well each way of
choosing them recovers the full judgments' numbers and decisions.

- :mod:`qrelkit.budget.problem`: the :class:`~qrelkit.budget.problem.Problem` (pooled pairs, the model's grades,
  the runs' rankings) and its vectorized evaluator;
- :mod:`qrelkit.budget.oracle`: the :class:`~qrelkit.budget.oracle.Oracle`, the one holder of the people's
  grades, which counts every pair it reveals;
- :mod:`qrelkit.budget.base`: :class:`~qrelkit.budget.base.State`, :class:`~qrelkit.budget.base.Selection`,
  :class:`~qrelkit.budget.base.Estimate`, the :class:`~qrelkit.budget.base.Strategy` protocol and the registry
  :data:`STRATEGIES`.

See docs/judging-budget.md.
"""

from __future__ import annotations

# the strategies register themselves in STRATEGIES on import: random-queries, random-pairs and pool-order
# (baselines), active, bandit and mtc
from . import active, bandit, baselines, mtc  # noqa: F401
from .base import STRATEGIES, Estimate, Selection, State, Strategy, register, strategy
from .oracle import Oracle
from .problem import Problem, build_problem

__all__ = [
    "STRATEGIES",
    "Estimate",
    "Oracle",
    "Problem",
    "Selection",
    "State",
    "Strategy",
    "build_problem",
    "register",
    "strategy",
]
