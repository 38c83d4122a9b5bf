"""The thread core: one thread's append-only tree -- append, read, checkpoint, prove.

A :class:`ThreadCore` is a handle (database + id + origin); every call runs its own
transaction, so handles are cheap and safe to keep. Reads re-verify what they return:
:meth:`ThreadCore.entry` and :meth:`ThreadCore.entries` open each leaf with
:func:`registre.attest.entries.entry.open_entry` against the database's keys. Proofs read O(log n)
stored subtree hashes (:class:`registre.ledger.store.nodes.StoredHashSource`).

The wings extend it by plain inheritance: :class:`registre.ledger.lifecycle.api.LifecycleThread`
(sources, evidence, conclusions, pins) and :class:`registre.ledger.context.api.ContextThread`
(the working context); :class:`registre.ledger.thread.Thread` is both.
:meth:`ThreadCore.append_many` signs and stores whatever it is given once the bodies pass their
schema; the checks that lifecycle entries record the rules' decisions and that compactions keep
the context rules are the wings', routed by :meth:`registre.ledger.thread.Thread.append_many`.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass

from sqlalchemy import Connection, bindparam, select

from registre.attest.entries import Entry, open_entry
from registre.attest.notes import (
    Checkpoint,
    DuplicateSignatureError,
    append_signature,
    sign_checkpoint,
)
from registre.attest.tree import consistency_proof, inclusion_proof, root_at
from registre.ledger.core.append import (
    AppendItem,
    append_entries,
    read_bound_head,
    require_not_behind,
    require_thread_key,
)
from registre.ledger.core.database import Database, utc_now
from registre.ledger.core.group_commit import prevalidate, queue_for
from registre.ledger.core.stored_checkpoint import check_stored_checkpoint
from registre.ledger.core.verified_head import require_verified_head, verifier_of_vkey
from registre.ledger.errors import EntryNotFoundError, StoreCorruptError
from registre.ledger.store.engine import read_transaction, write_transaction
from registre.ledger.store.nodes import StoredHashSource
from registre.ledger.store.published import read_published, record_published
from registre.ledger.store.schema import entry_range, tables

__all__ = [
    "StoredCheckpoint",
    "ThreadConsistencyProof",
    "ThreadCore",
    "ThreadInclusionProof",
    "TreeHead",
]

_thread = tables.thread
_entry = tables.entry
_checkpoint = tables.checkpoint
_HEAD = select(_thread.c.size, _thread.c.root).where(_thread.c.id == bindparam("thread"))
_LEAVES = entry_range(_entry.c.seq, _entry.c.leaf)
_LEAF_HASH = select(_entry.c.leaf_hash).where(
    _entry.c.thread == bindparam("thread"), _entry.c.seq == bindparam("seq")
)
_CHECKPOINT_AT = select(_checkpoint.c.root, _checkpoint.c.note).where(
    _checkpoint.c.thread == bindparam("thread"), _checkpoint.c.size == bindparam("size")
)
_CHECKPOINTS = (
    select(_checkpoint.c.size, _checkpoint.c.root, _checkpoint.c.note)
    .where(_checkpoint.c.thread == bindparam("thread"))
    .order_by(_checkpoint.c.size)
)
_LATEST_CHECKPOINT = (
    select(_checkpoint.c.size, _checkpoint.c.root, _checkpoint.c.note)
    .where(_checkpoint.c.thread == bindparam("thread"))
    .order_by(_checkpoint.c.size.desc())
    .limit(1)
)


@dataclass(frozen=True)
class TreeHead:
    """The thread's tree: ``size`` entries with RFC 9162 root ``root``."""

    size: int
    root: bytes


@dataclass(frozen=True)
class StoredCheckpoint:
    """A signed C2SP checkpoint note for ``size`` leaves, as stored."""

    thread: str
    size: int
    root: bytes
    note: str


@dataclass(frozen=True)
class ThreadInclusionProof:
    """RFC 9162 inclusion proof of entry ``seq`` (leaf hash ``leaf_hash``) in the tree of
    ``size`` leaves with root ``root``. ``reads``: stored hashes read to build it."""

    thread: str
    seq: int
    size: int
    leaf_hash: bytes
    root: bytes
    hashes: list[bytes]
    reads: int


@dataclass(frozen=True)
class ThreadConsistencyProof:
    """RFC 9162 consistency proof from ``old_size`` (``old_root``) to ``new_size``
    (``new_root``). ``reads``: stored hashes read to build it."""

    thread: str
    old_size: int
    new_size: int
    old_root: bytes
    new_root: bytes
    hashes: list[bytes]
    reads: int


