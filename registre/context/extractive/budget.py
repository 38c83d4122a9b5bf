"""Fitting candidate lines to a summary's allowance, for the extractive summarizer
(:mod:`registre.context.extractive`, whose docstring states the budget rules).

:func:`fit_lines` takes candidates by importance within ``plan.max_summary_tokens`` (each
line at most a quarter of it, or 64 tokens; a task line three fifths) and returns the
summary's lines in section order, within the allowance; when no candidate fits, a line
naming the kinds folded if that fits, else the bare range (whatever its size). Pure and
deterministic.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import lru_cache
from typing import Final

from registre.context.compaction import (
    SUMMARY_LINE_KIND,
    CompactionPlan,
    FoldItem,
    summary_tokens,
)
from registre.context.excerpt import (
    has_exception,
    has_strong_figure,
    sentences,
    split_segments,
)
from registre.context.extractive.lines import FACT, MEMO_SIZE, TASK, Candidate, Option
from registre.context.extractive.options import more_lines
from registre.context.model import (
    SECTIONS,
    SummaryLine,
    coalesce,
    format_spans,
    span_count,
)
from registre.context.tokens import TokenCounter

__all__ = ["fit_lines"]

_MIN_CAP: Final = 64


def fit_lines(
    candidates: list[Candidate], items: Sequence[FoldItem], plan: CompactionPlan
) -> tuple[SummaryLine, ...]:
    """Take candidates by importance (the docstring of
    :mod:`registre.context.extractive`): first every line kept whole and
    specific (ranks up to ``FACT``) in its compact option, the shortest that still quotes
    its key sentence whole; then the other lines, each in its best option that fits; then
    the first lines get their better options while the allowance lasts. Last, check the
    whole message and drop the least important lines while it is over."""
    counter = plan.counter
    budget = plan.max_summary_tokens
    used = summary_tokens(plan, (), counter)
    line_cap, task_cap = max(_MIN_CAP, budget // 4), max(_MIN_CAP, budget * 3 // 5)
    ordered = _interleaved(sorted(candidates, key=Candidate.order))
    picked: dict[int, tuple[int, int]] = {}  # candidate index -> (option index, cost)
    left: list[Candidate] = []

    def take(index: int, options: Sequence[int]) -> bool:
        nonlocal used
        candidate = ordered[index]
        cap = task_cap if candidate.rank == TASK else line_cap
        for number in options:
            cost = _cost(candidate.section, candidate.options[number], counter)
            if cost <= cap and used + cost <= budget:
                picked[index] = (number, cost)
                used += cost
                return True
        return False

    first = {
        index
        for index, candidate in enumerate(ordered)
        if candidate.rank <= FACT and not candidate.aggregate
    }
    for index in sorted(first):  # 1: what must be kept, compactly
        candidate = ordered[index]
        compact, count = _compact_option(candidate), len(candidate.options)
        if not take(index, [*range(compact, count), *range(compact - 1, -1, -1)]):
            left.append(candidate)
    for index, candidate in enumerate(ordered):  # 2: the rest, in their best forms
        if index in first:
            continue
        if not take(index, range(len(candidate.options))) and not candidate.aggregate:
            left.append(candidate)
    for index in sorted(picked):  # 3: better forms for the first lines
        number, cost = picked[index]
        candidate = ordered[index]
        cap = task_cap if candidate.rank == TASK else line_cap
        for better in range(number):
            extra = _cost(candidate.section, candidate.options[better], counter)
            if extra <= cap and used - cost + extra <= budget:
                picked[index] = (better, extra)
                used += extra - cost
                break
    chosen = [(ordered[index], ordered[index].options[picked[index][0]]) for index in picked]
    for more in more_lines(left):
        for option in more.options:
            cost = _cost(more.section, option, counter)
            if used + cost <= budget:
                chosen.append((more, option))
                used += cost
                break
    chosen.sort(key=lambda pair: pair[0].order())
    while chosen:
        lines = _ordered(chosen)
        if summary_tokens(plan, lines, counter) <= budget:
            return lines
        chosen.pop()  # the least important
    return _fallback(items, plan)


def _interleaved(ordered: Sequence[Candidate]) -> list[Candidate]:
    """``ordered`` (by rank, then newest first) with the sections of one rank taking turns,
    each newest first, so that no section crowds the others out of a rank."""
    result: list[Candidate] = []
    start = 0
    while start < len(ordered):
        rank = ordered[start].rank
        end = start
        while end < len(ordered) and ordered[end].rank == rank:
            end += 1
        queues: dict[str, list[Candidate]] = {}
        for candidate in ordered[start:end]:
            queues.setdefault(candidate.section, []).append(candidate)
        depth = max(len(queue) for queue in queues.values())
        result.extend(
            queue[turn] for turn in range(depth) for queue in queues.values() if turn < len(queue)
        )
        start = end
    return result


def _compact_option(candidate: Candidate) -> int:
    """The index of the shortest option of ``candidate`` that still quotes its key sentence
    whole: the first sentence of its best option's first quote that states a figure, else
    the first that holds an exception word, else its first sentence (options are given best
    first, so longest first)."""
    return _compact_index(tuple(option.text for option in candidate.options))


@lru_cache(maxsize=MEMO_SIZE)
def _compact_index(options: tuple[str, ...]) -> int:
    """:func:`_compact_option` of the option texts ``options`` (a pure function of them,
    remembered: the lines of the live summaries are fitted again at every refold)."""
    first = next((piece for mark, piece in split_segments(options[0]) if mark), "")
    spans = sentences(first)
    if not spans:
        return 0
    texts = [first[start:end] for start, end in spans]
    key = next(
        (text for text in texts if has_strong_figure(text)),
        next((text for text in texts if has_exception(text)), texts[0]),
    )
    best = 0
    for number, option in enumerate(options):
        if any(key in piece for mark, piece in split_segments(option) if mark):
            best = number
    return best


def _cost(section: str, option: Option, counter: TokenCounter) -> int:
    return counter.count(f"\n- {section}: {option.text} (seq {format_spans(option.pointers)})")


def _ordered(chosen: Sequence[tuple[Candidate, Option]]) -> tuple[SummaryLine, ...]:
    def key(pair: tuple[Candidate, Option]) -> tuple[int, int, int, str]:
        candidate, option = pair
        task = 0 if candidate.rank == TASK else 1
        return (SECTIONS.index(candidate.section), task, option.pointers[0][0], option.text)

    return tuple(
        SummaryLine(candidate.section, option.text, option.pointers)
        for candidate, option in sorted(chosen, key=key)
    )


def _fallback(items: Sequence[FoldItem], plan: CompactionPlan) -> tuple[SummaryLine, ...]:
    """When no candidate fits: the kinds of what was folded, else the bare range."""
    assert plan.folded is not None
    shown = [item for item in items if item.kind != SUMMARY_LINE_KIND]
    if shown:
        pointers = coalesce((item.seq, item.seq) for item in shown)
        kinds = ", ".join(sorted({item.kind for item in shown}))
        line = SummaryLine("findings", f"{_entries(span_count(pointers))}: {kinds}", pointers)
        if summary_tokens(plan, (line,), plan.counter) <= plan.max_summary_tokens:
            return (line,)
    first, last = plan.folded
    what = "nothing to quote" if shown or len(items) else "model calls and compaction records"
    text = f"{_entries(last - first + 1)}: {what}"
    return (SummaryLine("findings", text, ((first, last),)),)


def _entries(count: int) -> str:
    return f"{count} {'entry' if count == 1 else 'entries'}"
