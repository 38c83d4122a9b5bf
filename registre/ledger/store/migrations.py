"""Every schema upgrade of a ledger database, in one place.

``MIGRATIONS[v]`` takes a database from schema version ``v`` to ``v + 1``, inside one write
transaction opened by :func:`registre.ledger.store.engine.prepare_schema`, and returns a
one-line description recorded in ``schema_version``; ``specs/storage.md`` says how to add
one. Steps that add derived tables fill them from the entries (the signed record); a thread
whose history does not replay keeps empty tables, and ``verify --db`` names its bad entry:
an upgrade never fails on history.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from sqlalchemy import Connection, inspect, select

from registre.ledger.store.context_snapshots import (
    CONTEXT_SNAPSHOT,
    ContextHistoryError,
    delete_snapshots,
    rebuild_thread_context,
)
from registre.ledger.store.derived import DERIVED_TABLES, LIFECYCLE_ENTRY_INDEX
from registre.ledger.store.lifecycle_fold import LifecycleHistoryError, rebuild_thread
from registre.ledger.store.row_checks import row_check_ddl
from registre.ledger.store.schema import LOWEST_STORED_LEVEL, SCHEMA_VERSION, metadata, tables
from registre.ledger.store.search import rebuild_search
from registre.ledger.store.triggers import (
    trigger_ddl,
    upgrade_checkpoint_triggers_ddl,
    upgrade_thread_key_ddl,
    upgrade_within_head_ddl,
)

__all__ = [
    "MIGRATIONS",
    "add_context_snapshots",
    "add_lifecycle_tables",
    "add_search_index",
    "bind_thread_keys",
    "bound_to_head",
    "drop_low_subtrees",
]


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


def bind_thread_keys(conn: Connection) -> str:
    """Schema version 4 -> 5: ``thread.vkey`` (each thread bound to the key that signed its
    entry 0: the stored key of the log's name with the entry's key id), the thread trigger
    that keeps it, ``context_snapshot.seal`` (existing snapshots stay unsealed, so never
    trusted, until ``registre rebuild`` seals them with the key), and the row checks
    (:mod:`registre.ledger.store.row_checks`; on PostgreSQL ``NOT VALID``: ``verify --db``
    reports rows already there). A thread whose signer cannot be told stays unbound until
    its next append."""
    dialect = conn.dialect.name
    for table, column in (("thread", "vkey"), ("context_snapshot", "seal")):
        # version 3 -> 4 creates context_snapshot from today's model, with its seal
        if column not in {c["name"] for c in inspect(conn).get_columns(table)}:
            conn.exec_driver_sql(f"ALTER TABLE {table} ADD COLUMN {column} TEXT")
    for statement in upgrade_thread_key_ddl(dialect):
        conn.exec_driver_sql(statement)
    for statement in _missing_row_checks(conn):
        conn.exec_driver_sql(statement)
    keys = conn.execute(
        select(tables.public_key.c.vkey, tables.public_key.c.name, tables.public_key.c.key_id)
    ).all()
    threads = conn.execute(select(tables.thread.c.id, tables.thread.c.origin)).all()
    bound = 0
    for thread in threads:
        leaf = conn.execute(
            select(tables.entry.c.leaf).where(
                tables.entry.c.thread == thread.id, tables.entry.c.seq == 0
            )
        ).scalar()
        key_id = _signing_key_id(leaf)
        name = str(thread.origin).rsplit("/", 1)[0]
        matches = [str(k.vkey) for k in keys if k.key_id == key_id and k.name == name]
        if len(matches) == 1:
            conn.execute(
                tables.thread.update()
                .where(tables.thread.c.id == thread.id)
                .values(vkey=matches[0])
            )
            bound += 1
    return f"thread keys, snapshot seals, row checks; {bound} of {len(threads)} thread(s) bound"


def _missing_row_checks(conn: Connection) -> list[str]:
    """The row-check statements for checks this database does not have yet (a database
    made by a newer registre and marked older by a test has some)."""
    if conn.dialect.name == "sqlite":
        return [
            statement.replace("CREATE TRIGGER ", "CREATE TRIGGER IF NOT EXISTS ", 1)
            for statement in row_check_ddl("sqlite")
        ]
    existing = set(
        conn.exec_driver_sql(
            "SELECT conname FROM pg_constraint JOIN pg_namespace ON connamespace = "
            "pg_namespace.oid WHERE nspname = current_schema()"
        ).scalars()
    )
    return [
        statement
        for statement in row_check_ddl("postgresql", upgrade=True)
        if statement.split(" ADD CONSTRAINT ", 1)[1].split(" ", 1)[0] not in existing
    ]


def drop_low_subtrees(conn: Connection) -> str:
    """Schema version 5 -> 6: delete the ``subtree`` rows below :data:`LOWEST_STORED_LEVEL`,
    and recreate the partial index ``entry_lifecycle`` with its predicate as equalities (same
    rows; cheaper to maintain: :data:`registre.ledger.store.derived.LIFECYCLE_KIND_SQL`). A
    hash below that level is now computed from the entries' ``leaf_hash`` (which ``verify
    --db`` checks against each leaf) when a proof needs it. ``subtree`` is append-only, so its
    DELETE trigger is dropped and put back around the one DELETE, in this same transaction:
    no other writer ever sees the table unprotected."""
    dialect = conn.dialect.name
    if dialect == "sqlite":
        name, drop = "subtree_refuse_delete", "DROP TRIGGER subtree_refuse_delete"
    else:
        name, drop = "subtree_refuse_change", "DROP TRIGGER subtree_refuse_change ON subtree"
    create = [s for s in trigger_ddl(dialect, version=SCHEMA_VERSION) if f" {name} " in s]
    conn.exec_driver_sql(drop)
    deleted = conn.execute(
        tables.subtree.delete().where(tables.subtree.c.level < LOWEST_STORED_LEVEL)
    ).rowcount
    for statement in create:
        conn.exec_driver_sql(statement)
    _require_stored_levels(conn)
    # the same partial index, its predicate written as equalities (LIFECYCLE_KIND_SQL)
    conn.exec_driver_sql(f"DROP INDEX IF EXISTS {LIFECYCLE_ENTRY_INDEX.name}")
    LIFECYCLE_ENTRY_INDEX.create(conn)
    return (
        f"subtree rows below level {LOWEST_STORED_LEVEL} removed (computed from the entries' "
        f"leaf hashes); {deleted} row(s); lifecycle entry index predicate as equalities"
    )


def _require_stored_levels(conn: Connection) -> None:
    """Version 6's row check on ``subtree`` (levels from :data:`LOWEST_STORED_LEVEL`) in place
    of version 5's (levels from 0): a version-5 writer still running is then refused by the
    database instead of writing the rows just removed."""
    if conn.dialect.name == "sqlite":
        for operation in ("insert", "update"):
            conn.exec_driver_sql(f"DROP TRIGGER IF EXISTS subtree_row_check_{operation}")
        for statement in row_check_ddl("sqlite"):
            if " ON subtree " in statement:
                conn.exec_driver_sql(statement)
        return
    conn.exec_driver_sql(
        "ALTER TABLE subtree DROP CONSTRAINT IF EXISTS subtree_position_nonnegative"
    )
    for statement in _missing_row_checks(conn):  # unless 4 -> 5 just added it (NOT VALID)
        if " ADD CONSTRAINT subtree_position_stored " in statement:
            # the rows below the level are gone: every row is checked
            conn.exec_driver_sql(statement.replace(" NOT VALID", ""))


def add_search_index(conn: Connection) -> str:
    """Schema version 8 -> 9: the full-text index over the entries' texts
    (:mod:`registre.ledger.store.search`), built from every thread's entries."""
    count = rebuild_search(conn)
    return f"full-text index of the entries' texts; {count} entries indexed"


