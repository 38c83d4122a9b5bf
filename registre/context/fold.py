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
:class:`~registre.context.errors.CompactionRangeError` /
:class:`~registre.context.errors.CompactionStubError`; the state is unchanged then). The
policy, lineage, pin and token rules are checked by
:func:`registre.context.events.validate_compaction`, which a verifier calls first.

The pieces the state is made of live in their own modules and are re-exported here:
:class:`~registre.context.tail.TailItem` with the tail's rules
(:func:`~registre.context.tail.protected_start`,
:func:`~registre.context.tail.safe_cuts`) in :mod:`registre.context.tail`;
:class:`~registre.context.stable_prefix.HeaderPin` and
:class:`~registre.context.stable_prefix.LiveSummary` in
:mod:`registre.context.stable_prefix`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Final, Protocol

from registre.context.errors import (
    CompactionElisionError,
    CompactionRangeError,
    CompactionStubError,
)
from registre.context.model import ContextEntry
from registre.context.record import CompactionRecord, parse_compaction
from registre.context.render import (
    CONTROL_KINDS,
    elided_message,
    entry_text,
    message_of,
    pin_message,
    stub_message,
    unpin_message,
)
from registre.context.stable_prefix import HeaderPin, LiveSummary, SummaryRun
from registre.context.tail import TailItem, protected_start, safe_cuts
from registre.lifecycle.codec import parse_body
from registre.lifecycle.machine import apply as apply_event
from registre.lifecycle.model import Accepted, PinnedItem, UnpinRequest
from registre.lifecycle.pins import pin_set_sha256, with_left_out_pin
from registre.lifecycle.state import LifecycleState

ELIDED_KINDS: Final = frozenset({"turn", "tool.call", "tool.result"})
"""The kinds a compaction may elide (show head and tail): a turn and a tool call's arguments
as a tool result (``specs/context.md`` section 7)."""

REFILL_WINDOW: Final = 256
"""How many entries before the fold boundary the state keeps for a refill
(``specs/context.md`` section 4.2)."""

# HeaderPin, LiveSummary, SummaryRun, TailItem, protected_start and safe_cuts are re-exported
# from stable_prefix and tail (see the module docstring).
__all__ = [
    "ELIDED_KINDS",
    "REFILL_WINDOW",
    "ContextState",
    "HeaderPin",
    "LiveSummary",
    "StateCache",
    "SummaryRun",
    "TailItem",
    "folded_item",
    "fresh_item",
    "protected_start",
    "safe_cuts",
]


