"""The context fold: :class:`ContextState`, a deterministic fold over a thread's entries.

The state holds exactly what a projection needs (``specs/context.md`` section 2):

* the **pins**: a pins-only :class:`~registre.lifecycle.state.LifecycleState` fed the thread's
  ``context.pin`` / ``context.unpin`` events (pin ids depend on pin events only, so they are
  the ids the full lifecycle gives), and the entry each pin was made by;
* the **header**: the pins live at the last compaction, task parameters first, then the
  others, each group in pin order. It changes only at a compaction;
* the **live summaries**: the compactions whose lines are still shown, in history order.
  Their folded ranges partition ``[0, boundary - 1]``;
* the **tail**: every entry from ``boundary`` on, with its rendering, tool call/result
  pairing, turn starts and stubs.

:meth:`ContextState.apply` costs O(size of the entry) for every kind but a compaction, which
costs O(entries it folds + tail it keeps + summaries it refolds): each entry leaves the tail
once, so the fold is amortised O(1) per entry for a bounded tail. Rebuilding the state at an
earlier ``at`` is :meth:`ContextState.replay` of the prefix: the fold is a function of the
entries only.

A compaction entry is applied only if its range starts and ends at fold boundaries, lies
before the entry, and its stubs are tool results of the kept tail (raising
:class:`~registre.lifecycle.context.errors.CompactionRangeError` /
:class:`~registre.lifecycle.context.errors.CompactionStubError`; the state is unchanged then). The
policy, lineage, pin and token rules are checked by
:func:`registre.lifecycle.context.events.validate_compaction`, which a verifier calls first.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from typing import Protocol

from registre.lifecycle.codec import parse_body
from registre.lifecycle.context.errors import (
    CompactionElisionError,
    CompactionRangeError,
    CompactionStubError,
)
from registre.lifecycle.context.model import ContextEntry, Message, SummaryLine
from registre.lifecycle.context.record import CompactionRecord, parse_compaction
from registre.lifecycle.context.render import (
    elided_message,
    entry_text,
    message_tokens,
    pin_message,
    stub_message,
    summary_message,
    tail_message,
    unpin_message,
)
from registre.lifecycle.context.tokens import TokenCounter
from registre.lifecycle.machine import apply as apply_event
from registre.lifecycle.model import Accepted, PinnedItem
from registre.lifecycle.pins import pin_set_sha256
from registre.lifecycle.state import LifecycleState

__all__ = [
    "ContextState",
    "HeaderPin",
    "LiveSummary",
    "StateCache",
    "SummaryRun",
    "TailItem",
    "protected_start",
    "safe_cuts",
]


class StateCache(Protocol):
    """Something derived from a :class:`ContextState` and kept with it
    (:meth:`ContextState.cache`); :meth:`ContextState.copy` copies it with ``copy``."""

    def copy(self) -> StateCache:
        """An independent copy (changing either never changes the other)."""
        ...


SummaryRun = tuple[int, int, int | None]
"""``(first, last, line)``: entries ``first..last`` of a summary's range are stood for by line
``line`` (the lowest-numbered line pointing at them), or by no line (``None``)."""


@dataclass(slots=True, eq=False)
class TailItem:
    """An entry of the tail. ``message`` is how it reads when shown (``None``: never shown);
    ``control`` marks a pin or unpin, shown only when it comes after the header snapshot;
    ``partner`` is the seq of the paired tool call or result; ``begins_turn`` marks a
    ``turn`` or ``tool.call`` entry (``specs/context.md`` section 5); ``pin_id`` is the pin
    an accepted ``context.pin`` made; ``stub`` and ``elision`` are the stand-ins a
    compaction gave a bulky tool result (an elision is shown in preference to a stub: a
    restored snapshot lists elided results among its stubs, and a compaction that stubs an
    elided result drops its elision)."""

    seq: int
    kind: str
    actor: str
    body: Mapping[str, object]
    text: str
    message: Message | None
    control: bool = False
    begins_turn: bool = False
    call_id: str | None = None
    partner: int | None = None
    stub: Message | None = None
    pin_id: str | None = None
    elision: Message | None = None
    _tokens: dict[str, int] = field(default_factory=dict)

    @property
    def stubbed(self) -> bool:
        """Whether a compaction replaced this tool result by a stand-in: its stub, or its
        head-and-tail elision."""
        return self.stub is not None or self.elision is not None

    @property
    def elided(self) -> bool:
        """Whether this tool result is shown head and tail only."""
        return self.elision is not None

    @property
    def stub_only(self) -> bool:
        """Whether this tool result is shown as its one-line stub (no elision)."""
        return self.stub is not None and self.elision is None

    def shown(self, header_seq: int) -> Message | None:
        """The message this entry contributes to the tail now, if any."""
        if self.elision is not None:
            return self.elision
        if self.stub is not None:
            return self.stub
        if self.control and self.seq < header_seq:
            return None
        return self.message

    def tokens(self, counter: TokenCounter, header_seq: int) -> int:
        """Tokens of :meth:`shown` (0 when nothing is shown), cached per counter name."""
        shown = self.shown(header_seq)
        if shown is None:
            return 0
        if shown is self.message:
            key = counter.name
        elif shown is self.elision:
            key = f"elided:{counter.name}"
        else:
            key = f"stub:{counter.name}"
        cached = self._tokens.get(key)
        if cached is None:
            cached = self._tokens[key] = message_tokens(shown, counter)
        return cached

    def elide(self, elision: Message) -> None:
        """Show this tool result as ``elision`` from now on (replacing any earlier one)."""
        self.elision = elision
        for key in [key for key in self._tokens if key.startswith("elided:")]:
            del self._tokens[key]

    def verbatim_tokens(self, counter: TokenCounter) -> int:
        """Tokens of the unstubbed message (0 if it has none), cached per counter name."""
        if self.message is None:
            return 0
        cached = self._tokens.get(counter.name)
        if cached is None:
            cached = self._tokens[counter.name] = message_tokens(self.message, counter)
        return cached

    def clone(self) -> TailItem:
        """An independent copy (the body and messages are immutable and shared)."""
        return TailItem(
            self.seq,
            self.kind,
            self.actor,
            self.body,
            self.text,
            self.message,
            self.control,
            self.begins_turn,
            self.call_id,
            self.partner,
            self.stub,
            self.pin_id,
            self.elision,
            dict(self._tokens),
        )


@dataclass(frozen=True, slots=True, eq=False)
class HeaderPin:
    """A pin of the header: the pin, the ``context.pin`` entry that made it, its message."""

    pin: PinnedItem
    entry_seq: int
    message: Message
    _tokens: dict[str, int] = field(default_factory=dict)

    def tokens(self, counter: TokenCounter) -> int:
        """Tokens of the pin's message, cached per counter name."""
        cached = self._tokens.get(counter.name)
        if cached is None:
            cached = self._tokens[counter.name] = message_tokens(self.message, counter)
        return cached


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
        cached = self._tokens.get(counter.name)
        if cached is None:
            cached = self._tokens[counter.name] = message_tokens(self.message, counter)
        return cached

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


