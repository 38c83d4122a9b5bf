"""Deciding and recording lifecycle requests on the ledger, and the writer's state cache.

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

**The cache.** Replaying a thread's lifecycle history for every request would cost O(history).
Each :class:`~registre.ledger.ledger.Ledger` keeps a :class:`LifecycleCache`: per thread, the fold
(:class:`registre.ledger.store.lifecycle_fold.ThreadFold`) as of some size. Under the lock it
catches up on the lifecycle entries appended since that size, found through the partial index
``entry_lifecycle``
(O(log n + new lifecycle entries), however many other entries were appended). A process's
first request on a thread starts cold: it replays the thread's lifecycle entries from the
entry table (the signed record, never the derived tables, which are unsigned caches). A
transaction that fails after the fold moved drops the cached fold, so the next request
replays; nothing half-applied is ever kept.

Within one process the slot's lock is taken before the database lock, always in that order.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import TYPE_CHECKING

from sqlalchemy import Connection, select

from registre.attest.bodies import LIFECYCLE_KINDS, validate_body
from registre.attest.entry import Entry
from registre.attest.errors import RefusedError
from registre.ledger.core.append import AppendItem, append_entries, read_head
from registre.ledger.errors import UnknownThreadError
from registre.ledger.store.engine import read_transaction, write_transaction
from registre.ledger.store.lifecycle_fold import (
    ThreadFold,
    catch_up,
    check_pin_source,
    rebuild_thread,
    write_changes,
)
from registre.ledger.store.schema import tables
from registre.lifecycle import (
    Event,
    LifecycleState,
    ReplayMismatchError,
    Request,
    decide,
    event_to_body,
    normalize_request,
    parse_body,
)

if TYPE_CHECKING:
    from registre.ledger.ledger import Ledger

__all__ = [
    "LifecycleCache",
    "RebuildReport",
    "UndecidedOutcomeError",
    "append_checked",
    "current_state",
    "is_lifecycle_batch",
    "rebuild",
    "record",
]


class UndecidedOutcomeError(RefusedError):
    """An appended lifecycle entry whose outcome is not what the rules decide for its
    request in the thread's current state; nothing was written."""


class _Slot:
    """One thread's cached fold; ``lock`` serialises its users within the process.
    ``dirty`` is set while the fold holds events of a transaction not yet committed."""

    def __init__(self, thread: str) -> None:
        self.thread = thread
        self.lock = threading.Lock()
        self.fold: ThreadFold | None = None
        self.dirty = False

    def current(self, conn: Connection, size: int) -> ThreadFold:
        """The fold as of ``size`` entries, caught up (or replayed cold) through ``conn``."""
        fold = self.fold
        if fold is None or fold.size > size:  # cold, or a database that went backwards
            fold = ThreadFold(self.thread)
        self.fold = None  # dropped unless the catch-up completes
        catch_up(conn, fold, size)
        self.fold = fold
        return fold


class LifecycleCache:
    """Per-thread lifecycle folds of one :class:`~registre.ledger.ledger.Ledger` handle."""

    def __init__(self) -> None:
        self._slots: dict[str, _Slot] = {}
        self._guard = threading.Lock()

    @contextmanager
    def using(self, thread: str) -> Iterator[_Slot]:
        """Hold ``thread``'s slot. If the block raises while the slot is dirty, the fold is
        dropped (the next user replays from the entries)."""
        with self._guard:
            slot = self._slots.setdefault(thread, _Slot(thread))
        with slot.lock:
            try:
                yield slot
            except BaseException:
                if slot.dirty:
                    slot.fold = None
                raise
            finally:
                slot.dirty = False

    def forget(self, thread: str | None = None) -> None:
        """Drop the cached fold of ``thread`` (default: every thread)."""
        with self._guard:
            slots = list(self._slots.values()) if thread is None else [self._slots.get(thread)]
        for slot in slots:
            if slot is not None:
                with slot.lock:
                    slot.fold = None


def is_lifecycle_batch(items: Sequence[AppendItem]) -> bool:
    """Whether any item of an append batch has a lifecycle kind."""
    return any(
        isinstance(item, tuple) and item and isinstance(item[0], str) and item[0] in LIFECYCLE_KINDS
        for item in items
    )