class StateCache(Protocol):
    """Something derived from a :class:`ContextState` and kept with it
    (:meth:`ContextState.cache`); :meth:`ContextState.copy` copies it with ``copy``."""

    def copy(self) -> StateCache:
        """An independent copy (changing either never changes the other)."""
        ...


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
        "_folded",
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
        self._folded: tuple[TailItem, ...] = ()

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

    @property
    def folded(self) -> Sequence[TailItem]:
        """The entries of ``max(0, boundary - REFILL_WINDOW) .. boundary - 1`` as fresh tail
        items (no stub, no elision), in seq order: what a refill may show again
        (:mod:`registre.context.refill`). Changes only at a compaction."""
        return self._folded

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
        other._folded = self._folded
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

    def apply_compaction(self, entry: ContextEntry, record: CompactionRecord) -> None:
        """:meth:`apply`, for an entry whose body the caller has just read as a compaction:
        ``record`` must be ``parse_compaction(entry.seq, entry.body)`` (the body not changed
        since), and a ``context.compaction`` entry's body is then not read again. Same
        result, same errors."""
        if entry.seq != self._at + 1:
            raise ValueError(f"entry {entry.seq} folded after entry {self._at}; fold in order")
        self._fold(entry, decide=True, record=record)

    def _fold(
        self, entry: ContextEntry, *, decide: bool, record: CompactionRecord | None = None
    ) -> None:
        """Fold ``entry``; without ``decide`` its effect on pins, header and summaries is
        already in the state (a restored state rebuilding its tail). ``record``: the
        compaction ``entry`` records, read already (:meth:`apply_compaction`)."""
        kind, body = entry.kind, entry.body
        if kind == "context.compaction":
            if record is None:
                record = parse_compaction(entry.seq, body)
            item = TailItem(entry.seq, kind, entry.actor, body, entry_text(kind, body), None)
            if decide:
                self._apply_compaction(record)
            else:
                self._restore_elisions(record)
        elif kind in ("context.pin", "context.unpin"):
            item = self._pin_item(entry, decide=decide)
        else:
            text = entry_text(kind, body)
            item = TailItem(
                entry.seq,
                kind,
                entry.actor,
                body,
                text,
                None if kind in CONTROL_KINDS else message_of(kind, body, text),
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
            pins = self._pins
            if isinstance(event.request, UnpinRequest):  # a snapshot may have left it out
                pins = with_left_out_pin(pins, event.request.id)
            self._pins = apply_event(pins, event)
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
                leaving = self._tail[: last + 1 - self._boundary]
                for item in leaving:
                    key = _pair_key(item)
                    if key is not None and self._open_calls.get(key) is item:
                        del self._open_calls[key]
                self._folded = _recently_folded(self._folded, leaving, last + 1)
                self._tail = list(kept)
                self._boundary = last + 1
        for item in stub_items:
            item = self._replace_item(item)
            item.stub = stub_message(item.seq, item.body)
            item.elision = None
        for item, (_seq, head, tail) in zip(elided_items, record.elided, strict=True):
            item = self._replace_item(item)
            item.elide(elided_message(item.seq, item.body, head, tail, item.kind))
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
        """The items ``record`` elides: turns, tool calls and tool results of the kept tail
        not shown as a stub
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
            if item is None or item.kind not in ELIDED_KINDS or item.stub_only or seq in stubbed:
                raise CompactionElisionError(
                    f"{where}, which is not a turn, tool call or tool result of the tail it "
                    "keeps, unstubbed (nor one it stubs)"
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
                item.elide(elided_message(item.seq, item.body, head, last, item.kind))
        for seq in record.stubbed:
            if boundary <= seq < boundary + len(tail):
                self._replace_item(tail[seq - boundary]).elision = None
        self._caches.clear()

    def __repr__(self) -> str:
        return (
            f"ContextState(at={self._at}, pins={len(self.live_pins())}, "
            f"summaries={len(self._summaries)}, tail={len(self._tail)})"
        )


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


def _recently_folded(
    folded: Sequence[TailItem], leaving: Sequence[TailItem], boundary: int
) -> tuple[TailItem, ...]:
    """``folded`` then ``leaving`` (as fresh items), those from ``boundary - REFILL_WINDOW``
    on."""
    start = boundary - REFILL_WINDOW
    kept = [item for item in folded if item.seq >= start]
    kept += [fresh_item(item) for item in leaving if item.seq >= start]
    return tuple(kept)


def folded_item(entry: ContextEntry) -> TailItem:
    """The fresh item (:func:`fresh_item`) of an entry before the boundary, made from the
    entry alone: what a state restored from a snapshot keeps in :attr:`ContextState.folded`."""
    kind, body = entry.kind, entry.body
    text = entry_text(kind, body)
    control = kind in ("context.pin", "context.unpin")
    message = None if kind in CONTROL_KINDS or control else message_of(kind, body, text)
    call_id = body.get("call_id") if kind in ("tool.call", "tool.result") else None
    return TailItem(
        entry.seq,
        kind,
        entry.actor,
        body,
        text,
        message,
        control,
        kind in ("turn", "tool.call"),
        call_id if isinstance(call_id, str) else None,
    )


def fresh_item(item: TailItem) -> TailItem:
    """``item`` as the fold first made it from its entry: no stub, no elision, no pairing
    (a refill pairs its items itself)."""
    return TailItem(
        item.seq,
        item.kind,
        item.actor,
        item.body,
        item.text,
        item.message,
        item.control,
        item.begins_turn,
        item.call_id,
    )


def _firsts(summaries: Sequence[LiveSummary]) -> str:
    return ", ".join(str(s.first) for s in summaries) or "none"


def _pair_key(item: TailItem) -> str | None:
    """What pairs a tool call with its result: ``call_ref`` (a reused id's ledger-unique
    reference, specs/entries.md section 6) when the body has one, else ``call_id``."""
    ref = item.body.get("call_ref")
    return ref if isinstance(ref, str) else item.call_id
