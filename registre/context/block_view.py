"""What the lifecycle block shows, kept with the lifecycle state (``specs/context.md`` 4.1).

:func:`lifecycle_view` gives the block's content at a lifecycle state: every active evidence
entry (most cited by active conclusions first, then most recent), the active stale
conclusions and the live open questions. A model call builds the block from it, and so does
every verifier for every ``model.call`` it checks, so it must not cost O(active evidence)
per call: the view is kept with the state's tables (``Tables.derived``), and every commit
notes the ids it touched (``Tables.changed``, :func:`registre.lifecycle.state.note`), so
the next :func:`lifecycle_view` updates the kept order in O(changed ids · log active) plus a
C-level copy of the lists into the new view's tuples; with nothing changed it returns the
same view object, with the statement-line counts it keeps (:class:`StatementLines`).

The kept view also carries the id list version 2 writes (:class:`IdRanges`): the active ids
as ranges of consecutive numbers, kept run by run, with the ``registre.default/1`` count of
the ranges, so the block need not rewrite nor recount a list of thousands of ids at every
call. :func:`build_lifecycle_view` builds the same view from scratch (the reference the
kept one is tested against: equal views give byte-identical blocks).

Not thread-safe: like ``apply``, the caller holds the state exclusively.
"""

from __future__ import annotations

import functools
from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Final

from registre.context.tokens import DefaultTokenCounter
from registre.lifecycle.model import ACTIVE
from registre.lifecycle.state import LifecycleState, Tables

__all__ = [
    "STATEMENT_CHARS",
    "IdRanges",
    "LifecycleView",
    "StatementLines",
    "build_lifecycle_view",
    "id_ranges",
    "lifecycle_view",
    "statement_line",
    "statement_text",
]

STATEMENT_CHARS: Final = 200
"""A statement longer than this (in code points, whitespace collapsed) is cut, ending in ``…``."""

_KEY: Final = "registre.context/block-view"
_DEFAULT: Final = DefaultTokenCounter()


@dataclass(frozen=True, slots=True)
class IdRanges:
    """The active evidence ids as version 2 lists them: ``text`` is ``", ".join(id_ranges(
    ids))``, ``count`` the number of ranges, ``tokens`` the sum of the ``registre.default/1``
    counts of the ranges alone (without their separators)."""

    text: str
    count: int
    tokens: int


class StatementLines:
    """The statement lines of one view counted by one counter, as far as asked:
    ``sums[s]`` is the tokens of the first ``s`` lines, each plus one for its line break;
    ``clean`` how many of the first lines a ``LineCounter`` adds up (``line_counts``).
    Filled by the block (``lifecycle_block``); a kept view hands the counts of the lines
    before its first change on to the next view (:meth:`kept`)."""

    __slots__ = ("clean", "sums")

    def __init__(self, sums: list[int] | None = None, clean: int = 0) -> None:
        self.sums = [0] if sums is None else sums
        self.clean = clean

    def kept(self, lines: int) -> StatementLines:
        """The counts of the first ``lines`` lines only (a copy)."""
        return StatementLines(self.sums[: lines + 1], min(self.clean, lines))


