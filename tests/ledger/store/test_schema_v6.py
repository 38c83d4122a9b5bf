"""Schema version 6 on a database written by version 5: the ``subtree`` rows below level 4
(computed from the entries' leaf hashes since) are removed in the upgrade's transaction, the
table stays append-only, proofs compute the low levels from the entries, the lifecycle index
is the one a new database gets, and the upgraded database verifies."""

from __future__ import annotations

import pytest
from sqlalchemy import text
from sqlalchemy.exc import DBAPIError

from registre.attest.keys import Signer
from registre.attest.merkle import CompactRange
from registre.attest.proofs import verify_consistency, verify_inclusion
from registre.ledger.errors import StoreCorruptError
from registre.ledger.ledger import Ledger
from registre.ledger.store.row_checks import row_check_ddl
from registre.ledger.store.triggers import REFUSAL_MARK
from registre.ledger.thread import Thread
from registre.ledger.verify.database import verify_database
from registre.lifecycle.codec import KINDS
from tests.ledger.helpers import drop_row_checks, drop_triggers, execute, mark_older, turn

SIZE = 37


V5_INDEX = (
    "CREATE INDEX entry_lifecycle ON entry (thread, seq) WHERE kind IN ("
    + ", ".join(f"'{kind}'" for kind in KINDS)
    + ")"
)


def _as_version_5(ledger: Ledger, thread: Thread) -> int:
    """Put back the rows below level 4 that version 5 stored (every complete subtree, the
    leaves included) and its lifecycle index predicate (an IN list), and mark the database
    version 5. Returns how many rows were put back."""
    tree = CompactRange()
    low = [
        {"thread": thread.id, "level": level, "idx": index, "hash": digest}
        for entry in thread.entries()
        for level, index, digest in tree.append(entry.leaf_hash)
        if level < 4
    ]
    execute(ledger.engine, *_v5_row_check(ledger.engine.dialect.name))
    with ledger.engine.connect() as conn:
        conn.execute(
            text(
                "INSERT INTO subtree (thread, level, idx, hash) "
                "VALUES (:thread, :level, :idx, :hash)"
            ),
            low,
        )
        conn.commit()
    mark_older(ledger.engine, 5, "DROP INDEX entry_lifecycle", V5_INDEX)
    return len(low)


def _v5_row_check(dialect: str) -> list[str]:
    """Version 5's row check on ``subtree`` (any level from 0) in place of version 6's."""
    if dialect == "sqlite":
        return [
            "DROP TRIGGER subtree_row_check_insert",
            "DROP TRIGGER subtree_row_check_update",
            *(
                s.replace("NEW.level >= 4 AND", "NEW.level >= 0 AND")
                for s in row_check_ddl("sqlite")
                if " ON subtree " in s
            ),
        ]
    return [
        "ALTER TABLE subtree DROP CONSTRAINT subtree_position_stored",
        "ALTER TABLE subtree ADD CONSTRAINT subtree_position_nonnegative "
        "CHECK (level >= 0 AND level < 64 AND idx >= 0)",
    ]


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


def test_upgrade_from_version_5_drops_low_rows(
    db_url: str, signer: Signer, ledger: Ledger, thread: Thread
) -> None:
    entries = thread.append_many([turn(f"entry {i}") for i in range(SIZE)])
    thread.checkpoint()
    new_index = _index_definition(ledger)
    low = _as_version_5(ledger, thread)
    assert low == 37 + 18 + 9 + 4
    assert _levels(ledger) == {0: 37, 1: 18, 2: 9, 3: 4, 4: 2, 5: 1}
    assert _index_definition(ledger) != new_index
    with Ledger.open(db_url, signer) as upgraded:
        assert _levels(upgraded) == {4: 2, 5: 1}
        assert _index_definition(upgraded) == new_index
        assert _versions(upgraded)[-2] == (
            6,
            f"subtree rows below level 4 removed (computed from the entries' leaf hashes); "
            f"{low} row(s); lifecycle entry index predicate as equalities",
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
    thread.append_many([turn(f"entry {i}") for i in range(20)])
    _as_version_5(ledger, thread)
    Ledger.open(db_url, signer).close()
    with pytest.raises(DBAPIError, match=REFUSAL_MARK):
        execute(ledger.engine, "DELETE FROM subtree WHERE level = 4")
    assert _levels(ledger) == {4: 1}


def test_proof_over_deleted_entry_fail(ledger: Ledger, thread: Thread) -> None:
    """A hash below level 4 is computed from the entries' leaf hashes: with an entry row
    gone (past the triggers), a proof that needs it names the entry, not a wrong hash."""
    thread.append_many([turn(f"entry {i}") for i in range(20)])
    drop_triggers(ledger.engine)
    execute(ledger.engine, "DELETE FROM entry WHERE seq = 18")
    with pytest.raises(StoreCorruptError, match="entry 18 is missing"):
        thread.prove_inclusion(19)
    assert len(thread.prove_inclusion(3, 16).hashes) == 4  # within the intact block


def test_proof_over_hostile_leaf_hash_fail(ledger: Ledger, thread: Thread) -> None:
    thread.append_many([turn(f"entry {i}") for i in range(20)])
    drop_triggers(ledger.engine)
    drop_row_checks(ledger.engine)
    with ledger.engine.connect() as conn:
        conn.execute(text("UPDATE entry SET leaf_hash = :h WHERE seq = 17"), {"h": b"\x01\x02"})
        conn.commit()
    with pytest.raises(StoreCorruptError, match="leaf hash of entry 17 is not a 32-byte hash"):
        thread.prove_consistency(18)
