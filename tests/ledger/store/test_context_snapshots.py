"""ledger.store.context_snapshots: the upgrade to schema 4, folding from a snapshot, and a
history that does not fold. Both engines."""

from __future__ import annotations

import pytest
from sqlalchemy import text

from registre.attest.notes import Signer
from registre.context import Policy, SummaryLine, default_counter, project
from registre.ledger.context.store import rebuild_context
from registre.ledger.ledger import Ledger
from registre.ledger.store.context_snapshots import ContextHistoryError, fold_context
from registre.ledger.store.engine import read_transaction, schema_version
from registre.ledger.store.schema import SCHEMA_VERSION
from registre.ledger.thread import Thread
from registre.ledger.verify.database import verify_database
from registre.ledger.verify.errors import CompactionInvalidError
from tests.context.threads import honest_body
from tests.ledger.context_helpers import agent_loop, forge, opened, replayed, snapshot_rows, step
from tests.ledger.helpers import mark_older

COUNTER = default_counter()


def downgrade_to_version_3(ledger: Ledger) -> None:
    """Make the database look as registre at schema version 3 left it."""
    engine = ledger.engine
    mark_older(
        engine,
        3,
        "DROP TABLE context_snapshot",
    )


def unfoldable(ledger: Ledger, thread: Thread, signer: Signer) -> int:
    """Forge a compaction whose range does not start at a fold boundary; return its seq."""
    opened(thread)
    for number in range(8):
        step(thread, number)
    body = honest_body(
        thread.context_state(),
        folded=(0, 0),
        lines=(SummaryLine("findings", "a question", ((0, 0),)),),
    )
    body["folded"] = {"from": 1, "to": 2}
    body["summary"] = [{"section": "findings", "text": "a pin", "pointers": [[1, 1]]}]
    return forge(ledger.engine, signer, thread.id, "context.compaction", body)


def test_upgrade_from_version_3_fills_the_snapshots(
    db_url: str, signer: Signer, ledger: Ledger, thread: Thread
) -> None:
    opened(thread)
    agent_loop(thread, 14)
    ledger.create_thread("t2").append("turn", {"role": "user", "text": "hi"}, "alice")
    rows = snapshot_rows(ledger.engine, "t1")
    assert rows
    downgrade_to_version_3(ledger)
    with Ledger.open(db_url, signer) as upgraded:
        assert snapshot_rows(upgraded.engine, "t1") == rows
        with read_transaction(upgraded.engine) as conn:
            assert schema_version(conn) == SCHEMA_VERSION == 9
            description = conn.execute(
                text("SELECT description FROM schema_version WHERE version = 4")
            ).scalar()
        assert description == "context snapshots; 2 thread(s) built"
        verify_database(upgraded)


def test_upgrade_leaves_a_thread_that_does_not_fold_empty(
    db_url: str, signer: Signer, ledger: Ledger, thread: Thread
) -> None:
    seq = unfoldable(ledger, thread, signer)
    downgrade_to_version_3(ledger)
    with Ledger.open(db_url, signer) as upgraded:
        assert snapshot_rows(upgraded.engine, "t1") == []
        with read_transaction(upgraded.engine) as conn:
            description = conn.execute(
                text("SELECT description FROM schema_version WHERE version = 4")
            ).scalar()
        assert "1 left empty (context history does not fold)" in description
        with pytest.raises(CompactionInvalidError) as failure:
            verify_database(upgraded)
        assert failure.value.seq == seq


def test_a_history_that_does_not_fold_is_named(
    ledger: Ledger, thread: Thread, signer: Signer
) -> None:
    seq = unfoldable(ledger, thread, signer)
    with pytest.raises(ContextHistoryError) as failure:
        thread.project(budget=5000)
    assert failure.value.seq == seq
    with pytest.raises(ContextHistoryError):
        rebuild_context(ledger, thread.id)
    assert thread.project(at=seq - 1, budget=5000).at == seq - 1


def test_fold_from_a_snapshot_equals_the_fold_from_entry_0(ledger: Ledger, thread: Thread) -> None:
    opened(thread)
    agent_loop(thread, 16)
    compactions = [row[0] for row in snapshot_rows(ledger.engine, thread.id)]
    size = thread.head().size
    with read_transaction(ledger.engine) as conn:
        for at in sorted({*compactions, *(c + 1 for c in compactions), size - 1, 3}):
            folded = fold_context(conn, thread.id, at)
            assert folded.at == at
            expected = replayed(thread, at)
            assert folded.pin_set_sha256() == expected.pin_set_sha256()
            assert project(folded, 10**6, Policy(), COUNTER) == project(
                expected, 10**6, Policy(), COUNTER
            )
