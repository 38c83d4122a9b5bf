"""Group commit: concurrent appenders of one process share a transaction, so they share its fsync.

A SQLite database has one writer at a time, and each durable commit costs an fsync. When
several threads of one process append at once, :class:`GroupCommit` (one per database file
and operator key in the process, shared by every open
:class:`~registre.ledger.core.database.Database` on it: below) queues their requests the way
database engines do (leader and followers):

1. a caller validates its items (actor, kind, body schema: :func:`prevalidate`) *before*
   queueing, so one caller's bad input never reaches the shared transaction;
2. it queues its request; if no leader is running, it becomes the leader, takes the queued
   requests (the oldest :data:`MAX_GROUP`, its own among them unless it is still queued
   behind those: then it leads again) and writes them in ONE write
   transaction (:func:`append_group`: the requests for one thread are signed in queue order
   as one run of consecutive entries), committed once; while it does, new callers queue up
   for the next leader;
3. every caller returns only after the transaction holding its entries committed (so its
   entries are durable: ``synchronous=FULL``), with its own entries or its own error.

If the group transaction fails, its members are retried one by one, each in its own
transaction, so each gets the result or the error it would have had alone (a thread that
does not exist, another key, a database behind its published checkpoint...). A lock held by
another process past the lock timeout is the same for every member: each gets its own copy of
that DatabaseLockedError rather than waiting once more. A caller that queued while a leader
was waiting for such a lock waits for that leader, then leads and waits for the lock itself:
up to twice the lock timeout in the worst case.

Every guarantee of :func:`registre.ledger.core.append.append_entries` holds as before: it is
what the group transaction runs, under the same write lock (gap-free sequence numbers, the
lifecycle chain head, the thread's key binding, the published-checkpoint rollback check).
Across processes SQLite still admits one writer at a time; the queue is within one process.

One queue per database *file* and operator key, not per open
:class:`~registre.ledger.core.database.Database`: writers of one process that each opened the
ledger themselves (their own engine and connections) share it too (:func:`queue_for`). The
file is the one SQLite itself opened (``PRAGMA database_list``), so two spellings of one path
share a queue and one spelling of two files (a relative path, another working folder) does
not; in-memory databases (one per engine) never share. A leader writes its group through its
own engine, and a member retried alone goes through its own: the same file either way.
"""

from __future__ import annotations

import copy
import os
import sys
import threading
import time
import weakref
from collections.abc import Sequence
from dataclasses import dataclass, field

from sqlalchemy import Connection, Engine
from sqlalchemy.exc import SQLAlchemyError

from registre.attest.entries import Entry, EntryFormatError, check_actor_name, validate_body
from registre.attest.notes import Signer
from registre.ledger.core.append import AppendItem, append_entries
from registre.ledger.core.database import Database
from registre.ledger.store.engine import write_transaction
from registre.ledger.store.faults import DatabaseLockedError

__all__ = [
    "MAX_GATHER_S",
    "MAX_GROUP",
    "GroupCommit",
    "append_group",
    "prevalidate",
    "queue_for",
]

MAX_GROUP = 256
"""At most this many requests share one transaction (the rest wait for the next leader)."""

MAX_GATHER_S = 0.002
"""The longest a new leader waits for the writers it expects to queue again (seconds)."""


_QUEUES: weakref.WeakKeyDictionary[Database, GroupCommit] = weakref.WeakKeyDictionary()
_SHARED: weakref.WeakValueDictionary[tuple[int, str, str, str], GroupCommit] = (
    weakref.WeakValueDictionary()
)
_QUEUES_LOCK = threading.Lock()


def queue_for(db: Database) -> GroupCommit | None:
    """The append queue of ``db`` (made on first use): SQLite only -- one writer at a time,
    so sharing its fsyncs pays; None on PostgreSQL, whose writers to different threads
    commit side by side, each holding only its thread's row lock. Databases of this process
    open on the same file with the same operator key get the same queue (module docstring);
    it lives while one of them does. NoSignerError without the operator key."""
    if db.engine.dialect.name != "sqlite":
        return None
    signer = db.require_signer()
    with _QUEUES_LOCK:
        queue = _QUEUES.get(db)
        if queue is not None:
            return queue
    key = _file_key(db.engine, signer)  # a read, outside the lock
    with _QUEUES_LOCK:
        queue = _QUEUES.get(db)
        if queue is None:
            queue = None if key is None else _SHARED.get(key)
            if queue is None:
                queue = GroupCommit(db.engine, signer)
                if key is not None:
                    _SHARED[key] = queue
            _QUEUES[db] = queue
        return queue


