"""Slow, obviously correct rank correlations for the tests: tau_AP by Yilmaz, Aslam & Robertson's definition
over strict orders, and its mean over every order tied scores allow (qrelkit.agreement.ranking's definition
of ties)."""

from __future__ import annotations

import itertools
import math
from fractions import Fraction


def strict_orders(scores):
    """Every order of the items, best first, that the scores allow: each tied group in every order."""
    groups = [[i for i, s in enumerate(scores) if s == v] for v in sorted(set(scores), reverse=True)]
    for parts in itertools.product(*(itertools.permutations(g) for g in groups)):
        yield [i for part in parts for i in part]


def paper_tau_ap(truth_order, other_order):
    """Yilmaz, Aslam & Robertson (2008), for two strict orders: walk ``other_order`` from the top;
    C(i) counts the items above rank i that the truth also puts above the item at rank i."""
    n = len(truth_order)
    above_in_truth = {item: set(truth_order[:pos]) for pos, item in enumerate(truth_order)}
    total = Fraction(0)
    for i in range(2, n + 1):  # ranks 2..n, 1-based
        item = other_order[i - 1]
        c = sum(1 for u in other_order[: i - 1] if u in above_in_truth[item])
        total += Fraction(c, i - 1)
    return Fraction(2, n - 1) * total - 1


def slow_tau_ap(truth, other):
    """The mean of the paper's tau_AP over every order the tied scores allow, in both lists."""
    values = [paper_tau_ap(t, o) for t in strict_orders(truth) for o in strict_orders(other)]
    return sum(values, Fraction(0)) / len(values)


def n_orders(scores):
    return math.prod(math.factorial(scores.count(v)) for v in set(scores))
