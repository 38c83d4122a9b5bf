"""The lifecycle fold of one thread, and the derived-table rows it implies.

A :class:`ThreadFold` folds a thread's lifecycle entries in seq order through
:func:`registre.lifecycle.apply` -- which re-decides every request and refuses an outcome the rules
do not give -- and turns each event into :class:`Change` records for the derived tables of
:mod:`registre.ledger.store.derived`. Every path that fills those tables goes through it:

* the writer (:mod:`registre.ledger.lifecycle.store`) applies the changes of the one event it
  appends, in the append's transaction (:func:`write_changes`);
* :func:`rebuild_thread` folds the whole thread in memory and inserts the final rows;
* ``registre verify --db`` folds in memory and compares
  (:mod:`registre.ledger.store.derived_check`).

So "rebuild gives the same tables as incremental writes" holds by construction: the same
change list is applied row by row or accumulated in memory.

Guarantees and errors: a stored lifecycle entry that does not parse, does not replay, or pins
text from an entry that is not earlier raises :class:`LifecycleHistoryError` naming its seq
(the fold is then unusable and must be dropped). The comparison with the stored tables
(:mod:`registre.ledger.store.derived_check`) raises :class:`DerivedTablesDifferError` naming
the first differing row, earliest seq first.
"""

from __future__ import annotations

import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import Connection, Table, bindparam, select, text

from registre.errors import RefusedError
from registre.ledger.errors import StoreCorruptError
from registre.ledger.store.derived import (
    DERIVED_TABLES,
    LIFECYCLE_KIND_SQL,
    derived,
)
from registre.ledger.store.faults import TextNulError
from registre.lifecycle import (
    Accepted,
    Event,
    LifecycleFormatError,
    LifecycleState,
    PinRequest,
    ReadOutcome,
    Registered,
    Rejected,
    ReplayMismatchError,
    Revised,
    UnpinRequest,
    UpsertOutcome,
    apply,
    parse_body,
)
from registre.lifecycle.codec import KINDS

__all__ = [
    "KEY_COLUMNS",
    "Change",
    "DerivedRows",
    "DerivedTablesDifferError",
    "LifecycleHistoryError",
    "PinSourceRefusedError",
    "ThreadFold",
    "catch_up",
    "check_pin_source",
    "delete_derived",
    "insert_rows",
    "lifecycle_entries",
    "read_derived",
    "rebuild_thread",
    "write_changes",
]

RowKey = str | int
DerivedRows = dict[str, dict[RowKey, dict[str, Any]]]
"""Rows per table name, keyed by the table's own key column (see :data:`KEY_COLUMNS`)."""

KEY_COLUMNS: Final[dict[str, str]] = {
    derived.reference.name: "ref",
    derived.evidence.name: "id",
    derived.conclusion.name: "id",
    derived.pin.name: "id",
    derived.transition.name: "seq",
}
_TABLES: Final[dict[str, Table]] = {table.name: table for table in DERIVED_TABLES}
_LIFECYCLE_LEAVES = text(
    "SELECT seq, leaf FROM entry WHERE thread = :thread AND seq >= :start AND seq < :stop "
    f"AND {LIFECYCLE_KIND_SQL} ORDER BY seq LIMIT :batch"
)


class LifecycleHistoryError(StoreCorruptError):
    """A stored lifecycle entry that does not parse, does not replay (its recorded outcome is
    not the rules' decision), or pins text from an entry that is not earlier. ``thread`` and
    ``seq`` name it; the cause is chained."""

    def __init__(self, thread: str, seq: int, problem: str) -> None:
        self.thread = thread
        self.seq = seq
        self.problem = problem
        super().__init__(
            f"thread {thread} seq {seq}: {problem}; the stored lifecycle history does not replay"
        )


class DerivedTablesDifferError(StoreCorruptError):
    """A derived table whose rows are not what the fold of the entries gives. ``table``,
    ``key`` and ``seq`` (the entry the row comes from) name the first difference."""

    def __init__(self, thread: str, table: str, key: RowKey, seq: int, problem: str) -> None:
        self.thread = thread
        self.table = table
        self.key = key
        self.seq = seq
        super().__init__(f"{table} row {key!s}: {problem}")


class PinSourceRefusedError(RefusedError):
    """A ``context.pin`` whose ``seq`` does not name an entry before the pin itself: a pin can
    only carry what the ledger already holds."""


