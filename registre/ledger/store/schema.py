"""The ledger's tables (schema version 9), declared with SQLModel. specs/storage.md is the
normative description; this module is its code.

* ``schema_version`` -- one row per applied schema version; the highest is current.
* ``public_key`` -- the operator verifier keys that signed entries and checkpoints.
* ``thread`` -- one row per thread: its origin, its head (size, root, frontier) and the key it
  is bound to (``vkey``, version 5). The only table whose rows change, and then only forward
  (a trigger refuses a smaller size or another key).
* ``entry`` -- leaf ``seq`` of a thread: the leaf bytes exactly as signed, their leaf hash,
  and copies of ``kind`` and ``time`` for listing (the leaf is authoritative).
* ``subtree`` -- the hash of every complete subtree (level, index) of level
  :data:`LOWEST_STORED_LEVEL` or more that the thread's tree has completed: what
  :meth:`registre.attest.tree.merkle.CompactRange.append` returned from that level up (version 6;
  lower ones are computed from the entries' ``leaf_hash``); proofs read O(log n) of them.
* ``checkpoint`` -- signed C2SP checkpoint notes, one per (thread, size). Witness cosignature
  lines are appended to ``note`` as they are collected; nothing else ever changes.

The derived lifecycle tables (version 3) are declared in :mod:`registre.ledger.store.derived`, on
the same ``MetaData``: caches of the lifecycle fold, not append-only; so is the derived
``context_snapshot`` table (version 4, :mod:`registre.ledger.store.context_snapshots`), and
the full-text index (version 9, :mod:`registre.ledger.store.search`: an FTS5 table on
SQLite, a ``tsvector`` table on PostgreSQL, created by its own DDL).

``entry``, ``subtree``, ``checkpoint``, ``public_key`` and ``schema_version`` are append-only
(see :mod:`registre.ledger.store.triggers`; a checkpoint note may only grow). The tables live in
their own SQLAlchemy ``MetaData`` so other packages' models never end up in the ledger database by
accident.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import (
    BigInteger,
    ColumnElement,
    LargeBinary,
    MetaData,
    Select,
    Table,
    bindparam,
    select,
)
from sqlalchemy.orm import registry
from sqlmodel import Field, SQLModel

__all__ = [
    "LOWEST_STORED_LEVEL",
    "SCHEMA_VERSION",
    "CheckpointRow",
    "EntryRow",
    "LedgerModel",
    "PublicKeyRow",
    "SchemaVersionRow",
    "SubtreeRow",
    "ThreadRow",
    "entry_range",
    "metadata",
    "tables",
]

SCHEMA_VERSION = 9
# 2: checkpoint notes may grow by cosignature lines (triggers only)
# 3: derived lifecycle tables and the entry_lifecycle partial index (ledger.store.derived)
# 4: derived context snapshots, one per compaction (ledger.store.context_snapshots)
# 5: thread.vkey (a thread is bound to its key), context_snapshot.seal, row checks
# 6: subtree rows from level 4 up (below, computed from the entries' leaf_hash)
# 7: a placeholder (reserved for the full-text index, which came as version 9)
# 8: entry and checkpoint rows past the head refused; seals of version 1 dropped
# 9: the full-text index over the entries' texts (ledger.store.search), for recall

LOWEST_STORED_LEVEL = 4
"""The lowest level of the ``subtree`` rows (version 6). A subtree below it covers at most 8
leaves; its hash is computed when read from the ``entry`` rows' ``leaf_hash`` (the tree's
level 0, stored once: :mod:`registre.ledger.store.nodes`). Storing every level cost two rows
per entry, half of a batched append's database work; from level 4 up it is an eighth of a
row per entry."""


class LedgerModel(SQLModel, registry=registry()):
    """Base of the ledger tables; its ``metadata`` holds these tables and nothing else."""


class SchemaVersionRow(LedgerModel, table=True):
    __tablename__ = "schema_version"

    version: int = Field(primary_key=True)
    applied: str  # RFC 3339 UTC
    description: str


class PublicKeyRow(LedgerModel, table=True):
    __tablename__ = "public_key"

    vkey: str = Field(primary_key=True)  # name+hex8+base64(0x01 ‖ key), as verifiers pin it
    name: str = Field(index=True)
    key_id: str  # 8 lowercase hex digits, as in an entry's "key"
    added: str


class ThreadRow(LedgerModel, table=True):
    __tablename__ = "thread"

    id: str = Field(primary_key=True)
    origin: str = Field(unique=True)  # LOGNAME/ID, the checkpoint origin
    size: int = Field(sa_type=BigInteger)
    root: bytes = Field(sa_type=LargeBinary)  # 32 bytes
    frontier: bytes = Field(sa_type=LargeBinary)  # CompactRange.hashes(), concatenated
    created: str
    # version 5: the vkey of the key bound to the thread (it created it); NULL only for a
    # thread of an older database that has no entry yet (bound by its first append)
    vkey: str | None = Field(default=None, nullable=True)


class EntryRow(LedgerModel, table=True):
    __tablename__ = "entry"

    thread: str = Field(primary_key=True, foreign_key="thread.id")
    seq: int = Field(primary_key=True, sa_type=BigInteger)
    leaf: bytes = Field(sa_type=LargeBinary)  # canonical {"entry": ..., "sig": ...}
    leaf_hash: bytes = Field(sa_type=LargeBinary)  # SHA-256(0x00 ‖ leaf)
    kind: str
    time: str


class SubtreeRow(LedgerModel, table=True):
    __tablename__ = "subtree"
    __table_args__ = {"sqlite_with_rowid": False}

    thread: str = Field(primary_key=True, foreign_key="thread.id")
    level: int = Field(primary_key=True)
    idx: int = Field(primary_key=True, sa_type=BigInteger)
    hash: bytes = Field(sa_type=LargeBinary)


class CheckpointRow(LedgerModel, table=True):
    __tablename__ = "checkpoint"

    thread: str = Field(primary_key=True, foreign_key="thread.id")
    size: int = Field(primary_key=True, sa_type=BigInteger)
    root: bytes = Field(sa_type=LargeBinary)
    note: str  # signed note text, with any cosignature lines
    created: str


metadata: MetaData = LedgerModel.metadata


class _Tables:
    """The Core ``Table`` objects, for statements on the hot path."""

    schema_version: Table = SchemaVersionRow.__table__  # type: ignore[attr-defined]
    public_key: Table = PublicKeyRow.__table__  # type: ignore[attr-defined]
    thread: Table = ThreadRow.__table__  # type: ignore[attr-defined]
    entry: Table = EntryRow.__table__  # type: ignore[attr-defined]
    subtree: Table = SubtreeRow.__table__  # type: ignore[attr-defined]
    checkpoint: Table = CheckpointRow.__table__  # type: ignore[attr-defined]


tables = _Tables()


def entry_range(*columns: ColumnElement[Any]) -> Select[Any]:
    """``SELECT columns`` of the ``entry`` rows of thread ``:thread`` with ``:start <= seq <
    :stop``, in seq order (bind parameters ``thread``, ``start`` and ``stop``)."""
    entry = tables.entry
    return (
        select(*columns)
        .where(
            entry.c.thread == bindparam("thread"),
            entry.c.seq >= bindparam("start"),
            entry.c.seq < bindparam("stop"),
        )
        .order_by(entry.c.seq)
    )
