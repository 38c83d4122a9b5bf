"""Schema version 6 on a database written by version 5: the level-0 ``subtree`` rows (copies
of the entries' leaf hashes) are removed in the upgrade's transaction, the table stays
append-only, proofs read level 0 from the entries, the lifecycle index is the one a new
database gets, and the upgraded database verifies."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from registre.attest.keys import Signer
from registre.attest.merkle import CompactRange
from registre.attest.proofs import verify_consistency, verify_inclusion
from registre.ledger.ledger import Ledger
from registre.ledger.store.triggers import REFUSAL_MARK
from registre.ledger.thread import Thread
from registre.ledger.verify.database import verify_database
from registre.lifecycle.codec import KINDS
from tests.ledger.helpers import execute, mark_older, turn

SIZE = 37


V5_INDEX = (
    "CREATE INDEX entry_lifecycle ON entry (thread, seq) WHERE kind IN ("
    + ", ".join(f"'{kind}'" for kind in KINDS)
    + ")"
)


def _as_version_5(ledger: Ledger, thread: Thread) -> None:
    """Put back the level-0 rows version 5 stored (one per entry: its leaf hash) and its
    lifecycle index predicate (an IN list), and mark the database version 5."""
    mark_older(
        ledger.engine,
        5,
        "INSERT INTO subtree (thread, level, idx, hash) "
        f"SELECT thread, 0, seq, leaf_hash FROM entry WHERE thread = '{thread.id}'",
        "DROP INDEX entry_lifecycle",
        V5_INDEX,
    )


def _index_definition(ledger: Ledger) -> str:
    sql = (
        "SELECT sql FROM sqlite_master WHERE name = 'entry_lifecycle'"
        if ledger.engine.dialect.name == "sqlite"
        else "SELECT indexdef FROM pg_indexes WHERE indexname = 'entry_lifecycle' "
        "AND schemaname = current_schema()"
    )
    with ledger.engine.connect() as conn:
        return str(conn.execute(text(sql)).scalar_one())


def _levels(ledger: Ledger) -> dict[int, int]:
    with ledger.engine.connect() as conn:
        rows = conn.execute(text("SELECT level, count(*) FROM subtree GROUP BY level")).all()
    return {int(level): int(count) for level, count in rows}


def _versions(ledger: Ledger) -> list[tuple[int, str]]:
    with ledger.engine.connect() as conn:
        rows = conn.execute(text("SELECT version, description FROM schema_version")).all()
    return sorted((int(v), str(d)) for v, d in rows)


def test_upgrade_from_version_5_drops_leaf_rows(
    db_url: str, signer: Signer, ledger: Ledger, thread: Thread
) -> None:
    entries = thread.append_many([turn(f"entry {i}") for i in range(SIZE)])
    thread.checkpoint()
    new_index = _index_definition(ledger)
    _as_version_5(ledger, thread)
    assert _levels(ledger)[0] == SIZE
    assert _index_definition(ledger) != new_index
    with Ledger.open(db_url, signer) as upgraded:
        assert 0 not in _levels(upgraded)
        assert _index_definition(upgraded) == new_index
        assert _versions(upgraded)[-1] == (
            6,
            f"level-0 subtree rows removed (the entries' leaf hashes); {SIZE} row(s); "
            "lifecycle entry index predicate as equalities",
        )
        verify_database(upgraded)  # rows, triggers and row checks as version 6 writes them
        again = upgraded.thread(thread.id)
        tree = CompactRange()
        for entry in entries:
            tree.append(entry.leaf_hash)
        proof = again.prove_inclusion(20)
        verify_inclusion(entries[20].leaf_hash, 20, SIZE, proof.hashes, tree.root())
        old = CompactRange()
        for entry in entries[:11]:
            old.append(entry.leaf_hash)
        consistency = again.prove_consistency(11)
        verify_consistency(11, SIZE, consistency.hashes, old.root(), tree.root())
        again.append(*turn("after the upgrade"))
        verify_database(upgraded)


def test_upgraded_subtree_stays_append_only(
    db_url: str, signer: Signer, ledger: Ledger, thread: Thread
) -> None:
    thread.append_many([turn(f"entry {i}") for i in range(5)])
    _as_version_5(ledger, thread)
    Ledger.open(db_url, signer).close()
    with pytest.raises(DBAPIError, match=REFUSAL_MARK):
        execute(ledger.engine, "DELETE FROM subtree WHERE level = 1")
    assert _levels(ledger) == {1: 2, 2: 1}