@dataclass(frozen=True)
class Change:
    """One change to derived table ``table``: insert ``row`` or, when ``update``, set the
    columns in ``row`` on the row whose key column equals ``key``."""

    table: str
    key: RowKey
    row: dict[str, Any]
    update: bool = False


def check_pin_source(event_request: object, seq: int) -> None:
    """Refuse a pin request recorded at ``seq`` whose text comes from entry ``seq`` or later
    (PinSourceRefusedError). Any other request passes."""
    if isinstance(event_request, PinRequest) and event_request.seq >= seq:
        raise PinSourceRefusedError(
            f"the pin would be entry {seq} but says its text comes from entry "
            f"{event_request.seq}; pin text from an entry already on the ledger (seq < {seq})"
        )


class ThreadFold:
    """The lifecycle state of ``thread`` after its entries ``0 .. size-1``, and (with
    ``keep_rows``) the derived rows they imply, in ``rows``.

    ``state`` is replaced by every fold step (:func:`registre.lifecycle.apply` retires the old one);
    never hand it out without :meth:`LifecycleState.copy`.
    """

    def __init__(self, thread: str, *, keep_rows: bool = False) -> None:
        self.thread = thread
        self.state = LifecycleState.empty()
        self.size = 0
        self.events = 0
        self.rows: DerivedRows | None = (
            {table.name: {} for table in DERIVED_TABLES} if keep_rows else None
        )

    def add_entry(self, seq: int, kind: str, body: object) -> list[Change]:
        """Fold the stored lifecycle entry ``seq``; LifecycleHistoryError if it does not parse
        or replay (this fold must then be dropped)."""
        try:
            event = parse_body(kind, body)
        except LifecycleFormatError as exc:
            raise LifecycleHistoryError(self.thread, seq, f"its body is malformed: {exc}") from exc
        try:
            return self.add_event(seq, event)
        except (ReplayMismatchError, PinSourceRefusedError) as exc:
            raise LifecycleHistoryError(self.thread, seq, str(exc)) from exc

    def add_event(self, seq: int, event: Event) -> list[Change]:
        """Fold ``event`` recorded at ``seq`` and return the changes it makes to the derived
        tables. Raises, leaving the fold unchanged: ReplayMismatchError when the outcome is not
        the rules' decision, PinSourceRefusedError for a pin of a later entry."""
        if seq < self.size:
            raise ValueError(f"seq {seq} is behind the fold (at {self.size})")
        check_pin_source(event.request, seq)
        before = self.state
        registered, created, changed = _effects(before, event)
        self.state = apply(before, event)
        self.size = seq + 1
        self.events += 1
        changes = _changes(self.thread, seq, event, self.state, registered, created, changed)
        if self.rows is not None:
            _accumulate(self.rows, changes)
        return changes


def _effects(state: LifecycleState, event: Event) -> tuple[list[str], list[str], list[str]]:
    """(references newly registered, ids created, existing ids whose row changes)."""
    outcome = event.outcome
    if isinstance(outcome, ReadOutcome):
        new = dict.fromkeys(
            result.ref
            for result in outcome.results
            if isinstance(result, Registered) and state.reference(result.ref) is None
        )
        return list(new), [], []
    if isinstance(outcome, UpsertOutcome):
        return [], [r.id for r in outcome.results if isinstance(r, Accepted)], []
    if isinstance(outcome, Revised):
        created = [] if outcome.successor is None else [outcome.successor]
        fresh = [c for c in outcome.stale if not getattr(state.conclusion(c), "stale", True)]
        return [], created, [outcome.id, *fresh]
    if isinstance(outcome, Accepted):
        if isinstance(event.request, UnpinRequest):
            return [], [], [outcome.id]
        return [], [outcome.id], []
    return [], [], []


def _changes(
    thread: str,
    seq: int,
    event: Event,
    state: LifecycleState,
    registered: list[str],
    created: list[str],
    changed: list[str],
) -> list[Change]:
    changes: list[Change] = []
    for ref_id in registered:
        ref = state.reference(ref_id)
        assert ref is not None
        row = {"thread": thread, "ref": ref.ref, "source": ref.source, "location": ref.location}
        changes.append(
            Change(derived.reference.name, ref.ref, {**row, "sha256": ref.sha256, "seq": seq})
        )
    for item in created:
        changes.append(_created_row(thread, seq, state, item))
    for item in changed:
        changes.append(_changed_row(seq, state, item))
    results = _results(event)
    reasons = [r.reason for r in results if isinstance(r, Rejected)]
    transition = {
        "thread": thread,
        "seq": seq,
        "kind": event.kind,
        "accepted": len(results) - len(reasons),
        "rejected": len(reasons),
        "created": _json([*registered, *created]),
        "changed": _json(changed),
        "reasons": _json(reasons),
    }
    changes.append(Change(derived.transition.name, seq, transition))
    return changes