@dataclass(frozen=True, slots=True)
class LifecycleView:
    """What the block shows, in its order. ``active``: ``(id, statement, citers)`` of every
    active evidence entry, most cited (by active conclusions) first, then most recent (highest
    id) first; ``stale``: ``(id, kind)`` of the active stale conclusions in id order;
    ``questions``: the ids of the live ``open_question`` pins in pin order. ``ids`` (the ids
    of ``active``, in its order), ``ranges`` and ``id_costs`` are set by a kept view; else
    the block derives them. Equality is of the three contents only."""

    active: tuple[tuple[str, str, int], ...]
    stale: tuple[tuple[str, str], ...]
    questions: tuple[str, ...]
    _lines: dict[str, StatementLines] = field(
        default_factory=dict, compare=False, repr=False, hash=False
    )
    """Per counter name, the counts of the statement lines."""
    ids: tuple[str, ...] | None = field(default=None, compare=False, repr=False, hash=False)
    ranges: IdRanges | None = field(default=None, compare=False, repr=False, hash=False)
    id_costs: tuple[int, ...] | None = field(default=None, compare=False, repr=False, hash=False)
    """Set by a kept view: per id of ``ids``, its ``registre.default/1`` count plus 2."""
    _statements: dict[int, str] = field(default_factory=dict, compare=False, repr=False, hash=False)
    """Per number ``s`` of statements shown, the first ``s`` statement lines joined by line
    breaks (the block is laid out at every model call, mostly from the same view)."""

    def statements_text(self, shown: int) -> str:
        """``"\\n".join(statement_line(item) for item in active[:shown])``, kept."""
        text = self._statements.get(shown)
        if text is None:
            if len(self._statements) >= 8:
                self._statements.clear()
            text = "\n".join([statement_line(item) for item in self.active[:shown]])
            self._statements[shown] = text
        return text

    @property
    def empty(self) -> bool:
        """Nothing to show: no block message."""
        return not (self.active or self.stale or self.questions)


def statement_text(text: str) -> str:
    """A statement as the block shows it: whitespace collapsed to single spaces, then cut to
    :data:`STATEMENT_CHARS` code points (at the last space when that keeps at least half)
    with ``…`` appended."""
    flat = " ".join(text.split())
    if len(flat) <= STATEMENT_CHARS:
        return flat
    cut = flat[:STATEMENT_CHARS]
    space = cut.rfind(" ")
    if space >= STATEMENT_CHARS // 2:
        cut = cut[:space]
    return cut.rstrip() + "…"


@functools.lru_cache(maxsize=16_384)
def statement_line(item: tuple[str, str, int]) -> str:
    """``- ID (cited by N): STATEMENT``; kept for the items of the last views (the block is
    rebuilt at every model call from mostly the same statements)."""
    evidence_id, text, citers = item
    cited = f" (cited by {citers})" if citers else ""
    return f"- {evidence_id}{cited}: {statement_text(text)}"


def id_ranges(ids: Sequence[str]) -> list[str]:
    """Evidence ids (``ev-N``) in id order, each run of consecutive numbers written as one
    range: ``["ev-2", "ev-6–9"]`` (an en dash; a run of two is a range too)."""
    numbers = sorted(int(evidence_id[3:]) for evidence_id in ids)
    ranges: list[str] = []
    start = previous = -2
    for number in [*numbers, -2]:
        if number == previous + 1:
            previous = number
            continue
        if start >= 0:
            ranges.append(_run_text(start, previous))
        start = previous = number
    return ranges


def _run_text(start: int, end: int) -> str:
    return f"ev-{start}" if start == end else f"ev-{start}–{end}"


def build_lifecycle_view(lifecycle: LifecycleState) -> LifecycleView:
    """The block's content at ``lifecycle`` built from scratch, O(evidence + conclusions)
    (:func:`lifecycle_view` gives the same view, kept)."""
    tables = lifecycle.tables()
    citers = tables.citers
    # The table is in id order (ids grow): newest first, then a stable sort by citers.
    active = [
        (entry.id, entry.text, len(citers.get(entry.id, ())))
        for entry in reversed(tables.evidence.values())
        if entry.status == ACTIVE
    ]
    active.sort(key=lambda item: -item[2])
    stale = tuple(
        (item.id, item.kind)
        for item in tables.conclusions.values()
        if item.status == ACTIVE and item.stale
    )
    return LifecycleView(tuple(active), stale, _questions(tables))


def _questions(tables: Tables) -> tuple[str, ...]:
    return tuple(
        pin_id for pin_id in tables.live_pins if tables.pins[pin_id].kind == "open_question"
    )


