"""``registre verify --db``: recompute everything a ledger database claims, thread by thread.

For each thread, in one read snapshot, streaming the entries in batches (memory does not grow
with the thread):

1. **Head row**: the origin is ``LOGNAME/ID`` for a trusted key's name.
2. **Sequence**: the entry rows are ``0, 1, 2, ...`` with no gap or duplicate
   (StoredSeqGapError), none at or beyond the head size (HeadMismatchError).
3. **Leaf hash**: the stored leaf hash is ``H(0x00 ‖ leaf)`` (LeafHashMismatchError).
4. **Entry**: :func:`registre.attest.entry.open_entry` accepts the leaf -- canonical bytes,
   structure, known key, signature, body schema (EntryRejectedError, the cause chained), run
   as :func:`registre.attest.verify_entries.open_leaf` (the bundle verifier's fast path: the
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
   exactly the rows the fold gives (DerivedStateMismatchError naming the first difference).
   This step holds the thread's lifecycle state and derived rows in memory: O(lifecycle
   state), the one part of verification that grows with the thread.
10. **Working context**: every compaction keeps the rules of ``specs/context.md``, every
    model call's projection digest reproduces, and the context snapshots are the fold's
    (:mod:`registre.ledger.verify.context`: CompactionInvalidError, ModelCallDigestError,
    ContextSnapshotMismatchError).

The first failure raises, naming the thread and the first bad sequence number. Which keys are
trusted is the caller's choice: pinned verifier keys, or (by default) the keys stored in the
database -- which only proves the database is consistent with itself.
"""

from __future__ import annotations

import multiprocessing
import pickle
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ProcessPoolExecutor, as_completed
from dataclasses import dataclass
from typing import Any

from sqlalchemy import Connection, Row, bindparam, func, select, union
from sqlalchemy.exc import DataError, ProgrammingError

from registre.attest.bodies import LIFECYCLE_KINDS
from registre.attest.checkpoint import open_checkpoint
from registre.attest.entry import Entry
from registre.attest.errors import RegistreError
from registre.attest.keys import Verifier
from registre.attest.merkle import CompactRange, leaf_hash, root_at
from registre.attest.verify_entries import open_leaf
from registre.ledger.core.append import split_frontier
from registre.ledger.core.database import Database
from registre.ledger.errors import UnknownThreadError
from registre.ledger.store.derived import DERIVED_TABLES
from registre.ledger.store.engine import make_engine, read_transaction
from registre.ledger.store.lifecycle_fold import (
    DerivedTablesDifferError,
    LifecycleHistoryError,
    ThreadFold,
    compare_derived,
)
from registre.ledger.store.nodes import StoredHashSource
from registre.ledger.store.published import PublishedHead, published_problem, read_published
from registre.ledger.store.schema import tables
from registre.ledger.verify.context import ContextCheck
from registre.ledger.verify.errors import (
    CheckpointMismatchError,
    DerivedStateMismatchError,
    EntryMismatchError,
    EntryRejectedError,
    HeadMismatchError,
    LeafHashMismatchError,
    RolledBackError,
    StoredColumnTypeError,
    StoredLifecycleReplayError,
    StoredPrevRootMismatchError,
    StoredSeqGapError,
    SubtreeMismatchError,
)
from registre.ledger.verify.rows import check_protections, stray_rows
from registre.lifecycle.context import TokenCounter

__all__ = ["ThreadReport", "verify_database"]

_entry = tables.entry
_subtree = tables.subtree
_thread = tables.thread
_checkpoint = tables.checkpoint
_ROWS = (
    select(_entry.c.seq, _entry.c.leaf, _entry.c.leaf_hash, _entry.c.kind, _entry.c.time)
    .where(_entry.c.thread == bindparam("thread"), _entry.c.seq >= bindparam("start"))
    .order_by(_entry.c.seq)
    .limit(bindparam("batch"))
)
_SUBTREES = select(_subtree.c.idx, _subtree.c.hash).where(
    _subtree.c.thread == bindparam("thread"),
    _subtree.c.level == bindparam("level"),
    _subtree.c.idx.between(bindparam("low"), bindparam("high")),
)
_SUBTREE_COUNT = select(func.count()).where(_subtree.c.thread == bindparam("thread"))
_CHECKPOINTS = (
    select(_checkpoint.c.size, _checkpoint.c.root, _checkpoint.c.note)
    .where(_checkpoint.c.thread == bindparam("thread"), _checkpoint.c.size > bindparam("after"))
    .order_by(_checkpoint.c.size)
    .limit(bindparam("batch"))
)


