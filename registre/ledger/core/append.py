"""The append transaction: the only code that adds entries to a thread.

Inside one write transaction, :func:`append_entries`

1. locks the thread row (SQLite: the ``BEGIN IMMEDIATE`` write lock taken by
   :func:`registre.ledger.store.engine.write_transaction`; PostgreSQL: ``SELECT ... FOR UPDATE``)
   and reads the head ``(size, root, frontier)``; the frontier must reproduce the root;
2. for each item: signs the entry with ``seq = size``, ``prev = (size, root)`` and the
   lifecycle head of the entries before it (:mod:`registre.attest.entries.lifecycle_chain`: the one
   this
   process computed for a tree of that size and root, else read off the previous entry, or --
   the first append to a thread written before the field existed -- recomputed from its stored
   lifecycle entries), appends its leaf hash to the frontier and
   collects the subtrees that completed;
3. inserts the entries, their full-text index rows (:mod:`registre.ledger.store.search`),
   the completed subtree hashes from
   :data:`~registre.ledger.store.schema.LOWEST_STORED_LEVEL` up (lower ones are computed from
   the entries' ``leaf_hash`` when read), and moves the head (size, root, frontier) -- only
   if it is still at the size read in step 1.

Sequence numbers therefore come from the locked head, never from a database sequence, and
are gap-free: the transaction commits all of it or none of it (THREATS rows 16 and 18).
Every item is validated (actor, kind, body schema:
:func:`registre.attest.entries.entry.sign_entry`) while
the batch is signed in step 2, before the first INSERT; a refused item raises there and the
transaction rolls back with nothing written.
"""

from __future__ import annotations

import json
from collections.abc import Collection, Sequence
from typing import Any

from sqlalchemy import Connection, text
from sqlalchemy.dialects import postgresql, sqlite
from sqlalchemy.exc import SQLAlchemyError

from registre.attest.entries import (
    EMPTY_LIFECYCLE,
    LIFECYCLE_KINDS,
    Entry,
    LifecycleHead,
    sign_entries,
)
from registre.attest.notes import Signer, Verifier
from registre.attest.tree import HASH_SIZE, CompactRange
from registre.errors import MalformedError
from registre.ledger.core.database import utc_now
from registre.ledger.core.verified_head import (
    remember_verified_head,
    require_verified_head,
    verifier_of_vkey,
)
from registre.ledger.errors import (
    ForeignThreadError,
    StoreCorruptError,
    StrayRowError,
    ThreadKeyError,
    UnknownThreadError,
)
from registre.ledger.store.published import (
    DatabaseBehindError,
    PublishedRecordMissingError,
    published_problem,
    read_published_head,
    record_problem,
)
from registre.ledger.store.schema import LOWEST_STORED_LEVEL, tables
from registre.ledger.store.search import index_entries

__all__ = [
    "AppendItem",
    "append_entries",
    "batch_has_kind",
    "batch_kinds",
    "lifecycle_head",
    "read_bound_head",
    "read_head",
    "require_not_behind",
    "require_thread_key",
    "split_frontier",
    "store_public_key",
]


AppendItem = tuple[str, Any, str]
"""``(kind, body, actor)``: one entry to append."""


def batch_has_kind(items: Sequence[AppendItem], kinds: Collection[str]) -> bool:
    """Whether any item of an append batch has one of ``kinds`` (items not yet validated:
    anything that is not a ``(str, ...)`` tuple has none)."""
    return any(
        isinstance(item, tuple) and bool(item) and isinstance(item[0], str) and item[0] in kinds
        for item in items
    )


def batch_kinds(items: Sequence[AppendItem]) -> set[str]:
    """The kinds of an append batch, in one pass (items not yet validated: anything that is
    not a ``(str, ...)`` tuple contributes none); ``batch_has_kind(items, K)`` is
    ``not batch_kinds(items).isdisjoint(K)``."""
    return {
        item[0] for item in items if isinstance(item, tuple) and item and isinstance(item[0], str)
    }


