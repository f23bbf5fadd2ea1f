"""Small, accessible SVG charts for the HTML report, written as text: no plotting library, no script.

Every chart is an ``<svg role="img">`` with a ``<title>`` and a ``<desc>`` it is labelled by, axis labels
in ``<text>``, and a ``<title>`` on each mark (browsers show it on hover); :func:`figure` wraps it with a
caption and the data table behind it, so every number drawn can also be read. Colours are chosen to stay
apart for the common colour-vision deficiencies (blue/orange) and every mark also differs in position or
label, not in colour alone.
"""

from __future__ import annotations

import html
import itertools
import math
from collections.abc import Callable, Sequence

from .tables import number

__all__ = ["bars", "diverging_bars", "dot_plot", "figure", "forest", "heatmap", "lines", "stacked_bars"]

BLUE, ORANGE, GREY, DARK = "#1f6fb4", "#d9792b", "#9aa3ad", "#24292f"
FONT = 'font-family="DejaVu Sans, Liberation Sans, Arial, sans-serif" font-size="12"'
_ids = itertools.count(1)


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _svg(width: int, height: int, title: str, desc: str, body: list[str]) -> str:
    n = next(_ids)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" role="img" viewBox="0 0 {width} {height}" '
        f'width="100%" preserveAspectRatio="xMinYMin meet" style="max-width:{width}px" '
        f'aria-labelledby="svg{n}t svg{n}d" {FONT}>'
        f'<title id="svg{n}t">{_e(title)}</title><desc id="svg{n}d">{_e(desc)}</desc>'
        + "".join(body)
        + "</svg>"
    )


def _scale(lo: float, hi: float, a: float, b: float) -> Callable[[float], float]:
    span = (hi - lo) or 1.0
    return lambda v: a + (v - lo) / span * (b - a)


def _ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [round(first + i * step, 10) for i in range(int((hi - first) / step + 1e-9) + 1)]


def _x_axis(x: Callable[[float], float], lo: float, hi: float, y: float, label: str, top: float) -> list[str]:
    out = [f'<line x1="{x(lo):.1f}" x2="{x(hi):.1f}" y1="{y:.1f}" y2="{y:.1f}" stroke="{DARK}"/>']
    for t in _ticks(lo, hi):
        out.append(f'<line x1="{x(t):.1f}" x2="{x(t):.1f}" y1="{top:.1f}" y2="{y:.1f}" stroke="#e4e7eb"/>')
        out.append(f'<text x="{x(t):.1f}" y="{y + 14:.1f}" text-anchor="middle">{_e(f"{t:g}")}</text>')
    out.append(
        f'<text x="{(x(lo) + x(hi)) / 2:.1f}" y="{y + 30:.1f}" text-anchor="middle">{_e(label)}</text>'
    )
    return out


def figure(svg: str, caption: str, headers: Sequence[str], rows: Sequence[Sequence[object]]) -> str:
    """The chart, its caption, and the data behind it as a table (collapsed)."""
    from .tables import table

    return (
        f"<figure><div class='chart'>{svg}</div><figcaption>{_e(caption)}</figcaption>"
        f"<details><summary>Data behind the chart</summary>{table(headers, rows)}</details></figure>"
    )


def forest(
    rows: Sequence[tuple[str, float, float, float]],
    *,
    title: str,
    axis: str,
    band: Sequence[float | None] | None = None,
) -> str:
    """One row per (label, estimate, low, high): a point with its interval, the zero line, and, per row, a
    shaded band of +-``band[i]`` (the labeller-noise floor) around zero."""
    left, right, row_h = 220, 640, 28
    height = 50 + row_h * len(rows)
    values = [v for _, e, lo, hi in rows for v in (e, lo, hi) if not math.isnan(v)]
    values += (
        [b for b in (band or []) if b is not None] + [-(b) for b in (band or []) if b is not None] + [0.0]
    )
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.08 or 0.05
    lo, hi = lo - pad, hi + pad
    x = _scale(lo, hi, left, right)
    top, bottom = 12, 20 + row_h * len(rows)
    body: list[str] = _x_axis(x, lo, hi, bottom, axis, top)  # grid first, marks on top
    for i, (label, est, a, b) in enumerate(rows):
        y = 20 + i * row_h + row_h / 2
        floor = band[i] if band else None
        if floor:
            body.append(
                f'<rect x="{x(-floor):.1f}" y="{y - row_h / 2 + 3:.1f}" width="{x(floor) - x(-floor):.1f}" '
                f'height="{row_h - 6}" fill="{ORANGE}" fill-opacity="0.22"><title>{_e(label)}: labeller-noise '
                f"floor +-{number(floor, 3)}</title></rect>"
            )
        body.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end">{_e(label)}</text>')
        if not (math.isnan(a) or math.isnan(b)):
            body.append(
                f'<line x1="{x(a):.1f}" x2="{x(b):.1f}" y1="{y:.1f}" y2="{y:.1f}" stroke="{BLUE}" stroke-width="2"/>'
            )
        body.append(
            f'<circle cx="{x(est):.1f}" cy="{y:.1f}" r="5" fill="{BLUE}"><title>{_e(label)}: {number(est, 4)} '
            f"[{number(a, 4)}, {number(b, 4)}]</title></circle>"
        )
    body.append(
        f'<line x1="{x(0):.1f}" x2="{x(0):.1f}" y1="{top}" y2="{bottom}" stroke="{DARK}" stroke-dasharray="4 3"/>'
    )
    desc = "; ".join(f"{lab} {number(e, 4)} [{number(a, 4)}, {number(b, 4)}]" for lab, e, a, b in rows)
    return _svg(right + 30, height + 10, title, desc, body)