class ContextState:
    """The working-context fold of one thread up to entry ``at`` (``-1``: no entry yet).

    Mutable: :meth:`apply` advances it in place (the ledger keeps one per thread as derived
    state); :meth:`copy` forks it. Read it through the properties; the sequences they return
    are views, not to be changed.
    """

    __slots__ = (
        "_at",
        "_boundary",
        "_caches",
        "_header",
        "_header_seq",
        "_open_calls",
        "_pin_entry",
        "_pins",
        "_shared_pins",
        "_summaries",
        "_tail",
    )

    def __init__(self) -> None:
        self._at = -1
        self._pins = LifecycleState.empty()
        self._pin_entry: dict[str, int] = {}
        self._header: tuple[HeaderPin, ...] = ()
        self._header_seq = -1
        self._summaries: list[LiveSummary] = []
        self._tail: list[TailItem] = []
        self._boundary = 0
        self._open_calls: dict[str, TailItem] = {}
        self._shared_pins = False
        self._caches: dict[str, StateCache] = {}

    @classmethod
    def replay(cls, entries: Iterable[ContextEntry]) -> ContextState:
        """The state after ``entries`` (which must be seq 0, 1, 2, ... in order)."""
        state = cls()
        for entry in entries:
            state.apply(entry)
        return state

    # --- reading ------------------------------------------------------------------------

    @property
    def at(self) -> int:
        """The seq of the last entry folded, ``-1`` before the first."""
        return self._at

    @property
    def boundary(self) -> int:
        """The first seq of the tail (entries before it are covered by live summaries)."""
        return self._boundary

    @property
    def header_seq(self) -> int:
        """The seq of the last compaction (``-1`` if none): the header is the pins live then."""
        return self._header_seq

    @property
    def header(self) -> tuple[HeaderPin, ...]:
        """The header pins, in the order they are shown."""
        return self._header

    @property
    def summaries(self) -> Sequence[LiveSummary]:
        """The live summaries in history order."""
        return self._summaries

    @property
    def tail(self) -> Sequence[TailItem]:
        """The tail: entries ``boundary..at`` in order (index = seq - boundary)."""
        return self._tail

    def live_pins(self) -> tuple[PinnedItem, ...]:
        """The pins live now, in pin order."""
        return self._pins.live_pins()

    def pinned_texts(self) -> frozenset[tuple[int, str]]:
        """``(source seq, text)`` of every pin made, live or unpinned since."""
        return frozenset(
            (pin.seq, pin.text)
            for pin_id in self._pin_entry
            if (pin := self._pins.pin(pin_id)) is not None
        )

    def pin_entry_seq(self, pin_id: str) -> int:
        """The seq of the ``context.pin`` entry that made pin ``pin_id`` (KeyError if none)."""
        return self._pin_entry[pin_id]

    def pin_set_sha256(self) -> str:
        """:func:`registre.lifecycle.pins.pin_set_sha256` of the pins live now."""
        return pin_set_sha256(self._pins)

    def copy(self) -> ContextState:
        """An independent state equal to this one: folding either never changes the other.
        O(tail + live summaries) pointer copies; the tail items are shared (the fold never
        changes an item in a tail: it replaces it by a changed :meth:`TailItem.clone`), the
        pin table is shared until either state folds a pin or unpin, and the derived caches
        (:meth:`cache`) are copied."""
        other = ContextState()
        other._at = self._at
        other._pins = self._pins
        other._pin_entry = self._pin_entry
        other._shared_pins = self._shared_pins = True
        other._header = self._header
        other._header_seq = self._header_seq
        other._summaries = list(self._summaries)
        other._tail = list(self._tail)
        other._boundary = self._boundary
        other._open_calls = dict(self._open_calls)
        other._caches = {name: cache.copy() for name, cache in self._caches.items()}
        return other

    def cache(self, name: str) -> StateCache | None:
        """The derived cache ``name`` set by :meth:`set_cache`, or None. Caches hold what
        is computed from the state (a projection's token counts, messages, manifest runs);
        the fold drops them all whenever the header, the summaries or an item already in
        the tail change (a compaction), and keeps them when it only appends to the tail:
        a cache extends itself to the items appended since."""
        return self._caches.get(name)

    def set_cache(self, name: str, cache: StateCache) -> None:
        """Keep ``cache`` as derived cache ``name`` (:meth:`cache`)."""
        self._caches[name] = cache

    def adopt_caches(self, other: ContextState) -> bool:
        """Take copies of ``other``'s derived caches if ``other`` is an unchanged
        :meth:`copy` of this state (same entry folded last, same tail items), so that what
        was computed on a copy is kept with the original; return whether it was."""
        if (
            other._at != self._at
            or other._boundary != self._boundary
            or other._header_seq != self._header_seq
            or len(other._tail) != len(self._tail)
            or (self._tail and other._tail[-1] is not self._tail[-1])
        ):
            return False
        self._caches = {name: cache.copy() for name, cache in other._caches.items()}
        return True

    def _own_pins(self) -> None:
        """Copy the pin table shared with a copy before changing it."""
        if self._shared_pins:
            self._pins = self._pins.copy()
            self._pin_entry = dict(self._pin_entry)
            self._shared_pins = False

    def _replace_item(self, item: TailItem) -> TailItem:
        """Put a clone of ``item`` (an item of the tail) in its place and return it: the one
        way the fold changes an item once it is in the tail (another state may share it)."""
        index = item.seq - self._boundary
        if not 0 <= index < len(self._tail) or self._tail[index] is not item:
            raise ValueError(f"entry {item.seq} is not in the tail")
        clone = self._tail[index] = item.clone()
        if item.kind == "tool.call":
            for key, call in self._open_calls.items():
                if call is item:
                    self._open_calls[key] = clone
                    break
        return clone

    # --- folding ------------------------------------------------------------------------

    def apply(self, entry: ContextEntry) -> None:
        """Fold ``entry`` (which must be entry ``at + 1``).

        Raises ValueError for an entry out of order,
        :class:`~registre.lifecycle.errors.LifecycleFormatError` for a body the context cannot read,
        :class:`~registre.lifecycle.errors.ReplayMismatchError` for a pin or unpin whose recorded
        outcome the lifecycle rules do not give, and ``CompactionRangeError`` /
        ``CompactionStubError`` / ``CompactionPointerError`` /
        ``CompactionEmptySummaryError`` for a compaction that cannot be applied. On any
        error the state is unchanged.
        """
        if entry.seq != self._at + 1:
            raise ValueError(f"entry {entry.seq} folded after entry {self._at}; fold in order")
        self._fold(entry, decide=True)

    def _fold(self, entry: ContextEntry, *, decide: bool) -> None:
        """Fold ``entry``; without ``decide`` its effect on pins, header and summaries is
        already in the state (a restored state rebuilding its tail)."""
        kind, body = entry.kind, entry.body
        if kind == "context.compaction":
            record = parse_compaction(entry.seq, body)
            item = TailItem(entry.seq, kind, entry.actor, body, entry_text(kind, body), None)
            if decide:
                self._apply_compaction(record)
            else:
                self._restore_elisions(record)
        elif kind in ("context.pin", "context.unpin"):
            item = self._pin_item(entry, decide=decide)
        else:
            item = TailItem(
                entry.seq,
                kind,
                entry.actor,
                body,
                entry_text(kind, body),
                tail_message(kind, body),
                begins_turn=kind in ("turn", "tool.call"),
            )
            if kind in ("tool.call", "tool.result"):
                self._pair(item)
        self._tail.append(item)
        self._at = entry.seq

    def _pin_item(self, entry: ContextEntry, *, decide: bool = True) -> TailItem:
        """The tail item of a pin or unpin; with ``decide``, the event is first applied to the
        pin table (which re-decides it). Without, the table already holds its effect (a
        restored state)."""
        event = parse_body(entry.kind, entry.body)
        self._own_pins()
        if decide:
            self._pins = apply_event(self._pins, event)
        message = None
        pin_id = None
        if isinstance(event.outcome, Accepted):
            pin_id = event.outcome.id
            if entry.kind == "context.pin":
                self._pin_entry[pin_id] = entry.seq
                pin = self._pins.pin(pin_id)
                if pin is None:
                    raise ValueError(f"pin {pin_id} of entry {entry.seq} is not in the pin table")
                message = pin_message(pin)
            else:
                message = unpin_message(pin_id, entry_text(entry.kind, entry.body))
                pin_id = None
        return TailItem(
            entry.seq,
            entry.kind,
            entry.actor,
            entry.body,
            entry_text(entry.kind, entry.body),
            message,
            control=True,
            pin_id=pin_id,
        )

    def _pair(self, item: TailItem) -> None:
        call_id = item.body.get("call_id")
        if not isinstance(call_id, str):
            return
        item.call_id = call_id
        key = _pair_key(item) or call_id
        if item.kind == "tool.call":
            self._open_calls.setdefault(key, item)
            return
        call = self._open_calls.pop(key, None)
        if call is not None:
            index = call.seq - self._boundary
            if 0 <= index < len(self._tail) and self._tail[index] is call:
                call = self._tail[index] = call.clone()
            call.partner = item.seq
            item.partner = call.seq

    def _apply_compaction(self, record: CompactionRecord) -> None:
        self._check_fold_bounds(record)
        last_folded = -1 if record.folded is None else record.folded[1]
        folds_tail = last_folded >= self._boundary
        kept = self._tail[last_folded + 1 - self._boundary :] if folds_tail else self._tail
        stub_items = self._stub_items(record, kept)
        elided_items = self._elided_items(record, kept)
        # Every check passed: change the state.
        if record.folded is not None:
            first, last = record.folded
            remaining = [s for s in self._summaries if s.last < first or s.first > last]
            position = sum(1 for s in remaining if s.last < first)
            remaining.insert(position, LiveSummary.build(record.seq, first, last, record.lines))
            self._summaries = remaining
            if folds_tail:
                for item in self._tail[: last + 1 - self._boundary]:
                    key = _pair_key(item)
                    if key is not None and self._open_calls.get(key) is item:
                        del self._open_calls[key]
                self._tail = list(kept)
                self._boundary = last + 1
        for item in stub_items:
            item = self._replace_item(item)
            item.stub = stub_message(item.seq, item.body)
            item.elision = None
        for item, (_seq, head, tail) in zip(elided_items, record.elided, strict=True):
            item = self._replace_item(item)
            item.elide(elided_message(item.seq, item.body, head, tail))
        self._caches.clear()
        self._header = _header(self._pins, self._pin_entry, self._header)
        self._header_seq = record.seq

    def _check_fold_bounds(self, record: CompactionRecord) -> None:
        """Raise CompactionRangeError unless the folded range starts at the tail or at a live
        summary, and ends inside the tail (before the compaction) or where a live summary
        ends."""
        if record.folded is None:
            return
        first, last = record.folded
        where = f"compaction at seq {record.seq} folds {first}-{last}"
        if last >= record.seq:
            raise CompactionRangeError(f"{where}, which does not lie before the compaction itself")
        starts = [index for index, s in enumerate(self._summaries) if s.first == first]
        if first != self._boundary and not starts:
            raise CompactionRangeError(
                f"{where}: a range starts at the tail ({self._boundary}) or at the start of a "
                f"live summary ({_firsts(self._summaries)})"
            )
        later = self._summaries[starts[0] :] if starts else []
        if last < self._boundary and not any(s.last == last for s in later):
            raise CompactionRangeError(
                f"{where}: a range before the tail ends where a live summary ends "
                f"({', '.join(str(s.last) for s in later)}) or inside the tail"
            )

    def _stub_items(self, record: CompactionRecord, kept: Sequence[TailItem]) -> list[TailItem]:
        if not record.stubbed:
            return []
        start = kept[0].seq if kept else self._at + 1
        items = []
        for seq in record.stubbed:
            index = seq - start
            item = kept[index] if 0 <= index < len(kept) else None
            if item is None or item.kind != "tool.result" or item.stub_only:
                raise CompactionStubError(
                    f"compaction at seq {record.seq} stubs entry {seq}, which is not an "
                    "unstubbed tool.result of the tail it keeps"
                )
            items.append(item)
        return items

    def _elided_items(self, record: CompactionRecord, kept: Sequence[TailItem]) -> list[TailItem]:
        """The items ``record`` elides: tool results of the kept tail not shown as a stub
        (an elided one may be elided again, the new elision replacing the old), not stubbed
        by the same compaction, and more characters than the elision shows
        (CompactionElisionError otherwise)."""
        if not record.elided:
            return []
        start = kept[0].seq if kept else self._at + 1
        stubbed = set(record.stubbed)
        items = []
        for seq, head, tail in record.elided:
            index = seq - start
            item = kept[index] if 0 <= index < len(kept) else None
            where = f"compaction at seq {record.seq} elides entry {seq}"
            if item is None or item.kind != "tool.result" or item.stub_only or seq in stubbed:
                raise CompactionElisionError(
                    f"{where}, which is not a tool.result of the tail it keeps, unstubbed "
                    "(nor one it stubs)"
                )
            length = len(item.text)
            if head + tail >= length:
                raise CompactionElisionError(
                    f"{where} showing {head} + {tail} of its {length} characters: an elision "
                    "leaves something out"
                )
            items.append(item)
        return items

    def _restore_elisions(self, record: CompactionRecord) -> None:
        """For a restored state rebuilding its tail: give the tail items ``record`` elided
        their elision, and drop it from those it stubbed (the snapshot restores the stubs)."""
        tail, boundary = self._tail, self._boundary
        for seq, head, last in record.elided:
            if boundary <= seq < boundary + len(tail):
                item = self._replace_item(tail[seq - boundary])
                item.elide(elided_message(item.seq, item.body, head, last))
        for seq in record.stubbed:
            if boundary <= seq < boundary + len(tail):
                self._replace_item(tail[seq - boundary]).elision = None
        self._caches.clear()

    def __repr__(self) -> str:
        return (
            f"ContextState(at={self._at}, pins={len(self.live_pins())}, "
            f"summaries={len(self._summaries)}, tail={len(self._tail)})"
        )