# The append path runs these statements on the driver's own cursor, inside the transaction
# SQLAlchemy opened: Core's per-statement machinery costs more than the rest of an append
# together, and an append is the operation whose rate matters. They name the tables and
# columns of ledger.store.schema; "?" becomes "%s" for psycopg. SQLite inserts a batch's rows
# with executemany (its loop is the driver's C); psycopg's executemany runs Python for every
# row (a pipeline step, a dump, a prepared-statement lookup: more than the SQL itself), so on
# PostgreSQL a batch's rows go as columns of arrays in one INSERT ... SELECT FROM unnest(...)
# per table: the same rows, one statement, one round trip (_PG_ROWS).
_KINDS = tuple(sorted(LIFECYCLE_KINDS))
_SQL = {
    "lock_head": "SELECT origin, size, root, frontier, vkey FROM thread WHERE id = ?",
    "read_head": "SELECT origin, size, root, frontier, vkey FROM thread WHERE id = ?",
    "insert_entry": (
        "INSERT INTO entry (thread, seq, leaf, leaf_hash, kind, time) VALUES (?, ?, ?, ?, ?, ?)"
    ),
    "insert_subtree": "INSERT INTO subtree (thread, level, idx, hash) VALUES (?, ?, ?, ?)",
    "move_head": "UPDATE thread SET size = ?, root = ?, frontier = ? WHERE id = ? AND size = ?",
    "last_entry": "SELECT kind, leaf, leaf_hash FROM entry WHERE thread = ? AND seq = ?",
    "lifecycle_hashes": (
        "SELECT leaf_hash FROM entry WHERE thread = ? AND seq < ? AND kind IN ("
        + ", ".join("?" for _ in _KINDS)
        + ") ORDER BY seq"
    ),
}
_PG_ROWS = {
    # %b: bytea arrays sent in binary (no hex text to write and parse)
    "insert_entry": (
        "INSERT INTO entry (thread, seq, leaf, leaf_hash, kind, time) "
        "SELECT %s::varchar, * FROM unnest("
        "%s::bigint[], %b::bytea[], %b::bytea[], %s::varchar[], %s::varchar[])"
    ),
    "insert_subtree": (
        "INSERT INTO subtree (thread, level, idx, hash) "
        "SELECT %s::varchar, * FROM unnest(%s::integer[], %s::bigint[], %b::bytea[])"
    ),
}
_DIALECT_SQL: dict[str, dict[str, str]] = {
    "sqlite": _SQL,
    "postgresql": {
        **{
            name: sql.replace("?", "%s") + (" FOR UPDATE" if name == "lock_head" else "")
            for name, sql in _SQL.items()
        },
        **_PG_ROWS,
    },
}


# The lifecycle head after the entries of a tree, by (thread, size, root): the root commits to
# every leaf, so a head read with that size and root has exactly that lifecycle head, whatever
# the database, and the next append need not read and parse the previous leaf. A head whose
# transaction rolled back is never met again (no stored tree has its root) and costs nothing.
_LIFECYCLE_AT: dict[tuple[str, int, bytes], LifecycleHead] = {}
_LIFECYCLE_AT_MAX = 4096


def _statements(conn: Connection) -> dict[str, str]:
    return _DIALECT_SQL[conn.dialect.name]


def split_frontier(blob: bytes) -> list[bytes]:
    """The stored frontier blob as the list :meth:`CompactRange.restore` takes."""
    if len(blob) % HASH_SIZE:
        raise StoreCorruptError(f"stored frontier is {len(blob)} bytes, not whole hashes")
    return [blob[i : i + HASH_SIZE] for i in range(0, len(blob), HASH_SIZE)]


def read_head(conn: Connection, thread: str) -> tuple[str, CompactRange]:
    """Lock the thread row and return ``(origin, frontier)``; the frontier's root must equal
    the stored root (StoreCorruptError otherwise) and every entry under it must be the bound
    key's (UnverifiedHeadError, :mod:`registre.ledger.core.verified_head`); UnknownThreadError
    if there is no thread. Only write paths call it: what they sign next commits to the head."""
    origin, frontier, _vkey = read_bound_head(conn, thread)
    return origin, frontier


def read_bound_head(
    conn: Connection, thread: str, *, lock: bool = True
) -> tuple[str, CompactRange, str | None]:
    """:func:`read_head` and the vkey the thread is bound to (None: not bound yet).
    ``lock=False``: the same checks on the head as the caller's read transaction sees it (a
    write path's preparation outside the lock: what it folds is the key's too)."""
    cursor = conn.connection.cursor()
    try:
        cursor.execute(_statements(conn)["lock_head" if lock else "read_head"], (thread,))
        row = cursor.fetchone()
    finally:
        cursor.close()
    if row is None:
        raise UnknownThreadError(f"no thread {thread!r}")
    origin, size, root, frontier_blob, vkey = row
    if type(size) is not int or not isinstance(root, bytes | memoryview):
        raise StoreCorruptError(
            f"thread {thread}: the stored head has a size or root of the wrong type"
        )
    if not isinstance(frontier_blob, bytes | memoryview):
        raise StoreCorruptError(f"thread {thread}: the stored frontier is not bytes")
    frontier = _frontier_of(thread, size, bytes(root), bytes(frontier_blob))
    if vkey is not None:
        require_verified_head(conn, thread, str(origin), frontier, _bound_verifier(thread, vkey))
    return str(origin), frontier, (None if vkey is None else str(vkey))