def _file_key(engine: Engine, signer: Signer) -> tuple[int, str, str, str] | None:
    """``(process, file, options, operator key)`` naming the queue ``engine``'s appends may
    share with other engines: this process's id (a child forked while a parent's thread led
    a group must not wait for a leader it does not have), the main file SQLite opened (None
    for an in-memory database, or when it cannot be read: then the queue is the engine's
    own), the URL's query (a read-only open shares only with read-only opens) and the key's
    vkey."""
    try:
        with engine.connect() as conn:
            rows = conn.exec_driver_sql("PRAGMA database_list").all()
            conn.rollback()
    except SQLAlchemyError:
        return None
    files = [str(row[2]) for row in rows if row[1] == "main" and row[2]]
    if not files:
        return None
    options = "&".join(f"{k}={v}" for k, v in sorted(engine.url.query.items()))
    return os.getpid(), files[0], options, signer.vkey()


def prevalidate(items: Sequence[AppendItem]) -> None:
    """Raise what :func:`registre.attest.entries.entry.sign_entry` would raise for the first bad
    item
    of ``items`` (InvalidActorError, UnknownKindError, BodySchemaError, EntryFormatError for a
    body that is not an object), before anything is queued or written. Items that pass need
    no schema check when signed."""
    actors: set[str] = set()
    for kind, body, actor in items:
        if type(actor) is not str or actor not in actors:
            check_actor_name(actor)
            actors.add(actor)
        validate_body(kind, body)
        if not isinstance(body, dict):
            raise EntryFormatError(f"body must be a JSON object, got {type(body).__name__}")


def append_group(
    conn: Connection, signer: Signer, requests: Sequence[tuple[str, Sequence[AppendItem]]]
) -> list[list[Entry]]:
    """Append every request ``(thread, items)`` in the caller's write transaction; return
    each request's entries. Requests for one thread are appended in their order as one run
    (one head read, one batch of inserts); the items must have passed :func:`prevalidate`.
    Raises whatever :func:`append_entries` raises, for the first thread that refuses."""
    by_thread: dict[str, list[int]] = {}
    for index, (thread, _items) in enumerate(requests):
        by_thread.setdefault(thread, []).append(index)
    results: list[list[Entry]] = [[] for _ in requests]
    for thread, indexes in by_thread.items():
        run: list[AppendItem] = []
        for index in indexes:
            run.extend(requests[index][1])
        entries = append_entries(conn, signer, thread, run, checked=range(len(run)))
        start = 0
        for index in indexes:
            stop = start + len(requests[index][1])
            results[index] = entries[start:stop]
            start = stop
    return results


def _held_lock() -> threading.Lock:
    lock = threading.Lock()
    lock.acquire()
    return lock


@dataclass(eq=False)
class _Request:
    thread: str
    items: Sequence[AppendItem]
    caller: int
    engine: Engine | None = None
    """The caller's engine (None: the queue's): the leader writes through its own, a member
    retried alone through its own."""
    done: bool = False
    entries: list[Entry] = field(default_factory=list)
    error: BaseException | None = None
    worker: threading.Thread | None = None
    """The calling thread (None: a request made by hand, counted by ``caller``)."""
    leads: bool = False
    """Set (under the queue's lock) when this request's caller is, or is made, the leader."""
    wake: threading.Lock = field(default_factory=_held_lock)
    """Held until the caller may go on: released once, when its request is done or when it
    is handed the lead."""


