"""Append-only at the database level: triggers installed with the schema (THREATS row 17).

* ``entry``, ``subtree``, ``checkpoint``, ``public_key``, ``schema_version``: every UPDATE and
  DELETE is refused; on PostgreSQL TRUNCATE too (SQLite has no TRUNCATE; its
  ``DELETE FROM t`` is refused like any DELETE).
* ``thread``: DELETE (and TRUNCATE) refused; UPDATE refused unless it keeps ``id`` and
  ``origin`` and does not make ``size`` smaller -- the head only moves forward.

Every refusal message starts with ``registre: append-only``. The triggers stop edits made
through SQL by mistake or by a careless tool; someone who can drop triggers can still edit,
which ``registre verify --db`` then finds by sequence number.
"""

from __future__ import annotations

__all__ = ["APPEND_ONLY_TABLES", "REFUSAL_MARK", "trigger_ddl"]

APPEND_ONLY_TABLES = ("entry", "subtree", "checkpoint", "public_key", "schema_version")
REFUSAL_MARK = "registre: append-only"


def trigger_ddl(dialect: str) -> list[str]:
    """The statements that install the triggers on a database of ``dialect``."""
    if dialect == "sqlite":
        return _sqlite()
    if dialect == "postgresql":
        return _postgresql()
    raise ValueError(f"no append-only triggers for database dialect {dialect!r}")


def _sqlite() -> list[str]:
    statements = []
    for table in APPEND_ONLY_TABLES:
        for operation in ("UPDATE", "DELETE"):
            statements.append(
                f"CREATE TRIGGER {table}_refuse_{operation.lower()} BEFORE {operation} "
                f"ON {table} BEGIN SELECT RAISE(ABORT, "
                f"'{REFUSAL_MARK}: {operation} on {table} refused'); END"
            )
    statements.append(
        "CREATE TRIGGER thread_refuse_delete BEFORE DELETE ON thread BEGIN SELECT "
        f"RAISE(ABORT, '{REFUSAL_MARK}: DELETE on thread refused'); END"
    )
    statements.append(
        "CREATE TRIGGER thread_head_forward BEFORE UPDATE ON thread "
        "WHEN NEW.id IS NOT OLD.id OR NEW.origin IS NOT OLD.origin OR NEW.size < OLD.size "
        f"BEGIN SELECT RAISE(ABORT, '{REFUSAL_MARK}: a thread head only moves forward'); END"
    )
    return statements


def _postgresql() -> list[str]:
    # Run through the driver with (empty) parameters: a literal % is written %%.
    statements = [
        "CREATE FUNCTION registre_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$ "
        f"BEGIN RAISE EXCEPTION '{REFUSAL_MARK}: %% on %% refused', TG_OP, TG_TABLE_NAME; END $$",
        "CREATE FUNCTION registre_thread_forward() RETURNS trigger LANGUAGE plpgsql AS $$ "
        "BEGIN IF NEW.id IS DISTINCT FROM OLD.id OR NEW.origin IS DISTINCT FROM OLD.origin "
        "OR NEW.size < OLD.size THEN "
        f"RAISE EXCEPTION '{REFUSAL_MARK}: a thread head only moves forward'; END IF; "
        "RETURN NEW; END $$",
    ]
    for table in APPEND_ONLY_TABLES:
        statements.append(
            f"CREATE TRIGGER {table}_refuse_change BEFORE UPDATE OR DELETE ON {table} "
            "FOR EACH ROW EXECUTE FUNCTION registre_refuse_change()"
        )
    for table in (*APPEND_ONLY_TABLES, "thread"):
        statements.append(
            f"CREATE TRIGGER {table}_refuse_truncate BEFORE TRUNCATE ON {table} "
            "FOR EACH STATEMENT EXECUTE FUNCTION registre_refuse_change()"
        )
    statements += [
        "CREATE TRIGGER thread_refuse_delete BEFORE DELETE ON thread "
        "FOR EACH ROW EXECUTE FUNCTION registre_refuse_change()",
        "CREATE TRIGGER thread_head_forward BEFORE UPDATE ON thread "
        "FOR EACH ROW EXECUTE FUNCTION registre_thread_forward()",
    ]
    return statements