def _bound_verifier(thread: str, vkey: object) -> Verifier:
    try:
        return verifier_of_vkey(str(vkey))
    except MalformedError as exc:
        raise StoreCorruptError(
            f"thread {thread}: the key it is bound to is not a verifier key ({exc})"
        ) from None


# The frontier of a stored head, by thread: (size, root, frontier blob, the frontier they
# restore to). A pure memo of what _frontier_of computes from the row it is given -- a hit
# needs the row read under the lock to hold exactly these bytes -- so it is never stale: a
# head written by another connection or process, or one whose transaction rolled back, is
# simply a miss (tests/ledger/core/test_head_memo.py).
_HEADS: dict[str, tuple[int, bytes, bytes, CompactRange]] = {}
_HEADS_MAX = 4096


def _frontier_of(thread: str, size: int, root: bytes, blob: bytes) -> CompactRange:
    """The frontier stored as ``(size, blob)``, checked to reproduce ``root``
    (StoreCorruptError otherwise): restored and hashed, or a copy of the one this process
    last restored or wrote for exactly these bytes."""
    known = _HEADS.get(thread)
    if known is not None and known[0] == size and known[1] == root and known[2] == blob:
        return known[3].copy()
    frontier = CompactRange.restore(size, split_frontier(blob))
    if frontier.root() != root:
        raise StoreCorruptError(
            f"thread {thread}: the stored head root does not match the stored frontier"
        )
    _remember_head(thread, frontier, blob)
    return frontier


def _remember_head(thread: str, frontier: CompactRange, blob: bytes) -> None:
    """Remember ``frontier`` (whose stored form is ``blob``) as the head of ``thread``."""
    if len(_HEADS) >= _HEADS_MAX:
        _HEADS.clear()
    _HEADS[thread] = (frontier.size, frontier.root(), blob, frontier.copy())


def require_thread_key(conn: Connection, thread: str, bound: str | None, signer: Signer) -> None:
    """Refuse ``signer`` unless it is the key ``thread`` is bound to (ThreadKeyError). A
    thread of an older database with no bound key (``bound`` None) is bound to ``signer``
    now, in the caller's transaction, and the key stored. There is no rotation: a thread is
    signed by one key for its whole life (specs/storage.md section 2)."""
    vkey = _vkey_of(signer)
    if bound == vkey:
        return
    if bound is not None:
        other = bound.rsplit("+", 1)[0]
        raise ThreadKeyError(
            f"thread {thread} is bound to the key {other}, which created it; this key is "
            f"{signer.name}+{signer.key_id.hex()}: a second key for the log name is refused"
        ).with_hint("sign with the thread's own key file (--key-file / REGISTRE_KEY)")
    conn.execute(tables.thread.update().where(tables.thread.c.id == thread).values(vkey=vkey))
    store_public_key(conn, signer.verifier())


_VKEYS: dict[tuple[str, int, bytes], str] = {}


def _vkey_of(signer: Signer) -> str:
    """``signer.vkey()``, remembered by (name, type, public key): what it is computed from."""
    known = (signer.name, signer.alg, signer.public_key)
    vkey = _VKEYS.get(known)
    if vkey is None:
        if len(_VKEYS) >= 64:
            _VKEYS.clear()
        vkey = _VKEYS[known] = signer.vkey()
    return vkey


def require_not_behind(
    conn: Connection, thread: str, origin: str, size: int, root_at: bytes | None = None
) -> None:
    """DatabaseBehindError if ``thread`` (head ``size``; ``root_at``: its root at the
    published size, when the caller computed it) is behind the checkpoint recorded outside
    the database (:mod:`registre.ledger.store.published`); PublishedRecordMissingError if
    that record does not reach a checkpoint the database holds (deleted or rolled back)."""
    published = read_published_head(conn, origin)
    problem = published_problem(published, size, root_at)
    if problem is not None:
        raise DatabaseBehindError(f"thread {thread}: {problem}; nothing was written")
    missing = record_problem(conn, thread, published)
    if missing is not None:
        raise PublishedRecordMissingError(f"thread {thread}: {missing}; nothing was written")


