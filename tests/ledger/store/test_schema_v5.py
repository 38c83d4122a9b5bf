"""Schema version 5 on a database written by version 4: threads bound to the key that signed
their entries, snapshots unsealed (so ignored until a rebuild with the key), row checks added;
the upgraded database verifies, protections included."""

from __future__ import annotations

from sqlalchemy import text

from registre.attest.notes import Signer
from registre.ledger.context.store import rebuild_context
from registre.ledger.ledger import Ledger
from registre.ledger.store.row_checks import row_check_trigger_names
from registre.ledger.store.triggers import trigger_ddl
from registre.ledger.thread import Thread
from registre.ledger.verify.database import verify_database
from tests.ledger.context_helpers import agent_loop, opened
from tests.ledger.helpers import drop_row_checks, mark_older


def _as_version_4(ledger: Ledger) -> None:
    engine = ledger.engine
    dialect = engine.dialect.name
    drop_row_checks(engine)
    if dialect == "sqlite":
        v4_thread_trigger = [
            s for s in trigger_ddl("sqlite", version=4) if "thread_head_forward" in s
        ]
        statements = [
            *(f"DROP TRIGGER {name}" for name in row_check_trigger_names()),
            "DROP TRIGGER thread_head_forward",
            "ALTER TABLE thread DROP COLUMN vkey",
            "ALTER TABLE context_snapshot DROP COLUMN seal",
            *v4_thread_trigger,
        ]
    else:
        v4_function = [
            s.replace("CREATE FUNCTION", "CREATE OR REPLACE FUNCTION")
            for s in trigger_ddl("postgresql", version=4)
            if "registre_thread_forward()" in s and s.startswith("CREATE FUNCTION")
        ]
        statements = [
            *v4_function,
            "ALTER TABLE thread DROP COLUMN vkey",
            "ALTER TABLE context_snapshot DROP COLUMN seal",
        ]
    mark_older(engine, 4, *statements)


def _bound(ledger: Ledger) -> list[tuple[str, str | None]]:
    with ledger.engine.connect() as conn:
        return [tuple(r) for r in conn.execute(text("SELECT id, vkey FROM thread ORDER BY id"))]


def test_upgrade_from_version_4_binds_threads(
    db_url: str, signer: Signer, ledger: Ledger, thread: Thread
) -> None:
    opened(thread)
    agent_loop(thread, 14)
    ledger.create_thread("t2")  # no entry yet: bound by its first append
    _as_version_4(ledger)
    with Ledger.open(db_url, signer) as upgraded:
        assert _bound(upgraded) == [("t1", signer.vkey()), ("t2", None)]
        with upgraded.engine.connect() as conn:
            seals = conn.execute(text("SELECT count(seal) FROM context_snapshot")).scalar()
        assert seals == 0  # unsealed: never trusted until resealed
        verify_database(upgraded)  # protections in place, rows consistent
        upgraded.thread("t2").append("turn", {"role": "user", "text": "hi"}, "alice")
        assert _bound(upgraded)[1] == ("t2", signer.vkey())
        rebuild_context(upgraded, "t1")
        with upgraded.engine.connect() as conn:
            seals = conn.execute(text("SELECT count(seal) FROM context_snapshot")).scalar()
        assert seals and seals > 0
        verify_database(upgraded)
