"""One thread verified in a read snapshot (steps 1-10 of the module docstring of
:mod:`registre.ledger.verify.database`): :func:`verify_thread` streams the thread's entries in
batches through steps 2-6 (:mod:`registre.ledger.verify.entries`), the lifecycle replay of
step 9 and the working-context check of step 10 (:mod:`registre.ledger.verify.context`), then
checks the head (7), the checkpoints (8, :mod:`registre.ledger.verify.checkpoints`) and the
derived tables (9). :func:`head_values` and :func:`thread_keys` read the head row and the
keys that may have signed the thread.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Row, bindparam, func, select

from registre.attest.entries import LIFECYCLE_KINDS, Entry
from registre.attest.notes import Verifier
from registre.attest.tree import CompactRange
from registre.context import TokenCounter
from registre.ledger.core.append import split_frontier
from registre.ledger.store.derived_check import DerivedCheck
from registre.ledger.store.lifecycle_fold import (
    DerivedTablesDifferError,
    LifecycleHistoryError,
    ThreadFold,
)
from registre.ledger.store.schema import LOWEST_STORED_LEVEL, tables
from registre.ledger.verify.checkpoints import check_checkpoints
from registre.ledger.verify.context import ContextCheck
from registre.ledger.verify.entries import ENTRY_ROWS, blob, check_row, check_subtrees
from registre.ledger.verify.errors import (
    DerivedStateMismatchError,
    HeadMismatchError,
    StoredLifecycleReplayError,
    StoredSeqGapError,
    SubtreeMismatchError,
)

__all__ = ["Head", "ThreadReport", "head_values", "thread_keys", "verify_thread"]

_subtree = tables.subtree
_SUBTREE_COUNT = select(func.count()).where(_subtree.c.thread == bindparam("thread"))


@dataclass(frozen=True)
class ThreadReport:
    """What verification established for one thread."""

    thread: str
    origin: str
    size: int
    root: bytes
    checkpoints: int


Head = tuple[str, str, int, bytes, bytes, str | None]


def head_values(row: Row[Any, Any, Any, Any, Any, Any]) -> Head:
    """The thread row's values, each of the type the schema declares (HeadMismatchError for a
    hostile one: a TEXT root, a TEXT size)."""
    thread = row.id if isinstance(row.id, str) else repr(row.id)
    if not isinstance(row.origin, str) or type(row.size) is not int or row.size < 0:
        raise HeadMismatchError(thread, None, "the head row's origin or size is not of its type")
    root = blob(row.root, thread, None, "head root")
    frontier = blob(row.frontier, thread, None, "head frontier")
    vkey = row.vkey
    if vkey is not None and not isinstance(vkey, str):
        raise HeadMismatchError(thread, None, "the thread's bound key is not text")
    return thread, row.origin, row.size, root, frontier, vkey


def thread_keys(head: Head, trusted: list[Verifier]) -> list[Verifier]:
    """The keys that may have signed this thread: its bound key, which must be trusted;
    every trusted key of its log name for a thread not bound yet (an older database)."""
    thread, _origin, _size, _root, _frontier, vkey = head
    if vkey is None:
        return trusted
    bound = [key for key in trusted if key.vkey() == vkey]
    if not bound:
        name = vkey.rsplit("+", 1)[0]
        raise HeadMismatchError(
            thread, None, f"the thread is bound to the key {name}, which is not trusted"
        ).with_hint("pin the operator's verifier key with --vkey")
    return bound


def verify_thread(
    conn: Connection,
    keys: list[Verifier],
    thread: str,
    origin: str,
    size: int,
    root: bytes,
    frontier: bytes,
    batch: int,
    counters: Sequence[TokenCounter] = (),
    progress: Callable[[int], None] | None = None,
    has_derived_rows: bool = True,
) -> ThreadReport:
    """Steps 1-10 for ``thread`` (head row ``origin``, ``size``, ``root``, ``frontier``),
    its entries read ``batch`` at a time; ``keys`` may have signed it (:func:`thread_keys`).
    ``has_derived_rows``: whether the thread has a row in some derived table (else step 9
    reads none when the fold gives none). Raises at the first failure."""
    # 1. head row: origin LOGNAME/ID for a trusted key's name
    log_keys = [key for key in keys if origin == f"{key.name}/{thread}"]
    if not log_keys:
        raise HeadMismatchError(
            thread, None, f"origin {origin!r} is not NAME/{thread} for any trusted key"
        )
    tree = CompactRange()
    fold = ThreadFold(thread)
    derived = DerivedCheck(conn, thread, batch=batch, stored=has_derived_rows)
    context = ContextCheck(conn, thread, counters, log_keys[0] if len(log_keys) == 1 else None)
    while True:
        rows = conn.execute(
            ENTRY_ROWS, {"thread": thread, "start": tree.size, "batch": batch}
        ).all()
        if not rows:
            break
        first = tree.size
        completed: dict[tuple[int, int], bytes] = {}
        for row in rows:
            entry = check_row(row, tree, keys, thread, origin, size, completed)
            _fold_entry(fold, derived, entry)
            context.check(entry, fold)  # 10. working context
        # 6. stored subtrees completed by this batch
        check_subtrees(conn, thread, first, tree.size, completed)
        if progress is not None:
            progress(len(rows))
    # 7. head
    if tree.size != size:
        raise StoredSeqGapError(thread, tree.size, f"entry missing; the head says {size} entries")
    if tree.root() != root:
        raise HeadMismatchError(thread, None, "stored head root differs from the recomputed root")
    if split_frontier(frontier) != tree.hashes():
        raise HeadMismatchError(thread, None, "stored frontier differs from the recomputed one")
    expected_rows = sum(size >> level for level in range(LOWEST_STORED_LEVEL, size.bit_length()))
    stored_rows = conn.execute(_SUBTREE_COUNT, {"thread": thread}).scalar_one()
    if stored_rows != expected_rows:
        raise SubtreeMismatchError(
            thread, None, f"{stored_rows} subtree rows stored; the tree has {expected_rows}"
        )
    # 8. checkpoints
    count = check_checkpoints(conn, thread, origin, size, log_keys, batch)
    # 9. derived lifecycle tables (the replay itself ran entry by entry in step 4)
    try:
        if has_derived_rows or derived.changes:
            derived.finish()
    except DerivedTablesDifferError as exc:
        raise DerivedStateMismatchError(thread, exc.seq, str(exc)).with_hint(exc.hint) from exc
    context.finish()  # 10. no context snapshot row without its compaction
    return ThreadReport(thread, origin, size, root, count)


def _fold_entry(fold: ThreadFold, derived: DerivedCheck, entry: Entry) -> None:
    # 9. lifecycle replay: every lifecycle decision is re-made and must equal the recorded one;
    # the derived rows it implies go to the comparison with the stored tables
    if entry.kind not in LIFECYCLE_KINDS:
        return
    try:
        derived.add(fold.add_entry(entry.seq, entry.kind, entry.body))
    except LifecycleHistoryError as exc:
        raise StoredLifecycleReplayError(entry.thread, entry.seq, exc.problem) from exc
