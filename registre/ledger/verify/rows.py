"""The checks ``registre verify --db`` makes before it reads any thread: the database still has
its protections, and holds no row that does not belong to a thread's tree.

* :func:`check_protections` -- every append-only trigger (:mod:`registre.ledger.store.triggers`)
  and row check (:mod:`registre.ledger.store.row_checks`) of the current schema is in place:
  on SQLite the trigger's stored SQL is exactly registre's (a trigger dropped, or removed or
  rewritten through ``PRAGMA writable_schema``, is found); on PostgreSQL each trigger exists
  and is enabled, its function's source is registre's, and each CHECK constraint exists.
  ProtectionMissingError names every one that is not.
* :func:`stray_rows` -- rows that no thread's tree accounts for: an entry at a negative seq or
  at or beyond its thread's head, a checkpoint at a negative size or beyond the head, a
  subtree at a negative level or index, a context snapshot outside its thread, a row of any
  table for a thread that does not exist, and on SQLite a count column that holds something
  other than an integer (a TEXT seq). The per-thread checks read seqs ``0 .. size-1`` in
  order and would never see these rows; :class:`StrayRowsError` lists every one.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from sqlalchemy import Connection, text

from registre.errors import VerificationError
from registre.ledger.store.row_checks import ROW_CHECKS, row_check_ddl
from registre.ledger.store.schema import SCHEMA_VERSION, metadata
from registre.ledger.store.triggers import trigger_ddl, trigger_names

__all__ = [
    "MAX_LISTED",
    "ProtectionMissingError",
    "StrayRowsError",
    "check_protections",
    "stray_rows",
]

MAX_LISTED = 50


class ProtectionMissingError(VerificationError):
    """An append-only trigger or row check of the schema is missing, disabled or altered:
    the database no longer refuses edits by itself (someone with DDL rights removed it)."""

    hint = (
        "find out who altered the schema; then check every row with `registre verify --db "
        "--vkey KEY` against the operator key pinned outside the database"
    )


class StrayRowsError(VerificationError):
    """Rows that no thread's tree accounts for (inserted past the triggers). ``rows`` lists
    them as ``(table, description)``."""

    hint = "these rows were inserted by hand; registre never writes them"

    def __init__(self, rows: list[tuple[str, str]], total: int) -> None:
        self.rows = rows
        self.total = total
        listed = "; ".join(f"{table} {where}" for table, where in rows)
        more = f" (and {total - len(rows)} more)" if total > len(rows) else ""
        super().__init__(f"{total} row(s) belong to no thread's tree: {listed}{more}")


# --- protections --------------------------------------------------------------------------


def check_protections(conn: Connection) -> None:
    """Raise ProtectionMissingError naming every trigger or check of schema
    :data:`SCHEMA_VERSION` that is missing, disabled or altered."""
    dialect = conn.dialect.name
    problems = _sqlite_problems(conn) if dialect == "sqlite" else _postgresql_problems(conn)
    if problems:
        raise ProtectionMissingError(
            f"the database's append-only protections are not intact: {'; '.join(problems)}"
        )


def _created_name(statement: str) -> str:
    match = re.match(r"CREATE (?:TRIGGER|FUNCTION) (\w+)", statement)
    assert match is not None
    return match.group(1)


def _sqlite_problems(conn: Connection) -> list[str]:
    expected = {
        _created_name(s): s
        for s in [*trigger_ddl("sqlite", version=SCHEMA_VERSION), *row_check_ddl("sqlite")]
    }
    stored = {
        str(name): sql
        for name, sql in conn.exec_driver_sql(
            "SELECT name, sql FROM sqlite_master WHERE type = 'trigger'"
        ).all()
    }
    problems = []
    for name, sql in expected.items():
        if name not in stored:
            problems.append(f"trigger {name} is missing")
        elif stored[name] != sql:
            problems.append(f"trigger {name} is not registre's")
    return problems


def _postgresql_problems(conn: Connection) -> list[str]:
    triggers = _pairs(
        conn,
        "SELECT tgname, tgenabled FROM pg_trigger JOIN pg_class ON tgrelid = pg_class.oid "
        "WHERE NOT tgisinternal AND relnamespace = current_schema()::regnamespace",
    )
    problems = []
    for name in trigger_names("postgresql"):
        state = triggers.get(name)
        if state is None:
            problems.append(f"trigger {name} is missing")
        elif state == "D":
            problems.append(f"trigger {name} is disabled")
    sources = _pairs(
        conn,
        "SELECT proname, prosrc FROM pg_proc WHERE pronamespace = current_schema()::regnamespace",
    )
    for statement in trigger_ddl("postgresql", version=SCHEMA_VERSION):
        if statement.startswith("CREATE FUNCTION"):
            name = _created_name(statement)
            body = statement.split("$$")[1].replace("%%", "%")
            if sources.get(name) != body:
                problems.append(
                    f"trigger function {name} is {'altered' if name in sources else 'missing'}"
                )
    constraints = set(
        conn.exec_driver_sql(
            "SELECT conname FROM pg_constraint WHERE contype = 'c' "
            "AND connamespace = current_schema()::regnamespace"
        ).scalars()
    )
    for check in ROW_CHECKS:
        name = f"{check.table}_{check.name}"
        if not check.sqlite_only and name not in constraints:
            problems.append(f"row check {name} is missing")
    return problems


def _pairs(conn: Connection, sql: str) -> dict[str, str]:
    return {str(name): str(value) for name, value in conn.exec_driver_sql(sql).all()}


# --- stray rows ---------------------------------------------------------------------------

_COUNTS = {  # table: (its count columns, the condition for a row outside the tree)
    "entry": (("seq",), "r.seq < 0 OR r.seq >= t.size"),
    "checkpoint": (("size",), "r.size < 0 OR r.size > t.size"),
    "subtree": (("level", "idx"), "r.level < 0 OR r.level >= 64 OR r.idx < 0"),
    "context_snapshot": (
        ("seq", "boundary"),
        "r.seq < 0 OR r.seq >= t.size OR r.boundary < 0 OR r.boundary > r.seq",
    ),
}


def stray_rows(conn: Connection, thread: str | None = None) -> None:
    """Raise StrayRowsError listing (up to :data:`MAX_LISTED`) every row that does not belong
    (module docstring), of ``thread`` only when given."""
    found: list[tuple[str, str]] = []
    total = 0
    for table, keys, condition in _queries(conn.dialect.name):
        where = "(" + condition + ")"
        params: dict[str, str] = {}
        if thread is not None:
            where += " AND r.thread = :thread"
            params["thread"] = thread
        columns = ", ".join(f"r.{key}" for key in keys)
        sql = f"SELECT {columns} FROM {table} r LEFT JOIN thread t ON t.id = r.thread WHERE {where}"
        rows = conn.execute(text(sql), params).all()
        total += len(rows)
        for row in rows[: max(0, MAX_LISTED - len(found))]:
            found.append((table, _describe(keys, row)))
    if total:
        raise StrayRowsError(found, total)


def _queries(dialect: str) -> Iterable[tuple[str, tuple[str, ...], str]]:
    for table in metadata.sorted_tables:
        if table.name == "thread" or "thread" not in table.c:
            continue
        keys = tuple(column.name for column in table.primary_key.columns)
        counts, outside = _COUNTS.get(table.name, ((), ""))
        conditions = ["t.id IS NULL"]
        if outside:
            conditions.append(outside)
        if dialect == "sqlite":
            conditions += [f"typeof(r.{column}) <> 'integer'" for column in counts]
        yield table.name, keys, " OR ".join(conditions)


def _describe(keys: tuple[str, ...], row: Sequence[object]) -> str:
    values = tuple(row)
    parts = [
        f"{key} {value!r}" if not isinstance(value, str) or key != "thread" else f"thread {value}"
        for key, value in zip(keys, values, strict=True)
    ]
    return "(" + ", ".join(parts) + ")"
