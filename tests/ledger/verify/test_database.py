"""ledger.verify_db: `verify --db` recomputes everything and names the first bad seq.

Each tamper case first drops the append-only triggers, as a tamperer with database access
would (THREATS row 17), then edits the rows directly.
"""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import text

from registre.attest.entries import sign_entry
from registre.attest.notes import Checkpoint, Signer, sign_checkpoint
from registre.attest.tree import leaf_hash
from registre.ledger.errors import UnknownThreadError
from registre.ledger.ledger import Ledger
from registre.ledger.thread import Thread
from registre.ledger.verify.database import verify_database
from registre.ledger.verify.errors import (
    CheckpointMismatchError,
    EntryMismatchError,
    EntryRejectedError,
    HeadMismatchError,
    LeafHashMismatchError,
    LedgerTamperedError,
    StoredPrevRootMismatchError,
    StoredSeqGapError,
    SubtreeMismatchError,
)
from tests.examples_budget import examples
from tests.ledger.helpers import drop_row_checks, drop_triggers, execute, turn

SIZE = 40


@pytest.fixture
def filled(ledger: Ledger, thread: Thread) -> Ledger:
    thread.append_many([turn(f"entry {i}") for i in range(SIZE)])
    thread.checkpoint(5)
    thread.checkpoint()
    drop_triggers(ledger.engine)
    return ledger


def run(ledger: Ledger, statement: str, **params: Any) -> None:
    with ledger.engine.connect() as conn:
        conn.execute(text(statement), params)
        conn.commit()


def leaf(ledger: Ledger, seq: int) -> bytes:
    with ledger.engine.connect() as conn:
        value = conn.execute(text("SELECT leaf FROM entry WHERE seq = :s"), {"s": seq}).scalar()
    return bytes(value)


def store_leaf(ledger: Ledger, seq: int, data: bytes) -> None:
    run(
        ledger,
        "UPDATE entry SET leaf = :leaf, leaf_hash = :hash WHERE seq = :seq",
        leaf=data,
        hash=leaf_hash(data),
        seq=seq,
    )


def test_clean_database_verifies(ledger: Ledger, thread: Thread) -> None:
    thread.append_many([turn(f"entry {i}") for i in range(SIZE)])
    thread.checkpoint(5)
    thread.checkpoint()
    filled = ledger  # with its triggers: verify --db checks them too
    second = filled.create_thread("t2")
    second.append(*turn("hello"))
    reports = verify_database(filled, batch=5)
    assert [(r.thread, r.size, r.checkpoints) for r in reports] == [("t1", SIZE, 2), ("t2", 1, 0)]
    assert [r.thread for r in verify_database(filled, thread="t2")] == ["t2"]
    with pytest.raises(UnknownThreadError):
        verify_database(filled, thread="t3")


def test_edited_entry_fail(filled: Ledger) -> None:
    edited = leaf(filled, 7).replace(b"entry 7", b"entry X")
    store_leaf(filled, 7, edited)  # hash column fixed up too: only the signature catches it
    with pytest.raises(EntryRejectedError, match="seq 7") as info:
        verify_database(filled)
    assert info.value.seq == 7


def test_edited_leaf_hash_fail(filled: Ledger) -> None:
    run(filled, "UPDATE entry SET leaf_hash = :h WHERE seq = 4", h=b"\x00" * 32)
    with pytest.raises(LeafHashMismatchError) as info:
        verify_database(filled)
    assert info.value.seq == 4


def test_deleted_entry_fail(filled: Ledger) -> None:
    execute(filled.engine, "DELETE FROM entry WHERE seq = 3")
    with pytest.raises(StoredSeqGapError, match="seq 3") as info:
        verify_database(filled)
    assert info.value.seq == 3


def test_deleted_last_entry_fail(filled: Ledger) -> None:
    execute(filled.engine, f"DELETE FROM entry WHERE seq = {SIZE - 1}")
    with pytest.raises(StoredSeqGapError) as info:
        verify_database(filled)
    assert info.value.seq == SIZE - 1


def test_swapped_entries_fail(filled: Ledger) -> None:
    three, four = leaf(filled, 3), leaf(filled, 4)
    store_leaf(filled, 3, four)
    store_leaf(filled, 4, three)
    with pytest.raises(EntryMismatchError) as info:
        verify_database(filled)
    assert info.value.seq == 3


def test_entry_beyond_head_fail(filled: Ledger, signer: Signer) -> None:
    extra = sign_entry(
        signer,
        thread="t1",
        seq=SIZE,
        kind="turn",
        actor="agent",
        body={"role": "user", "text": "late"},
        prev_root=filled.thread("t1").head().root,
    )
    run(
        filled,
        "INSERT INTO entry (thread, seq, leaf, leaf_hash, kind, time) "
        "VALUES ('t1', :seq, :leaf, :hash, 'turn', :time)",
        seq=SIZE,
        leaf=extra.leaf,
        hash=extra.leaf_hash,
        time=extra.time,
    )
    with pytest.raises(HeadMismatchError) as info:
        verify_database(filled)
    assert info.value.seq == SIZE


def test_resigned_with_other_key_fail(filled: Ledger, signer: Signer) -> None:
    # A tamperer re-signs an edited entry with their own key of the same name, and even
    # records that key in the database: pinned keys catch it.
    forger = Signer.generate(signer.name)
    original = json.loads(leaf(filled, 2))["entry"]
    prev_root = base64.b64decode(original["prev"]["root"])
    forged = sign_entry(
        forger,
        thread="t1",
        seq=2,
        kind="turn",
        actor="agent",
        body={"role": "user", "text": "entry 2 (forged)"},
        prev_root=prev_root,
        time=original["time"],
    )
    store_leaf(filled, 2, forged.leaf)
    with pytest.raises(EntryRejectedError, match="not among the trusted keys") as info:
        verify_database(filled, keys=[signer.verifier()])
    assert info.value.seq == 2


