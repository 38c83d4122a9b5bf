"""Row checks (schema version 5): what a row of the signed tables may hold, refused at INSERT
and UPDATE by the database itself, whoever writes it.

The append-only triggers (:mod:`registre.ledger.store.triggers`) stop rows from changing; they do
not stop a forged row from being *added* (an entry at seq -1, a checkpoint at size -5 copied
from size 30). These checks refuse rows no registre writer produces: negative sizes, seqs,
levels and indices, hashes and roots that are not 32 bytes, a context snapshot whose boundary
is not before its compaction -- and on SQLite, whose columns take any type, a value of the
wrong storage class (a TEXT seq, a TEXT root).

* **PostgreSQL**: ``CHECK`` constraints named ``<table>_<name>``; a database upgraded from
  version 4 gets them ``NOT VALID`` (rows already there are not re-checked by the upgrade:
  ``registre verify --db`` reports them, :func:`registre.ledger.verify.rows.stray_rows`).
* **SQLite** cannot add a constraint to an existing table, so every database (new or
  upgraded) gets the same checks as ``BEFORE INSERT`` and ``BEFORE UPDATE`` triggers named
  ``<table>_row_check_insert`` / ``_update``; their refusals start with :data:`CHECK_MARK`.

Like the triggers, these stop mistakes and forgers without DDL rights; someone who drops them
can still insert, and ``verify --db`` then names every row that does not belong.
"""

from __future__ import annotations

from dataclasses import dataclass

from registre.ledger.store.schema import LOWEST_STORED_LEVEL

__all__ = ["CHECK_MARK", "ROW_CHECKS", "RowCheck", "row_check_ddl", "row_check_trigger_names"]

CHECK_MARK = "registre: row check"


@dataclass(frozen=True)
class RowCheck:
    """One condition on the rows of ``table``: ``condition`` names columns as ``{p}column``
    (``{p}`` is empty in a constraint, ``NEW.`` in a trigger). ``sqlite_only``: a storage-class
    check that PostgreSQL's column types already make."""

    table: str
    name: str
    condition: str
    sqlite_only: bool = False


def _blob(table: str, column: str) -> RowCheck:
    return RowCheck(table, f"{column}_blob", f"typeof({{p}}{column}) = 'blob'", sqlite_only=True)


def _integer(table: str, column: str) -> RowCheck:
    return RowCheck(
        table, f"{column}_integer", f"typeof({{p}}{column}) = 'integer'", sqlite_only=True
    )


ROW_CHECKS: tuple[RowCheck, ...] = (
    RowCheck("thread", "size_nonnegative", "{p}size >= 0"),
    RowCheck("thread", "root_length", "length({p}root) = 32"),
    _integer("thread", "size"),
    _blob("thread", "root"),
    _blob("thread", "frontier"),
    RowCheck("entry", "seq_nonnegative", "{p}seq >= 0"),
    RowCheck("entry", "leaf_hash_length", "length({p}leaf_hash) = 32"),
    _integer("entry", "seq"),
    _blob("entry", "leaf"),
    _blob("entry", "leaf_hash"),
    RowCheck(
        "subtree",
        "position_stored",
        f"{{p}}level >= {LOWEST_STORED_LEVEL} AND {{p}}level < 64 AND {{p}}idx >= 0",
    ),
    RowCheck("subtree", "hash_length", "length({p}hash) = 32"),
    _integer("subtree", "level"),
    _integer("subtree", "idx"),
    _blob("subtree", "hash"),
    RowCheck("checkpoint", "size_nonnegative", "{p}size >= 0"),
    RowCheck("checkpoint", "root_length", "length({p}root) = 32"),
    _integer("checkpoint", "size"),
    _blob("checkpoint", "root"),
    RowCheck(
        "context_snapshot",
        "boundary_before_seq",
        "{p}seq >= 0 AND {p}boundary >= 0 AND {p}boundary <= {p}seq",
    ),
    _integer("context_snapshot", "seq"),
    _integer("context_snapshot", "boundary"),
)
"""The checks of schema version 6 (specs/storage.md section 3.1): those of version 5, with a
``subtree`` row's level at least :data:`LOWEST_STORED_LEVEL` (version 5: ``subtree_position_
nonnegative``, level at least 0), so a writer of version 5 still running beside an upgraded
database has its appends refused instead of storing the rows version 6 removed."""

_TABLES = tuple(dict.fromkeys(check.table for check in ROW_CHECKS))


def row_check_ddl(dialect: str, *, upgrade: bool = False) -> list[str]:
    """The statements installing :data:`ROW_CHECKS` on a database of ``dialect``.
    ``upgrade``: on PostgreSQL, add the constraints ``NOT VALID`` (existing rows unchecked)."""
    if dialect == "postgresql":
        suffix = " NOT VALID" if upgrade else ""
        return [
            f"ALTER TABLE {check.table} ADD CONSTRAINT {check.table}_{check.name} "
            f"CHECK ({check.condition.format(p='')}){suffix}"
            for check in ROW_CHECKS
            if not check.sqlite_only
        ]
    if dialect == "sqlite":
        statements = []
        for table in _TABLES:
            conditions = " AND ".join(
                f"({check.condition.format(p='NEW.')})"
                for check in ROW_CHECKS
                if check.table == table
            )
            for operation in ("INSERT", "UPDATE"):
                statements.append(
                    f"CREATE TRIGGER {table}_row_check_{operation.lower()} BEFORE {operation} "
                    f"ON {table} WHEN NOT ({conditions}) BEGIN SELECT RAISE(ABORT, "
                    f"'{CHECK_MARK}: a {table} row with a value no registre writer stores'); END"
                )
        return statements
    raise ValueError(f"no row checks for database dialect {dialect!r}")


def row_check_trigger_names() -> list[str]:
    """The SQLite trigger names :func:`row_check_ddl` creates."""
    return [f"{table}_row_check_{op}" for table in _TABLES for op in ("insert", "update")]