def _results(event: Event) -> Sequence[object]:
    outcome = event.outcome
    if isinstance(outcome, (ReadOutcome, UpsertOutcome)):
        return outcome.results
    return (outcome,)


def _created_row(thread: str, seq: int, state: LifecycleState, item: str) -> Change:
    common: dict[str, Any] = {
        "thread": thread,
        "id": item,
        "num": _num(item),
        "seq": seq,
        "changed_seq": None,
    }
    if item.startswith("ev-"):
        entry = state.evidence(item)
        assert entry is not None
        row: dict[str, Any] = {
            "status": entry.status,
            "text": stored_text(entry.text),
            "cites": _json(entry.cites),
            "successor": entry.successor,
            "predecessor": entry.predecessor,
        }
        return Change(derived.evidence.name, item, {**common, **row})
    if item.startswith("cc-"):
        conclusion = state.conclusion(item)
        assert conclusion is not None
        row = {
            "kind": conclusion.kind,
            "status": conclusion.status,
            "stale": conclusion.stale,
            "text": stored_text(conclusion.text),
            "cites": _json(conclusion.cites),
            "relies_on": _json(conclusion.relies_on),
            "successor": conclusion.successor,
            "predecessor": conclusion.predecessor,
        }
        return Change(derived.conclusion.name, item, {**common, **row})
    pin = state.pin(item)
    assert pin is not None
    row = {
        "kind": pin.kind,
        "text": stored_text(pin.text),
        "source_seq": pin.seq,
        "live": pin.status == "live",
        "unpin_reason": pin.unpin_reason,
    }
    return Change(derived.pin.name, item, {**common, **row})


def stored_text(text: str) -> str:
    """A text as the derived tables keep it: U+0000, which PostgreSQL cannot store, written
    as the six characters ``\\u0000`` (these tables are listings; the signed entry keeps the
    text exactly, and decisions read the entries). A signed entry holding NUL therefore never
    stops a later step (issue 29 item 6)."""
    return text.replace("\x00", "\\u0000") if "\x00" in text else text


def _changed_row(seq: int, state: LifecycleState, item: str) -> Change:
    if item.startswith("ev-"):
        entry = state.evidence(item)
        assert entry is not None
        values = {"status": entry.status, "successor": entry.successor, "changed_seq": seq}
        return Change(derived.evidence.name, item, values, update=True)
    if item.startswith("cc-"):
        conclusion = state.conclusion(item)
        assert conclusion is not None
        values = {
            "status": conclusion.status,
            "stale": conclusion.stale,
            "successor": conclusion.successor,
            "changed_seq": seq,
        }
        return Change(derived.conclusion.name, item, values, update=True)
    pin = state.pin(item)
    assert pin is not None
    values = {"live": pin.status == "live", "unpin_reason": pin.unpin_reason, "changed_seq": seq}
    return Change(derived.pin.name, item, values, update=True)


def _num(item_id: str) -> int:
    return int(item_id.rsplit("-", 1)[1])


def _json(items: Sequence[str]) -> str:
    return json.dumps(list(items), ensure_ascii=False, separators=(",", ":"))


def _accumulate(rows: DerivedRows, changes: Sequence[Change]) -> None:
    for change in changes:
        table = rows[change.table]
        if change.update:
            table[change.key].update(change.row)
        else:
            table[change.key] = dict(change.row)


# --- reading the entry table ---------------------------------------------------------------


def lifecycle_entries(
    conn: Connection, thread: str, start: int, stop: int, *, batch: int = 500
) -> Iterator[tuple[int, str, object]]:
    """``(seq, kind, body)`` of the lifecycle entries ``start <= seq < stop``, in seq order,
    through the partial index (O(log n + matches) per batch of ``batch`` rows).

    Leaves are parsed, not signature-checked: the entry table is append-only and
    ``verify --db`` is the check of what it holds. LifecycleHistoryError for a leaf that does
    not carry a lifecycle entry at its seq.
    """
    while start < stop:
        params = {"thread": thread, "start": start, "stop": stop, "batch": batch}
        rows = conn.execute(_LIFECYCLE_LEAVES, params).all()
        if not rows:
            return
        for row in rows:
            seq = int(row.seq)
            kind, body = _kind_and_body(thread, seq, row.leaf)
            yield seq, kind, body
        start = int(rows[-1].seq) + 1