def lifecycle_view(lifecycle: LifecycleState) -> LifecycleView:
    """The block's content at ``lifecycle``, ordered (see :class:`LifecycleView`), kept
    with its tables (module docstring): equal to :func:`build_lifecycle_view`, in
    O(ids changed since the last call · log active) plus C-level copies; the same object
    when nothing changed. The first call on a state's tables builds it in O(state)."""
    tables = lifecycle.tables()
    kept = tables.derived.get(_KEY)
    if not isinstance(kept, _KeptView) or tables.changed is None:
        tables.changed = {}
        kept = _KeptView(tables)
        tables.derived[_KEY] = kept
    return kept.refresh(tables)


_NUMBER_BITS: Final = 64
"""Bits of an evidence number in :func:`_order_key` (ids are at most ``ev-(2^53-1)``)."""


def _order_key(citers: int, number: int) -> int:
    """``(-citers, -number)`` as one int with the same order (most cited first, then highest
    number first): a kept view holds an int an active entry, not a tuple of two."""
    if not 0 <= number < 1 << _NUMBER_BITS:
        raise ValueError(f"evidence number {number} out of range")
    return -((citers << _NUMBER_BITS) | number)


def _citers_of(key: int) -> int:
    return (-key) >> _NUMBER_BITS


def _number_of(key: int) -> int:
    return (-key) & ((1 << _NUMBER_BITS) - 1)


