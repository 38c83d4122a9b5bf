"""Deciding and recording lifecycle requests on the ledger.

Every lifecycle entry is written by one of two functions, each ONE write transaction:

* :func:`record` -- the thread API path: lock the thread head, bring the thread's lifecycle
  state up to the head, ``decide`` the request against it, append the entry
  ``{"request": ..., "outcome": ...}``, apply the event and write the derived rows it implies;
* :func:`append_checked` -- ``Thread.append_many`` given a batch holding lifecycle kinds (for
  instance ``registre append --kind evidence.upsert``): the same, except that the outcome is
  the caller's and must be exactly the rules' decision (:class:`UndecidedOutcomeError`
  otherwise), so no entry the rules would not give ever reaches the ledger.

Because the decision is made after the head is locked and inside the transaction that
appends, two writers (threads or processes) can never both decide against a stale state.

The writer's state comes from :class:`registre.ledger.store.lifecycle_cache.LifecycleCache`
(one per open database): per thread, the fold as of some size, caught up under the lock on the
lifecycle entries appended since, through the partial index ``entry_lifecycle``
(O(log n + new lifecycle entries)). A process's first request on a thread replays the
thread's lifecycle entries from the entry table (the signed record, never the derived tables,
which are unsigned caches).
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, fields, is_dataclass

from sqlalchemy import Connection, select

from registre.attest.entries import LIFECYCLE_KINDS, Entry, validate_body
from registre.errors import RefusedError
from registre.ledger.core.append import AppendItem, append_entries, read_head
from registre.ledger.core.database import Database
from registre.ledger.errors import UnknownThreadError
from registre.ledger.store.engine import read_transaction, write_transaction
from registre.ledger.store.faults import TextNulError
from registre.ledger.store.lifecycle_fold import (
    check_pin_source,
    rebuild_thread,
    write_changes,
)
from registre.ledger.store.schema import tables
from registre.lifecycle import (
    Event,
    LifecycleState,
    PinRequest,
    ReplayMismatchError,
    Request,
    decide,
    event_to_body,
    normalize_request,
    parse_body,
)

__all__ = [
    "RebuildReport",
    "UndecidedOutcomeError",
    "append_checked",
    "current_state",
    "rebuild",
    "record",
]


class UndecidedOutcomeError(RefusedError):
    """An appended lifecycle entry whose outcome is not what the rules decide for its
    request in the thread's current state; nothing was written."""


def record(db: Database, thread: str, request: Request, actor: str) -> tuple[Entry, Event]:
    """Decide ``request`` against ``thread``'s lifecycle state at its head and append the
    entry recording request and outcome; return ``(entry, event)``. A refusal is an outcome
    and is recorded like an acceptance.

    Raises, with nothing written: LifecycleFormatError (malformed request),
    PinSourceRefusedError (a pin of an entry that is not earlier), NoSignerError,
    UnknownThreadError, ForeignThreadError, InvalidActorError, LifecycleHistoryError (the
    stored history does not replay).
    """
    normalized = normalize_request(request)
    signer = db.require_signer()
    with db.lifecycle.using(thread) as slot, write_transaction(db.engine) as conn:
        _origin, frontier = read_head(conn, thread)
        fold = slot.current(conn, frontier.size)
        check_pin_source(normalized, frontier.size)
        refuse_new_nul(conn, thread, normalized)
        event = Event(normalized, decide(fold.state, normalized))
        item = (event.kind, event_to_body(event), actor)
        entry = append_entries(conn, signer, thread, [item])[0]
        slot.dirty = True
        write_changes(conn, thread, fold.add_event(entry.seq, event))
    return entry, event