def _signing_key_id(leaf: object) -> str | None:
    try:
        key = json.loads(bytes(leaf))["entry"]["key"]  # type: ignore[call-overload]
    except (TypeError, ValueError, KeyError):
        return None
    return key if isinstance(key, str) else None


def _version_7_elsewhere(conn: Connection) -> str:
    """Schema version 6 -> 7: a placeholder, reserved for the full-text index of the
    working-context recall (branch ``ctxrecall``) while it was merged beside version 8.
    Databases had passed it by then, so the index came as version 9 (:func:`add_search_index`)
    and this step still changes nothing and says so."""
    del conn
    return "version 7 reserved (full-text index, merged separately): nothing changed"


def bound_to_head(conn: Connection) -> str:
    """Schema version 7 -> 8: ``entry`` and ``checkpoint`` rows past their thread's head are
    refused at INSERT, and a checkpoint note may grow only by whole signature lines (at most
    :data:`registre.ledger.store.triggers.MAX_NOTE_SIGNATURE_LINES`). Rows already there are
    not re-checked: ``verify --db`` names them (``StrayRowsError``), and the writers refuse a
    thread holding them with one error naming the row. Context snapshot seals of version 1
    are dropped (section 2.2 of ``specs/storage.md``: a seal now binds the origin and the
    compaction's leaf hash)."""
    for statement in upgrade_within_head_ddl(conn.dialect.name):
        conn.exec_driver_sql(statement)
    # seals of version 1 signed the thread id, not the origin and the compaction's leaf hash:
    # no longer trusted, so dropped (the fold is rebuilt from the entries; `rebuild` reseals)
    unsealed = conn.execute(
        CONTEXT_SNAPSHOT.update().where(CONTEXT_SNAPSHOT.c.seal.is_not(None)).values(seal=None)
    ).rowcount
    return (
        "entry and checkpoint rows past the head refused; notes grow by signature lines only; "
        f"{unsealed} context snapshot seal(s) of version 1 dropped"
    )


MIGRATIONS: dict[int, Callable[[Connection], str]] = {
    1: _checkpoint_notes_grow,
    2: add_lifecycle_tables,  # derived lifecycle tables, filled from the entries
    3: add_context_snapshots,  # derived context snapshots, filled from the entries
    4: bind_thread_keys,  # thread keys, snapshot seals, row checks
    5: drop_low_subtrees,  # hashes below level 4 computed from the entries' leaf hashes
    6: _version_7_elsewhere,  # a placeholder: the full-text index came as version 9
    7: bound_to_head,  # rows past the head refused; notes grow by signature lines only
    8: add_search_index,  # the full-text index of the entries' texts, built from them
}
