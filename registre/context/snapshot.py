"""Persisting the context fold: a snapshot without the tail's entries, and its restoration.

A ledger keeps the fold as derived state. Rather than replaying a whole thread when it
loads one, it stores :func:`state_snapshot` (plain JSON data, O(pins + live summaries +
tail seqs)) with each append and restores with :func:`restore_state`, reading back only the
entries from ``snapshot["boundary"]`` on. The restored state equals the folded one: same
projections, and the same result for every entry applied afterwards.

Like any derived table it is a cache: it can be dropped and rebuilt with
:meth:`ContextState.replay`. A snapshot that does not read as one raises
:class:`~registre.lifecycle.errors.LifecycleFormatError`; tail entries that do not match it raise
ValueError.

This module is part of the fold and reads the state's private fields.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from registre.context.fold import (
    ELIDED_KINDS,
    REFILL_WINDOW,
    ContextState,
    HeaderPin,
    LiveSummary,
    folded_item,
)
from registre.context.model import ContextEntry, SummaryLine, coalesce
from registre.context.render import pin_message, stub_message
from registre.lifecycle.errors import LifecycleFormatError
from registre.lifecycle.model import LIVE, UNPINNED, PinnedItem
from registre.lifecycle.state import LifecycleState, Tables

__all__ = ["SNAPSHOT_FORMAT", "restore_state", "state_snapshot"]

SNAPSHOT_FORMAT: Final = "registre.context-state/1"
_FIELDS: Final = (
    "format",
    "at",
    "boundary",
    "header_seq",
    "pins",
    "next_pin",
    "header",
    "summaries",
    "stubbed",
)


def state_snapshot(state: ContextState) -> dict[str, object]:
    """``state`` as plain JSON data, without the tail's entries:

    ``{"format", "at", "boundary", "header_seq", "pins": [[id, kind, text, seq, status,
    unpin_reason, entry_seq], ...], "next_pin", "header": [pin id, ...], "summaries":
    [{"seq", "from", "to", "summary": [line, ...]}, ...], "stubbed": [seq, ...]}``.
    """
    tables = state._pins.tables()
    return {
        "format": SNAPSHOT_FORMAT,
        "at": state.at,
        "boundary": state.boundary,
        "header_seq": state.header_seq,
        "pins": [
            [
                pin.id,
                pin.kind,
                pin.text,
                pin.seq,
                pin.status,
                pin.unpin_reason,
                state._pin_entry[pin.id],
            ]
            for pin in tables.pins.values()
        ],
        "next_pin": tables.next_pin,
        "header": [header.pin.id for header in state.header],
        "summaries": [
            {
                "seq": summary.seq,
                "from": summary.first,
                "to": summary.last,
                "summary": [line.to_json() for line in summary.lines],
            }
            for summary in state.summaries
        ],
        "stubbed": [item.seq for item in state.tail if item.stubbed],
    }


def restore_state(
    snapshot: Mapping[str, object],
    tail: Iterable[ContextEntry],
    folded: Iterable[ContextEntry] = (),
) -> ContextState:
    """The state ``snapshot`` was taken of, given its tail: the entries ``boundary..at``,
    and ``folded``: the entries ``max(0, boundary - REFILL_WINDOW) .. boundary - 1`` that
    a refill may show (:attr:`ContextState.folded`; leave it empty and no refill shows
    anything, which only a version 1 policy's projection may rely on).

    O(pins + live summaries + tail + folded).
    """
    data = _object(snapshot, "snapshot", _FIELDS)
    if data["format"] != SNAPSHOT_FORMAT:
        raise LifecycleFormatError("snapshot.format", f"expected {SNAPSHOT_FORMAT!r}")
    state = ContextState()
    pins, entries = _pins(data["pins"])
    state._pins = LifecycleState(
        Tables(
            pins=pins,
            live_pins={pin_id: None for pin_id, pin in pins.items() if pin.status == LIVE},
            next_pin=_int(data["next_pin"], "snapshot.next_pin"),
        )
    )
    state._pin_entry = entries
    header = [str(pin_id) for pin_id in _list(data["header"], "snapshot.header")]
    if not set(header) <= set(pins):
        raise LifecycleFormatError("snapshot.header", "names a pin the snapshot does not hold")
    state._header = tuple(
        HeaderPin(pins[pin_id], entries[pin_id], pin_message(pins[pin_id])) for pin_id in header
    )
    state._header_seq = _int(data["header_seq"], "snapshot.header_seq")
    state._summaries = [_summary(item) for item in _list(data["summaries"], "snapshot.summaries")]
    state._boundary = _int(data["boundary"], "snapshot.boundary")
    state._at = state._boundary - 1
    start = state._boundary - REFILL_WINDOW
    state._folded = tuple(
        folded_item(entry) for entry in folded if start <= entry.seq < state._boundary
    )
    seqs = [item.seq for item in state._folded]
    if seqs and seqs != list(range(max(0, start), state._boundary)):
        raise ValueError("the folded entries are not the entries just before the boundary")
    for entry in tail:
        if entry.seq != state.at + 1:
            raise ValueError(f"tail entry {entry.seq} where entry {state.at + 1} was expected")
        state._fold(entry, decide=False)
    if state.at != data["at"]:
        raise ValueError(f"the tail ends at {state.at}, the snapshot at {data['at']}")
    by_seq = {item.seq: item for item in state.tail}
    for seq in _list(data["stubbed"], "snapshot.stubbed"):
        item = by_seq.get(seq) if isinstance(seq, int) else None
        if item is None or item.kind not in ELIDED_KINDS:
            raise ValueError(f"stubbed entry {seq!r} is not a tool result of the tail")
        if item.kind == "tool.result":  # an elided turn or call: its compaction elides it
            item.stub = stub_message(item.seq, item.body)
    state._caches.clear()
    return state


def _pins(value: object) -> tuple[dict[str, PinnedItem], dict[str, int]]:
    pins: dict[str, PinnedItem] = {}
    entries: dict[str, int] = {}
    for index, row in enumerate(_list(value, "snapshot.pins")):
        path = f"snapshot.pins[{index}]"
        if not isinstance(row, list) or len(row) != 7:
            raise LifecycleFormatError(
                path, "expected [id, kind, text, seq, status, reason, entry]"
            )
        pin_id, kind, text, seq, status, reason, entry = row
        if status not in (LIVE, UNPINNED) or not isinstance(pin_id, str):
            raise LifecycleFormatError(path, "expected a pin id and a status live or unpinned")
        if kind not in ("definition", "decision", "task_parameter", "open_question"):
            raise LifecycleFormatError(f"{path}[1]", f"unknown pin kind {kind!r}")
        pins[pin_id] = PinnedItem(pin_id, kind, str(text), _int(seq, f"{path}[3]"), status, reason)
        entries[pin_id] = _int(entry, f"{path}[6]")
    return pins, entries


def _summary(value: object) -> LiveSummary:
    data = _object(value, "snapshot.summaries[]", ("seq", "from", "to", "summary"))
    lines = tuple(
        SummaryLine(
            str(line["section"]),
            str(line["text"]),
            coalesce((int(first), int(last)) for first, last in line["pointers"]),
        )
        for line in _list(data["summary"], "snapshot.summaries[].summary")
        if isinstance(line, dict)
    )
    return LiveSummary.build(
        _int(data["seq"], "seq"), _int(data["from"], "from"), _int(data["to"], "to"), lines
    )


def _object(value: object, path: str, fields: tuple[str, ...]) -> Mapping[str, object]:
    if not isinstance(value, Mapping) or set(value) != set(fields):
        raise LifecycleFormatError(path, f"expected an object with fields {', '.join(fields)}")
    return value


def _list(value: object, path: str) -> list[object]:
    if not isinstance(value, list):
        raise LifecycleFormatError(path, "expected a list")
    return value


def _int(value: object, path: str) -> int:
    if type(value) is not int:
        raise LifecycleFormatError(path, "expected an integer")
    return value
