"""``registre verify --db``: recompute everything a ledger database claims, thread by thread.

For each thread, in one read snapshot, streaming the entries in batches (memory does not grow
with the thread):

1. **Head row**: the origin is ``LOGNAME/ID`` for a trusted key's name.
2. **Sequence**: the entry rows are ``0, 1, 2, ...`` with no gap or duplicate
   (StoredSeqGapError), none at or beyond the head size (HeadMismatchError).
3. **Leaf hash**: the stored leaf hash is ``H(0x00 ‖ leaf)`` (LeafHashMismatchError).
4. **Entry**: :func:`registre.attest.entries.entry.open_entry` accepts the leaf -- canonical bytes,
   structure, known key, signature, body schema (EntryRejectedError, the cause chained), run
   as :func:`registre.attest.entries._leaf_open.open_leaf` (the bundle verifier's fast path: the
   same verdict and the same errors, without the strict parser for a canonical leaf); it names
   this thread, origin and seq, and its ``kind``/``time`` columns copy the leaf
   (EntryMismatchError).
5. **Prev binding**: ``prev.root`` is the root recomputed over entries ``0 .. seq-1``
   (StoredPrevRootMismatchError).
6. **Stored subtrees**: the hashes stored for the subtrees completed by each batch are exactly
   those recomputed (SubtreeMismatchError), and no other subtree row exists.
7. **Head**: the stored size, root and frontier equal the recomputed ones (HeadMismatchError).
8. **Checkpoints**: every stored checkpoint note verifies under the trusted key for the
   thread's log name with the thread's origin, states the row's size and root, and that root is
   the recomputed root at that size (CheckpointMismatchError; note errors chained).
9. **Lifecycle**: the lifecycle entries, folded in seq order through ``registre.lifecycle.apply``
   (which re-decides every request), give exactly their recorded outcomes and pin only earlier
   entries (StoredLifecycleReplayError at the first that does not), and the derived tables hold
   exactly the rows the fold gives (DerivedStateMismatchError naming the first difference;
   :class:`registre.ledger.store.derived_check.DerivedCheck`). This step holds the thread's
   lifecycle state and the rows of the keyed derived tables (references, evidence,
   conclusions, pins; as value tuples) in memory: O(lifecycle state), the one part of
   verification that grows with the thread. The transition rows (one per lifecycle entry)
   are compared as the fold makes them, and the stored rows are read a page at a time.
10. **Working context**: every compaction keeps the rules of ``specs/context.md``, every
    model call's projection digest reproduces, and the context snapshots are the fold's
    (:mod:`registre.ledger.verify.context`: CompactionInvalidError, ModelCallDigestError,
    ContextSnapshotMismatchError).

The first failure raises, naming the thread and the first bad sequence number. Which keys are
trusted is the caller's choice: pinned verifier keys, or (by default) the keys stored in the
database -- which only proves the database is consistent with itself.

Once every thread is verified, two database-wide steps: no row lies outside a thread's tree
(11) and the append-only triggers and row checks are in place (12)
(:mod:`registre.ledger.verify.rows`). What the witnesses last cosigned -- the one defence of
a database restored together with its ``.published`` record, or of a restored PostgreSQL
database -- is step 14 of ``specs/storage.md`` section 7, run by the caller on the reports
returned here (:func:`registre.ledger.verify.witnesses.check_witnesses`).

Where each part lives: this module holds :func:`verify_database`; one snapshot's threads and
steps 11-12 are :mod:`registre.ledger.verify.snapshot`, the ``jobs`` path
:mod:`registre.ledger.verify.processes`, one thread (steps 1, 7, 9)
:mod:`registre.ledger.verify.thread`, steps 2-6 :mod:`registre.ledger.verify.entries`, step 8
and the rollback check :mod:`registre.ledger.verify.checkpoints`, step 10
:mod:`registre.ledger.verify.context`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from sqlalchemy.exc import DataError, ProgrammingError

from registre.attest.notes import Verifier
from registre.context import TokenCounter
from registre.ledger.core.database import Database
from registre.ledger.verify.processes import verify_in_processes
from registre.ledger.verify.snapshot import column_type_error, verify_threads
from registre.ledger.verify.thread import ThreadReport

__all__ = [
    "verify_database",
]


def verify_database(
    db: Database,
    *,
    thread: str | None = None,
    threads: Sequence[str] | None = None,
    keys: Sequence[Verifier] | None = None,
    batch: int = 1000,
    counters: Sequence[TokenCounter] = (),
    progress: Callable[[int], None] | None = None,
    jobs: int = 1,
    published_record: bool = True,
) -> list[ThreadReport]:
    """Verify every thread (or only ``thread``, or only ``threads``) of ``db``; return one
    report per thread, in thread id order.

    ``keys``: the verifier keys to trust (default: the keys stored in the database).
    ``progress``: called with the number of entries checked after each batch (a progress
    bar's ``update``; with ``jobs``, after each share of threads).
    ``counters``: token counters besides the default one, for step 10.
    ``jobs``: processes verifying shares of the threads side by side (each in its own read
    snapshot; the database-wide checks 11 and 12 run once, here); 1 verifies here, in one
    snapshot. An in-memory database is always verified here.
    ``published_record``: False skips only the check that the ``.published`` record beside a
    SQLite file reaches every stored checkpoint (``registre reanchor``, which writes it); a
    thread behind that record still fails.

    Raises a LedgerTamperedError subclass at the first failure (with ``jobs``: the failure of
    the first failing thread in id order); UnknownThreadError for an unknown thread asked for.
    The cost is linear in the entries: per thread a fixed number of indexed queries.
    """
    wanted = (
        None
        if thread is None and threads is None
        else sorted({*(threads or ()), *([thread] if thread is not None else [])})
    )
    trusted = list(keys) if keys is not None else db.stored_keys()
    try:
        if jobs > 1 and not _in_memory(db):
            return verify_in_processes(
                db, wanted, trusted, batch, counters, progress, jobs, published_record
            )
        return verify_threads(
            db, wanted, trusted, batch, counters, progress, published_record=published_record
        )
    except (DataError, ProgrammingError) as exc:
        raise column_type_error(exc) from None


def _in_memory(db: Database) -> bool:
    url = db.engine.url
    return url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")