def store_public_key(conn: Connection, verifier: Verifier, added: str | None = None) -> None:
    """Record ``verifier`` in ``public_key`` (once; concurrent writers are fine), in the
    caller's transaction -- the one that makes it sign something the ledger accepts."""
    row = {
        "vkey": verifier.vkey(),
        "name": verifier.name,
        "key_id": verifier.key_id.hex(),
        "added": added or utc_now(),
    }
    insert = postgresql.insert if conn.dialect.name == "postgresql" else sqlite.insert
    conn.execute(insert(tables.public_key).values(row).on_conflict_do_nothing())


def lifecycle_head(conn: Connection, thread: str, size: int) -> LifecycleHead:
    """The lifecycle head of the first ``size`` entries of ``thread`` (inside the append's
    transaction, after :func:`read_head`): the previous entry's signed head extended by that
    entry when it is a lifecycle entry; for a previous entry signed before the field existed
    (a legacy thread), the chain recomputed over the stored lifecycle entries -- once: the
    entry appended now carries it. StoreCorruptError if the previous entry is unreadable."""
    if size == 0:
        return EMPTY_LIFECYCLE
    sql = _statements(conn)
    cursor = conn.connection.cursor()
    try:
        cursor.execute(sql["last_entry"], (thread, size - 1))
        row = cursor.fetchone()
        if row is None:
            raise StoreCorruptError(f"thread {thread}: entry {size - 1} is missing")
        kind, leaf, digest = str(row[0]), bytes(row[1]), bytes(row[2])
        try:
            signed = json.loads(leaf)["entry"].get("lifecycle")
            previous = None if signed is None else LifecycleHead.from_json(signed)
        except (ValueError, TypeError, KeyError, AttributeError, MalformedError) as exc:
            raise StoreCorruptError(
                f"thread {thread}: entry {size - 1} is not a readable leaf ({exc})"
            ) from None
        if previous is not None:
            return previous.after(kind, digest)
        cursor.execute(sql["lifecycle_hashes"], (thread, size, *_KINDS))
        head = EMPTY_LIFECYCLE
        for (hashed,) in cursor.fetchall():
            head = head.extend(bytes(hashed))
        return head
    finally:
        cursor.close()


def append_entries(
    conn: Connection,
    signer: Signer,
    thread: str,
    items: Sequence[AppendItem],
    *,
    checked: Collection[int] = (),
) -> list[Entry]:
    """Sign and store ``items`` as the next entries of ``thread``, in the caller's write
    transaction. Every entry is signed (so every item validated) before the first INSERT.
    ``checked``: positions in ``items`` whose bodies the caller has just validated (the
    checked append paths must, to decide them); their schema check is not run again.

    Raises the first refused item's error (InvalidActorError, UnknownKindError,
    BodySchemaError), UnknownThreadError, ForeignThreadError (the key's name is not the
    thread's log name) and StoreCorruptError; any exception leaves the transaction to roll
    back.
    """
    origin, frontier, bound = read_bound_head(conn, thread)
    if origin != f"{signer.name}/{thread}":
        raise ForeignThreadError(
            f"thread {thread} belongs to log {origin.rsplit('/', 1)[0]!r}; the key "
            f"{signer.name!r} cannot append to it"
        )
    require_thread_key(conn, thread, bound, signer)
    key = verifier_of_vkey(_vkey_of(signer))
    if bound is None:  # a thread of an older database, bound now: checked under its new key
        require_verified_head(conn, thread, origin, frontier, key)
    require_not_behind(conn, thread, origin, frontier.size)
    old_size = frontier.size
    if not items:
        return []
    known = _LIFECYCLE_AT.get((thread, old_size, frontier.root()))
    batch = sign_entries(
        signer,
        thread=thread,
        items=items,
        frontier=frontier,
        lifecycle=known if known is not None else lifecycle_head(conn, thread, old_size),
        checked=checked,
    )
    entries = batch.entries
    root = frontier.root()
    if len(_LIFECYCLE_AT) >= _LIFECYCLE_AT_MAX:
        _LIFECYCLE_AT.clear()
    if batch.lifecycle is not None:
        _LIFECYCLE_AT[(thread, frontier.size, root)] = batch.lifecycle
    sql = _statements(conn)
    cursor = conn.connection.cursor()
    try:
        # the head first: schema version 8 refuses an entry row at or past the head
        frontier_blob = b"".join(frontier.hashes())
        cursor.execute(sql["move_head"], (frontier.size, root, frontier_blob, thread, old_size))
        if cursor.rowcount != 1:
            raise StoreCorruptError(f"thread {thread}: the head moved during an append")
        try:
            _insert_rows(cursor, sql, conn.dialect.name, thread, entries, batch.subtrees)
        except Exception as exc:
            if type(exc).__name__ not in _INTEGRITY_ERRORS:
                raise
            raise _planted_rows(conn, thread, old_size, frontier.size) from None
        index_entries(cursor, conn.dialect.name, thread, entries)
    finally:
        cursor.close()
    _remember_head(thread, frontier, frontier_blob)
    remember_verified_head(conn, thread, key, frontier)
    return entries


