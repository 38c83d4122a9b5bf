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
    "MAX_NOTE_SIGNATURE_LINES",
    "REFUSAL_MARK",
    "checkpoint_note_grows_ddl",
    "trigger_ddl",
    "trigger_names",
    "upgrade_checkpoint_triggers_ddl",
    "upgrade_thread_key_ddl",
    "upgrade_within_head_ddl",
    "within_head_ddl",
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
        statements += checkpoint_note_grows_ddl(dialect, cosignatures_only=version >= 8)
    if version >= 8:
        statements += within_head_ddl(dialect)
    return statements


MAX_NOTE_SIGNATURE_LINES = 32
"""Signature lines a stored checkpoint note may hold (schema version 8): the log's own and
witness cosignatures. Well below :data:`registre.attest.notes.note.MAX_SIGNATURES`, so a note the
store accepted is always one a verifier reads."""

_NOTE_LINE = "— "  # every signature line starts with an em dash and a space (C2SP signed-note)


def _sqlite_cosignature_lines() -> str:
    """SQLite: the text appended to a note (``NEW.note`` past ``OLD.note``) is not one or more
    signature lines, or the note then holds more than :data:`MAX_NOTE_SIGNATURE_LINES`."""
    added = "substr(NEW.note, length(OLD.note) + 1)"
    body = "substr(NEW.note, length(OLD.note) + 1, length(NEW.note) - length(OLD.note) - 1)"
    return (
        f" OR (length(NEW.note) > length(OLD.note) AND (substr({added}, 1, 2) IS NOT "
        f"'{_NOTE_LINE}' OR substr(NEW.note, -1) IS NOT char(10) "
        f"OR instr(replace({body}, char(10) || '{_NOTE_LINE}', ''), char(10)) > 0 "
        f"OR (length(NEW.note) - length(replace(NEW.note, char(10) || '{_NOTE_LINE}', ''))) / 3"
        f" > {MAX_NOTE_SIGNATURE_LINES})) "
    )


def _pg_cosignature_lines() -> str:
    """PostgreSQL: :func:`_sqlite_cosignature_lines`."""
    added = "substr(NEW.note, length(OLD.note) + 1)"
    body = "left(" + added + ", -1)"
    return (
        f" OR (length(NEW.note) > length(OLD.note) AND (left({added}, 2) <> '{_NOTE_LINE}' "
        f"OR right(NEW.note, 1) <> chr(10) "
        f"OR strpos(replace({body}, chr(10) || '{_NOTE_LINE}', ''), chr(10)) > 0 "
        f"OR (length(NEW.note) - length(replace(NEW.note, chr(10) || '{_NOTE_LINE}', ''))) / 3"
        f" > {MAX_NOTE_SIGNATURE_LINES}))"
    )


def within_head_ddl(dialect: str) -> list[str]:
    """Schema version 8: an ``entry`` row at or past its thread's head, or a ``checkpoint``
    row past it, is refused at INSERT. The append transaction moves the head first and then
    inserts the entries below it (:mod:`registre.ledger.core.append`), so nothing can be
    planted where a later append will write."""
    entry_message = f"{REFUSAL_MARK}: an entry row ahead of its thread head"
    checkpoint_message = f"{REFUSAL_MARK}: a checkpoint row ahead of its thread head"
    if dialect == "sqlite":
        return [
            "CREATE TRIGGER entry_within_head BEFORE INSERT ON entry "
            "WHEN NEW.seq >= coalesce((SELECT size FROM thread WHERE id = NEW.thread), 0) "
            f"BEGIN SELECT RAISE(ABORT, '{entry_message}'); END",
            "CREATE TRIGGER checkpoint_within_head BEFORE INSERT ON checkpoint "
            "WHEN NEW.size > coalesce((SELECT size FROM thread WHERE id = NEW.thread), -1) "
            f"BEGIN SELECT RAISE(ABORT, '{checkpoint_message}'); END",
        ]
    if dialect == "postgresql":
        # statement-level, over the transition table: one check per INSERT, not per row
        return [
            "CREATE FUNCTION registre_entry_within_head() RETURNS trigger LANGUAGE plpgsql "
            "AS $$ BEGIN IF EXISTS (SELECT 1 FROM added LEFT JOIN thread ON thread.id = "
            "added.thread WHERE thread.id IS NULL OR added.seq >= thread.size) THEN "
            f"RAISE EXCEPTION '{entry_message}'; END IF; RETURN NULL; END $$",
            "CREATE TRIGGER entry_within_head AFTER INSERT ON entry REFERENCING NEW TABLE AS "
            "added FOR EACH STATEMENT EXECUTE FUNCTION registre_entry_within_head()",
            "CREATE FUNCTION registre_checkpoint_within_head() RETURNS trigger LANGUAGE plpgsql "
            "AS $$ BEGIN IF EXISTS (SELECT 1 FROM added LEFT JOIN thread ON thread.id = "
            "added.thread WHERE thread.id IS NULL OR added.size > thread.size) THEN "
            f"RAISE EXCEPTION '{checkpoint_message}'; END IF; RETURN NULL; END $$",
            "CREATE TRIGGER checkpoint_within_head AFTER INSERT ON checkpoint REFERENCING NEW "
            "TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION "
            "registre_checkpoint_within_head()",
        ]
    raise ValueError(f"no append-only triggers for database dialect {dialect!r}")


