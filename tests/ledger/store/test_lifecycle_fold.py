"""ledger.store.fold: rebuilding the derived tables, the upgrade to schema 3, and what the
writer's cache reads. Both engines."""

from __future__ import annotations

import pytest
from sqlalchemy import text

import registre.ledger.store.lifecycle_fold as fold_module
from registre.attest.notes import Signer
from registre.ledger.core.append import append_entries
from registre.ledger.errors import UnknownThreadError
from registre.ledger.ledger import Ledger
from registre.ledger.lifecycle.store import rebuild
from registre.ledger.store.derived import DERIVED_TABLES
from registre.ledger.store.engine import read_transaction, schema_version, write_transaction
from registre.ledger.store.lifecycle_fold import LifecycleHistoryError, lifecycle_entries
from registre.ledger.store.schema import SCHEMA_VERSION, tables
from registre.ledger.thread import Thread
from registre.ledger.verify.database import verify_database
from registre.ledger.verify.errors import StoredLifecycleReplayError
from tests.ledger.helpers import execute, mark_older, turn
from tests.ledger.lifecycle_helpers import derived_rows, folded_rows, investigation, ref

FORGED_FINAL = {
    "request": {"text": "Revenue grew.", "cites": ["ev-2"]},
    "outcome": {"accepted": True, "id": "cc-4"},
}


def forge(ledger: Ledger, thread: str) -> None:
    """A signed final whose outcome the rules do not give (ev-2 is superseded)."""
    signer = ledger.require_signer()
    with write_transaction(ledger.engine) as conn:
        append_entries(conn, signer, thread, [("conclusion.final", FORGED_FINAL, "agent")])


def downgrade_to_version_2(ledger: Ledger) -> None:
    """Make the database look as registre 0.x at schema version 2 left it."""
    engine = ledger.engine
    names = [table.name for table in DERIVED_TABLES]
    mark_older(
        engine,
        2,
        "DROP INDEX entry_lifecycle",
        *(f"DROP TABLE {name}" for name in names),
    )


def test_rebuild_gives_identical_tables(ledger: Ledger, thread: Thread) -> None:
    investigation(thread)
    other = ledger.create_thread("t2")
    other.read_source([ref("r1")])
    incremental = {name: derived_rows(ledger, name) for name in ("t1", "t2")}
    reports = rebuild(ledger)
    assert [(r.thread, r.size, r.events) for r in reports] == [("t1", 9, 8), ("t2", 1, 1)]
    assert {name: derived_rows(ledger, name) for name in ("t1", "t2")} == incremental
    execute(ledger.engine, "DELETE FROM lifecycle_evidence", "DELETE FROM lifecycle_transition")
    rebuild(ledger, "t1")
    assert derived_rows(ledger, "t1") == incremental["t1"]
    assert derived_rows(ledger, "t1") == folded_rows(ledger, thread)
    with pytest.raises(UnknownThreadError):
        rebuild(ledger, "t3")


def test_rebuild_refuses_a_history_that_does_not_replay(ledger: Ledger, thread: Thread) -> None:
    investigation(thread)
    forge(ledger, "t1")
    before = derived_rows(ledger, "t1")
    with pytest.raises(LifecycleHistoryError) as failure:
        rebuild(ledger, "t1")
    assert failure.value.seq == 9 and "inactive_evidence" in str(failure.value)
    assert derived_rows(ledger, "t1") == before


def test_upgrade_from_version_2_fills_the_tables(
    db_url: str, signer: Signer, ledger: Ledger, thread: Thread
) -> None:
    investigation(thread)
    ledger.create_thread("t2").append(*turn("no lifecycle here"))
    before = derived_rows(ledger, "t1")
    downgrade_to_version_2(ledger)
    with Ledger.open(db_url, signer) as upgraded:
        assert derived_rows(upgraded, "t1") == before
        with read_transaction(upgraded.engine) as conn:
            assert schema_version(conn) == SCHEMA_VERSION == 9
            description = conn.execute(
                text("SELECT description FROM schema_version WHERE version = 3")
            ).scalar()
        assert description == "lifecycle derived tables and entry index; 2 thread(s) built"
        verify_database(upgraded)
        assert upgraded.thread("t1").evidence.upsert([{"text": "x", "cites": ["r1"]}]).accepted