def _kind_and_body(thread: str, seq: int, leaf: object) -> tuple[str, object]:
    try:
        envelope = json.loads(bytes(leaf))["entry"]  # type: ignore[call-overload]
        kind, body, stored_seq = envelope["kind"], envelope["body"], envelope["seq"]
    except (TypeError, ValueError, KeyError) as exc:
        raise LifecycleHistoryError(thread, seq, "the stored leaf is not an entry") from exc
    if stored_seq != seq or kind not in KINDS:
        raise LifecycleHistoryError(
            thread, seq, f"the stored leaf is entry {stored_seq!r} of kind {kind!r}"
        )
    return str(kind), body


def catch_up(conn: Connection, fold: ThreadFold, size: int) -> list[Change]:
    """Fold the lifecycle entries from ``fold.size`` up to ``size``; return their changes
    (kept only when ``fold`` keeps rows, else empty). LifecycleHistoryError as
    :meth:`ThreadFold.add_entry`."""
    changes: list[Change] = []
    for seq, kind, body in lifecycle_entries(conn, fold.thread, fold.size, size):
        step = fold.add_entry(seq, kind, body)
        if fold.rows is not None:
            changes.extend(step)
    fold.size = max(fold.size, size)
    return changes


# --- writing and reading the derived tables ------------------------------------------------


def _refuse_nul(row: dict[str, Any]) -> None:
    """TextNulError for a row holding U+0000 in a text: PostgreSQL cannot store it, so it is
    refused on every engine (the transaction rolls back; nothing is written)."""
    for column, value in row.items():
        if isinstance(value, str) and "\x00" in value:
            raise TextNulError(
                f"a text holds the NUL character (U+0000), which is not stored ({column})"
            ).with_hint("remove the NUL characters (\\u0000) from the text")


def write_changes(conn: Connection, thread: str, changes: Sequence[Change]) -> None:
    """Apply ``changes`` in order (consecutive inserts into one table in one executemany).
    Raises TextNulError for a text holding U+0000 (on every engine)."""
    pending: list[dict[str, Any]] = []
    pending_table = ""
    for change in changes:
        _refuse_nul(change.row)
        if pending and (change.update or change.table != pending_table):
            conn.execute(_TABLES[pending_table].insert(), pending)
            pending = []
        if change.update:
            table = _TABLES[change.table]
            key = table.c[KEY_COLUMNS[change.table]]
            statement = table.update().where(table.c.thread == thread, key == change.key)
            conn.execute(statement.values(**change.row))
        else:
            pending_table = change.table
            pending.append(change.row)
    if pending:
        conn.execute(_TABLES[pending_table].insert(), pending)


def insert_rows(conn: Connection, rows: DerivedRows, *, batch: int = 1000) -> None:
    """Insert every row of ``rows`` (the tables must hold none of them yet); TextNulError
    for a text holding U+0000."""
    for name, by_key in rows.items():
        values = list(by_key.values())
        for value in values:
            _refuse_nul(value)
        for start in range(0, len(values), batch):
            conn.execute(_TABLES[name].insert(), values[start : start + batch])


def delete_derived(conn: Connection, thread: str) -> None:
    """Delete ``thread``'s rows from every derived table."""
    for table in DERIVED_TABLES:
        conn.execute(table.delete().where(table.c.thread == thread))


def read_derived(conn: Connection, thread: str) -> DerivedRows:
    """``thread``'s rows of every derived table, as :class:`ThreadFold` keeps them."""
    rows: DerivedRows = {}
    for table in DERIVED_TABLES:
        key = KEY_COLUMNS[table.name]
        found = conn.execute(
            select(table).where(table.c.thread == bindparam("thread")), {"thread": thread}
        )
        rows[table.name] = {row[key]: dict(row) for row in found.mappings()}
    return rows


def rebuild_thread(conn: Connection, thread: str, size: int) -> ThreadFold:
    """Replace ``thread``'s derived rows by the fold of its entries ``0 .. size-1``, in the
    caller's write transaction (which must hold the thread's lock). The fold is computed
    before anything is deleted, so LifecycleHistoryError leaves the tables as they were."""
    fold = ThreadFold(thread, keep_rows=True)
    catch_up(conn, fold, size)
    assert fold.rows is not None
    delete_derived(conn, thread)
    insert_rows(conn, fold.rows)
    return fold