@dataclass(frozen=True)
class ThreadReport:
    """What verification established for one thread."""

    thread: str
    origin: str
    size: int
    root: bytes
    checkpoints: int


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
            return _verify_in_processes(db, wanted, trusted, batch, counters, progress, jobs)
        return _verify_all(db, wanted, trusted, batch, counters, progress)
    except (DataError, ProgrammingError) as exc:
        raise _column_type_error(exc) from None


def _column_type_error(exc: DataError | ProgrammingError) -> StoredColumnTypeError:
    # PostgreSQL refusing a query on a column whose type was changed (a TEXT seq)
    problem = str(exc.orig).strip().splitlines()[0] if exc.orig else type(exc).__name__
    return StoredColumnTypeError(
        f"the database's columns are not of the types registre declares: {problem}"
    )


def _in_memory(db: Database) -> bool:
    url = db.engine.url
    return url.get_backend_name() == "sqlite" and url.database in (None, "", ":memory:")


_HEADS = select(
    _thread.c.id,
    _thread.c.origin,
    _thread.c.size,
    _thread.c.root,
    _thread.c.frontier,
    _thread.c.vkey,
).order_by(_thread.c.id)


_HeadRow = Row[Any, Any, Any, Any, Any, Any]


def _read_heads(conn: Connection, wanted: Sequence[str] | None) -> list[_HeadRow]:
    """The head rows of ``wanted`` (every thread when None), by id; UnknownThreadError naming
    the first id asked for that has none."""
    if wanted is None:
        return list(conn.execute(_HEADS).all())
    heads: list[_HeadRow] = []
    for start in range(0, len(wanted), 500):
        chunk = list(wanted[start : start + 500])
        heads += conn.execute(_HEADS.where(_thread.c.id.in_(chunk))).all()
    found = {row.id for row in heads}
    missing = [thread for thread in wanted if thread not in found]
    if missing:
        raise UnknownThreadError(f"no thread {missing[0]!r} in this database")
    return heads


def _with_derived_rows(conn: Connection) -> set[str]:
    """The threads that have a row in some derived table: one pass over those tables, so a
    thread without lifecycle entries costs no query of its own in step 9."""
    query = union(*(select(table.c.thread).distinct() for table in DERIVED_TABLES))
    return {str(thread) for thread in conn.execute(query).scalars()}


def _verify_all(
    db: Database,
    wanted: Sequence[str] | None,
    trusted: list[Verifier],
    batch: int,
    counters: Sequence[TokenCounter],
    progress: Callable[[int], None] | None = None,
    *,
    database_checks: bool = True,
) -> list[ThreadReport]:
    with read_transaction(db.engine, snapshot=True) as conn:
        heads = _read_heads(conn, wanted)
        published = read_published(conn)
        derived = _with_derived_rows(conn)
        reports = []
        for h in heads:
            head = _head(h)
            thread_keys = _thread_keys(head, trusted)
            report = _verify_thread(
                conn, thread_keys, *head[:5], batch, counters, progress, head[0] in derived
            )
            _check_published(conn, report, published.get(report.origin))
            reports.append(report)
        if database_checks:
            _check_database(conn, wanted)
        return reports


def _check_database(conn: Connection, wanted: Sequence[str] | None) -> None:
    """Steps 11 and 12, once the threads are verified: no row outside a thread's tree (of
    the ``wanted`` threads, or of any), and the triggers and row checks in place."""
    if wanted is None:
        stray_rows(conn)  # 11. no row outside a thread's tree
    else:
        for thread in wanted:
            stray_rows(conn, thread)
    check_protections(conn)  # 12. the triggers and row checks are in place


@dataclass(frozen=True)
class _Share:
    """What one verifying process needs (picklable): the database, the keys, its threads."""

    url: str
    vkeys: tuple[str, ...]
    threads: tuple[str, ...]
    batch: int
    counters: tuple[TokenCounter, ...]