def diverging_bars(items: Sequence[tuple[str, float]], *, title: str, axis: str, note: str = "") -> str:
    """Vertical bars sorted by value, above (blue) or below (orange) zero; each bar's label on hover."""
    width, height, left, top, bottom = 720, 260, 50, 16, 210
    n = max(len(items), 1)
    values = [v for _, v in items] + [0.0]
    lo, hi = min(values), max(values)
    if lo == hi:
        lo, hi = lo - 1, hi + 1
    y = _scale(lo, hi, bottom, top)
    step = (width - left - 10) / n
    body = []
    for t in _ticks(lo, hi, 4):
        body.append(f'<line x1="{left}" x2="{width - 10}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#e4e7eb"/>')
        body.append(f'<text x="{left - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{_e(f"{t:g}")}</text>')
    for i, (label, v) in enumerate(items):
        x0 = left + i * step
        y0, y1 = sorted((y(0), y(v)))
        colour = BLUE if v > 0 else ORANGE
        body.append(
            f'<rect x="{x0:.2f}" y="{y0:.1f}" width="{max(step - 0.5, 0.6):.2f}" height="{max(y1 - y0, 0.6):.1f}" '
            f'fill="{colour}"><title>{_e(label)}: {v:+.4f}</title></rect>'
        )
    body.append(f'<line x1="{left}" x2="{width - 10}" y1="{y(0):.1f}" y2="{y(0):.1f}" stroke="{DARK}"/>')
    body.append(
        f'<text x="{(left + width) / 2:.0f}" y="{bottom + 22}" text-anchor="middle">{_e(axis)}</text>'
    )
    body.append(
        f'<text x="14" y="{(top + bottom) / 2:.0f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {(top + bottom) / 2:.0f})">difference</text>'
    )
    up = sum(v > 0 for _, v in items)
    down = sum(v < 0 for _, v in items)
    desc = f"{len(items)} bars sorted by value: {up} above zero, {down} below. {note}".strip()
    return _svg(width, height, title, desc, body)


def stacked_bars(
    rows: Sequence[tuple[str, Sequence[float]]], parts: Sequence[str], *, title: str, axis: str
) -> str:
    """Horizontal bars of shares (each row sums to 1 or less), one colour and a text label per part."""
    colours = [BLUE, ORANGE, GREY, DARK]
    left, right, row_h = 160, 620, 30
    bottom = 14 + row_h * len(rows)
    height = bottom + 44 + 18 * len(parts)
    x = _scale(0.0, 1.0, left, right)
    body = _x_axis(x, 0.0, 1.0, bottom, axis, 10)  # grid first, bars on top
    for i, (label, shares) in enumerate(rows):
        y = 14 + i * row_h
        body.append(f'<text x="{left - 8}" y="{y + row_h / 2 + 1:.1f}" text-anchor="end">{_e(label)}</text>')
        start = 0.0
        for j, share in enumerate(shares):
            if share <= 0:
                continue
            body.append(
                f'<rect x="{x(start):.1f}" y="{y + 4}" width="{x(start + share) - x(start):.1f}" height="{row_h - 8}" '
                f'fill="{colours[j % 4]}"><title>{_e(label)}: {_e(parts[j])} {share * 100:.1f}%</title></rect>'
            )
            if share >= 0.08:
                body.append(
                    f'<text x="{(x(start) + x(start + share)) / 2:.1f}" y="{y + row_h / 2 + 4:.1f}" '
                    f'text-anchor="middle" fill="#fff">{share * 100:.0f}%</text>'
                )
            start += share
    for j, part in enumerate(parts):  # one legend entry per line: long names never overlap
        ly = bottom + 40 + 18 * j
        body.append(f'<rect x="{left}" y="{ly}" width="12" height="12" fill="{colours[j % 4]}"/>')
        body.append(f'<text x="{left + 16}" y="{ly + 10}">{_e(part)}</text>')
    desc = "; ".join(
        f"{label}: " + ", ".join(f"{p} {s * 100:.1f}%" for p, s in zip(parts, shares, strict=True))
        for label, shares in rows
    )
    return _svg(right + 40, height, title, desc, body)


