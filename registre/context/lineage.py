"""Checked lineage: the rules every summary line obeys, before it is recorded
(:func:`registre.context.compaction.check_summary`, refusals) and when a recorded
compaction is replayed (:func:`registre.context.events.validate_compaction`, verification
errors).

Each check takes the exception class to raise, so both callers share one implementation and
each raises its own family.

**Quoted spans** (``specs/context.md`` section 6). Reading a line's text left to right, a
``“`` opens a span closed by the next ``”``, and a ``"`` opens a span closed by the next
``"``; the text between the marks is the span. An opening mark with no closing mark opens
nothing. Every non-empty span must occur, as a substring (so byte for byte in UTF-8), in the
:func:`~registre.context.render.entry_text` of at least one entry the line points at.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Final

from registre.context.model import Span, SummaryLine

__all__ = ["check_line_quotes", "check_lines_present", "check_pointers_inside", "quoted_spans"]

_CLOSING: Final = {"“": "”", '"': '"'}


def quoted_spans(text: str) -> list[str]:
    """The quoted spans of ``text`` in order (module docstring), empty ones included."""
    spans = []
    position = 0
    while position < len(text):
        char = text[position]
        closing = _CLOSING.get(char)
        if closing is not None:
            end = text.find(closing, position + 1)
            if end >= 0:
                spans.append(text[position + 1 : end])
                position = end + 1
                continue
        position += 1
    return spans


def check_lines_present(lines: Sequence[SummaryLine], where: str, error: type[Exception]) -> None:
    """Raise ``error`` if there is no line or a line's text is blank."""
    if not lines:
        raise error(f"{where}: the summary has no line; a folded range needs at least one")
    for index, line in enumerate(lines):
        if not line.text.strip():
            raise error(f"{where}: summary line {index} is blank; write what it stands for")


def check_pointers_inside(
    lines: Sequence[SummaryLine], folded: Span, where: str, error: type[Exception]
) -> None:
    """Raise ``error`` naming the first pointer outside ``folded``."""
    first, last = folded
    for index, line in enumerate(lines):
        for span_first, span_last in line.pointers:
            if span_first < first or span_last > last:
                raise error(
                    f"{where}: summary line {index} points at {span_first}-{span_last}, outside "
                    f"the folded range {first}-{last}; a line may point only at what was folded"
                )


def check_line_quotes(
    line: SummaryLine,
    index: int,
    texts: Mapping[int, str],
    where: str,
    error: type[Exception],
) -> None:
    """Raise ``error`` naming the first non-empty quoted span of ``line`` that no entry it
    points at contains. ``texts`` maps seq to entry text; a seq missing from it counts as an
    entry that does not contain the span (the message says how many were missing).
    Entries are searched newest first, as summaries mostly quote what came last; O(spans x
    pointed entries) in the worst case."""
    for quote in quoted_spans(line.text):
        if not quote:
            continue
        missing = 0
        found = False
        for first, last in reversed(line.pointers):
            for seq in range(last, first - 1, -1):
                text = texts.get(seq)
                if text is None:
                    missing += 1
                elif quote in text:
                    found = True
                    break
            if found:
                break
        if not found:
            note = f" ({missing} of them had no text to search)" if missing else ""
            shown = quote if len(quote) <= 80 else quote[:77] + "..."
            raise error(
                f"{where}: summary line {index} quotes “{shown}”, which no entry it points at "
                f"contains byte for byte{note}; quote only text that the entries hold"
            )
