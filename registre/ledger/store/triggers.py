"""Append-only at the database level: triggers installed with the schema (THREATS row 17).

* ``entry``, ``subtree``, ``checkpoint``, ``public_key``, ``schema_version``: every UPDATE and
  DELETE is refused; on PostgreSQL TRUNCATE too (SQLite has no TRUNCATE; its
  ``DELETE FROM t`` is refused like any DELETE).
* ``thread``: DELETE (and TRUNCATE) refused; UPDATE refused unless it keeps ``id`` and
  ``origin`` and does not make ``size`` smaller -- the head only moves forward -- and (schema
  version 5) keeps ``vkey`` once it is set: a thread stays bound to the key that created it.
* ``checkpoint`` (schema version 2): UPDATE refused unless it keeps every column but ``note``
  and the new note starts with the old one -- witness cosignature lines are appended, the
  signed checkpoint is never changed (:func:`checkpoint_note_grows_ddl`).

Every refusal message starts with ``registre: append-only``. The triggers stop edits made
through SQL by mistake or by a careless tool; someone who can drop triggers can still edit,
which ``registre verify --db`` then finds by sequence number.
"""

from __future__ import annotations

import re

__all__ = [
    "APPEND_ONLY_TABLES",
    "REFUSAL_MARK",
    "checkpoint_note_grows_ddl",
    "trigger_ddl",
    "trigger_names",
    "upgrade_checkpoint_triggers_ddl",
    "upgrade_thread_key_ddl",
]

APPEND_ONLY_TABLES = ("entry", "subtree", "checkpoint", "public_key", "schema_version")
REFUSAL_MARK = "registre: append-only"


def trigger_ddl(dialect: str, *, version: int = 2) -> list[str]:
    """The statements that install the triggers of schema ``version`` on a database of
    ``dialect``. Version 1 refused every UPDATE of ``checkpoint``; version 2 lets its note
    grow (kept so that upgrades can be tested from a version-1 database); version 5 also
    keeps a thread's key once it is bound (``thread.vkey``)."""
    if dialect == "sqlite":
        statements = _sqlite(grow_notes=version >= 2, bind_key=version >= 5)
    elif dialect == "postgresql":
        statements = _postgresql(grow_notes=version >= 2, bind_key=version >= 5)
    else:
        raise ValueError(f"no append-only triggers for database dialect {dialect!r}")
    if version >= 2:
        statements += checkpoint_note_grows_ddl(dialect)
    return statements


def checkpoint_note_grows_ddl(dialect: str) -> list[str]:
    """The trigger of schema version 2 on ``checkpoint``: an UPDATE must keep ``thread``,
    ``size``, ``root`` and ``created`` and may only append to ``note`` (cosignature lines)."""
    if dialect == "sqlite":
        return [
            "CREATE TRIGGER checkpoint_note_grows BEFORE UPDATE ON checkpoint "
            "WHEN NEW.thread IS NOT OLD.thread OR NEW.size IS NOT OLD.size "
            "OR NEW.root IS NOT OLD.root OR NEW.created IS NOT OLD.created "
            "OR substr(NEW.note, 1, length(OLD.note)) IS NOT OLD.note "
            f"BEGIN SELECT RAISE(ABORT, '{REFUSAL_MARK}: a checkpoint note only grows "
            "(cosignature lines appended)'); END"
        ]
    if dialect == "postgresql":
        return [
            "CREATE FUNCTION registre_checkpoint_note_grows() RETURNS trigger LANGUAGE plpgsql "
            "AS $$ BEGIN IF NEW.thread IS DISTINCT FROM OLD.thread "
            "OR NEW.size IS DISTINCT FROM OLD.size OR NEW.root IS DISTINCT FROM OLD.root "
            "OR NEW.created IS DISTINCT FROM OLD.created "
            "OR left(NEW.note, length(OLD.note)) IS DISTINCT FROM OLD.note THEN "
            f"RAISE EXCEPTION '{REFUSAL_MARK}: a checkpoint note only grows "
            "(cosignature lines appended)'; END IF; RETURN NEW; END $$",
            "CREATE TRIGGER checkpoint_note_grows BEFORE UPDATE ON checkpoint "
            "FOR EACH ROW EXECUTE FUNCTION registre_checkpoint_note_grows()",
        ]
    raise ValueError(f"no append-only triggers for database dialect {dialect!r}")