@dataclass(frozen=True)
class _Failure:
    """An exception raised in a verifying process, carried back by value."""

    kind: type[BaseException]
    args: tuple[Any, ...]
    state: dict[str, Any]

    def rebuild(self) -> BaseException:
        error = self.kind.__new__(self.kind)
        error.args = self.args
        error.__dict__.update(self.state)
        return error


def _portable(exc: BaseException) -> _Failure:
    state = {}
    for name, value in vars(exc).items():
        try:
            pickle.dumps(value)
        except Exception:
            continue
        state[name] = value
    return _Failure(type(exc), exc.args, state)


def _verify_share(share: _Share) -> list[ThreadReport] | _Failure:
    """One process's share (runs in the child): its threads verified in one snapshot."""
    engine = make_engine(share.url)
    try:
        db = Database(engine, None, ())
        trusted = [Verifier.from_vkey(vkey) for vkey in share.vkeys]
        try:
            return _verify_all(
                db, share.threads, trusted, share.batch, share.counters, database_checks=False
            )
        except (DataError, ProgrammingError) as exc:
            return _portable(_column_type_error(exc))
        except Exception as exc:
            return _portable(exc)
    finally:
        engine.dispose()


def _verify_in_processes(
    db: Database,
    wanted: Sequence[str] | None,
    trusted: list[Verifier],
    batch: int,
    counters: Sequence[TokenCounter],
    progress: Callable[[int], None] | None,
    jobs: int,
) -> list[ThreadReport]:
    with read_transaction(db.engine) as conn:
        sizes = [(str(row.id), int(row.size)) for row in _read_heads(conn, wanted)]
    # Shares of about equal numbers of entries, several per process so that the processes
    # finish together; each is a run of consecutive ids, so the reports come back in order.
    total = sum(size + 1 for _thread_id, size in sizes)
    target = max(1, total // (jobs * 4))
    shares: list[list[tuple[str, int]]] = [[]]
    weight = 0
    for thread_id, size in sizes:
        if weight >= target:
            shares.append([])
            weight = 0
        shares[-1].append((thread_id, size))
        weight += size + 1
    url = db.engine.url.render_as_string(hide_password=False)
    vkeys = tuple(key.vkey() for key in trusted)
    results: list[list[ThreadReport] | _Failure | None] = [None] * len(shares)
    # fork where there is one: the children start with registre imported (a spawned child
    # imports it again, seconds on a busy machine); they open their own engine, never the
    # parent's connections, and leave through os._exit.
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    with ProcessPoolExecutor(max_workers=min(jobs, len(shares)), mp_context=context) as pool:
        pending = {
            pool.submit(
                _verify_share,
                _Share(url, vkeys, tuple(t for t, _ in share), batch, tuple(counters)),
            ): index
            for index, share in enumerate(shares)
            if share
        }
        for future in as_completed(pending):
            index = pending[future]
            results[index] = future.result()
            if progress is not None:
                progress(sum(size for _thread_id, size in shares[index]))
    reports: list[ThreadReport] = []
    for result in results:
        if isinstance(result, _Failure):
            raise result.rebuild()
        reports += result or []
    with read_transaction(db.engine, snapshot=True) as conn:
        _check_database(conn, wanted)
    return reports


_Head = tuple[str, str, int, bytes, bytes, str | None]


def _head(row: Row[Any, Any, Any, Any, Any, Any]) -> _Head:
    """The thread row's values, each of the type the schema declares (HeadMismatchError for a
    hostile one: a TEXT root, a TEXT size)."""
    thread = row.id if isinstance(row.id, str) else repr(row.id)
    if not isinstance(row.origin, str) or type(row.size) is not int or row.size < 0:
        raise HeadMismatchError(thread, None, "the head row's origin or size is not of its type")
    root = _blob(row.root, thread, None, "head root")
    frontier = _blob(row.frontier, thread, None, "head frontier")
    vkey = row.vkey
    if vkey is not None and not isinstance(vkey, str):
        raise HeadMismatchError(thread, None, "the thread's bound key is not text")
    return thread, row.origin, row.size, root, frontier, vkey


def _thread_keys(head: _Head, trusted: list[Verifier]) -> list[Verifier]:
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


def _check_published(
    conn: Connection, report: ThreadReport, published: PublishedHead | None
) -> None:
    """The thread is not behind the checkpoint recorded outside the database (rollback)."""
    if published is None:
        return
    at = None
    if published.size <= report.size:
        at = root_at(StoredHashSource(conn, report.thread, report.size), published.size)
    problem = published_problem(published, report.size, at)
    if problem is not None:
        raise RolledBackError(report.thread, None, problem)


def _verify_thread(
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

    # 1. head row: origin LOGNAME/ID for a trusted key's name
    log_keys = [key for key in keys if origin == f"{key.name}/{thread}"]
    if not log_keys:
        raise HeadMismatchError(
            thread, None, f"origin {origin!r} is not NAME/{thread} for any trusted key"
        )
    tree = CompactRange()
    fold = ThreadFold(thread, keep_rows=True)
    context = ContextCheck(conn, thread, counters, log_keys[0] if len(log_keys) == 1 else None)
    while True:
        rows = conn.execute(_ROWS, {"thread": thread, "start": tree.size, "batch": batch}).all()
        if not rows:
            break
        first = tree.size
        completed: dict[tuple[int, int], bytes] = {}
        for row in rows:
            entry = _check_row(row, tree, keys, thread, origin, size, completed)
            _fold_entry(fold, entry)
            context.check(entry, fold)  # 10. working context
        # 6. stored subtrees completed by this batch
        _check_subtrees(conn, thread, first, tree.size, completed)
        if progress is not None:
            progress(len(rows))
    # 7. head
    if tree.size != size:
        raise StoredSeqGapError(thread, tree.size, f"entry missing; the head says {size} entries")
    if tree.root() != root:
        raise HeadMismatchError(thread, None, "stored head root differs from the recomputed root")
    if split_frontier(frontier) != tree.hashes():
        raise HeadMismatchError(thread, None, "stored frontier differs from the recomputed one")
    expected_rows = sum(size >> level for level in range(size.bit_length()))
    stored_rows = conn.execute(_SUBTREE_COUNT, {"thread": thread}).scalar_one()
    if stored_rows != expected_rows:
        raise SubtreeMismatchError(
            thread, None, f"{stored_rows} subtree rows stored; the tree has {expected_rows}"
        )
    # 8. checkpoints
    count = _check_checkpoints(conn, thread, origin, size, log_keys, batch)
    # 9. derived lifecycle tables (the replay itself ran entry by entry in step 4)
    assert fold.rows is not None
    try:
        if has_derived_rows or any(fold.rows.values()):
            compare_derived(conn, thread, fold.rows)
    except DerivedTablesDifferError as exc:
        raise DerivedStateMismatchError(thread, exc.seq, str(exc)).with_hint(exc.hint) from exc
    context.finish()  # 10. no context snapshot row without its compaction
    return ThreadReport(thread, origin, size, root, count)


def _fold_entry(fold: ThreadFold, entry: Entry) -> None:
    # 9. lifecycle replay: every lifecycle decision is re-made and must equal the recorded one
    if entry.kind not in LIFECYCLE_KINDS:
        return
    try:
        fold.add_entry(entry.seq, entry.kind, entry.body)
    except LifecycleHistoryError as exc:
        raise StoredLifecycleReplayError(entry.thread, entry.seq, exc.problem) from exc


def _check_row(
    row: Row[Any, Any, Any, Any, Any],
    tree: CompactRange,
    keys: list[Verifier],
    thread: str,
    origin: str,
    size: int,
    completed: dict[tuple[int, int], bytes],
) -> Entry:
    seq = tree.size
    stored_seq = row.seq
    if type(stored_seq) is not int:
        raise EntryMismatchError(thread, seq, f"stored seq is a {type(stored_seq).__name__}")
    leaf = _blob(row.leaf, thread, seq, "leaf")
    # 2. sequence continuity, within the head
    if stored_seq != seq:
        raise StoredSeqGapError(thread, seq, f"entry missing (next stored entry is {stored_seq})")
    if seq >= size:
        raise HeadMismatchError(thread, seq, f"entry beyond the head size {size}")
    # 3. leaf hash
    digest = leaf_hash(leaf)
    if _blob(row.leaf_hash, thread, seq, "leaf hash") != digest:
        raise LeafHashMismatchError(thread, seq, "stored leaf hash is not H(0x00 ‖ leaf)")
    # 4. the entry itself
    try:
        entry = open_leaf(leaf, keys)
    except RegistreError as exc:
        raise EntryRejectedError(thread, seq, f"entry refused: {exc}") from exc
    if entry.thread != thread or entry.log != origin or entry.seq != seq:
        raise EntryMismatchError(
            thread, seq, f"the leaf is entry {entry.seq} of {entry.log}, stored in the wrong place"
        )
    if entry.kind != row.kind or entry.time != row.time:
        raise EntryMismatchError(thread, seq, "kind/time columns differ from the signed entry")
    # 5. prev binding
    if entry.prev_root != tree.root():
        raise StoredPrevRootMismatchError(
            thread, seq, "prev.root is not the root of the entries before it"
        )
    for level, index, node in tree.append(digest):
        completed[(level, index)] = node
    return entry


def _blob(value: object, thread: str, seq: int | None, what: str) -> bytes:
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    raise EntryMismatchError(thread, seq, f"stored {what} is a {type(value).__name__}, not bytes")


def _check_subtrees(
    conn: Connection, thread: str, start: int, stop: int, expected: dict[tuple[int, int], bytes]
) -> None:
    # Subtrees completed by appending leaves start..stop-1: at each level, the indices whose
    # end (index + 1) << level lies in (start, stop].
    stored: dict[tuple[int, int], bytes] = {}
    for level in range(stop.bit_length()):
        low, high = start >> level, (stop >> level) - 1
        if low <= high:
            rows = conn.execute(
                _SUBTREES, {"thread": thread, "level": level, "low": low, "high": high}
            )
            for r in rows:
                if type(r.idx) is not int:
                    raise SubtreeMismatchError(
                        thread, None, "a stored subtree index is not an integer"
                    )
                stored[(level, r.idx)] = _blob(r.hash, thread, None, "subtree hash")
    for (level, index), node in expected.items():
        found = stored.pop((level, index), None)
        if found != node:
            first_leaf = index << level
            problem = "missing" if found is None else "differs from the recomputed hash"
            raise SubtreeMismatchError(
                thread,
                first_leaf,
                f"stored subtree (level {level}, index {index}) covering seq {first_leaf}.."
                f"{((index + 1) << level) - 1} is {problem}",
            )
    if stored:
        level, index = min(stored)
        raise SubtreeMismatchError(
            thread, index << level, f"unexpected stored subtree (level {level}, index {index})"
        )


def _check_checkpoints(
    conn: Connection, thread: str, origin: str, size: int, log_keys: list[Verifier], batch: int
) -> int:
    source = StoredHashSource(conn, thread, size)  # its hashes were all checked in step 6
    count = 0
    after = -1
    while True:
        rows = conn.execute(_CHECKPOINTS, {"thread": thread, "after": after, "batch": batch}).all()
        if not rows:
            return count
        for row in rows:
            if type(row.size) is not int or not isinstance(row.note, str):
                raise CheckpointMismatchError(
                    thread, None, "a stored checkpoint row has a size or note of the wrong type"
                )
            after = row.size
            root = _blob(row.root, thread, None, f"root of the checkpoint at size {after}")
            _check_checkpoint(thread, origin, size, log_keys, source, after, root, row.note)
            count += 1


def _check_checkpoint(
    thread: str,
    origin: str,
    size: int,
    log_keys: Iterable[Verifier],
    source: StoredHashSource,
    at: int,
    root: bytes,
    note: str,
) -> None:
    if at > size:
        raise CheckpointMismatchError(thread, at, f"checkpoint beyond the head size {size}")
    failure: RegistreError | None = None
    for key in log_keys:
        try:
            checkpoint = open_checkpoint(note, key, origin=origin).checkpoint
            break
        except RegistreError as exc:
            failure = exc
    else:
        raise CheckpointMismatchError(
            thread, None, f"checkpoint at size {at} does not verify: {failure}"
        ) from failure
    if checkpoint.size != at or checkpoint.root != root:
        raise CheckpointMismatchError(
            thread,
            None,
            f"checkpoint stored at size {at} states size {checkpoint.size}"
            " or a root other than its row's",
        )
    if root_at(source, at) != root:
        raise CheckpointMismatchError(
            thread, None, f"signed checkpoint at size {at} has a root the entries do not give"
        )
