"""The failures of ``registre verify --db``: each check of :mod:`registre.ledger.verify.database`
and :mod:`registre.ledger.verify.context` raises its own subclass of :class:`LedgerTamperedError`,
naming the thread and the first bad seq. The names say what was found in the database
(``Stored...``) where the bundle verifier (:mod:`registre.attest`) has a check of the same kind.
"""

from __future__ import annotations

from registre.errors import VerificationError
from registre.ledger.store.published import REANCHOR_HINT

__all__ = [
    "BehindWitnessError",
    "CheckpointMismatchError",
    "CompactionInvalidError",
    "ContextSnapshotMismatchError",
    "DerivedStateMismatchError",
    "EntryMismatchError",
    "EntryRejectedError",
    "ForkedFromWitnessError",
    "HeadMismatchError",
    "LeafHashMismatchError",
    "LedgerTamperedError",
    "ModelCallDigestError",
    "RecordRolledBackError",
    "RolledBackError",
    "StoredColumnTypeError",
    "StoredLifecycleReplayError",
    "StoredPrevRootMismatchError",
    "StoredSeqGapError",
    "SubtreeMismatchError",
]


class LedgerTamperedError(VerificationError):
    """The database does not match what its entries prove. ``thread`` and ``seq`` (None when
    no single entry is to blame) name the first place found."""

    def __init__(self, thread: str, seq: int | None, problem: str) -> None:
        self.thread = thread
        self.seq = seq
        where = f"thread {thread}" + (f" seq {seq}" if seq is not None else "")
        super().__init__(f"{where}: {problem}")


class StoredSeqGapError(LedgerTamperedError):
    """Entry rows out of sequence: a gap, a duplicate, or a missing entry."""


class LeafHashMismatchError(LedgerTamperedError):
    """A stored leaf hash that is not the hash of the stored leaf."""


class EntryRejectedError(LedgerTamperedError):
    """A stored leaf that :func:`registre.attest.entries.entry.open_entry` refuses (cause
    chained)."""


class EntryMismatchError(LedgerTamperedError):
    """A valid entry stored in the wrong place, or with columns that do not copy it."""


class StoredPrevRootMismatchError(LedgerTamperedError):
    """An entry whose ``prev.root`` is not the root of the entries before it."""


class SubtreeMismatchError(LedgerTamperedError):
    """A stored subtree hash that differs from the recomputed one, or one too many."""


class HeadMismatchError(LedgerTamperedError):
    """A thread head (size, root, frontier) that differs from the recomputed tree."""


class CheckpointMismatchError(LedgerTamperedError):
    """A stored checkpoint that does not verify or does not match the recomputed tree."""


class RolledBackError(LedgerTamperedError):
    """A thread behind the checkpoint recorded outside the database: the database was
    restored from an older copy or replaced (``<database>.published``, specs/storage.md)."""

    hint = "restore the newest copy of the database, with its -wal file"


class RecordRolledBackError(RolledBackError):
    """The ``<database>.published`` record beside a SQLite file does not reach a checkpoint
    the database holds, signed by the thread's key: the record was deleted or rolled back,
    or the database moved or restored without it (issue 29 item 4)."""

    hint = REANCHOR_HINT


class BehindWitnessError(LedgerTamperedError):
    """A pinned witness cosigned a larger tree of the thread than the database holds (or, by
    its answer to add-checkpoint, than its largest signed checkpoint): the database is behind
    what was published -- restored from an older copy, with or without its ``.published``
    record (``registre verify --db --witness``, specs/storage.md 7, step 14)."""

    hint = (
        "restore the newest copy of the database (its -wal file too) and do not extend this "
        "one: its next checkpoint would fork the history the witnesses cosigned"
    )


class ForkedFromWitnessError(LedgerTamperedError):
    """A pinned witness cosigned, at a size the database holds, a root other than the
    database's (or refused its checkpoint as inconsistent with the one it holds): the
    database holds another history than the one published (``registre verify --db
    --witness``, specs/storage.md 7, step 14)."""

    hint = (
        "this database is not the history the witnesses cosigned: restore the copy they saw "
        "(`registre witness show --origin ORIGIN` on a witness prints what it cosigned)"
    )


class StoredColumnTypeError(VerificationError):
    """A table whose column was given another type (PostgreSQL: ``ALTER COLUMN seq TYPE
    text``): the queries of ``verify --db`` cannot even run on it."""

    hint = "restore the database from a copy made by registre (`registre backup`)"


class StoredLifecycleReplayError(LedgerTamperedError):
    """A signed lifecycle entry whose recorded outcome is not what the rules decide when the
    thread's lifecycle is replayed (a forged or altered decision), or a pin of a later entry."""


class DerivedStateMismatchError(LedgerTamperedError):
    """A derived lifecycle table (evidence, references, conclusions, pins, transitions) that
    differs from the fold of the entries (a cache: rebuilding repairs it)."""


class CompactionInvalidError(LedgerTamperedError):
    """A signed ``context.compaction`` that breaks a rule of ``specs/context.md`` section 7
    (THREATS row 19: a range or pointer out of bounds, a split tool call, a folded recent turn,
    an invented quote, a dropped pin, wrong token counts); the rule's error is chained."""


class ModelCallDigestError(LedgerTamperedError):
    """A signed ``model.call`` whose projection digest does not reproduce from the ledger
    prefix it names (or that names no earlier prefix, does not fit its budget, or uses a
    counter the verifier lacks); the cause is chained."""


class ContextSnapshotMismatchError(LedgerTamperedError):
    """A ``context_snapshot`` row missing, extra, or not the fold of the entries (a cache:
    rebuilding repairs it)."""