class _KeptView:
    """The view's parts, in the lists its tuples copy: the active entries sorted by
    ``(-citers, -number)`` (``keys``, that pair as one int, :func:`_order_key`; with their
    ``items`` and ``ids`` alongside, and ``where`` each active id's key), the runs of
    consecutive active numbers (``starts``, ``ends``, their ``texts`` and default
    ``tokens``; ``costs`` the ids' default counts plus 2), the stale conclusions by number, the
    open questions, and the last view built (``None`` once something changed)."""

    __slots__ = (
        "costs",
        "ends",
        "first_change",
        "ids",
        "items",
        "keys",
        "previous",
        "questions",
        "run_tokens",
        "stale_items",
        "stale_numbers",
        "starts",
        "texts",
        "tokens",
        "view",
        "where",
    )

    def __init__(self, tables: Tables) -> None:
        citers = tables.citers
        pairs = sorted(
            (_order_key(len(citers.get(entry.id, ())), int(entry.id[3:])), entry)
            for entry in tables.evidence.values()
            if entry.status == ACTIVE
        )
        self.keys = [key for key, _entry in pairs]
        self.items = [(entry.id, entry.text, _citers_of(key)) for key, entry in pairs]
        self.ids = [entry.id for _key, entry in pairs]
        self.costs = [_DEFAULT.count(entry.id) + 2 for _key, entry in pairs]
        self.where = {entry.id: key for key, entry in pairs}
        self.starts: list[int] = []
        self.ends: list[int] = []
        self.texts: list[str] = []
        self.tokens: list[int] = []
        self.run_tokens = 0
        for number in sorted(_number_of(key) for key in self.keys):
            self._add_number(number)
        stale = [
            (int(item.id[3:]), (item.id, item.kind))
            for item in tables.conclusions.values()
            if item.status == ACTIVE and item.stale
        ]
        stale.sort()
        self.stale_numbers = [number for number, _item in stale]
        self.stale_items = [item for _number, item in stale]
        self.questions = _questions(tables)
        self.view: LifecycleView | None = None
        self.previous: LifecycleView | None = None
        self.first_change = 0

    def refresh(self, tables: Tables) -> LifecycleView:
        """Apply the changes ``tables`` noted, then the view (kept while nothing changes)."""
        changed = tables.changed
        if changed:
            pins = False
            for item_id in changed:
                if item_id.startswith("ev-"):
                    self._evidence(tables, item_id)
                elif item_id.startswith("cc-"):
                    self._conclusion(tables, item_id)
                else:
                    pins = True
            changed.clear()
            if pins:
                questions = _questions(tables)
                if questions != self.questions:
                    self.questions = questions
                    self._changed(len(self.keys))
        view = self.view
        if view is None:
            previous_lines = None if self.previous is None else self.previous._lines
            view = LifecycleView(
                tuple(self.items),
                tuple(self.stale_items),
                self.questions,
                ids=tuple(self.ids),
                id_costs=tuple(self.costs),
                ranges=IdRanges(", ".join(self.texts), len(self.texts), self.run_tokens),
            )
            if previous_lines:
                for name, lines in previous_lines.items():
                    view._lines[name] = lines.kept(self.first_change)
            self.view = view
            self.first_change = len(self.keys)
        self.previous = view
        return view

    def _changed(self, index: int) -> None:
        """The view's lists changed from position ``index`` on."""
        self.view = None
        self.first_change = min(self.first_change, index)

    def _evidence(self, tables: Tables, evidence_id: str) -> None:
        number = int(evidence_id[3:])
        keys = self.keys
        old = self.where.pop(evidence_id, None)
        if old is not None:
            at = bisect_left(keys, old)
            del keys[at], self.items[at], self.ids[at], self.costs[at]
            self._changed(at)
        entry = tables.evidence.get(evidence_id)
        active = entry is not None and entry.status == ACTIVE
        if entry is not None and active:
            citers = len(tables.citers.get(evidence_id, ()))
            key = _order_key(citers, number)
            at = bisect_left(keys, key)
            keys.insert(at, key)
            self.items.insert(at, (evidence_id, entry.text, citers))
            self.ids.insert(at, evidence_id)
            self.costs.insert(at, _DEFAULT.count(evidence_id) + 2)
            self.where[evidence_id] = key
            self._changed(at)
        if active and old is None:
            self._add_number(number)
        elif old is not None and not active:
            self._remove_number(number)

    def _conclusion(self, tables: Tables, conclusion_id: str) -> None:
        number = int(conclusion_id[3:])
        item = tables.conclusions.get(conclusion_id)
        stale = item is not None and item.status == ACTIVE and item.stale
        numbers = self.stale_numbers
        at = bisect_left(numbers, number)
        present = at < len(numbers) and numbers[at] == number
        if item is not None and stale and not present:
            numbers.insert(at, number)
            self.stale_items.insert(at, (item.id, item.kind))
            self._changed(len(self.keys))
        elif present and not stale:
            del numbers[at], self.stale_items[at]
            self._changed(len(self.keys))

    # --- the runs of consecutive active numbers -------------------------------------------

    def _set_run(self, index: int, start: int, end: int) -> None:
        text = _run_text(start, end)
        tokens = _DEFAULT.count(text)
        self.starts[index], self.ends[index] = start, end
        self.run_tokens += tokens - self.tokens[index]
        self.texts[index], self.tokens[index] = text, tokens

    def _insert_run(self, index: int, start: int, end: int) -> None:
        self.starts.insert(index, start)
        self.ends.insert(index, end)
        self.texts.insert(index, "")
        self.tokens.insert(index, 0)
        self._set_run(index, start, end)

    def _delete_run(self, index: int) -> None:
        self.run_tokens -= self.tokens[index]
        del self.starts[index], self.ends[index], self.texts[index], self.tokens[index]

    def _add_number(self, number: int) -> None:
        starts, ends = self.starts, self.ends
        at = bisect_right(starts, number)  # runs before ``at`` start at or below it
        joins_previous = at > 0 and ends[at - 1] == number - 1
        joins_next = at < len(starts) and starts[at] == number + 1
        if joins_previous and joins_next:
            end = ends[at]
            self._delete_run(at)
            self._set_run(at - 1, starts[at - 1], end)
        elif joins_previous:
            self._set_run(at - 1, starts[at - 1], number)
        elif joins_next:
            self._set_run(at, number, ends[at])
        else:
            self._insert_run(at, number, number)

    def _remove_number(self, number: int) -> None:
        at = bisect_right(self.starts, number) - 1
        start, end = self.starts[at], self.ends[at]
        if start == end:
            self._delete_run(at)
        elif number == start:
            self._set_run(at, start + 1, end)
        elif number == end:
            self._set_run(at, start, end - 1)
        else:
            self._set_run(at, start, number - 1)
            self._insert_run(at + 1, number + 1, end)
