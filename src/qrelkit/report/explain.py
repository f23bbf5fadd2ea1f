"""Rendering of :class:`~qrelkit.evaluation.diagnose.Explanation`: the chapter's hand calculation, printed."""

from __future__ import annotations

import json

from ..evaluation.diagnose import Explanation


def _g(grade: int | None) -> str:
    return "unjudged" if grade is None else str(grade)


def nothing_returned(run: str, query: str, missing_queries: str) -> str:
    """What a run that returned nothing for a query means, by the ``missing_queries`` convention: under
    ``zero`` the query scores 0 and counts in the mean; under ``skip`` it is left out of the mean."""
    if missing_queries == "skip":
        return (
            f"{run} returned nothing for {query}: the query is left out of {run}'s mean "
            "(missing_queries=skip)."
        )
    return f"{run} returned nothing for {query}: it scores 0, counted in the mean (missing_queries={missing_queries})."


def render_explanation_text(ex: Explanation) -> str:
    conv = ex.measure.conventions(ex.conventions)
    k = ex.k if ex.k is not None else "all"
    out = [
        f"query {ex.query_id} · run {ex.run_name} · {ex.measure.describe(ex.conventions)}",
        f"conventions: {conv}",
        "",
    ]
    if not ex.in_run:
        out.append(nothing_returned(ex.run_name, ex.query_id, ex.conventions.missing_queries))
        out.append("")
    if ex.rows:
        out.append(
            f"{'rank':>4}  {'doc_id':<32} {'score':>12} {'grade':>8} {'gain':>8} {'discount':>8} "
            f"{'contrib':>8} {'share':>6}  tie"
        )
    for r in ex.rows:
        out.append(
            f"{r.rank:>4}  {r.doc_id[:32]:<32} {r.score:>12.6g} {_g(r.grade):>8} {r.gain:>8.3f} "
            f"{r.discount:>8.3f} {r.contribution:>8.3f} {r.share:>6.1%}  {r.block or ''}"
        )
    out.append(f"{'':>4}  {'DCG@' + str(k):<32} {'':>12} {'':>8} {'':>8} {'':>8} {ex.dcg:>8.3f}")
    out.append("")
    out.append(
        f"ideal ordering ({'all judged documents' if conv.ideal == 'judged' else 'returned documents only'}):"
    )
    for r in ex.ideal:
        out.append(
            f"{r.rank:>4}  {r.doc_id[:32]:<32} {'':>12} {r.grade:>8} {r.gain:>8.3f} {r.discount:>8.3f} "
            f"{r.contribution:>8.3f}"
        )
    out.append(f"{'':>4}  {'IDCG@' + str(k):<32} {'':>12} {'':>8} {'':>8} {'':>8} {ex.idcg:>8.3f}")
    out.append("")
    if ex.ndcg is None:
        out.append(
            f"nDCG@{k} is undefined: IDCG is 0 (no judged document has a positive gain); "
            f"no_relevant={conv.no_relevant}."
        )
    else:
        out.append(f"nDCG@{k} = {ex.dcg:.6f} / {ex.idcg:.6f} = {ex.ndcg:.6f}")
    if ex.recall is None:
        out.append(f"R@{k} is undefined: no relevant document (grade >= 1).")
    else:
        found = ex.relevant_total - len(ex.relevant_below_cutoff) - len(ex.relevant_never_retrieved)
        out.append(f"R@{k} = {found} of {ex.relevant_total} relevant (grade >= 1) = {ex.recall:.6f}")
    if ex.relevant_below_cutoff:
        out.append(
            "relevant but ranked below the cutoff (ordered badly): "
            + ", ".join(f"{d} (grade {g}, rank {r})" for d, g, r in ex.relevant_below_cutoff)
        )
    if ex.relevant_never_retrieved:
        out.append(
            "relevant but never retrieved: "
            + ", ".join(f"{d} (grade {g})" for d, g in ex.relevant_never_retrieved)
        )
    if ex.tie_blocks:
        out.append("")
        out.append("tied scores:")
        for b in ex.tie_blocks:
            out.append(
                f"  {b.label}: ranks {b.first_rank}-{b.last_rank}, score {b.score!r}, "
                f"{len(b.doc_ids)} documents ({', '.join(b.doc_ids)}): {b.resolution}"
            )
    else:
        out.append("no tied scores in this ranking")
    return "\n".join(out) + "\n"


def render_explanation_json(ex: Explanation) -> str:
    return json.dumps(ex.to_dict(), indent=2) + "\n"