def record(ledger: Ledger, thread: str, request: Request, actor: str) -> tuple[Entry, Event]:
    """Decide ``request`` against ``thread``'s lifecycle state at its head and append the
    entry recording request and outcome; return ``(entry, event)``. A refusal is an outcome
    and is recorded like an acceptance.

    Raises, with nothing written: LifecycleFormatError (malformed request),
    PinSourceRefusedError (a pin of an entry that is not earlier), NoSignerError,
    UnknownThreadError, ForeignThreadError, InvalidActorError, LifecycleHistoryError (the
    stored history does not replay).
    """
    normalized = normalize_request(request)
    signer = ledger.require_signer()
    with ledger.lifecycle.using(thread) as slot, write_transaction(ledger.engine) as conn:
        _origin, frontier = read_head(conn, thread)
        fold = slot.current(conn, frontier.size)
        check_pin_source(normalized, frontier.size)
        event = Event(normalized, decide(fold.state, normalized))
        item = (event.kind, event_to_body(event), actor)
        entry = append_entries(conn, signer, thread, [item])[0]
        slot.dirty = True
        write_changes(conn, thread, fold.add_event(entry.seq, event))
    return entry, event


def append_checked(ledger: Ledger, thread: str, items: Sequence[AppendItem]) -> list[Entry]:
    """Append ``items`` (some of lifecycle kinds) in one transaction, after checking that each
    lifecycle item records exactly the rules' decision at its place in the batch.

    Raises, with nothing written: the body errors of :func:`registre.attest.bodies.validate_body`,
    UndecidedOutcomeError (an outcome the rules do not give, naming the item),
    PinSourceRefusedError, and whatever :func:`registre.ledger.core.append.append_entries` raises.
    """
    signer = ledger.require_signer()
    with ledger.lifecycle.using(thread) as slot, write_transaction(ledger.engine) as conn:
        _origin, frontier = read_head(conn, thread)
        fold = slot.current(conn, frontier.size)
        slot.dirty = True
        changes = []
        for offset, (kind, body, _actor) in enumerate(items):
            seq = frontier.size + offset
            if not (isinstance(kind, str) and kind in LIFECYCLE_KINDS):
                continue
            validate_body(kind, body)
            event = parse_body(kind, body)
            try:
                changes.extend(fold.add_event(seq, event))
            except ReplayMismatchError as exc:
                raise UndecidedOutcomeError(
                    f"item {offset} ({kind}) would be entry {seq}: {exc}; record lifecycle "
                    "requests through the thread API or `registre evidence`/`registre "
                    "conclude`, which decide them"
                ) from None
        entries = append_entries(conn, signer, thread, items)
        fold.size = frontier.size + len(entries)
        write_changes(conn, thread, changes)
    return entries


def current_state(ledger: Ledger, thread: str) -> LifecycleState:
    """A copy of ``thread``'s lifecycle state at its head (O(size of the state)); the cache
    is caught up on the way. UnknownThreadError if there is no such thread."""
    head = select(tables.thread.c.size).where(tables.thread.c.id == thread)
    with (
        ledger.lifecycle.using(thread) as slot,
        read_transaction(ledger.engine, snapshot=True) as conn,
    ):
        size = conn.execute(head).scalar()
        if size is None:
            raise UnknownThreadError(
                f"no thread {thread!r}; list threads with `registre thread list`"
            )
        return slot.current(conn, int(size)).state.copy()


@dataclass(frozen=True)
class RebuildReport:
    """What :func:`rebuild` did for one thread: ``events`` lifecycle entries folded over a
    thread of ``size`` entries."""

    thread: str
    size: int
    events: int


def rebuild(ledger: Ledger, thread: str | None = None) -> list[RebuildReport]:
    """Drop and rebuild the derived lifecycle tables of ``thread`` (default: every thread)
    from the entries, one write transaction per thread under its lock.

    Raises UnknownThreadError; LifecycleHistoryError for a thread whose lifecycle history does
    not replay (that thread's tables are left as they were).
    """
    if thread is None:
        with read_transaction(ledger.engine) as conn:
            ids = [
                str(i)
                for i in conn.execute(
                    select(tables.thread.c.id).order_by(tables.thread.c.id)
                ).scalars()
            ]
    else:
        ids = [thread]
    reports = []
    for thread_id in ids:
        with write_transaction(ledger.engine) as conn:
            _origin, frontier = read_head(conn, thread_id)
            fold = rebuild_thread(conn, thread_id, frontier.size)
        reports.append(RebuildReport(thread_id, frontier.size, fold.events))
    return reports
