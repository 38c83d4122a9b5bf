"""ledger.thread: appending, reading, checkpoints and proofs through the store."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import event

from registre.attest.entries import (
    BodySchemaError,
    InvalidActorError,
    InvalidThreadIdError,
    UnknownKindError,
)
from registre.attest.notes import Signer, open_checkpoint
from registre.attest.tree import (
    MemoryHashSource,
    consistency_proof,
    empty_root,
    inclusion_proof,
    leaf_hash,
    root_at,
    verify_consistency,
    verify_inclusion,
)
from registre.ledger.errors import (
    EntryNotFoundError,
    ForeignThreadError,
    NoSignerError,
    ThreadExistsError,
    UnknownThreadError,
)
from registre.ledger.ledger import Ledger
from registre.ledger.store.nodes import StoredHashSource
from registre.ledger.thread import Thread
from tests.ledger.helpers import dump, turn


def test_new_thread_is_empty(ledger: Ledger, thread: Thread) -> None:
    assert thread.origin == "registre.test/log/t1"
    assert thread.head().size == 0 and thread.head().root == empty_root()
    assert [t.id for t in ledger.threads()] == ["t1"]
    assert ledger.thread("t1").origin == thread.origin


def test_append_assigns_consecutive_seq_and_moves_head(thread: Thread) -> None:
    first = thread.append(*turn("one"))
    second, third = thread.append_many([turn("two"), turn("three", role="assistant")])
    assert [first.seq, second.seq, third.seq] == [0, 1, 2]
    assert second.prev_size == 1
    tree = MemoryHashSource([first.leaf_hash, second.leaf_hash, third.leaf_hash])
    assert second.prev_root == root_at(tree, 1)
    assert thread.head().size == 3 and thread.head().root == tree.root()


def test_entries_read_back_verified_and_in_order(thread: Thread) -> None:
    written = thread.append_many([turn(f"entry {i}") for i in range(23)])
    assert list(thread.entries(batch=5)) == written
    assert list(thread.entries(7, 12, batch=2)) == written[7:12]
    assert thread.entry(22) == written[22]


@pytest.mark.parametrize(("start", "stop"), [(-1, 2), (0, 4), (3, 2)])
def test_entries_outside_the_tree_refused(thread: Thread, start: int, stop: int) -> None:
    thread.append_many([turn("a"), turn("b"), turn("c")])
    with pytest.raises(EntryNotFoundError):
        list(thread.entries(start, stop))


def test_entry_beyond_head_refused(thread: Thread) -> None:
    thread.append(*turn("a"))
    with pytest.raises(EntryNotFoundError):
        thread.entry(1)


@pytest.mark.parametrize(
    ("item", "error"),
    [
        (("turn.v2", {"role": "user", "text": "x"}, "agent"), UnknownKindError),
        (("turn", {"role": "tool", "text": "x"}, "agent"), BodySchemaError),
        (("turn", {"role": "user", "text": "x"}, ""), InvalidActorError),
        (("turn", {"role": "user", "text": 1.5}, "agent"), BodySchemaError),
    ],
)
def test_refused_append_leaves_database_unchanged(
    ledger: Ledger, thread: Thread, item: Any, error: type[Exception]
) -> None:
    thread.append_many([turn("a"), turn("b")])
    before = dump(ledger.engine)
    with pytest.raises(error):
        thread.append(*item)
    with pytest.raises(error):
        thread.append_many([turn("c"), turn("d"), item])  # all or nothing
    assert dump(ledger.engine) == before
    assert thread.append(*turn("c")).seq == 2  # and no seq was used up


def test_append_many_empty_is_a_no_op(ledger: Ledger, thread: Thread) -> None:
    before = dump(ledger.engine)
    assert thread.append_many([]) == []
    assert dump(ledger.engine) == before


def test_append_without_key_refused(db_url: str, ledger: Ledger, thread: Thread) -> None:
    reader = Ledger.open(db_url)
    with pytest.raises(NoSignerError):
        reader.thread("t1").append(*turn("a"))
    with pytest.raises(NoSignerError):
        reader.create_thread("t2")
    reader.close()


def test_append_with_another_logs_key_refused(db_url: str, ledger: Ledger, thread: Thread) -> None:
    intruder = Ledger.open(db_url, Signer.generate("intruder.example/log"))
    with pytest.raises(ForeignThreadError):
        intruder.thread("t1").append(*turn("a"))
    intruder.close()
    assert thread.head().size == 0


def test_thread_ids_checked(ledger: Ledger, thread: Thread) -> None:
    with pytest.raises(ThreadExistsError):
        ledger.create_thread("t1")
    with pytest.raises(InvalidThreadIdError):
        ledger.create_thread("has space")
    with pytest.raises(UnknownThreadError):
        ledger.thread("t2")


# --- checkpoints ---------------------------------------------------------------------------


def test_checkpoint_signed_stored_and_reused(
    ledger: Ledger, thread: Thread, signer: Signer
) -> None:
    thread.append_many([turn(f"e{i}") for i in range(5)])
    stored = thread.checkpoint()
    opened = open_checkpoint(stored.note, signer.verifier(), origin=thread.origin)
    assert opened.checkpoint.size == 5 and opened.checkpoint.root == thread.head().root
    assert thread.checkpoint() == stored  # same size: the stored note, not a new row
    older = thread.checkpoint(3)
    assert open_checkpoint(older.note, signer.verifier()).checkpoint.size == 3
    assert older.root == thread.prove_consistency(3).old_root
    assert thread.latest_checkpoint() == stored
    with pytest.raises(EntryNotFoundError):
        thread.checkpoint(6)


# --- proofs ------------------------------------------------------------------------------


def test_every_inclusion_and_consistency_proof_verifies(thread: Thread) -> None:
    entries = thread.append_many([turn(f"e{i}") for i in range(13)])
    memory = MemoryHashSource([e.leaf_hash for e in entries])
    for size in range(1, 14):
        root = root_at(memory, size)
        for seq in range(size):
            proof = thread.prove_inclusion(seq, size)
            assert proof.hashes == inclusion_proof(memory, seq, size) and proof.root == root
            verify_inclusion(entries[seq].leaf_hash, seq, size, proof.hashes, root)
        for old in range(size + 1):
            proof = thread.prove_consistency(old, size)
            assert proof.hashes == consistency_proof(memory, old, size)
            verify_consistency(old, size, proof.hashes, root_at(memory, old), root)


@pytest.mark.parametrize(("seq", "size"), [(-1, None), (3, None), (0, 4), (2, 2), (0, 0)])
def test_inclusion_proof_bounds_refused(thread: Thread, seq: int, size: int | None) -> None:
    thread.append_many([turn("a"), turn("b"), turn("c")])
    with pytest.raises(EntryNotFoundError):
        thread.prove_inclusion(seq, size)


@pytest.mark.parametrize(("old", "new"), [(-1, 3), (4, 3), (2, 1), (0, 4)])
def test_consistency_proof_bounds_refused(thread: Thread, old: int, new: int) -> None:
    thread.append_many([turn("a"), turn("b"), turn("c")])
    with pytest.raises(EntryNotFoundError):
        thread.prove_consistency(old, new)


def test_proofs_read_log_n_stored_hashes(ledger: Ledger, thread: Thread) -> None:
    size = 1500
    thread.append_many([turn(f"e{i}") for i in range(size)])
    statements: list[str] = []

    def count(*args: Any) -> None:
        statements.append(args[2])

    event.listen(ledger.engine, "before_cursor_execute", count)
    try:
        proof = thread.prove_inclusion(777)
        consistency = thread.prove_consistency(1000)
    finally:
        event.remove(ledger.engine, "before_cursor_execute", count)
    bound = 2 * size.bit_length() + 2  # RFC 9162: at most 2·log2(n) + 2 hash reads
    assert proof.reads <= bound and consistency.reads <= bound
    # one single-row read per hash: a subtree row, or at level 0 an entry's leaf_hash
    hash_queries = [
        s for s in statements if "subtree" in s or ("FROM entry" in s and "leaf," not in s)
    ]
    assert len(hash_queries) == proof.reads + consistency.reads + 1  # + the proved leaf's hash
    assert not any("FROM entry" in s and "leaf_hash" not in s for s in statements)
    assert len(statements) <= proof.reads + consistency.reads + 8  # heads, a leaf hash, BEGINs


# Each example creates a database and commits several transactions (fsync each): fewer
# examples than the profile's default keep this property under ~10 s.
@settings(max_examples=25, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(batches=st.lists(st.integers(min_value=1, max_value=20), min_size=1, max_size=6))
def test_stored_tree_equals_memory_tree(
    signer: Signer, tmp_path_factory: Any, batches: list[int]
) -> None:
    url = f"sqlite:///{tmp_path_factory.mktemp('prop') / 'r.db'}"
    with Ledger.open(url, signer) as ledger:
        thread = ledger.create_thread("p")
        leaves: list[bytes] = []
        for size in batches:
            leaves += [e.leaf_hash for e in thread.append_many([turn("x")] * size)]
        memory = MemoryHashSource(leaves)
        assert thread.head().root == memory.root()
        last = len(leaves) - 1
        assert thread.prove_inclusion(last).hashes == inclusion_proof(memory, last, len(leaves))
        assert [leaf_hash(e.leaf) for e in thread.entries()] == leaves
        # every node, stored (level >= 4) or computed from the entries' leaf hashes
        size = len(leaves)
        with ledger.engine.connect() as conn:
            stored = StoredHashSource(conn, "p", size)
            for level in range(size.bit_length()):
                for index in range(size >> level):
                    assert stored.node(level, index) == memory.node(level, index)
            assert [root_at(stored, k) for k in range(size + 1)] == [
                root_at(memory, k) for k in range(size + 1)
            ]