def bars(
    groups: Sequence[str], series: Sequence[tuple[str, Sequence[float]]], *, title: str, axis: str
) -> str:
    """Grouped vertical bars: one group per label, one bar per series (e.g. grades x labellers)."""
    colours = [BLUE, ORANGE, GREY, DARK]
    width, top, bottom, left = 560, 16, 190, 50
    hi = max([v for _, vs in series for v in vs] + [1.0])
    y = _scale(0.0, hi, bottom, top)
    group_w = (width - left - 10) / max(len(groups), 1)
    bar_w = group_w * 0.8 / max(len(series), 1)
    body = []
    for t in _ticks(0.0, hi, 4):
        body.append(f'<line x1="{left}" x2="{width - 10}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#e4e7eb"/>')
        body.append(f'<text x="{left - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{_e(f"{t:g}")}</text>')
    for gi, g in enumerate(groups):
        gx = left + gi * group_w + group_w * 0.1
        for si, (name, values) in enumerate(series):
            v = values[gi]
            body.append(
                f'<rect x="{gx + si * bar_w:.1f}" y="{y(v):.1f}" width="{bar_w - 1:.1f}" height="{bottom - y(v):.1f}" '
                f'fill="{colours[si % 4]}"><title>{_e(name)}, {_e(g)}: {v:g}</title></rect>'
            )
        body.append(
            f'<text x="{gx + group_w * 0.4:.1f}" y="{bottom + 14}" text-anchor="middle">{_e(g)}</text>'
        )
    body.append(f'<line x1="{left}" x2="{width - 10}" y1="{bottom}" y2="{bottom}" stroke="{DARK}"/>')
    body.append(
        f'<text x="{(left + width) / 2:.0f}" y="{bottom + 32}" text-anchor="middle">{_e(axis)}</text>'
    )
    for si, (name, _) in enumerate(series):
        body.append(
            f'<rect x="{left + si * 120}" y="{bottom + 42}" width="12" height="12" fill="{colours[si % 4]}"/>'
        )
        body.append(f'<text x="{left + si * 120 + 16}" y="{bottom + 52}">{_e(name)}</text>')
    desc = "; ".join(
        f"{name}: " + ", ".join(f"{g} {v:g}" for g, v in zip(groups, vs, strict=True)) for name, vs in series
    )
    return _svg(width, bottom + 64, title, desc, body)


def heatmap(
    matrix: Sequence[Sequence[float]], labels: Sequence[str], *, title: str, rows: str, cols: str
) -> str:
    """A square matrix of counts, darker for more, each cell with its number."""
    cell, left, top = 48, 90, 40
    n = len(labels)
    peak = max([v for r in matrix for v in r] + [1.0])
    body = [f'<text x="{left + n * cell / 2:.0f}" y="16" text-anchor="middle">{_e(cols)}</text>']
    body.append(
        f'<text x="16" y="{top + n * cell / 2:.0f}" text-anchor="middle" '
        f'transform="rotate(-90 16 {top + n * cell / 2:.0f})">{_e(rows)}</text>'
    )
    for j, lab in enumerate(labels):
        body.append(
            f'<text x="{left + j * cell + cell / 2:.0f}" y="{top - 6}" text-anchor="middle">{_e(lab)}</text>'
        )
    for i, lab in enumerate(labels):
        body.append(
            f'<text x="{left - 8}" y="{top + i * cell + cell / 2 + 4:.0f}" text-anchor="end">{_e(lab)}</text>'
        )
        for j in range(n):
            v = matrix[i][j]
            shade = 0.08 + 0.85 * (v / peak)
            ink = "#fff" if shade > 0.5 else DARK
            body.append(
                f'<rect x="{left + j * cell}" y="{top + i * cell}" width="{cell - 2}" height="{cell - 2}" '
                f'fill="{BLUE}" fill-opacity="{shade:.2f}"><title>{_e(rows)} {_e(lab)}, {_e(cols)} {_e(labels[j])}: '
                f"{v:g}</title></rect>"
            )
            body.append(
                f'<text x="{left + j * cell + cell / 2 - 1:.0f}" y="{top + i * cell + cell / 2 + 4:.0f}" '
                f'text-anchor="middle" fill="{ink}">{v:g}</text>'
            )
    desc = "; ".join(f"row {labels[i]}: " + ", ".join(f"{v:g}" for v in matrix[i]) for i in range(n))
    return _svg(left + n * cell + 20, top + n * cell + 10, title, desc, body)