def test_rewritten_history_fail(filled: Ledger, signer: Signer) -> None:
    # Even with the operator key itself, rewriting entry 5 breaks the prev binding of 6.
    original = json.loads(leaf(filled, 5))["entry"]
    rewritten = sign_entry(
        signer,
        thread="t1",
        seq=5,
        kind="turn",
        actor="agent",
        body={"role": "user", "text": "entry 5 (rewritten)"},
        prev_root=base64.b64decode(original["prev"]["root"]),
        time=original["time"],
    )
    store_leaf(filled, 5, rewritten.leaf)  # its leaf_hash too: the tree's level-0 hash
    with pytest.raises(StoredPrevRootMismatchError) as info:
        verify_database(filled)
    assert info.value.seq == 6


def test_edited_subtree_fail(filled: Ledger) -> None:
    run(filled, "UPDATE subtree SET hash = :h WHERE level = 4 AND idx = 1", h=b"\x01" * 32)
    with pytest.raises(SubtreeMismatchError, match="level 4, index 1") as info:
        verify_database(filled)
    assert info.value.seq == 16


def test_extra_subtree_fail(filled: Ledger) -> None:
    run(
        filled,
        "INSERT INTO subtree (thread, level, idx, hash) VALUES ('t1', 40, 0, :h)",
        h=b"\x01" * 32,
    )
    with pytest.raises(SubtreeMismatchError, match="subtree rows"):
        verify_database(filled)


def test_leaf_subtree_row_fail(filled: Ledger) -> None:
    # Schema version 6 stores no row below level 4 (computed from the leaf hashes): one
    # holding the right hash, inserted past the row checks, is a row no writer stores.
    drop_row_checks(filled.engine)
    leaf_hash_3 = filled.thread("t1").entry(3).leaf_hash
    run(
        filled,
        "INSERT INTO subtree (thread, level, idx, hash) VALUES ('t1', 0, 3, :h)",
        h=leaf_hash_3,
    )
    with pytest.raises(
        SubtreeMismatchError, match=r"unexpected stored subtree \(level 0, index 3\)"
    ):
        verify_database(filled)


def test_forged_head_root_fail(filled: Ledger) -> None:
    run(filled, "UPDATE thread SET root = :r", r=b"\x02" * 32)
    with pytest.raises(HeadMismatchError, match="head root"):
        verify_database(filled)


def test_truncated_thread_fail(filled: Ledger, signer: Signer) -> None:
    # Drop the last entries and rewind the head consistently: the signed checkpoint at
    # the old size still gives it away.
    thread = filled.thread("t1")
    proof = thread.prove_consistency(8)
    execute(
        filled.engine,
        "DELETE FROM entry WHERE seq >= 8",
        "DELETE FROM subtree WHERE (idx + 1) * (1 << level) > 8",
    )
    run(  # at size 8 the frontier is the one level-3 hash: the root
        filled,
        "UPDATE thread SET size = 8, root = :r, frontier = :f",
        r=proof.old_root,
        f=proof.old_root,
    )
    with pytest.raises(CheckpointMismatchError, match="beyond the head"):
        verify_database(filled)


def test_checkpoint_by_other_key_fail(filled: Ledger, signer: Signer) -> None:
    forger = Signer.generate(signer.name)
    head = filled.thread("t1").head()
    note = sign_checkpoint(Checkpoint("registre.test/log/t1", 3, head.root), forger)
    run(
        filled,
        "INSERT INTO checkpoint (thread, size, root, note, created) VALUES ('t1', 3, :r, :n, 'x')",
        r=head.root,
        n=note,
    )
    with pytest.raises(CheckpointMismatchError, match="size 3 does not verify"):
        verify_database(filled, keys=[signer.verifier()])


def test_checkpoint_with_wrong_root_fail(filled: Ledger, signer: Signer) -> None:
    wrong = filled.thread("t1").head().root  # the root at SIZE, claimed for size 3
    note = sign_checkpoint(Checkpoint("registre.test/log/t1", 3, wrong), signer)
    run(
        filled,
        "INSERT INTO checkpoint (thread, size, root, note, created) VALUES ('t1', 3, :r, :n, 'x')",
        r=wrong,
        n=note,
    )
    with pytest.raises(CheckpointMismatchError, match="root the entries do not give"):
        verify_database(filled)


@settings(max_examples=examples(100), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_any_corrupted_leaf_fail(filled: Ledger, data: st.DataObject) -> None:
    # Every example restores the leaf it corrupted, so examples share one database.
    seq = data.draw(st.integers(min_value=0, max_value=SIZE - 1), label="seq")
    original = leaf(filled, seq)
    position = data.draw(st.integers(min_value=0, max_value=len(original) - 1), label="byte")
    flip = data.draw(st.integers(min_value=1, max_value=255), label="xor")
    corrupted = bytearray(original)
    corrupted[position] ^= flip
    store_leaf(filled, seq, bytes(corrupted))
    try:
        with pytest.raises(LedgerTamperedError) as info:
            verify_database(filled)
        assert info.value.seq == seq
    finally:
        store_leaf(filled, seq, original)