def upgrade_checkpoint_triggers_ddl(dialect: str) -> list[str]:
    """Schema version 1 -> 2: replace the trigger refusing every UPDATE of ``checkpoint`` by
    :func:`checkpoint_note_grows_ddl` (DELETE and TRUNCATE stay refused)."""
    if dialect == "sqlite":
        return ["DROP TRIGGER checkpoint_refuse_update", *checkpoint_note_grows_ddl(dialect)]
    if dialect == "postgresql":
        return [
            "DROP TRIGGER checkpoint_refuse_change ON checkpoint",
            "CREATE TRIGGER checkpoint_refuse_change BEFORE DELETE ON checkpoint "
            "FOR EACH ROW EXECUTE FUNCTION registre_refuse_change()",
            *checkpoint_note_grows_ddl(dialect),
        ]
    raise ValueError(f"no append-only triggers for database dialect {dialect!r}")


def upgrade_thread_key_ddl(dialect: str) -> list[str]:
    """Schema version 4 -> 5: the thread trigger also refuses changing a bound ``vkey``."""
    if dialect == "sqlite":
        return ["DROP TRIGGER thread_head_forward", _sqlite_thread_forward(bind_key=True)]
    if dialect == "postgresql":
        return [
            _pg_thread_forward(bind_key=True).replace(
                "CREATE FUNCTION", "CREATE OR REPLACE FUNCTION"
            )
        ]
    raise ValueError(f"no append-only triggers for database dialect {dialect!r}")


def trigger_names(dialect: str) -> list[str]:
    """The names of the triggers of the current schema on ``dialect``."""
    statements = trigger_ddl(dialect, version=5)
    return [m.group(1) for s in statements if (m := re.match(r"CREATE TRIGGER (\w+)", s))]


def _key_kept(new: str, old: str, distinct: str) -> str:
    return f" OR ({old}.vkey IS NOT NULL AND {new}.vkey {distinct} {old}.vkey)"


def _sqlite_thread_forward(*, bind_key: bool) -> str:
    return (
        "CREATE TRIGGER thread_head_forward BEFORE UPDATE ON thread "
        "WHEN NEW.id IS NOT OLD.id OR NEW.origin IS NOT OLD.origin OR NEW.size < OLD.size"
        + (_key_kept("NEW", "OLD", "IS NOT") if bind_key else "")
        + f" BEGIN SELECT RAISE(ABORT, '{REFUSAL_MARK}: a thread head only moves forward'); END"
    )


def _pg_thread_forward(*, bind_key: bool) -> str:
    return (
        "CREATE FUNCTION registre_thread_forward() RETURNS trigger LANGUAGE plpgsql AS $$ "
        "BEGIN IF NEW.id IS DISTINCT FROM OLD.id OR NEW.origin IS DISTINCT FROM OLD.origin "
        "OR NEW.size < OLD.size"
        + (_key_kept("NEW", "OLD", "IS DISTINCT FROM") if bind_key else "")
        + f" THEN RAISE EXCEPTION '{REFUSAL_MARK}: a thread head only moves forward'; END IF; "
        "RETURN NEW; END $$"
    )


def _sqlite(*, grow_notes: bool, bind_key: bool = False) -> list[str]:
    statements = []
    for table in APPEND_ONLY_TABLES:
        for operation in ("UPDATE", "DELETE"):
            if grow_notes and table == "checkpoint" and operation == "UPDATE":
                continue
            statements.append(
                f"CREATE TRIGGER {table}_refuse_{operation.lower()} BEFORE {operation} "
                f"ON {table} BEGIN SELECT RAISE(ABORT, "
                f"'{REFUSAL_MARK}: {operation} on {table} refused'); END"
            )
    statements.append(
        "CREATE TRIGGER thread_refuse_delete BEFORE DELETE ON thread BEGIN SELECT "
        f"RAISE(ABORT, '{REFUSAL_MARK}: DELETE on thread refused'); END"
    )
    statements.append(_sqlite_thread_forward(bind_key=bind_key))
    return statements


def _postgresql(*, grow_notes: bool, bind_key: bool = False) -> list[str]:
    # Run through the driver with (empty) parameters: a literal % is written %%.
    statements = [
        "CREATE FUNCTION registre_refuse_change() RETURNS trigger LANGUAGE plpgsql AS $$ "
        f"BEGIN RAISE EXCEPTION '{REFUSAL_MARK}: %% on %% refused', TG_OP, TG_TABLE_NAME; END $$",
        _pg_thread_forward(bind_key=bind_key),
    ]
    for table in APPEND_ONLY_TABLES:
        operations = "DELETE" if grow_notes and table == "checkpoint" else "UPDATE OR DELETE"
        statements.append(
            f"CREATE TRIGGER {table}_refuse_change BEFORE {operations} ON {table} "
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