# --- the tail's rules (shared by planning and verification) ---------------------------------


def protected_start(tail: Sequence[TailItem], keep_recent_turns: int) -> int:
    """The index of the first tail item of the ``keep_recent_turns`` most recent turns: the
    K-th last item that begins a turn; ``len(tail)`` when K is 0; 0 when the tail has fewer
    than K turn starts (then the whole tail is kept). O(tail)."""
    if keep_recent_turns == 0:
        return len(tail)
    seen = 0
    for index in range(len(tail) - 1, -1, -1):
        if tail[index].begins_turn:
            seen += 1
            if seen == keep_recent_turns:
                return index
    return 0


def safe_cuts(tail: Sequence[TailItem]) -> list[bool]:
    """``cuts[k]`` is whether folding ``tail[0..k]`` keeps every tool call with its result:
    no call in it is answered after ``k`` and no call in it is unanswered. O(tail)."""
    cuts = []
    pending = 0
    unanswered = 0
    for item in tail:
        if item.kind == "tool.call" and item.call_id is not None:
            if item.partner is None:
                unanswered += 1
            else:
                pending += 1
        elif item.kind == "tool.result" and item.partner is not None:
            pending -= 1
        cuts.append(pending == 0 and unanswered == 0)
    return cuts


# --- helpers --------------------------------------------------------------------------------


