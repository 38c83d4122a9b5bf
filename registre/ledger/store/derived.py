"""The derived lifecycle tables (schema version 3): caches of the lifecycle fold.

Every row here is a function of the thread's lifecycle entries (``specs/lifecycle.md``); the
tables can be dropped and rebuilt from the ``entry`` table at any time
(:func:`registre.ledger.store.lifecycle_fold.rebuild_thread`, ``registre rebuild``) and ``registre
verify --db`` rebuilds them in memory and compares. Unlike ``entry`` they are **not** append-only: a
supersession updates the superseded row. They are written in the same transaction as the
entry that changes them (:mod:`registre.ledger.lifecycle.store`).

* ``lifecycle_reference`` -- one row per registered source reference; ``seq`` is the
  ``source.read`` entry that registered it.
* ``lifecycle_evidence`` -- one row per evidence entry ``ev-N`` in any status; ``seq`` is the
  entry that admitted it (``evidence.upsert`` or the ``evidence.revise`` that created it as a
  successor), ``changed_seq`` the entry that last changed its status (``NULL`` while active).
* ``lifecycle_conclusion`` -- one row per conclusion version ``cc-N``; ``changed_seq`` is the
  entry that last changed its status or stale flag.
* ``lifecycle_pin`` -- one row per pin ``pin-N``; ``source_seq`` is the entry its text comes
  from, ``seq`` the ``context.pin`` entry, ``changed_seq`` the ``context.unpin`` entry.
* ``lifecycle_transition`` -- one row per lifecycle entry: how many items it accepted and
  rejected, the ids it created and the ids whose row it changed, the rejection reasons.

Lists (``cites``, ``relies_on``, ``created``, ``changed``, ``reasons``) are stored as compact
JSON arrays of strings. ``num`` is the N of an id, for ordering.

:data:`LIFECYCLE_ENTRY_INDEX` is a partial index on ``entry (thread, seq)`` holding only the
lifecycle kinds: the writer's state catches up on the lifecycle entries appended since it last
looked in O(log n + new lifecycle entries), however many other entries sit between them.
"""

from __future__ import annotations

from typing import Final

from sqlalchemy import BigInteger, Index, Table, text
from sqlmodel import Field

from registre.ledger.store.schema import LedgerModel, tables
from registre.lifecycle.codec import KINDS

__all__ = [
    "DERIVED_TABLES",
    "LIFECYCLE_ENTRY_INDEX",
    "LIFECYCLE_KIND_SQL",
    "LifecycleConclusionRow",
    "LifecycleEvidenceRow",
    "LifecyclePinRow",
    "LifecycleReferenceRow",
    "LifecycleTransitionRow",
    "derived",
]

LIFECYCLE_KIND_SQL: Final = "(" + " OR ".join(f"kind = '{kind}'" for kind in KINDS) + ")"
"""The predicate of the partial index. A query must repeat it word for word for SQLite to use
the index (SQLite proves a partial index usable by matching the terms). It is a chain of
equalities, not ``kind IN (...)`` (schema versions 3-5): SQLite evaluates an index predicate
for every row inserted, and an IN list there built a lookup table for each row, a quarter of
a batched append's database work."""


class LifecycleReferenceRow(LedgerModel, table=True):
    __tablename__ = "lifecycle_reference"

    thread: str = Field(primary_key=True, foreign_key="thread.id")
    ref: str = Field(primary_key=True)
    source: str
    location: str
    sha256: str  # 64 lowercase hex digits
    seq: int = Field(sa_type=BigInteger)


class LifecycleEvidenceRow(LedgerModel, table=True):
    __tablename__ = "lifecycle_evidence"

    thread: str = Field(primary_key=True, foreign_key="thread.id")
    id: str = Field(primary_key=True)  # ev-N
    num: int = Field(sa_type=BigInteger)
    status: str  # active | superseded | retracted
    text: str
    cites: str  # JSON array of reference ids
    successor: str | None = None
    predecessor: str | None = None
    seq: int = Field(sa_type=BigInteger)
    changed_seq: int | None = Field(default=None, sa_type=BigInteger)


class LifecycleConclusionRow(LedgerModel, table=True):
    __tablename__ = "lifecycle_conclusion"

    thread: str = Field(primary_key=True, foreign_key="thread.id")
    id: str = Field(primary_key=True)  # cc-N
    num: int = Field(sa_type=BigInteger)
    kind: str  # compute | final
    status: str
    stale: bool
    text: str
    cites: str  # JSON array of ev-/cc- ids, as declared
    relies_on: str  # JSON array of ev- ids
    successor: str | None = None
    predecessor: str | None = None
    seq: int = Field(sa_type=BigInteger)
    changed_seq: int | None = Field(default=None, sa_type=BigInteger)


class LifecyclePinRow(LedgerModel, table=True):
    __tablename__ = "lifecycle_pin"

    thread: str = Field(primary_key=True, foreign_key="thread.id")
    id: str = Field(primary_key=True)  # pin-N
    num: int = Field(sa_type=BigInteger)
    kind: str  # definition | decision | task_parameter | open_question
    text: str
    source_seq: int = Field(sa_type=BigInteger)
    live: bool
    unpin_reason: str | None = None
    seq: int = Field(sa_type=BigInteger)
    changed_seq: int | None = Field(default=None, sa_type=BigInteger)


class LifecycleTransitionRow(LedgerModel, table=True):
    __tablename__ = "lifecycle_transition"

    thread: str = Field(primary_key=True, foreign_key="thread.id")
    seq: int = Field(primary_key=True, sa_type=BigInteger)
    kind: str
    accepted: int
    rejected: int
    created: str  # JSON array: refs registered, ids created
    changed: str  # JSON array: ids whose row changed (status, stale flag)
    reasons: str  # JSON array: rejection reason codes, in item order


class _Derived:
    """The Core ``Table`` objects of the derived tables."""

    reference: Table = LifecycleReferenceRow.__table__  # type: ignore[attr-defined]
    evidence: Table = LifecycleEvidenceRow.__table__  # type: ignore[attr-defined]
    conclusion: Table = LifecycleConclusionRow.__table__  # type: ignore[attr-defined]
    pin: Table = LifecyclePinRow.__table__  # type: ignore[attr-defined]
    transition: Table = LifecycleTransitionRow.__table__  # type: ignore[attr-defined]


derived = _Derived()

DERIVED_TABLES: Final[tuple[Table, ...]] = (
    derived.reference,
    derived.evidence,
    derived.conclusion,
    derived.pin,
    derived.transition,
)
"""Every derived table, in the order verification compares them."""

for _table in (derived.evidence, derived.conclusion, derived.pin):
    Index(f"{_table.name}_order", _table.c.thread, _table.c.num)

LIFECYCLE_ENTRY_INDEX: Final = Index(
    "entry_lifecycle",
    tables.entry.c.thread,
    tables.entry.c.seq,
    sqlite_where=text(LIFECYCLE_KIND_SQL),
    postgresql_where=text(LIFECYCLE_KIND_SQL),
)