_INTEGRITY_ERRORS = frozenset({"IntegrityError", "UniqueViolation"})
_PLANTED = (
    (
        "entry",
        "seq",
        text("SELECT min(seq) FROM entry WHERE thread = :thread AND seq >= :start"),
    ),
    (
        "subtree",
        "index",
        text(
            "SELECT min(idx) FROM subtree WHERE thread = :thread "
            "AND (idx + 1) * (1 << level) > :start"
        ),
    ),
)


def _planted_rows(conn: Connection, thread: str, start: int, stop: int) -> StrayRowError:
    """The error for an append that met a row already stored past the head ``start`` (a
    database of schema version 7 or older, where such rows could be inserted): one line
    naming the row, read through a connection of its own (this transaction is aborted; if
    that read fails too, the line names the range instead)."""
    where = f"a row in entries {start}..{stop - 1}"
    try:
        with conn.engine.connect() as other:
            for table, label, query in _PLANTED:
                found = other.execute(query, {"thread": thread, "start": start}).scalar()
                if found is not None:
                    where = f"{table} (thread {thread}, {label} {found})"
                    break
    except SQLAlchemyError:
        pass
    return StrayRowError(
        f"thread {thread}: {where} lies past the head (size {start}); registre never writes "
        "one, so someone wrote the database without the key; nothing was written"
    ).with_hint(
        "`registre verify --db` lists every such row; the database's owner removes them "
        "(specs/storage.md section 3.3)"
    )


PG_CHUNK_ROWS = 2000
"""At most this many rows per PostgreSQL INSERT ... FROM unnest (a batch has more than one
statement per table only past it, or past :data:`PG_CHUNK_BYTES` of leaves)."""

PG_CHUNK_BYTES = 32 << 20
"""At most about this many leaf bytes per statement (a leaf may be 2 MiB; one array
parameter of a whole imported thread would be the server's to refuse, past 1 GiB)."""


def _insert_rows(
    cursor: Any,
    sql: dict[str, str],
    dialect: str,
    thread: str,
    entries: Sequence[Entry],
    subtrees: Sequence[tuple[int, int, bytes]],
) -> None:
    """Insert the ``entry`` rows of one signed batch, and the ``subtree`` rows of the
    completed subtrees from :data:`LOWEST_STORED_LEVEL` up, on the driver's ``cursor`` (the
    statements' comment above says why each engine gets its form)."""
    if dialect == "postgresql":
        for chunk in _pg_chunks(entries):
            cursor.execute(
                sql["insert_entry"],
                (
                    thread,
                    [e.seq for e in chunk],
                    [e.leaf for e in chunk],
                    [e.leaf_hash for e in chunk],
                    [e.kind for e in chunk],
                    [e.time for e in chunk],
                ),
            )
        stored = [t for t in subtrees if t[0] >= LOWEST_STORED_LEVEL]
        for start in range(0, len(stored), PG_CHUNK_ROWS):
            part = stored[start : start + PG_CHUNK_ROWS]
            cursor.execute(
                sql["insert_subtree"],
                (thread, [t[0] for t in part], [t[1] for t in part], [t[2] for t in part]),
            )
        return
    cursor.executemany(
        sql["insert_entry"],
        [(thread, e.seq, e.leaf, e.leaf_hash, e.kind, e.time) for e in entries],
    )
    cursor.executemany(
        sql["insert_subtree"],
        [
            (thread, level, index, digest)
            for level, index, digest in subtrees
            if level >= LOWEST_STORED_LEVEL
        ],
    )


def _pg_chunks(entries: Sequence[Entry]) -> list[Sequence[Entry]]:
    """``entries`` cut, in order, into runs of at most :data:`PG_CHUNK_ROWS` entries and
    about :data:`PG_CHUNK_BYTES` of leaves (a run holds at least one entry)."""
    if len(entries) <= PG_CHUNK_ROWS and sum(len(e.leaf) for e in entries) <= PG_CHUNK_BYTES:
        return [entries]
    chunks: list[Sequence[Entry]] = []
    start = size = 0
    for index, entry in enumerate(entries):
        if index > start and (
            index - start >= PG_CHUNK_ROWS or size + len(entry.leaf) > PG_CHUNK_BYTES
        ):
            chunks.append(entries[start:index])
            start, size = index, 0
        size += len(entry.leaf)
    chunks.append(entries[start:])
    return chunks