def test_upgrade_leaves_a_thread_that_does_not_replay_empty(
    db_url: str, signer: Signer, ledger: Ledger, thread: Thread
) -> None:
    investigation(thread)
    forge(ledger, "t1")
    downgrade_to_version_2(ledger)
    with Ledger.open(db_url, signer) as upgraded:
        assert all(not rows for rows in derived_rows(upgraded, "t1").values())
        with read_transaction(upgraded.engine) as conn:
            description = conn.execute(
                text("SELECT description FROM schema_version WHERE version = 3")
            ).scalar()
        assert "1 left empty (lifecycle history does not replay)" in description
        with pytest.raises(StoredLifecycleReplayError) as failure:
            verify_database(upgraded)
        assert failure.value.seq == 9


def test_lifecycle_entries_skip_other_kinds(ledger: Ledger, thread: Thread) -> None:
    thread.append_many([turn(f"turn {i}") for i in range(5)])
    thread.read_source([ref("r1")])
    thread.append_many([turn(f"turn {i}") for i in range(3)])
    thread.evidence.upsert([{"text": "x", "cites": ["r1"]}])
    thread.evidence.upsert([{"text": "y", "cites": ["r1"]}])
    with read_transaction(ledger.engine) as conn:
        found = [(seq, kind) for seq, kind, _ in lifecycle_entries(conn, "t1", 0, 12, batch=2)]
        later = [seq for seq, _, _ in lifecycle_entries(conn, "t1", 6, 11)]
    assert found == [(5, "source.read"), (9, "evidence.upsert"), (10, "evidence.upsert")]
    assert later == [9, 10]


def test_warm_writer_reads_only_the_new_lifecycle_entries(
    db_url: str, signer: Signer, ledger: Ledger, thread: Thread, monkeypatch: pytest.MonkeyPatch
) -> None:
    investigation(thread)
    thread.append_many([turn(f"turn {i}") for i in range(50)])
    parsed: list[int] = []
    real = fold_module._kind_and_body

    def counting(thread_id: str, seq: int, leaf: object) -> tuple[str, object]:
        parsed.append(seq)
        return real(thread_id, seq, leaf)

    monkeypatch.setattr(fold_module, "_kind_and_body", counting)
    thread.evidence.upsert([{"text": "a", "cites": ["r1"]}])  # warm: nothing new to read
    assert parsed == []
    with Ledger.open(db_url, signer) as other:
        other.thread("t1").evidence.upsert([{"text": "b", "cites": ["r1"]}])  # cold: 9 events
        assert len(parsed) == 9
    parsed.clear()
    thread.append(*turn("another turn"))
    thread.evidence.upsert([{"text": "c", "cites": ["r1"]}])
    assert parsed == [60]  # only the other handle's entry, not the 50 turns before it


def test_catch_up_query_uses_the_partial_index(ledger: Ledger, thread: Thread) -> None:
    query = fold_module._LIFECYCLE_LEAVES.text
    params = {"thread": "t1", "start": 0, "stop": 9, "batch": 5}
    with read_transaction(ledger.engine) as conn:
        if ledger.engine.dialect.name == "sqlite":
            plan = conn.execute(text(f"EXPLAIN QUERY PLAN {query}"), params).all()
        else:  # an empty table: make the planner show whether the index applies at all
            conn.execute(text("SET LOCAL enable_seqscan = off"))
            plan = conn.execute(text(f"EXPLAIN {query}"), params).all()
    assert "entry_lifecycle" in " ".join(str(row) for row in plan)
    assert tables.entry.indexes  # declared on the entry table, so new databases get it