def _header(
    pins: LifecycleState, pin_entry: Mapping[str, int], previous: Sequence[HeaderPin] = ()
) -> tuple[HeaderPin, ...]:
    """The header of the pins live now. A pin already in the ``previous`` header, equal and
    made by the same entry, keeps its :class:`HeaderPin` (same message, so the token counts
    cached on it stay right): a compaction does not recount the pins it carries."""
    live = pins.live_pins()
    ordered = [pin for pin in live if pin.kind == "task_parameter"]
    ordered += [pin for pin in live if pin.kind != "task_parameter"]
    kept = {item.pin.id: item for item in previous}
    header = []
    for pin in ordered:
        entry_seq = pin_entry[pin.id]
        item = kept.get(pin.id)
        if item is None or item.pin != pin or item.entry_seq != entry_seq:
            item = HeaderPin(pin, entry_seq, pin_message(pin))
        header.append(item)
    return tuple(header)


def _firsts(summaries: Sequence[LiveSummary]) -> str:
    return ", ".join(str(s.first) for s in summaries) or "none"


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


def _pair_key(item: TailItem) -> str | None:
    """What pairs a tool call with its result: ``call_ref`` (a reused id's ledger-unique
    reference, specs/entries.md section 6) when the body has one, else ``call_id``."""
    ref = item.body.get("call_ref")
    return ref if isinstance(ref, str) else item.call_id
