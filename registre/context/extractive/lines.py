"""Candidate lines of the extractive summarizer (:mod:`registre.context.extractive`)
and their importance.

A :class:`Candidate` is a line the summary may hold: its section, its :class:`Option` texts
(best first, each with the pointers of the entries it stands for), its rank and the ids it
is about. A :class:`Part` is a piece of an aggregate line (a count of like entries) before
parts of one section and noun are merged. The ranks, most important first, are
:data:`TASK`, :data:`KEY`, :data:`FACT_EXCEPTION`, :data:`FACT`, :data:`TOOLS`,
:data:`OTHER`, :data:`BULK`.

:func:`line_rank` ranks a single line from its section and words alone (so a line keeps its
rank when read back from a summary folded again); :func:`demote` lowers, in place, the lines
a newer line of the same summary replaces. Both are pure and deterministic.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import lru_cache
from typing import Final

from registre.context.excerpt import (
    Aggregate,
    has_exception,
    has_figure,
    has_strong_exception,
    plain_part,
    split_segments,
)
from registre.context.model import Span

__all__ = [
    "BULK",
    "FACT",
    "FACT_EXCEPTION",
    "KEY",
    "MEMO_SIZE",
    "OTHER",
    "SECTION_LABELS",
    "TASK",
    "TOOLS",
    "Candidate",
    "Option",
    "Part",
    "demote",
    "line_rank",
]

SECTION_LABELS: Final = {  # how a section is named in a count line
    "findings": "findings",
    "decisions": "decisions",
    "dead_ends": "dead ends",
    "tool_outputs": "tool outputs",
    "open_threads": "open threads",
}
_RETIRED: Final = re.compile(r"\b([A-Za-z]+-\d+) (?:superseded by|retracted)\b")
_NAMED: Final = re.compile(r"^(?:evidence|conclusion|final answer) ([A-Za-z]+-\d+): ")
_RECORDED: Final = re.compile(
    r"^(?:(?:evidence|conclusion|final answer) [A-Za-z]+-\d+: |[A-Za-z]+-\d+ superseded by )"
)
_NUMBER: Final = re.compile(r"[+-]?\d+(?:[.,]\d+)*")

MEMO_SIZE: Final = 16_384
"""How many line texts the summarizer's pure per-line readings remember (the lines of the
live summaries are read again at every refold; a few megabytes at most)."""

# ranks, most important first
TASK, KEY, FACT_EXCEPTION, FACT, TOOLS, OTHER, BULK = range(7)


@dataclass(frozen=True, slots=True)
class Option:
    """One way to write a line: its ``text`` and the spans of entries it stands for
    (coalesced, in order)."""

    text: str
    pointers: tuple[Span, ...]


@dataclass(slots=True)
class Candidate:
    """A line the summary may hold: its ``options``, best (longest) first, all pointing at
    the same entries; its ``rank`` (lower is more important); the ``ids`` it is about;
    ``aggregate`` for a count line (which is never gathered into a ``more …`` line);
    ``score``, the information it adds to the lines before it (higher first in a rank)."""

    section: str
    options: tuple[Option, ...]
    rank: int
    ids: tuple[str, ...] = ()
    aggregate: bool = False
    score: float = 0.0

    @property
    def newest(self) -> int:
        """The last entry the line points at."""
        return self.options[0].pointers[-1][1]

    def order(self) -> tuple[int, float, int, str]:
        """The sort key of importance: rank, then the information it adds (``score``, see
        :mod:`registre.context.extractive.salience`), then newest first, then text (a
        total order, so equal candidates sort equally)."""
        return (self.rank, -self.score, -self.newest, self.options[0].text)


@dataclass(frozen=True, slots=True)
class Part:
    """An aggregate of some entries of a ``section``, before the parts of one section and
    noun are merged into one :class:`Candidate`; ``pointers`` are the entries it counts."""

    section: str
    aggregate: Aggregate
    pointers: tuple[Span, ...]


def line_rank(section: str, text: str) -> int:
    """The importance of a single line, from its section and words alone, so a line keeps
    its rank when it is read back from a summary folded again. Remembered for the last
    :data:`MEMO_SIZE` lines asked (a pure function: the lines of the live summaries are
    ranked again at every refold)."""
    return _line_rank(section, text)


@lru_cache(maxsize=MEMO_SIZE)
def _line_rank(section: str, text: str) -> int:
    words = plain_part(text)
    if words.startswith("task: "):
        return TASK
    if section == "decisions":
        return KEY
    if section == "open_threads":
        return FACT_EXCEPTION
    if section == "dead_ends":
        return KEY if " failed: " in words or words.endswith(" failed") else OTHER
    figure, strong = has_figure(text), has_strong_exception(text)
    if section == "tool_outputs":
        return KEY if strong else FACT_EXCEPTION if figure else OTHER
    exception = has_exception(text)
    if _RECORDED.match(words):  # the lifecycle state keeps these too, under their ids
        return FACT if figure or exception else OTHER
    if strong:
        return KEY
    if figure and exception:
        return FACT_EXCEPTION
    return FACT if figure or exception else OTHER


def demote(candidates: Iterable[Candidate]) -> None:
    """Lines a newer line of the same summary replaces rank as other lines: findings about
    an id superseded or retracted, and a statement made again later with other figures
    (the same words once numbers are blanked: the newer figures are the current ones)."""
    # each line's plain words and statement template, read once (both depend on its text
    # alone, which demoting does not change)
    read = [(candidate, *_words(candidate.options[0].text)) for candidate in candidates]
    retired = {match[1] for _, words, _t in read for match in _RETIRED.finditer(words)}
    newest: dict[tuple[str, str], Candidate] = {}
    for candidate, words, template in read:
        named = _NAMED.match(words)
        if named is not None and named[1] in retired:
            candidate.rank = max(candidate.rank, OTHER)
        if template:
            key = (candidate.section, template)
            other = newest.get(key)
            if other is None or other.newest < candidate.newest:
                newest[key] = candidate
    for candidate, _words_read, template in read:
        if template and newest[(candidate.section, template)] is not candidate:
            candidate.rank = max(candidate.rank, OTHER)


@lru_cache(maxsize=MEMO_SIZE)
def _words(text: str) -> tuple[str, str]:
    """``(plain_part(text), _statement(text))``."""
    return plain_part(text), _statement(text)


def _statement(text: str) -> str:
    """The first quote of ``text`` with its numbers blanked, if it holds a figure."""
    first = next((piece for mark, piece in split_segments(text) if mark), "")
    if not has_figure(first):
        return ""
    return " ".join(_NUMBER.sub("#", first.lower()).split())
