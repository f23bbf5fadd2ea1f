"""Rendering the leave-one-out test of reusability (:func:`qrelkit.pool.leave_one_out`) as text."""

from __future__ import annotations

from typing import Any

__all__ = ["render_leave_one_out"]


def _num(value: float) -> str:
    return "n/a" if value != value else f"{value:.4f}"


def render_leave_one_out(result: Any) -> str:
    """One line per run and measure: full-pool value, leave-one-out value, change, rank then and now, the
    judged pairs removed; then Kendall's tau per measure and the notes."""
    head = ["run", "measure", "full", "left_out", "change", "rank", "removed (relevant)"]
    body = [
        [
            r["run"],
            r["measure"],
            _num(r["full"]),
            _num(r["left_out"]),
            "n/a" if r["change"] != r["change"] else f"{r['change']:+.4f}",
            f"{r['rank_full']} -> {r['rank_left_out']}",
            f"{r['removed_pairs']} ({r['removed_relevant']})",
        ]
        for r in result.rows
    ]
    widths = [max(len(row[i]) for row in [head, *body]) for i in range(len(head))]
    lines = [
        f"leave-one-out at depth {result.depth} over {len(result.runs)} runs: each run against the qrels "
        "without the judged pairs only it contributed",
        "  ".join(h.ljust(w) for h, w in zip(head, widths, strict=True)).rstrip(),
    ]
    lines += ["  ".join(c.ljust(w) for c, w in zip(row, widths, strict=True)).rstrip() for row in body]
    for measure, tau in result.tau.items():
        value = "n/a (fewer than two runs, or every value tied)" if tau is None else f"{tau:.3f}"
        lines.append(f"Kendall's tau of the rankings, {measure}: {value}")
    lines += [f"note: {n}" for n in result.notes]
    return "\n".join(lines) + "\n"
