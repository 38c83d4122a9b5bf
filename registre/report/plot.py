"""The context-token chart: inline SVG, no script, every number a label.

What it draws (issue 33 item 2): the tokens sent at each model call (rebuilt and
digest-checked) against the entry seq, the budget as a dashed line with its own tick and label,
the y axis scaled to what is plotted (never to a pre-compaction size that is not drawn), both
axes titled and ticked at round numbers, and each compaction as a small mark below the x axis
(its tokens before and after in the mark's tooltip), so that no mark hides the line. Past
:data:`MAX_POINTS` calls the line keeps, per horizontal pixel, the largest context (the
envelope that matters against a budget); past :data:`MAX_MARKS` compactions one mark stands for
the compactions of its pixel and says how many.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

__all__ = ["MAX_MARKS", "MAX_POINTS", "Call", "Fold", "nice_ticks", "token_chart"]

MAX_POINTS: Final = 2000
"""Calls drawn one by one up to this many; beyond, the largest per pixel column."""
MAX_MARKS: Final = 600
"""Compaction marks drawn one by one up to this many; beyond, one per pixel column."""

TOKENS_COLOUR: Final = "#1d5fb8"
BUDGET_COLOUR: Final = "#b00020"
FOLD_COLOUR: Final = "#6a3fb5"


@dataclass(frozen=True)
class Call:
    """One model call: its seq, the tokens it was sent and its budget."""

    seq: int
    tokens: int
    budget: int


@dataclass(frozen=True)
class Fold:
    """One compaction: its seq and the context's tokens before and after it."""

    seq: int
    before: int
    after: int


def nice_ticks(top: float, count: int = 5) -> list[int]:
    """Round tick values from 0 to the first at or above ``top`` (steps of 1, 2, 2.5 or 5
    times a power of ten), about ``count`` of them."""
    if top <= 0:
        return [0, 1]
    raw = top / count
    power = 10 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    step = max(1, round(step))
    last = math.ceil(top / step) * step
    return list(range(0, last + 1, step))


def _label(value: int) -> str:
    return f"{value:,}"


def token_chart(
    calls: Sequence[Call],
    folds: Sequence[Fold],
    last_seq: int,
    *,
    width: int = 960,
    height: int = 300,
    label: str = "context tokens against the budget",
) -> str:
    """The chart as an ``<svg>`` element (empty string without calls: the caller says so in
    words)."""
    if not calls:
        return ""
    left, right, top, bottom = 70, 96, 14, 62
    inner_w, inner_h = width - left - right, height - top - bottom
    last = max(1, last_seq)
    highest = max(max(c.tokens for c in calls), max(c.budget for c in calls))
    y_top = highest * 1.06
    y_ticks = [t for t in nice_ticks(y_top) if t <= y_top]
    x_ticks = [t for t in nice_ticks(last, 8) if t <= last]
    axis_y = top + inner_h

    def x(seq: int) -> float:
        return left + inner_w * seq / last

    def y(tokens: int) -> float:
        return top + inner_h * (1 - tokens / y_top)

    parts = [
        f'<svg viewBox="0 0 {width} {height}" width="100%" role="img" aria-label="{label}" '
        'class="chart">',
        f'<rect x="{left}" y="{top}" width="{inner_w}" height="{inner_h}" fill="#fff" '
        'stroke="#c9ced6"/>',
    ]
    for tick in y_ticks:
        parts.append(
            f'<line x1="{left - 4}" y1="{y(tick):.1f}" x2="{left + inner_w}" y2="{y(tick):.1f}" '
            'stroke="#eceef2"/>'
            f'<text x="{left - 7}" y="{y(tick) + 4:.1f}" text-anchor="end">{_label(tick)}</text>'
        )
    for tick in x_ticks:
        parts.append(
            f'<line x1="{x(tick):.1f}" y1="{axis_y}" x2="{x(tick):.1f}" y2="{axis_y + 4}" '
            'stroke="#888"/>'
            f'<text x="{x(tick):.1f}" y="{axis_y + 30}" text-anchor="middle">{_label(tick)}</text>'
        )
    parts.append(
        f'<text x="{left + inner_w / 2:.0f}" y="{height - 6}" text-anchor="middle" '
        'class="axis">entry (seq)</text>'
        f'<text x="16" y="{top + inner_h / 2:.0f}" text-anchor="middle" class="axis" '
        f'transform="rotate(-90 16 {top + inner_h / 2:.0f})">context tokens</text>'
    )
    # the budget: a dashed line (a step line if it changes), its own tick and label
    budgets = sorted({c.budget for c in calls})
    if len(budgets) == 1:
        budget = budgets[0]
        parts.append(
            f'<line x1="{left}" y1="{y(budget):.1f}" x2="{left + inner_w}" y2="{y(budget):.1f}" '
            f'stroke="{BUDGET_COLOUR}" stroke-width="1.5" stroke-dasharray="6,4"/>'
            f'<line x1="{left - 6}" y1="{y(budget):.1f}" x2="{left}" y2="{y(budget):.1f}" '
            f'stroke="{BUDGET_COLOUR}" stroke-width="2"/>'
            f'<text x="{left + inner_w + 6}" y="{y(budget) + 4:.1f}" fill="{BUDGET_COLOUR}" '
            f'class="budget">budget {_label(budget)}</text>'
        )
    else:
        steps: list[tuple[int, int]] = []
        for call in calls:
            if steps and steps[-1][1] != call.budget:
                steps.append((call.seq, steps[-1][1]))
            steps.append((call.seq, call.budget))
        points = " ".join(f"{x(s):.1f},{y(b):.1f}" for s, b in steps)
        parts.append(
            f'<polyline points="{points}" fill="none" stroke="{BUDGET_COLOUR}" '
            'stroke-width="1.5" stroke-dasharray="6,4"/>'
            f'<text x="{left + inner_w + 6}" y="{y(calls[-1].budget) + 4:.1f}" '
            f'fill="{BUDGET_COLOUR}" class="budget">budget</text>'
        )
    # the tokens sent: the line (the largest per pixel column past MAX_POINTS calls)
    shown: list[Call] = list(calls)
    if len(shown) > MAX_POINTS:
        columns: dict[int, Call] = {}
        for call in calls:
            column = int(x(call.seq))
            kept = columns.get(column)
            if kept is None or call.tokens > kept.tokens:
                columns[column] = call
        shown = [columns[c] for c in sorted(columns)]
    points = " ".join(f"{x(c.seq):.1f},{y(c.tokens):.1f}" for c in shown)
    parts.append(
        f'<polyline points="{points}" fill="none" stroke="{TOKENS_COLOUR}" stroke-width="1.6" '
        'stroke-linejoin="round"/>'
    )
    # compactions: marks below the axis, never over the line
    marks: dict[int, list[Fold]] = {}
    for fold in folds:
        key = int(x(fold.seq)) if len(folds) > MAX_MARKS else fold.seq
        marks.setdefault(key, []).append(fold)
    for group in marks.values():
        first = group[0]
        if len(group) == 1:
            title = (
                f"compaction #{first.seq}: {_label(first.before)} &#8594; "
                f"{_label(first.after)} tokens"
            )
        else:
            title = f"{len(group)} compactions from #{first.seq} to #{group[-1].seq}"
        mx = x(first.seq)
        parts.append(
            f'<path d="M{mx:.1f},{axis_y + 6} l-3,8 h6 z" fill="{FOLD_COLOUR}" class="fold">'
            f"<title>{title}</title></path>"
        )
    parts.append("</svg>")
    return "".join(parts)
