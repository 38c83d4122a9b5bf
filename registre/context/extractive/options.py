"""Ways to write a candidate line of the extractive summarizer
(:mod:`registre.context.extractive`), best first.

:func:`quote_options` writes a prefix and quotes of an entry's words: whole, its opening
sentences (a task), its key sentences, the first of them, that one cut at a word boundary.
:func:`aggregate_candidates` merges the aggregate parts of one section and noun into one
candidate (all of them, then the newest half, and so on); :func:`more_lines` gathers, per
section, the single lines that did not fit into one ``N entries: more … not quoted here``
candidate. Every text quotes only substrings of the entries it points at. Pure and
deterministic.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Final

from registre.context.excerpt import (
    ELLIPSIS,
    Aggregate,
    Segment,
    cut_at_word,
    distinct,
    first_line_quote,
    key_sentences,
    merge_aggregates,
    quote,
    render,
    sentences,
    split_segments,
    write_aggregate,
)
from registre.context.extractive.lines import (
    BULK,
    SECTION_LABELS,
    TOOLS,
    Candidate,
    Option,
    Part,
)
from registre.context.jsontext import escape_string
from registre.context.model import SECTIONS, Span, coalesce, span_count

__all__ = ["aggregate_candidates", "more_lines", "quote_options"]

_WHOLE_CHARS: Final = 600
_SENTENCE_CHARS: Final = 400
_LEADING: Final = (8000, 4000, 2000, 1000, 500, 250)
_CUTS: Final = (200, 100, 50)


def quote_options(
    prefix: str,
    source: str,
    pointers: tuple[Span, ...],
    *,
    escape: bool = False,
    whole: int = _WHOLE_CHARS,
    strong: bool = False,
    leading: bool = False,
) -> tuple[Option, ...]:
    """Ways to write ``prefix`` and quotes of ``source``, best first: whole (``leading``:
    then its opening sentences), its key sentences, the first key sentence, that sentence
    cut at a word boundary. ``escape``: the entry's text holds ``source`` as a JSON string
    (a lifecycle body)."""
    quoted: Callable[[str], list[Segment]] = (
        (lambda raw: quote(escape_string(raw))) if escape else quote
    )
    texts: list[str] = []

    def emit(spans: Sequence[tuple[int, int]], limit: int | None = None) -> None:
        segments: list[Segment] = [("", prefix)] if prefix else []
        previous: int | None = None
        cut = False
        for start, end in spans:
            raw = source[start:end]
            if limit is not None and len(raw) > limit:
                raw, cut = cut_at_word(raw, limit), True
            pieces = quoted(raw)
            if not pieces:
                continue
            if previous is not None:
                gap = source[previous:start].strip()
                segments.append(("", f" {ELLIPSIS} " if gap else " "))
            segments.extend(pieces)
            previous = end
        if previous is not None:
            text = render([*segments, ("", ELLIPSIS)] if cut else segments)
            if text not in texts:
                texts.append(text)

    stripped = source.strip()
    if stripped and len(stripped) <= whole:
        emit([(0, len(source))])
    if leading:  # a task: its opening sentences, as many as fit
        spans = sentences(source)
        for limit in _LEADING:
            opening = [span for span in spans if span[1] - spans[0][0] <= limit]
            if opening and len(opening) < len(spans):
                emit(opening)
                texts[-1] += "" if texts[-1].endswith(ELLIPSIS) else ELLIPSIS
    keyed = key_sentences(source, strong=strong)
    if keyed:
        if len(keyed) > 1:
            emit(keyed[:3])
        if keyed[0][1] - keyed[0][0] <= _SENTENCE_CHARS:
            emit(keyed[:1])
        for limit in _CUTS:
            emit(keyed[:1], limit)
    if not texts:
        texts.append((prefix.rstrip() or "entry:") + " (nothing to quote)")
    return tuple(Option(text, pointers) for text in texts)


def aggregate_candidates(parts: Sequence[Part]) -> list[Candidate]:
    """One candidate per section and noun; its options merge all its parts, then the newest
    half of them, and so on down to the newest one."""
    groups: dict[tuple[str, str], list[Part]] = {}
    for part in parts:
        groups.setdefault((part.section, part.aggregate.noun), []).append(part)
    candidates = []
    for (section, noun), group in groups.items():
        group.sort(key=lambda part: part.pointers[-1][1])
        rank = TOOLS if noun.endswith((" call", " result")) or noun == "source read" else BULK
        union = coalesce(span for part in group for span in part.pointers)
        if span_count(union) != sum(span_count(part.pointers) for part in group):
            for part in group:  # parts that overlap: their counts cannot be summed
                text = write_aggregate(span_count(part.pointers), part.aggregate)
                option = Option(text, part.pointers)
                candidates.append(Candidate(section, (option,), rank, aggregate=True))
            continue
        options: list[Option] = []
        size = len(group)
        while size >= 1:
            chosen = group[-size:]
            pointers = coalesce(span for part in chosen for span in part.pointers)
            merged = merge_aggregates([part.aggregate for part in chosen])
            for detail in _details(merged):
                text = write_aggregate(span_count(pointers), detail)
                if all(option.text != text for option in options):
                    options.append(Option(text, pointers))
            size = size // 2 if size > 1 else 0
        candidates.append(Candidate(section, tuple(options), rank, aggregate=True))
    return candidates


def _details(aggregate: Aggregate) -> list[Aggregate]:
    """An aggregate, then without its example, then with its first argument only; with no
    argument at all only when it has none (so it still names something)."""
    details = [aggregate, replace(aggregate, example=())]
    if len(aggregate.args) > 1:
        details.append(replace(aggregate, args=aggregate.args[:1], example=()))
    return details


def more_lines(left: Sequence[Candidate]) -> list[Candidate]:
    """Per section, one aggregate for the singles that did not fit (its options: all of
    them, then the newest half, and so on), naming the ids they were about and quoting the
    opening words of the newest."""
    lines = []
    for section in SECTIONS:
        group = sorted((c for c in left if c.section == section), key=lambda c: c.newest)
        options: list[Option] = []
        size = len(group)
        while size >= 1:
            chosen = group[-size:]
            pointers = coalesce(span for c in chosen for span in c.options[0].pointers)
            ids = distinct(ident for c in chosen for ident in c.ids)
            aggregate = Aggregate(
                None,
                f"more {SECTION_LABELS[section]} not quoted here",
                (("ids", tuple(ids), 0),) if ids else (),
                example=_opening(chosen[-1].options[-1].text),
            )
            for detail in _details(aggregate):
                text = write_aggregate(span_count(pointers), detail)
                if all(option.text != text for option in options):
                    options.append(Option(text, pointers))
            size = size // 2 if size > 1 else 0
        if options:
            lines.append(Candidate(section, tuple(options), BULK, aggregate=True))
    return lines


def _opening(text: str) -> tuple[Segment, ...]:
    """The first quote of a line's ``text`` cut to about 40 characters (a substring of it,
    so of an entry the line points at)."""
    first = next((piece for mark, piece in split_segments(text) if mark), "")
    return tuple(first_line_quote(first, 40))