def upgrade_within_head_ddl(dialect: str) -> list[str]:
    """Schema version 7 -> 8: :func:`within_head_ddl`, and the note trigger of version 2
    replaced by the one letting only signature lines be appended (each dropped first if
    there: the step may be run on a database that has them, and changes it to the same)."""
    if dialect == "sqlite":
        drop = [
            f"DROP TRIGGER IF EXISTS {name}"
            for name in ("checkpoint_note_grows", "entry_within_head", "checkpoint_within_head")
        ]
    elif dialect == "postgresql":
        drop = [
            "DROP TRIGGER IF EXISTS checkpoint_note_grows ON checkpoint",
            "DROP TRIGGER IF EXISTS entry_within_head ON entry",
            "DROP TRIGGER IF EXISTS checkpoint_within_head ON checkpoint",
            "DROP FUNCTION IF EXISTS registre_checkpoint_note_grows()",
            "DROP FUNCTION IF EXISTS registre_entry_within_head()",
            "DROP FUNCTION IF EXISTS registre_checkpoint_within_head()",
        ]
    else:
        raise ValueError(f"no append-only triggers for database dialect {dialect!r}")
    return [
        *drop,
        *checkpoint_note_grows_ddl(dialect, cosignatures_only=True),
        *within_head_ddl(dialect),
    ]


def checkpoint_note_grows_ddl(dialect: str, *, cosignatures_only: bool = False) -> list[str]:
    """The trigger of schema version 2 on ``checkpoint``: an UPDATE must keep ``thread``,
    ``size``, ``root`` and ``created`` and may only append to ``note``. ``cosignatures_only``
    (version 8): what is appended must be whole signature lines (``— NAME SIG``), the note
    then holding at most :data:`MAX_NOTE_SIGNATURE_LINES` (the database cannot check a
    signature: the key holder's readers do, :mod:`registre.ledger.core.stored_checkpoint`)."""
    if dialect == "sqlite":
        return [
            "CREATE TRIGGER checkpoint_note_grows BEFORE UPDATE ON checkpoint "
            "WHEN NEW.thread IS NOT OLD.thread OR NEW.size IS NOT OLD.size "
            "OR NEW.root IS NOT OLD.root OR NEW.created IS NOT OLD.created "
            "OR substr(NEW.note, 1, length(OLD.note)) IS NOT OLD.note "
            + (_sqlite_cosignature_lines() if cosignatures_only else "")
            + f"BEGIN SELECT RAISE(ABORT, '{REFUSAL_MARK}: a checkpoint note only grows "
            "(cosignature lines appended)'); END"
        ]
    if dialect == "postgresql":
        return [
            "CREATE FUNCTION registre_checkpoint_note_grows() RETURNS trigger LANGUAGE plpgsql "
            "AS $$ BEGIN IF NEW.thread IS DISTINCT FROM OLD.thread "
            "OR NEW.size IS DISTINCT FROM OLD.size OR NEW.root IS DISTINCT FROM OLD.root "
            "OR NEW.created IS DISTINCT FROM OLD.created "
            "OR left(NEW.note, length(OLD.note)) IS DISTINCT FROM OLD.note"
            + (_pg_cosignature_lines() if cosignatures_only else "")
            + " THEN "
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
    statements = trigger_ddl(dialect, version=8)
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
