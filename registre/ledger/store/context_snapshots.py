"""The derived ``context_snapshot`` table (schema version 4): the working-context fold of a
thread as it stood after each of its compactions, and folding a thread's context from it.

Why at compactions only. A compaction is where the context fold changes shape (a range leaves
the tail, summaries are replaced, the header is refreshed); between two compactions the fold
only appends entries to its tail. So a snapshot taken right after a compaction, plus the
entries after it, is all a fold needs -- and a projection shows that tail anyway. Appending any
other entry writes nothing here (an append stays as cheap as before); a ``context.compaction``
writes its snapshot in the same transaction as the entry (:mod:`registre.ledger.context.store`).

:func:`fold_context` rebuilds the fold at any ``at``: the latest snapshot at or before ``at``,
restored with the entries from its boundary (:func:`registre.context.restore_state`),
then the entries up to ``at`` folded on. It reads O(snapshot + tail + entries since the
compaction): in proportion to the context, never to the history behind the summaries.

**The stored form** is :func:`registre.context.state_snapshot` with one difference: the
pin table keeps only the pins that are live, or that were made by an entry of the tail
(``entry seq >= boundary``). The pins left out are unpinned and folded away; no projection
shows them and no rule reads their text -- only that they exist, so that a later unpin of one
is decided ``inactive_pin`` rather than ``unknown_pin``. Pin ids are ``pin-1 .. pin-(next-1)``
with no gap, so their existence is implied by ``next_pin``: the context fold puts back the one
left-out pin an unpin names, as an unpinned placeholder, when it folds that unpin onto a
restored state (:func:`registre.lifecycle.pins.with_left_out_pin`), whether just after
restoring or later (the process's cached fold, a caller's copy). A snapshot therefore costs
O(live pins + tail pins + live summaries + stubs), however many pins the thread ever made.

Like every derived table it is a cache: rows can be deleted and rebuilt from the entries
(:func:`rebuild_thread_context`, ``registre rebuild``), and ``registre verify --db`` folds the
entries itself and compares every row. Leaves are parsed here, not signature-checked (as for
the lifecycle cache): the entry table is append-only and ``verify --db`` checks it.

**Seals** (schema version 5). A cache that the next model call is built from must not be
trusted because it is in the database: a snapshot edited through SQL (a pin's text turned into
an instruction) would otherwise be folded into a projection that registre then signs. Each row
carries ``seal``, the thread key's Ed25519 signature of :func:`seal_message` (origin, seq,
boundary, the leaf hash of the compaction entry and the SHA-256 of the snapshot text, under a
domain prefix that no entry, note or checkpoint starts with; seals of version 1, without the
origin and leaf hash, are no longer trusted). :func:`fold_context` uses a snapshot only if its
seal verifies under the key it is given (the writer's own key when it signs; the thread's
bound key for reads);
any other row -- edited, forged, unsealed (written by an older registre, or rebuilt without
the key) -- is ignored and the fold is rebuilt from the entries: slower, never wrong.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from typing import Any, Final

from sqlalchemy import BigInteger, Connection, Table, bindparam, select
from sqlmodel import Field

from registre.attest.notes import Signer, Verifier
from registre.context import (
    CompactionVerificationError,
    ContextEntry,
    ContextState,
    restore_state,
    state_snapshot,
)
from registre.context.fold import REFILL_WINDOW
from registre.errors import RegistreError
from registre.kinds import CONTEXT_COMPACTION, TURN
from registre.ledger.errors import StoreCorruptError, rebuild_hint
from registre.ledger.store.context_cache import CATCH_UP, fold_cache
from registre.ledger.store.schema import LedgerModel, entry_range, tables
from registre.lifecycle import LifecycleFormatError, ReplayMismatchError
from registre.lifecycle.model import LIVE

__all__ = [
    "CONTEXT_SNAPSHOT",
    "SEAL_DOMAIN",
    "ContextHistoryError",
    "ContextSnapshotRow",
    "bound_key",
    "context_entries",
    "delete_snapshots",
    "entry_leaf_hash",
    "fold_context",
    "fold_from_snapshot",
    "fold_on",
    "insert_snapshots",
    "rebuild_thread_context",
    "seal_message",
    "seal_row",
    "seal_verifies",
    "snapshot_json",
    "snapshot_row",
    "stored_seal",
    "stored_snapshot",
    "stored_snapshots",
    "turn_entries",
]


class ContextSnapshotRow(LedgerModel, table=True):
    __tablename__ = "context_snapshot"

    thread: str = Field(primary_key=True, foreign_key="thread.id")
    seq: int = Field(primary_key=True, sa_type=BigInteger)  # the context.compaction entry
    boundary: int = Field(sa_type=BigInteger)  # first seq of the tail after it
    snapshot: str  # compact JSON: the stored form (module docstring)
    # version 5: base64 Ed25519 signature by the thread's key (ledger.store.snapshot_seal)
    seal: str | None = Field(default=None, nullable=True)


CONTEXT_SNAPSHOT: Final[Table] = ContextSnapshotRow.__table__  # type: ignore[attr-defined]

_entry = tables.entry
_LEAVES = entry_range(_entry.c.seq, _entry.c.leaf).limit(bindparam("batch"))
_TURN_LEAVES = (
    entry_range(_entry.c.seq, _entry.c.leaf).where(_entry.c.kind == TURN).limit(bindparam("batch"))
)
_LATEST = (
    select(
        CONTEXT_SNAPSHOT.c.seq,
        CONTEXT_SNAPSHOT.c.boundary,
        CONTEXT_SNAPSHOT.c.snapshot,
        CONTEXT_SNAPSHOT.c.seal,
    )
    .where(
        CONTEXT_SNAPSHOT.c.thread == bindparam("thread"),
        CONTEXT_SNAPSHOT.c.seq <= bindparam("at"),
    )
    .order_by(CONTEXT_SNAPSHOT.c.seq.desc())
    .limit(1)
)
_ONE = select(
    CONTEXT_SNAPSHOT.c.boundary, CONTEXT_SNAPSHOT.c.snapshot, CONTEXT_SNAPSHOT.c.seal
).where(
    CONTEXT_SNAPSHOT.c.thread == bindparam("thread"), CONTEXT_SNAPSHOT.c.seq == bindparam("seq")
)
_ALL = (
    select(CONTEXT_SNAPSHOT.c.seq, CONTEXT_SNAPSHOT.c.boundary, CONTEXT_SNAPSHOT.c.snapshot)
    .where(
        CONTEXT_SNAPSHOT.c.thread == bindparam("thread"),
        CONTEXT_SNAPSHOT.c.seq >= bindparam("start"),
    )
    .order_by(CONTEXT_SNAPSHOT.c.seq)
    .limit(bindparam("batch"))
)
_BOUND_KEY = select(tables.thread.c.vkey).where(tables.thread.c.id == bindparam("thread"))
SEAL_DOMAIN: Final = b"\x00registre/context-snapshot-seal/v2\n"
_LEAF_HASH = select(tables.entry.c.leaf_hash).where(
    tables.entry.c.thread == bindparam("thread"), tables.entry.c.seq == bindparam("seq")
)


class ContextHistoryError(StoreCorruptError):
    """A stored entry the context fold cannot take: a leaf that is not an entry, a
    compaction whose range or stubs cannot be applied, a pin or unpin whose recorded outcome
    the rules do not give. ``thread`` and ``seq`` name it; the cause is chained."""

    def __init__(self, thread: str, seq: int, problem: str) -> None:
        self.thread = thread
        self.seq = seq
        self.problem = problem
        super().__init__(
            f"thread {thread} seq {seq}: {problem}; the stored history does not fold into a "
            "working context"
        )


# --- the stored form ----------------------------------------------------------------------


def snapshot_json(state: ContextState) -> dict[str, Any]:
    """The stored form of ``state`` (module docstring): its snapshot with the pins that are
    neither live nor made in the tail left out."""
    snapshot = state_snapshot(state)
    boundary = state.boundary
    snapshot["pins"] = [
        row
        for row in _rows(snapshot["pins"])
        if row[4] == LIVE or (isinstance(row[6], int) and row[6] >= boundary)
    ]
    return snapshot


def _rows(value: object) -> list[list[Any]]:
    return [row for row in value if isinstance(row, list)] if isinstance(value, list) else []


def _encode(snapshot: Mapping[str, Any]) -> str:
    return json.dumps(snapshot, ensure_ascii=False, separators=(",", ":"))


# --- seals ------------------------------------------------------------------------------------


def seal_message(origin: str, seq: int, boundary: int, leaf_hash: bytes, snapshot: str) -> bytes:
    """What a snapshot's seal signs: :data:`SEAL_DOMAIN` (a NUL first byte: no entry, note or
    checkpoint starts so), then the thread's ``origin`` (``LOGNAME/THREAD``), ``seq``,
    ``boundary``, the hex leaf hash of the compaction entry at ``seq`` and the hex SHA-256 of
    the snapshot text, one per line. The leaf hash binds the seal to the one history whose
    entry it folds up to: a seal copied from another ledger with the same key and thread id
    (version 1 signed the thread id alone) does not verify (issue 29 item 2)."""
    digest = hashlib.sha256(snapshot.encode("utf-8")).hexdigest()
    return SEAL_DOMAIN + f"{origin}\n{seq}\n{boundary}\n{leaf_hash.hex()}\n{digest}\n".encode()


def seal_row(row: dict[str, Any], signer: Signer, leaf_hash: bytes) -> None:
    """Seal a row of :func:`snapshot_row` with ``signer`` (the thread's key), ``leaf_hash``
    being the leaf hash of its compaction entry (known once that entry is signed)."""
    origin = f"{signer.name}/{row['thread']}"
    message = seal_message(origin, row["seq"], row["boundary"], leaf_hash, row["snapshot"])
    row["seal"] = base64.b64encode(signer.sign(message)).decode("ascii")


def entry_leaf_hash(conn: Connection, thread: str, seq: int) -> bytes | None:
    """The stored leaf hash of entry ``seq`` (None if there is none, or not 32 bytes)."""
    found = conn.execute(_LEAF_HASH, {"thread": thread, "seq": seq}).scalar()
    if not isinstance(found, bytes | memoryview) or len(found) != 32:
        return None
    return bytes(found)


def seal_verifies(
    conn: Connection,
    key: Verifier,
    thread: str,
    seq: int,
    boundary: object,
    snapshot: object,
    seal: object,
) -> bool:
    """Whether ``seal`` is ``key``'s seal of the row (thread, seq, boundary, snapshot), for
    the origin ``key`` names and the compaction entry stored at ``seq``. Values of the wrong
    type (a hostile row) do not verify."""
    if type(boundary) is not int or not isinstance(snapshot, str) or not isinstance(seal, str):
        return False
    leaf_hash = entry_leaf_hash(conn, thread, seq)
    if leaf_hash is None:
        return False
    try:
        signature = base64.b64decode(seal.encode("ascii"), validate=True)
        message = seal_message(f"{key.name}/{thread}", seq, boundary, leaf_hash, snapshot)
        key.verify(message, signature)
    except (UnicodeEncodeError, binascii.Error, RegistreError):
        return False
    return True


def bound_key(conn: Connection, thread: str) -> Verifier | None:
    """The key ``thread`` is bound to (``thread.vkey``), or None if unbound or unreadable."""
    vkey = conn.execute(_BOUND_KEY, {"thread": thread}).scalar()
    if not isinstance(vkey, str):
        return None
    try:
        return Verifier.from_vkey(vkey)
    except RegistreError:
        return None


# --- rows -------------------------------------------------------------------------------------


def snapshot_row(thread: str, seq: int, state: ContextState) -> dict[str, Any]:
    """The row storing ``state``, the fold just after the compaction at ``seq``, unsealed
    (:func:`seal_row` seals it once the compaction's leaf hash is known); an unsealed row is
    never trusted."""
    return {
        "thread": thread,
        "seq": seq,
        "boundary": state.boundary,
        "snapshot": _encode(snapshot_json(state)),
        "seal": None,
    }


def insert_snapshots(conn: Connection, rows: Sequence[Mapping[str, Any]]) -> None:
    """Insert snapshot rows (from :func:`snapshot_row`), 500 per statement."""
    for start in range(0, len(rows), 500):
        conn.execute(CONTEXT_SNAPSHOT.insert(), list(rows[start : start + 500]))


def stored_snapshot(conn: Connection, thread: str, seq: int) -> dict[str, Any] | None:
    """The stored snapshot at ``seq`` as JSON data, or None if there is no row."""
    row = conn.execute(_ONE, {"thread": thread, "seq": seq}).one_or_none()
    return None if row is None else _decode(thread, seq, row.snapshot)


def stored_seal(conn: Connection, thread: str, seq: int) -> tuple[object, object, object] | None:
    """The raw ``(boundary, snapshot, seal)`` of the row at ``seq``, or None: what
    :func:`seal_verifies` takes."""
    row = conn.execute(_ONE, {"thread": thread, "seq": seq}).one_or_none()
    return None if row is None else (row.boundary, row.snapshot, row.seal)


def stored_snapshots(
    conn: Connection, thread: str, *, batch: int = 200
) -> Iterator[tuple[int, int, dict[str, Any]]]:
    """Every stored ``(seq, boundary, snapshot)`` of ``thread``, in seq order."""
    start = 0
    while True:
        rows = conn.execute(_ALL, {"thread": thread, "start": start, "batch": batch}).all()
        for row in rows:
            yield int(row.seq), int(row.boundary), _decode(thread, int(row.seq), row.snapshot)
        if len(rows) < batch:
            return
        start = int(rows[-1].seq) + 1


def delete_snapshots(conn: Connection, thread: str) -> None:
    """Delete every snapshot row of ``thread``."""
    conn.execute(CONTEXT_SNAPSHOT.delete().where(CONTEXT_SNAPSHOT.c.thread == thread))


def _decode(thread: str, seq: int, text: object) -> dict[str, Any]:
    try:
        data = json.loads(str(text))
    except ValueError:
        data = None
    if not isinstance(data, dict):
        raise StoreCorruptError(
            f"thread {thread}: the context snapshot at seq {seq} is not a JSON object"
        ).with_hint(rebuild_hint(thread))
    return data


# --- reading entries ------------------------------------------------------------------------


def context_entries(
    conn: Connection, thread: str, start: int, stop: int, *, batch: int = 500
) -> Iterator[ContextEntry]:
    """Entries ``start <= seq < stop`` as the context fold reads them, in seq order (parsed,
    not signature-checked). ContextHistoryError for a missing entry or a leaf that is not the
    entry at its seq."""
    next_seq = start
    while next_seq < stop:
        params = {"thread": thread, "start": next_seq, "stop": stop, "batch": batch}
        rows = conn.execute(_LEAVES, params).all()
        if not rows:
            raise ContextHistoryError(thread, next_seq, "the entry is missing")
        for row in rows:
            if int(row.seq) != next_seq:
                raise ContextHistoryError(thread, next_seq, "the entry is missing")
            yield _context_entry(thread, next_seq, row.leaf)
            next_seq += 1


def turn_entries(
    conn: Connection, thread: str, start: int, stop: int, *, batch: int = 500
) -> Iterator[ContextEntry]:
    """The ``turn`` entries ``start <= seq < stop`` (by the stored ``kind`` column; each
    parsed from its leaf, not signature-checked), in seq order. ContextHistoryError for a
    leaf that is not the entry at its seq."""
    next_seq = start
    while next_seq < stop:
        params = {"thread": thread, "start": next_seq, "stop": stop, "batch": batch}
        rows = conn.execute(_TURN_LEAVES, params).all()
        for row in rows:
            yield _context_entry(thread, int(row.seq), row.leaf)
        if len(rows) < batch:
            return
        next_seq = int(rows[-1].seq) + 1


def _context_entry(thread: str, seq: int, leaf: object) -> ContextEntry:
    try:
        envelope = json.loads(bytes(leaf))["entry"]  # type: ignore[call-overload]
        entry = ContextEntry(envelope["seq"], envelope["kind"], envelope["actor"], envelope["body"])
    except (TypeError, ValueError, KeyError) as exc:
        raise ContextHistoryError(thread, seq, "the stored leaf is not an entry") from exc
    if entry.seq != seq or not isinstance(entry.body, dict):
        raise ContextHistoryError(thread, seq, f"the stored leaf is entry {entry.seq!r}")
    return entry


# --- folding --------------------------------------------------------------------------------


def fold_context(
    conn: Connection, thread: str, at: int, key: Verifier | None = None
) -> ContextState:
    """The context fold of ``thread``'s entries ``0..at`` (``at`` >= -1, at most the last
    entry), from the latest stored snapshot at or before ``at`` if its seal verifies under
    ``key`` (default: the thread's bound key), else from the entries alone (module
    docstring) -- or, when this process folded the thread up to some ``at`` or less not long
    before, from that fold and the entries since (:mod:`registre.ledger.store.context_cache`).
    The state returned is the caller's: nothing else holds it. ContextHistoryError if the
    stored entries do not fold; StoreCorruptError for a sealed snapshot that does not
    restore."""
    cache = fold_cache()
    found = cache.lookup(conn, thread) if at >= 0 else None
    if found is not None and found.state.at <= at <= found.state.at + CATCH_UP:
        trusted = found.trust is None or found.trust == _vkey(
            key if key is not None else bound_key(conn, thread)
        )
        if trusted:
            state = cache.catch_up(
                conn,
                thread,
                found,
                at,
                _context_entry,
                lambda base, entries: fold_on(base, entries, thread),
            )
            if state is not None:
                return state
    state, trust = _fold_stored(conn, thread, at, key)
    if at >= 0 and (found is None or found.state.at <= at):
        leaf_hash = cache.leaf_hash(conn, thread, at)
        if leaf_hash is not None:
            cache.store(conn, thread, state, leaf_hash, trust)
    return state


def _vkey(key: Verifier | None) -> str | None:
    return None if key is None else key.vkey()


def _fold_stored(
    conn: Connection, thread: str, at: int, key: Verifier | None
) -> tuple[ContextState, str | None]:
    """:func:`fold_context` from the stored snapshots and entries, with the vkey of the seal
    it trusted (None: folded from the entries alone)."""
    found = conn.execute(_LATEST, {"thread": thread, "at": at}).one_or_none() if at >= 0 else None
    if found is not None:
        key = key if key is not None else bound_key(conn, thread)
        seq = int(found.seq)
        if key is not None and seal_verifies(
            conn, key, thread, seq, found.boundary, found.snapshot, found.seal
        ):
            snapshot = _decode(thread, seq, found.snapshot)
            return fold_from_snapshot(conn, thread, seq, snapshot, at), key.vkey()
    return fold_on(ContextState(), context_entries(conn, thread, 0, at + 1), thread), None


def fold_from_snapshot(
    conn: Connection, thread: str, seq: int, snapshot: Mapping[str, Any], at: int
) -> ContextState:
    """The context fold at ``at`` (>= ``seq``) from ``snapshot``, the stored form of the fold
    just after the compaction at ``seq``: restored with the entries from its boundary, then
    folded on. StoreCorruptError for a snapshot that does not restore; ContextHistoryError."""
    boundary = snapshot.get("boundary")
    if type(boundary) is not int or not 0 <= boundary <= seq <= at:
        raise StoreCorruptError(
            f"thread {thread}: the context snapshot at seq {seq} has no valid boundary"
        ).with_hint(rebuild_hint(thread))
    start = max(0, boundary - REFILL_WINDOW)
    entries = list(context_entries(conn, thread, start, at + 1))
    folded, entries = entries[: boundary - start], entries[boundary - start :]
    later = entries[seq + 1 - boundary :]
    try:
        state = restore_state(snapshot, entries[: seq + 1 - boundary], folded)
    except (LifecycleFormatError, ValueError, KeyError) as exc:
        raise StoreCorruptError(
            f"thread {thread}: the context snapshot at seq {seq} does not restore ({exc})"
        ).with_hint(rebuild_hint(thread)) from exc
    return fold_on(state, later, thread)


def fold_on(
    state: ContextState, entries: Iterator[ContextEntry] | Sequence[ContextEntry], thread: str
) -> ContextState:
    """Apply ``entries`` (the next ones, in order) to ``state``; return it.
    ContextHistoryError naming the first entry the fold refuses."""
    for entry in entries:
        try:
            state.apply(entry)
        except (
            CompactionVerificationError,
            LifecycleFormatError,
            ReplayMismatchError,
            ValueError,
        ) as exc:
            raise ContextHistoryError(thread, entry.seq, str(exc)) from exc
    return state


def rebuild_thread_context(
    conn: Connection, thread: str, size: int, signer: Signer | None = None
) -> int:
    """Replace ``thread``'s snapshot rows by those the fold of entries ``0..size-1`` gives,
    sealed by ``signer`` when given (the caller checks it is the thread's key), in the
    caller's write transaction (holding the thread's lock); return how many were written.
    ContextHistoryError leaves the rows as they were (the fold runs first)."""
    state = ContextState()
    rows: list[dict[str, Any]] = []
    for entry in context_entries(conn, thread, 0, size):
        fold_on(state, (entry,), thread)
        if entry.kind == CONTEXT_COMPACTION:
            row = snapshot_row(thread, entry.seq, state)
            leaf_hash = entry_leaf_hash(conn, thread, entry.seq)
            if signer is not None and leaf_hash is not None:
                seal_row(row, signer, leaf_hash)
            rows.append(row)
    delete_snapshots(conn, thread)
    insert_snapshots(conn, rows)
    return len(rows)