def append_checked(db: Database, thread: str, items: Sequence[AppendItem]) -> list[Entry]:
    """Append ``items`` (some of lifecycle kinds) in one transaction, after checking that each
    lifecycle item records exactly the rules' decision at its place in the batch.

    Raises, with nothing written: the body errors of
    :func:`registre.attest.entries.bodies.validate_body`,
    UndecidedOutcomeError (an outcome the rules do not give, naming the item),
    PinSourceRefusedError, and whatever :func:`registre.ledger.core.append.append_entries` raises.
    """
    signer = db.require_signer()
    with db.lifecycle.using(thread) as slot, write_transaction(db.engine) as conn:
        _origin, frontier = read_head(conn, thread)
        fold = slot.current(conn, frontier.size)
        slot.dirty = True
        changes = []
        checked = set()
        for offset, (kind, body, _actor) in enumerate(items):
            seq = frontier.size + offset
            if not (isinstance(kind, str) and kind in LIFECYCLE_KINDS):
                continue
            validate_body(kind, body)
            checked.add(offset)
            event = parse_body(kind, body)
            refuse_new_nul(conn, thread, event.request)
            try:
                changes.extend(fold.add_event(seq, event))
            except ReplayMismatchError as exc:
                raise UndecidedOutcomeError(
                    f"item {offset} ({kind}) would be entry {seq}: {exc}"
                ).with_hint(
                    "record lifecycle requests through the thread API or `registre evidence` / "
                    "`registre conclude`, which decide them"
                ) from None
        entries = append_entries(conn, signer, thread, items, checked=checked)
        fold.size = frontier.size + len(entries)
        write_changes(conn, thread, changes)
    return entries


def refuse_new_nul(conn: Connection, thread: str, request: object) -> None:
    """TextNulError for a request bringing U+0000 in a text of its own (as before: a caller
    removes it). A pin whose text is exactly the text of its signed source entry is not new
    text: the record holds it, so it is pinned (the derived tables keep it as ``\\u0000``;
    issue 29 item 6)."""
    if not _holds_nul(request):
        return
    if isinstance(request, PinRequest) and _entry_text(conn, thread, request.seq) == request.text:
        return
    raise TextNulError("a text holds the NUL character (U+0000), which is not stored").with_hint(
        "remove the NUL characters (\\u0000) from the text"
    )


def _holds_nul(value: object) -> bool:
    if isinstance(value, str):
        return "\x00" in value
    if is_dataclass(value) and not isinstance(value, type):
        return any(_holds_nul(getattr(value, f.name)) for f in fields(value))
    if isinstance(value, tuple | list):
        return any(_holds_nul(item) for item in value)
    return False


def _entry_text(conn: Connection, thread: str, seq: int) -> object:
    leaf = conn.execute(
        select(tables.entry.c.leaf).where(
            tables.entry.c.thread == thread, tables.entry.c.seq == seq
        )
    ).scalar()
    if not isinstance(leaf, bytes | memoryview):
        return None
    try:
        return json.loads(bytes(leaf))["entry"]["body"].get("text")
    except (TypeError, ValueError, KeyError, AttributeError):
        return None


def current_state(db: Database, thread: str) -> LifecycleState:
    """A copy of ``thread``'s lifecycle state at its head (O(size of the state)); the cache
    is caught up on the way. UnknownThreadError if there is no such thread."""
    head = select(tables.thread.c.size).where(tables.thread.c.id == thread)
    with (
        db.lifecycle.using(thread) as slot,
        read_transaction(db.engine, snapshot=True) as conn,
    ):
        size = conn.execute(head).scalar()
        if size is None:
            raise UnknownThreadError(f"no thread {thread!r}")
        return slot.current(conn, int(size)).state.copy()


@dataclass(frozen=True)
class RebuildReport:
    """What :func:`rebuild` did for one thread: ``events`` lifecycle entries folded over a
    thread of ``size`` entries."""

    thread: str
    size: int
    events: int


def rebuild(db: Database, thread: str | None = None) -> list[RebuildReport]:
    """Drop and rebuild the derived lifecycle tables of ``thread`` (default: every thread)
    from the entries, one write transaction per thread under its lock.

    Raises UnknownThreadError; LifecycleHistoryError for a thread whose lifecycle history does
    not replay (that thread's tables are left as they were).
    """
    ids = db.thread_ids() if thread is None else [thread]
    reports = []
    for thread_id in ids:
        with write_transaction(db.engine) as conn:
            _origin, frontier = read_head(conn, thread_id)
            fold = rebuild_thread(conn, thread_id, frontier.size)
        reports.append(RebuildReport(thread_id, frontier.size, fold.events))
    return reports
