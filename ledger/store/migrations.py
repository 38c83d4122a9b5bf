"""Every schema upgrade of a ledger database, in one place.

``MIGRATIONS[v]`` takes a database from schema version ``v`` to ``v + 1``, inside one write
transaction opened by :func:`registre.ledger.store.engine.prepare_schema`, and returns a
one-line description recorded in ``schema_version``; ``specs/storage.md`` says how to add
one. Steps that add derived tables fill them from the entries (the signed record); a thread
whose history does not replay keeps empty tables, and ``verify --db`` names its bad entry:
an upgrade never fails on history.
"""

from __future__ import annotations

from collections.abc import Callable

from sqlalchemy import Connection, select

from registre.ledger.store.context_snapshots import (
    CONTEXT_SNAPSHOT,
    ContextHistoryError,
    delete_snapshots,
    rebuild_thread_context,
)
from registre.ledger.store.derived import DERIVED_TABLES, LIFECYCLE_ENTRY_INDEX
from registre.ledger.store.lifecycle_fold import LifecycleHistoryError, rebuild_thread
from registre.ledger.store.schema import metadata, tables
from registre.ledger.store.triggers import upgrade_checkpoint_triggers_ddl

__all__ = ["MIGRATIONS", "add_context_snapshots", "add_lifecycle_tables"]


def _checkpoint_notes_grow(conn: Connection) -> str:
    """Version 1 -> 2: checkpoint notes may grow by cosignature lines (a trigger change)."""
    for statement in upgrade_checkpoint_triggers_ddl(conn.dialect.name):
        conn.exec_driver_sql(statement)
    return "checkpoint notes may grow by witness cosignature lines"


def add_lifecycle_tables(conn: Connection) -> str:
    """Schema version 2 -> 3: create the derived tables and the partial index on ``entry``,
    then fill the tables from each thread's lifecycle entries. A thread whose lifecycle
    history does not replay keeps empty tables (its writers and ``verify --db`` will name the
    bad entry); the upgrade itself never fails on history."""
    metadata.create_all(conn, tables=list(DERIVED_TABLES))
    LIFECYCLE_ENTRY_INDEX.create(conn, checkfirst=True)
    heads = conn.execute(select(tables.thread.c.id, tables.thread.c.size)).all()
    skipped = 0
    for head in heads:
        try:
            rebuild_thread(conn, str(head.id), int(head.size))
        except LifecycleHistoryError:
            skipped += 1
    description = (
        f"lifecycle derived tables and entry index; {len(heads) - skipped} thread(s) built"
    )
    if skipped:
        description += f", {skipped} left empty (lifecycle history does not replay)"
    return description


def add_context_snapshots(conn: Connection) -> str:
    """Schema version 3 -> 4: create ``context_snapshot`` and fill it from each thread's
    entries. A thread whose entries do not fold keeps no rows (``verify --db`` names its bad
    entry); the upgrade itself never fails on history."""
    metadata.create_all(conn, tables=[CONTEXT_SNAPSHOT])
    heads = conn.execute(select(tables.thread.c.id, tables.thread.c.size)).all()
    skipped = 0
    for head in heads:
        try:
            rebuild_thread_context(conn, str(head.id), int(head.size))
        except ContextHistoryError:
            delete_snapshots(conn, str(head.id))
            skipped += 1
    description = f"context snapshots; {len(heads) - skipped} thread(s) built"
    if skipped:
        description += f", {skipped} left empty (context history does not fold)"
    return description


MIGRATIONS: dict[int, Callable[[Connection], str]] = {
    1: _checkpoint_notes_grow,
    2: add_lifecycle_tables,  # derived lifecycle tables, filled from the entries
    3: add_context_snapshots,  # derived context snapshots, filled from the entries
}
