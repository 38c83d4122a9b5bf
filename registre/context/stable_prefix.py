"""The stable prefix the fold keeps ahead of the tail (``specs/context.md`` section 4, parts
1 and 2): the header pins (:class:`HeaderPin`) and the live summaries (:class:`LiveSummary`).

Both are immutable once built, but for the token counts of their messages, cached per
counter name: a compaction that carries a pin or a summary over does not recount it. A live
summary also keeps its :data:`SummaryRun` partition of the range it folded (which line
stands for each entry), which the projection's manifest reports.
"""

from __future__ import annotations

import heapq
from collections.abc import Sequence
from dataclasses import dataclass, field
from itertools import pairwise

from registre.context.model import Message, SummaryLine
from registre.context.render import message_tokens, summary_message
from registre.context.tokens import TokenCounter
from registre.lifecycle.model import PinnedItem

__all__ = ["HeaderPin", "LiveSummary", "SummaryRun"]


SummaryRun = tuple[int, int, int | None]
"""``(first, last, line)``: entries ``first..last`` of a summary's range are stood for by line
``line`` (the lowest-numbered line pointing at them), or by no line (``None``)."""


@dataclass(frozen=True, slots=True, eq=False)
class HeaderPin:
    """A pin of the header: the pin, the ``context.pin`` entry that made it, its message."""

    pin: PinnedItem
    entry_seq: int
    message: Message
    _tokens: dict[str, int] = field(default_factory=dict)

    def tokens(self, counter: TokenCounter) -> int:
        """Tokens of the pin's message, cached per counter name."""
        return _cached_tokens(self._tokens, self.message, counter)


@dataclass(frozen=True, slots=True, eq=False)
class LiveSummary:
    """A compaction whose summary is shown: entry ``seq`` folded ``first..last`` into
    ``lines``; ``runs`` partition ``first..last`` by the line standing for each entry."""

    seq: int
    first: int
    last: int
    lines: tuple[SummaryLine, ...]
    message: Message
    runs: tuple[SummaryRun, ...]
    _tokens: dict[str, int] = field(default_factory=dict)

    def tokens(self, counter: TokenCounter) -> int:
        """Tokens of the summary's message, cached per counter name."""
        return _cached_tokens(self._tokens, self.message, counter)

    @classmethod
    def build(cls, seq: int, first: int, last: int, lines: tuple[SummaryLine, ...]) -> LiveSummary:
        """The live summary of compaction ``seq`` (renders the message, computes the runs)."""
        return cls(
            seq,
            first,
            last,
            lines,
            summary_message(seq, first, last, lines),
            _runs(first, last, lines),
        )


def _cached_tokens(cache: dict[str, int], message: Message, counter: TokenCounter) -> int:
    """Tokens of ``message`` by ``counter``, kept in ``cache`` under the counter's name."""
    cached = cache.get(counter.name)
    if cached is None:
        cached = cache[counter.name] = message_tokens(message, counter)
    return cached


def _runs(first: int, last: int, lines: Sequence[SummaryLine]) -> tuple[SummaryRun, ...]:
    """Partition ``first..last`` by the lowest-numbered line covering each entry. O(S log S)
    in the number of spans."""
    spans = sorted(
        (span_first, span_last, index)
        for index, line in enumerate(lines)
        for span_first, span_last in line.pointers
    )
    points = sorted({first, last + 1} | {p for a, b, _ in spans for p in (a, b + 1)})
    runs: list[SummaryRun] = []
    heap: list[tuple[int, int]] = []  # (line index, span last)
    next_span = 0
    for start, stop in pairwise(points):
        if start > last:
            break
        while next_span < len(spans) and spans[next_span][0] <= start:
            _, span_last, index = spans[next_span]
            heapq.heappush(heap, (index, span_last))
            next_span += 1
        while heap and heap[0][1] < start:
            heapq.heappop(heap)
        line = heap[0][0] if heap else None
        if runs and runs[-1][2] == line and runs[-1][1] == start - 1:
            runs[-1] = (runs[-1][0], stop - 1, line)
        else:
            runs.append((start, stop - 1, line))
    return tuple(runs)
