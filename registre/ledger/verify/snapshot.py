"""The threads of a database verified side by side in one process and one read snapshot
(:func:`verify_threads`), and the database-wide steps 11 and 12 (:func:`check_database`), for
:func:`registre.ledger.verify.database.verify_database`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from sqlalchemy import Connection, Row, select, union
from sqlalchemy.exc import DataError, ProgrammingError

from registre.attest.notes import Verifier
from registre.context import TokenCounter
from registre.ledger.core.database import Database
from registre.ledger.errors import UnknownThreadError
from registre.ledger.store.derived import DERIVED_TABLES
from registre.ledger.store.engine import read_transaction
from registre.ledger.store.published import read_published
from registre.ledger.store.schema import tables
from registre.ledger.verify.checkpoints import check_published
from registre.ledger.verify.errors import StoredColumnTypeError
from registre.ledger.verify.rows import check_protections, stray_rows
from registre.ledger.verify.thread import ThreadReport, head_values, thread_keys, verify_thread

__all__ = ["HeadRow", "check_database", "column_type_error", "read_heads", "verify_threads"]

_thread = tables.thread
_HEADS = select(
    _thread.c.id,
    _thread.c.origin,
    _thread.c.size,
    _thread.c.root,
    _thread.c.frontier,
    _thread.c.vkey,
).order_by(_thread.c.id)


HeadRow = Row[Any, Any, Any, Any, Any, Any]


def read_heads(conn: Connection, wanted: Sequence[str] | None) -> list[HeadRow]:
    """The head rows of ``wanted`` (every thread when None), by id; UnknownThreadError naming
    the first id asked for that has none."""
    if wanted is None:
        return list(conn.execute(_HEADS).all())
    heads: list[HeadRow] = []
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


def verify_threads(
    db: Database,
    wanted: Sequence[str] | None,
    trusted: list[Verifier],
    batch: int,
    counters: Sequence[TokenCounter],
    progress: Callable[[int], None] | None = None,
    *,
    database_checks: bool = True,
    published_record: bool = True,
) -> list[ThreadReport]:
    """Verify the ``wanted`` threads (every thread when None) of ``db`` in one read snapshot,
    in id order, each with its rollback check (``published_record``: also that the record
    beside a SQLite file reaches its checkpoints); then steps 11 and 12 unless
    ``database_checks`` is false (a worker process's share). Raises at the first failure."""
    with read_transaction(db.engine, snapshot=True) as conn:
        heads = read_heads(conn, wanted)
        published = read_published(conn)
        derived = _with_derived_rows(conn)
        reports = []
        for h in heads:
            head = head_values(h)
            keys = thread_keys(head, trusted)
            report = verify_thread(
                conn, keys, *head[:5], batch, counters, progress, head[0] in derived
            )
            check_published(
                conn,
                report.thread,
                report.size,
                published.get(report.origin),
                record=published_record,
            )
            reports.append(report)
        if database_checks:
            check_database(conn, wanted)
        return reports


def check_database(conn: Connection, wanted: Sequence[str] | None) -> None:
    """Steps 11 and 12, once the threads are verified: no row outside a thread's tree (of
    the ``wanted`` threads, or of any), and the triggers and row checks in place."""
    if wanted is None:
        stray_rows(conn)  # 11. no row outside a thread's tree
    else:
        for thread in wanted:
            stray_rows(conn, thread)
    check_protections(conn)  # 12. the triggers and row checks are in place


def column_type_error(exc: DataError | ProgrammingError) -> StoredColumnTypeError:
    """The StoredColumnTypeError for a query the database refused over a column's type."""
    # PostgreSQL refusing a query on a column whose type was changed (a TEXT seq)
    problem = str(exc.orig).strip().splitlines()[0] if exc.orig else type(exc).__name__
    return StoredColumnTypeError(
        f"the database's columns are not of the types registre declares: {problem}"
    )