class GroupCommit:
    """The append queue of one database file and key (module docstring). Thread-safe.
    ``engine`` and ``signer``: those of the database that made it, used for requests that
    bring no engine of their own (the signer signs every group: the key is the queue's).

    Waking: a follower waits on its own request's lock, released once by the leader (its
    request done, or the lead handed to it: the leader passes the lead to the oldest queued
    request rather than waking every waiter to contend for it); a gathering leader is woken
    only by new requests. Each caller is thus woken once per append, whatever the number of
    writers."""

    def __init__(self, engine: Engine, signer: Signer) -> None:
        self._engine = engine
        self._signer = signer
        self._lock = threading.Lock()
        self._queued = threading.Condition(self._lock)
        self._queue: list[_Request] = []
        self._leading = False
        self._writers: tuple[frozenset[object], frozenset[object]] = (frozenset(), frozenset())
        self._commit_s = 0.0
        self.groups = 0
        """Transactions committed by leaders (a statistic, for tests and benchmarks)."""

    def append(
        self, thread: str, items: Sequence[AppendItem], engine: Engine | None = None
    ) -> list[Entry]:
        """Append ``items`` (already :func:`prevalidate`-d) to ``thread`` through the queue;
        return their entries once durable, or raise this request's own error. ``engine``:
        the caller's own, on the queue's file (default: the queue's)."""
        request = _Request(
            thread, items, threading.get_ident(), engine, worker=threading.current_thread()
        )
        with self._lock:
            self._queue.append(request)
            if self._leading:
                self._queued.notify()
            else:
                self._leading = request.leads = True
        if not request.leads:
            self._await(request)
        while not request.done:
            self._lead_once(request)
        if request.error is not None:
            raise request.error
        return request.entries

    def _await(self, request: _Request) -> None:
        """Wait until ``request`` is done or its caller leads. Interrupted (a signal in the
        main thread), the request leaves the queue if no leader took it yet, and a lead it
        was handed goes on to the next request: nobody waits for a caller that is gone."""
        try:
            request.wake.acquire()
        except BaseException:
            with self._lock:
                if request in self._queue:
                    self._queue.remove(request)
                if request.leads and not request.done:
                    self._pass_lead()
            raise

    def _pass_lead(self) -> None:
        """Called holding the lock by a leader that is done: the oldest queued request's
        caller leads next (woken), or nobody leads until a caller comes."""
        if self._queue:
            successor = self._queue[0]
            successor.leads = True
            successor.wake.release()
        else:
            self._leading = False

    def _lead_once(self, request: _Request) -> None:
        """As the leader (``request``'s caller): gather, write one group, wake its members,
        and hand the lead on once ``request`` is done (else lead again: it was queued behind
        a full group)."""
        with self._lock:
            self._gather()
            group, self._queue = self._queue[:MAX_GROUP], self._queue[MAX_GROUP:]
            recent = frozenset(member.worker or member.caller for member in group)
            self._writers = (self._writers[1], recent)
        started = time.monotonic()
        try:
            self._lead(group, request.engine)
            self._commit_s = time.monotonic() - started
        finally:
            with self._lock:
                for member in group:
                    member.done = True
                if not request.done and sys.exc_info()[0] is not None:
                    self._queue.remove(request)  # interrupted: this caller is leaving
                if request.done or sys.exc_info()[0] is not None:
                    self._pass_lead()
            for member in group:
                if member is not request:
                    member.wake.release()

    def _gather(self) -> None:
        """Called by a new leader holding the lock: wait a little for the writers of the
        last two groups to queue again (those just released are still returning), at most a
        quarter of the last commit's duration and :data:`MAX_GATHER_S`, so an fsync is shared
        by everyone who is appending, and a lone writer never waits. A writer whose thread
        has ended is not waited for (a burst of writers ends one by one)."""
        expected = sum(
            1
            for writer in self._writers[0] | self._writers[1]
            if not isinstance(writer, threading.Thread) or writer.is_alive()
        )
        if len(self._queue) >= expected:
            return
        deadline = time.monotonic() + min(MAX_GATHER_S, self._commit_s / 4)
        while len(self._queue) < expected:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return
            self._queued.wait(remaining)

    def _lead(self, group: list[_Request], engine: Engine | None = None) -> None:
        """Write ``group`` in one transaction through ``engine`` (default: the queue's)."""
        try:
            with write_transaction(engine or self._engine) as conn:
                results = append_group(conn, self._signer, [(m.thread, m.items) for m in group])
            self.groups += 1
        except DatabaseLockedError as exc:
            for member in group:
                member.error = copy.copy(exc)
            return
        except Exception as exc:
            if len(group) == 1:
                group[0].error = exc
                return
            self._one_by_one(group)
            return
        except BaseException as exc:  # an interrupt in the leader: nobody's entry was written
            for member in group:
                member.error = exc
            raise
        for member, entries in zip(group, results, strict=True):
            member.entries = entries

    def _one_by_one(self, group: list[_Request]) -> None:
        for member in group:
            try:
                with write_transaction(member.engine or self._engine) as conn:
                    request = [(member.thread, member.items)]
                    member.entries = append_group(conn, self._signer, request)[0]
                self.groups += 1
            except Exception as exc:
                member.error = exc