#: The marks that tell runs apart in :func:`dot_plot` (shape first, then colour), cycled past their number.
MARKS = tuple(itertools.product(("circle", "square", "triangle", "diamond", "cross"), (BLUE, ORANGE)))


def _mark(shape: str, cx: float, cy: float, colour: str, tip: str = "") -> str:
    if shape == "circle":
        return f'<circle cx="{cx:.1f}" cy="{cy:.1f}" r="4.5" fill="{colour}">{tip}</circle>'
    if shape == "square":
        return f'<rect x="{cx - 4:.1f}" y="{cy - 4:.1f}" width="8" height="8" fill="{colour}">{tip}</rect>'
    if shape == "triangle":
        d = f"M{cx:.1f},{cy - 5:.1f} L{cx + 5:.1f},{cy + 4:.1f} L{cx - 5:.1f},{cy + 4:.1f} Z"
    elif shape == "diamond":
        d = f"M{cx:.1f},{cy - 6:.1f} L{cx + 5:.1f},{cy:.1f} L{cx:.1f},{cy + 6:.1f} L{cx - 5:.1f},{cy:.1f} Z"
    else:  # a cross, drawn as a stroked path
        d = f"M{cx - 4:.1f},{cy - 4:.1f} L{cx + 4:.1f},{cy + 4:.1f} M{cx - 4:.1f},{cy + 4:.1f} L{cx + 4:.1f},{cy - 4:.1f}"
        return f'<path d="{d}" stroke="{colour}" stroke-width="2.5" fill="none">{tip}</path>'
    return f'<path d="{d}" fill="{colour}">{tip}</path>'