class ThreadCore:
    """Handle on thread ``id`` of the database ``db``; ``origin`` is ``LOGNAME/id``."""

    def __init__(self, db: Database, thread_id: str, origin: str) -> None:
        self._db = db
        self.id = thread_id
        self.origin = origin

    @property
    def database(self) -> Database:
        """The open database this handle reads and writes."""
        return self._db

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.origin!r})"

    # --- writing ------------------------------------------------------------------------

    def append(self, kind: str, body: object, actor: str) -> Entry:
        """Sign and store one entry; return it. One transaction (see
        :mod:`registre.ledger.core.append`).

        Raises, before anything is written: InvalidActorError, UnknownKindError,
        BodySchemaError, NoSignerError, UnknownThreadError, ForeignThreadError.
        """
        return self.append_many([(kind, body, actor)])[0]

    def append_many(self, items: Iterable[AppendItem]) -> list[Entry]:
        """Sign and store every ``(kind, body, actor)`` in one transaction: all or nothing.

        Every item is validated (actor, kind, body schema) before anything is written;
        consecutive sequence numbers. On SQLite, concurrent callers of one process share one
        transaction and its fsync (:mod:`registre.ledger.core.group_commit`); each returns
        once its entries are durable, with its own entries or its own error. The core checks
        no lifecycle or context rule: use :meth:`registre.ledger.thread.Thread.append_many`,
        which does.
        """
        signer = self._db.require_signer()
        batch = list(items)
        queue = queue_for(self._db)
        if queue is None:
            with write_transaction(self._db.engine) as conn:
                return append_entries(conn, signer, self.id, batch)
        prevalidate(batch)
        return queue.append(self.id, batch, self._db.engine)

    def checkpoint(self, size: int | None = None) -> StoredCheckpoint:
        """The signed checkpoint at ``size`` (default: the head), signing and storing it if
        this size has none yet, and records it outside the database
        (:mod:`registre.ledger.store.published`). Raises NoSignerError (when one must be
        signed), ThreadKeyError (another key than the thread's), DatabaseBehindError (the
        database is behind a checkpoint already signed) and EntryNotFoundError for a size
        beyond the head."""
        with write_transaction(self._db.engine) as conn:
            _origin, frontier, bound = read_bound_head(conn, self.id)
            size = frontier.size if size is None else size
            self._check_size(size, frontier.size)
            stored = conn.execute(_CHECKPOINT_AT, {"thread": self.id, "size": size}).one_or_none()
            if stored is not None:
                source = StoredHashSource(conn, self.id, frontier.size)
                expected = frontier.root() if size == frontier.size else root_at(source, size)
                root, note = check_stored_checkpoint(
                    self.id, self.origin, size, expected, stored.root, stored.note, bound
                )
                return StoredCheckpoint(self.id, size, root, note)
            signer = self._db.require_signer()
            require_thread_key(conn, self.id, bound, signer)
            if bound is None:  # an older database's thread, bound now: check it under the key
                require_verified_head(
                    conn, self.id, self.origin, frontier, verifier_of_vkey(signer.vkey())
                )
            source = StoredHashSource(conn, self.id, frontier.size)
            published = read_published(conn).get(self.origin)
            at_published = None
            if published is not None and published.size <= frontier.size:
                at_published = root_at(source, published.size)
            require_not_behind(conn, self.id, self.origin, frontier.size, at_published)
            root = frontier.root() if size == frontier.size else root_at(source, size)
            note = sign_checkpoint(Checkpoint(self.origin, size, root), signer)
            conn.execute(
                _checkpoint.insert().values(
                    thread=self.id, size=size, root=root, note=note, created=utc_now()
                )
            )
            record_published(conn, self.origin, size, root)
            return StoredCheckpoint(self.id, size, root, note)

    def add_cosignatures(self, size: int, lines: Sequence[str]) -> StoredCheckpoint:
        """Append witness cosignature ``lines`` to the stored checkpoint at ``size``; return it.

        One transaction. A line from a key (name and key id) the note already carries is
        skipped, so the first cosignature of each witness is kept. Lines are checked for form
        only (NoteFormatError): verifying them against pinned witness keys is the caller's job
        (:mod:`registre.ledger.witnessing`). EntryNotFoundError if no checkpoint is stored at
        ``size``. The signed checkpoint itself never changes (the store's trigger refuses it).
        """
        with write_transaction(self._db.engine) as conn:
            stored = conn.execute(
                _CHECKPOINT_AT.with_for_update(), {"thread": self.id, "size": size}
            ).one_or_none()
            if stored is None:
                raise EntryNotFoundError(f"thread {self.id} has no checkpoint at size {size}")
            old_note = note = str(stored.note)
            for line in lines:
                try:
                    note = append_signature(note, line)
                except DuplicateSignatureError:
                    continue  # this witness's cosignature is already there
            if note != old_note:
                conn.execute(
                    _checkpoint.update()
                    .where(_checkpoint.c.thread == self.id, _checkpoint.c.size == size)
                    .values(note=note)
                )
            return StoredCheckpoint(self.id, size, bytes(stored.root), note)

    # --- reading ------------------------------------------------------------------------

    def head(self) -> TreeHead:
        """The current tree head (size, root)."""
        with read_transaction(self._db.engine) as conn:
            return self._head(conn)

    def entry(self, seq: int) -> Entry:
        """Entry ``seq``, verified; EntryNotFoundError if there is none."""
        for found in self.entries(seq, seq + 1):
            return found
        raise EntryNotFoundError(f"thread {self.id} has no entry {seq}")

    def entries(
        self, start: int = 0, stop: int | None = None, *, batch: int = 500
    ) -> Iterator[Entry]:
        """Entries ``start <= seq < stop`` (default: to the head at the first read), verified,
        in order, read ``batch`` rows per query. Raises EntryNotFoundError if ``start`` is
        negative or ``stop`` beyond the head; StoreCorruptError if a row is missing."""
        head = self.head()
        stop = head.size if stop is None else stop
        if start < 0 or stop > head.size or start > stop:
            raise EntryNotFoundError(
                f"thread {self.id} has entries 0..{head.size - 1}; asked for [{start}, {stop})"
            )
        keys = self._db.keys()
        next_seq = start
        while next_seq < stop:
            upper = min(stop, next_seq + batch)
            with read_transaction(self._db.engine) as conn:
                rows = conn.execute(
                    _LEAVES, {"thread": self.id, "start": next_seq, "stop": upper}
                ).all()
            for row in rows:
                if row.seq != next_seq:
                    raise StoreCorruptError(f"thread {self.id}: entry {next_seq} is missing")
                entry = open_entry(bytes(row.leaf), keys)
                if entry.seq != next_seq or entry.log != self.origin:
                    raise StoreCorruptError(
                        f"thread {self.id}: the leaf stored at {next_seq} is entry "
                        f"{entry.seq} of {entry.log}"
                    )
                yield entry
                next_seq += 1
            if next_seq < upper:
                raise StoreCorruptError(f"thread {self.id}: entry {next_seq} is missing")

    def latest_checkpoint(self) -> StoredCheckpoint | None:
        """The stored checkpoint with the largest size, or None."""
        with read_transaction(self._db.engine) as conn:
            row = conn.execute(_LATEST_CHECKPOINT, {"thread": self.id}).one_or_none()
        if row is None:
            return None
        return StoredCheckpoint(self.id, int(row.size), bytes(row.root), str(row.note))

    def checkpoints(self) -> list[StoredCheckpoint]:
        """Every stored checkpoint of the thread, by size (notes with their cosignatures)."""
        with read_transaction(self._db.engine) as conn:
            rows = conn.execute(_CHECKPOINTS, {"thread": self.id}).all()
        return [StoredCheckpoint(self.id, int(r.size), bytes(r.root), str(r.note)) for r in rows]

    # --- proving ------------------------------------------------------------------------

    def prove_inclusion(self, seq: int, size: int | None = None) -> ThreadInclusionProof:
        """Inclusion proof of entry ``seq`` in the tree of ``size`` leaves (default: head).

        Reads O(log size) stored hashes. EntryNotFoundError unless ``0 <= seq < size <= head``.
        """
        with read_transaction(self._db.engine, snapshot=True) as conn:
            head = self._head(conn)
            size = head.size if size is None else size
            self._check_size(size, head.size)
            if not 0 <= seq < size:
                raise EntryNotFoundError(
                    f"thread {self.id}: no entry {seq} in the tree of {size} entries"
                )
            source = StoredHashSource(conn, self.id, size)
            hashes = inclusion_proof(source, seq, size)
            root = head.root if size == head.size else root_at(source, size)
            leaf_hash = conn.execute(_LEAF_HASH, {"thread": self.id, "seq": seq}).scalar_one()
            return ThreadInclusionProof(
                self.id, seq, size, bytes(leaf_hash), root, hashes, source.reads
            )

    def prove_consistency(
        self, old_size: int, new_size: int | None = None
    ) -> ThreadConsistencyProof:
        """Consistency proof from ``old_size`` to ``new_size`` (default: head) entries.

        Reads O(log new_size) stored hashes. EntryNotFoundError unless
        ``0 <= old_size <= new_size <= head``.
        """
        with read_transaction(self._db.engine, snapshot=True) as conn:
            head = self._head(conn)
            new_size = head.size if new_size is None else new_size
            self._check_size(new_size, head.size)
            if not 0 <= old_size <= new_size:
                raise EntryNotFoundError(
                    f"thread {self.id}: old size {old_size} must be between 0 and {new_size}"
                )
            source = StoredHashSource(conn, self.id, new_size)
            hashes = consistency_proof(source, old_size, new_size)
            old_root = root_at(source, old_size)
            new_root = head.root if new_size == head.size else root_at(source, new_size)
            return ThreadConsistencyProof(
                self.id, old_size, new_size, old_root, new_root, hashes, source.reads
            )

    # --- helpers ------------------------------------------------------------------------

    def _head(self, conn: Connection) -> TreeHead:
        row = conn.execute(_HEAD, {"thread": self.id}).one()
        return TreeHead(int(row.size), bytes(row.root))

    def _check_size(self, size: int, head_size: int) -> None:
        if type(size) is not int or not 0 <= size <= head_size:
            raise EntryNotFoundError(
                f"thread {self.id} has {head_size} entries; size {size} is not in 0..{head_size}"
            )
