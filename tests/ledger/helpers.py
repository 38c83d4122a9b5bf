"""Shared helpers for the ledger tests (not fixtures: plain functions)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, text

from registre.ledger.store.schema import metadata

TABLES = ("schema_version", "public_key", "thread", "entry", "subtree", "checkpoint")


def turn(text_: str, role: str = "user", actor: str = "agent") -> tuple[str, dict[str, str], str]:
    """One valid append item."""
    return ("turn", {"role": role, "text": text_}, actor)


def dump(engine: Engine) -> dict[str, list[tuple[Any, ...]]]:
    """Every row of every ledger table, in primary-key order: equal dumps, equal databases."""
    result: dict[str, list[tuple[Any, ...]]] = {}
    with engine.connect() as conn:
        for name in TABLES:
            table = metadata.tables[name]
            order = list(table.primary_key.columns)
            rows = conn.execute(table.select().order_by(*order)).all()
            result[name] = [
                tuple(bytes(v) if isinstance(v, memoryview) else v for v in row) for row in rows
            ]
    return result


def execute(engine: Engine, *statements: str) -> None:
    """Run raw SQL in one committed transaction (as an operator with a SQL shell would)."""
    with engine.connect() as conn:
        for statement in statements:
            conn.execute(text(statement))
        conn.commit()


def drop_triggers(engine: Engine) -> None:
    """What a determined tamperer does first: remove the append-only triggers."""
    with engine.connect() as conn:
        if engine.dialect.name == "sqlite":
            names = conn.execute(text("SELECT name FROM sqlite_master WHERE type='trigger'"))
            for (name,) in names.all():
                conn.execute(text(f"DROP TRIGGER {name}"))
        else:
            rows = conn.execute(
                text(
                    "SELECT tgname, relname FROM pg_trigger JOIN pg_class ON tgrelid = pg_class.oid"
                    " WHERE NOT tgisinternal AND relnamespace = current_schema()::regnamespace"
                )
            )
            for name, table in rows.all():
                conn.execute(text(f"DROP TRIGGER {name} ON {table}"))
        conn.commit()


def mark_older(engine: Engine, version: int, *statements: str) -> None:
    """Make the database look as registre at schema ``version`` left it: run ``statements``
    (dropping what that version did not have), replace the ``schema_version`` row, and put the
    ``schema_version`` trigger back as it was, so the upgrade starts from intact protections."""
    from registre.ledger.store.schema import SCHEMA_VERSION
    from registre.ledger.store.triggers import trigger_ddl

    sqlite = engine.dialect.name == "sqlite"
    name = "schema_version_refuse_delete" if sqlite else "schema_version_refuse_change"
    drop = f"DROP TRIGGER {name}" if sqlite else f"DROP TRIGGER {name} ON schema_version"
    create = [
        s for s in trigger_ddl(engine.dialect.name, version=SCHEMA_VERSION) if f" {name} " in s
    ]
    execute(
        engine,
        *statements,
        drop,
        f"DELETE FROM schema_version WHERE version = {SCHEMA_VERSION}",
        "INSERT INTO schema_version (version, applied, description) "
        f"VALUES ({version}, '2026-11-01T00:00:00Z', 'initial schema: tables and triggers')",
        *create,
    )


def drop_row_checks(engine: Engine) -> None:
    """Remove the row checks too (PostgreSQL CHECK constraints; on SQLite they are triggers,
    which :func:`drop_triggers` removes)."""
    if engine.dialect.name != "postgresql":
        return
    with engine.connect() as conn:
        names = conn.execute(
            text(
                "SELECT conname, conrelid::regclass FROM pg_constraint WHERE contype = 'c' "
                "AND connamespace = current_schema()::regnamespace"
            )
        ).all()
        for name, table in names:
            conn.execute(text(f"ALTER TABLE {table} DROP CONSTRAINT {name}"))
        conn.commit()