def dot_plot(rows: Sequence[tuple[str, Sequence[tuple[str, float, bool]]]], *, title: str, axis: str) -> str:
    """``rows``: per run, its dots (a convention change's name, its effect on the mean, whether it is an
    optimistic choice). Drawn with one line per convention change, its name at the left (so every point
    is labelled by its line; an optimistic choice is named so, in orange) and one mark per run on it,
    runs told apart by shape and colour and named in the legend; values on hover and in the data table."""
    runs = [label for label, _ in rows]
    names: dict[str, bool] = {}
    for _, dots in rows:
        for name, _, flagged in dots:
            names[name] = names.get(name, False) or flagged
    width = max((len(n) + (13 if f else 0) for n, f in names.items()), default=10)
    left = min(40 + int(width * 6.6), 320)
    right, row_h = left + 480, 22
    values = [v for _, dots in rows for _, v, _ in dots if not math.isnan(v)] + [0.0]
    lo, hi = min(values), max(values)
    pad = (hi - lo) * 0.08 or 0.01
    lo, hi = lo - pad, hi + pad
    x = _scale(lo, hi, left, right)
    top, bottom = 8, 12 + row_h * len(names)
    body = _x_axis(x, lo, hi, bottom, axis, top)  # grid first, marks on top
    line = {n: i for i, n in enumerate(names)}
    for n, i in line.items():
        y = 12 + i * row_h + row_h / 2
        label = f"{n} (optimistic)" if names[n] else n
        colour = f' fill="{ORANGE}"' if names[n] else ""
        body.append(f'<text x="{left - 8}" y="{y + 4:.1f}" text-anchor="end"{colour}>{_e(label)}</text>')
        body.append(f'<line x1="{left}" x2="{right}" y1="{y:.1f}" y2="{y:.1f}" stroke="#eef0f2"/>')
    body.append(
        f'<line x1="{x(0):.1f}" x2="{x(0):.1f}" y1="{top}" y2="{bottom}" stroke="{DARK}" stroke-dasharray="4 3"/>'
    )
    for r, (run, dots) in enumerate(rows):
        shape, colour = MARKS[r % len(MARKS)]
        for name, v, flagged in dots:
            if math.isnan(v):
                continue
            y = 12 + line[name] * row_h + row_h / 2
            tip = f"<title>{_e(run)}: {_e(name)} {v:+.4f}{' (optimistic)' if flagged else ''}</title>"
            body.append(_mark(shape, x(v), y, colour, tip))
    ly = bottom + 46
    per_line = max(1, (right + 30 - 20) // 160)
    for r, run in enumerate(runs):
        shape, colour = MARKS[r % len(MARKS)]
        lx, yy = 20 + (r % per_line) * 160, ly + (r // per_line) * 18
        body.append(_mark(shape, lx + 5, yy, colour) + f'<text x="{lx + 16}" y="{yy + 4}">{_e(run)}</text>')
    height = ly + 18 * ((len(runs) - 1) // per_line) + 14
    desc = "; ".join(
        f"{label}: " + ", ".join(f"{n} {v:+.4f}{' optimistic' if f else ''}" for n, v, f in dots)
        for label, dots in rows
    )
    return _svg(right + 30, height, title, desc, body)


def lines(
    series: Sequence[tuple[str, Sequence[tuple[float, float]]]], *, title: str, x_axis: str, y_axis: str
) -> str:
    """One line per series through its (x, y) points, in x order (a budget curve: a figure against the
    people's pairs spent); series told apart by mark shape and colour (:data:`MARKS`) and named in the
    legend; each point's values on hover. Points with a NaN coordinate are left out."""
    left, right, top, bottom = 64, 620, 12, 232
    points = [(x, y) for _, pts in series for x, y in pts if not (math.isnan(x) or math.isnan(y))]
    xs = [x for x, _ in points] or [0.0, 1.0]
    ys = [y for _, y in points] or [0.0, 1.0]
    x_lo, x_hi = min([*xs, 0.0]), max(xs)
    y_lo, y_hi = min(ys), max(ys)
    pad = (y_hi - y_lo) * 0.08 or 0.05
    y_lo, y_hi = y_lo - pad, y_hi + pad
    x = _scale(x_lo, x_hi if x_hi > x_lo else x_lo + 1.0, left, right)
    y = _scale(y_lo, y_hi, bottom, top)
    body = _x_axis(x, x_lo, x_hi if x_hi > x_lo else x_lo + 1.0, bottom, x_axis, top)
    for t in _ticks(y_lo, y_hi, 5):
        body.append(f'<line x1="{left}" x2="{right}" y1="{y(t):.1f}" y2="{y(t):.1f}" stroke="#e4e7eb"/>')
        body.append(f'<text x="{left - 6}" y="{y(t) + 4:.1f}" text-anchor="end">{_e(f"{t:g}")}</text>')
    body.append(
        f'<text x="14" y="{(top + bottom) / 2:.0f}" text-anchor="middle" '
        f'transform="rotate(-90 14 {(top + bottom) / 2:.0f})">{_e(y_axis)}</text>'
    )
    for i, (name, pts) in enumerate(series):
        shape, colour = MARKS[i % len(MARKS)]
        kept = sorted((a, b) for a, b in pts if not (math.isnan(a) or math.isnan(b)))
        if len(kept) > 1:
            path = " ".join(f"{'M' if j == 0 else 'L'}{x(a):.1f},{y(b):.1f}" for j, (a, b) in enumerate(kept))
            dash = "" if i < len(MARKS) // 2 else ' stroke-dasharray="5 3"'
            body.append(f'<path d="{path}" stroke="{colour}" stroke-width="1.8" fill="none"{dash}/>')
        for a, b in kept:
            tip = f"<title>{_e(name)}: {_e(x_axis)} {a:g}, {_e(y_axis)} {number(b, 4)}</title>"
            body.append(_mark(shape, x(a), y(b), colour, tip))
    ly = bottom + 50
    per_line = max(1, (right + 30 - 20) // 160)
    for i, (name, _) in enumerate(series):
        shape, colour = MARKS[i % len(MARKS)]
        lx, yy = 20 + (i % per_line) * 160, ly + (i // per_line) * 18
        body.append(_mark(shape, lx + 5, yy, colour) + f'<text x="{lx + 16}" y="{yy + 4}">{_e(name)}</text>')
    height = ly + 18 * ((len(series) - 1) // per_line) + 14
    desc = "; ".join(
        f"{name}: "
        + ", ".join(f"({a:g}, {number(b, 4)})" for a, b in pts if not (math.isnan(a) or math.isnan(b)))
        for name, pts in series
    )
    return _svg(right + 30, height, title, desc, body)
