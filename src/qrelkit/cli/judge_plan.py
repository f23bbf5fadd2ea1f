"""``qrelkit judge plan``: the people's queue beyond calibration chosen by a strategy within a judging budget,
and the parts of ``judge init --order`` and ``judge status`` that speak of it (docs/judging-budget.md, "The
live queue").

The command reads the project's material (:func:`qrelkit.app.design_inputs.planning_material`), has
:func:`qrelkit.budget.queue.plan_project` choose the pairs, and stores them with
:func:`qrelkit.app.design.record_plan`; no rule lives here.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import click

__all__ = ["command", "design_lines", "hold_after_init", "order_options"]

#: The measure a strategy weighs pairs by, unless told.
DEFAULT_MEASURE = "nDCG@10"


def _budget(text: str, pooled: int) -> int:
    from qrelkit.budget.replay import parse_budgets

    (found,) = parse_budgets(text, pooled)
    return int(found.pairs)


def _pooled(store: Any) -> int:
    return int(store.read(lambda c: c.execute("SELECT COUNT(*) FROM pairs").fetchone()[0]))


def order_options(function: Any) -> Any:
    """``--order``, ``--budget`` and ``--measure`` of ``judge init`` and ``judge plan``."""
    function = click.option("--measure", default=None, metavar="MEASURE",
                            help=f"The measure the strategy weighs pairs by [default: {DEFAULT_MEASURE}].")(function)  # fmt: skip
    function = click.option("--budget", "budget_text", default=None, metavar="N|P%",
                            help="Pairs people judge in all (calibration included), or a share of the pooled "
                            "pairs.")(function)  # fmt: skip
    function = click.option("--order", default=None, metavar="STRATEGY",
                            help="Order the people's queue beyond calibration by a judging-budget strategy "
                            "(active): only the pairs it chooses are given to people.")(function)  # fmt: skip
    return function


def _check_order(order: str | None, budget_text: str | None) -> None:
    if (order is None) != (budget_text is None):
        raise click.UsageError("--order and --budget go together")
    if order is not None:
        from qrelkit.budget.live import PLANNED

        if order not in PLANNED:
            from qrelkit.errors import ValidationError

            raise ValidationError(f"--order {order!r} has no one-shot design for a live queue",
                                  expected=", ".join(PLANNED), fix="--order active")  # fmt: skip


def hold_after_init(
    db: Path, order: str | None, budget_text: str | None, seed: int, measure: str | None
) -> str | None:
    """After ``judge init --order``: record the pending design and hold the people's queue beyond
    calibration until ``judge plan``; the line to print, or ``None`` without ``--order``."""
    if order is None:
        return None
    from qrelkit.app.design import hold_queue
    from qrelkit.app.store import Store

    with Store(db) as store:
        budget = _budget(str(budget_text), _pooled(store))
        hold_queue(store, strategy=order, budget=budget, seed=seed, measure=measure or DEFAULT_MEASURE)
    return (f"live queue: {order}, a budget of {budget} pairs; the people's queue beyond calibration waits for "
            f"the plan: add a model labeller, run it on the pool, then `qrelkit judge plan {db}`")  # fmt: skip


@click.command(name="plan")
@click.argument("db", type=click.Path(path_type=Path, dir_okay=False, exists=True))
@order_options
@click.option("--model", default=None, help="The model labeller whose grades the strategy reads [default: the "
              "one that graded every pooled pair].")  # fmt: skip
@click.option("--seed", type=click.IntRange(min=0), default=None,
              help="Seed of the draw [default: the pending design's, else the project's].")  # fmt: skip
@click.option("--by", default=None, help="Who planned it (recorded).")
def command(db: Path, order: str | None, budget_text: str | None, measure: str | None, model: str | None,
            seed: int | None, by: str | None) -> None:  # fmt: skip
    """Choose the pairs people judge beyond calibration within a budget (the strategy of --order, from the
    model labeller's grades and the pooled runs); their queue follows it, blind as before."""
    from qrelkit.app.design import current_design, record_plan
    from qrelkit.app.design_inputs import planning_material
    from qrelkit.app.store import Store
    from qrelkit.budget.queue import plan_project

    with Store(db) as store:
        pending = store.read(current_design)
        if order is None and budget_text is None and pending is not None:
            order, budget, measure = pending.strategy, pending.budget, measure or pending.measure
        else:
            _check_order(order, budget_text)
            if order is None:
                raise click.UsageError("pass --order STRATEGY --budget N (the project has no pending design)")
            budget = _budget(str(budget_text), _pooled(store))
        _check_order(order, str(budget))
        seed = (
            seed
            if seed is not None
            else pending.seed
            if pending is not None
            else int(store.meta("seed") or 0)
        )
        measure = measure or DEFAULT_MEASURE
        material = planning_material(store, model)
        built, selection = plan_project(material, order, budget, seed, measure)
        from qrelkit.budget.queue import estimator_name

        chosen = [
            (*built.problem.pairs[int(i)], float(p))
            for i, p in zip(selection.pairs, selection.probability, strict=True)
        ]
        done = record_plan(store, strategy=order, budget=budget, seed=seed, measure=measure,
                           estimator=estimator_name(order), model=material.model,
                           judged_before=built.state.spent, chosen=chosen, by=by)  # fmt: skip
    people = ", ".join(f"{n} {k}" for n, k in sorted(done["people"].items()))
    click.echo(f"live queue: {order} chose {done['chosen']} pairs for people beyond the {built.state.spent} judged "
               f"(a budget of {budget} of {built.problem.n_pairs} pooled pairs, seed {seed}, weighed by {measure} "
               f"over {built.problem.n_runs} runs with model labeller {material.model}'s grades); given to: {people}")  # fmt: skip


def design_lines(store: Any) -> list[str]:
    """``judge status``'s lines on the live queue: the design, the budget spent, and the current estimates
    with their intervals under the design's estimator (named), or nothing without a design."""
    from qrelkit.app.design import current_design, design_progress
    from qrelkit.app.design_inputs import planning_material

    design = store.read(current_design)
    if design is None:
        return []
    spent = store.read(lambda c: design_progress(c, design))
    if design.state == "pending":
        return [f"live queue: {design.strategy}, a budget of {design.budget} pairs, not planned yet (the people's "
                "queue beyond calibration waits for `qrelkit judge plan`)"]  # fmt: skip
    lines = [f"live queue: {design.strategy} (seed {design.seed}, model labeller {design.model}, {design.measure}); "
             f"budget {design.budget} pairs, {spent['spent']} spent ({design.judged_before} judged before the plan, "
             f"{spent['chosen_judged']} of the {spent['chosen']} chosen since)"]  # fmt: skip
    from qrelkit.budget.queue import estimate_project
    from qrelkit.errors import QrelkitError

    try:
        material = planning_material(store, design.model)
        chance = {(q, d): p for q, d, p, _ in design.pairs}
        estimate, built = estimate_project(material, design.strategy, design.measure, chance)
    except QrelkitError as exc:
        return [*lines, f"estimates: not available ({exc.problem})"]
    lines.append(f"estimates of {design.measure} ({estimate.estimator}; 95% intervals"
                 + ("" if spent["chosen_judged"] == spent["chosen"] else ", valid once every chosen pair is judged")
                 + "):")  # fmt: skip
    for i, run in enumerate(built.problem.runs):
        low, high = estimate.low[i], estimate.high[i]
        interval = "no interval" if low != low or high != high else f"[{low:.4f}, {high:.4f}]"
        lines.append(f"  {run}: {estimate.means[i]:.4f} {interval}")
    return lines
