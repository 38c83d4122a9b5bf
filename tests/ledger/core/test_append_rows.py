"""The append path's rows (issue 17, item 4): whatever statement form an engine inserts a batch
with (SQLite: executemany; PostgreSQL: one INSERT ... SELECT FROM unnest per table), the
``entry`` and ``subtree`` tables hold exactly the signed entries and the subtree hashes their
leaves complete from level 4 up (lower ones are computed from the entry rows' ``leaf_hash``:
schema version 6), and the head moves to the tree they make."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from sqlalchemy import text

from registre.attest.tree import CompactRange
from registre.ledger.core import append
from registre.ledger.ledger import Ledger
from registre.ledger.store.schema import LOWEST_STORED_LEVEL
from registre.ledger.thread import Thread
from registre.ledger.verify.database import verify_database
from tests.ledger.helpers import turn


def _rows(ledger: Ledger, thread: str) -> tuple[list[tuple[object, ...]], list[tuple[object, ...]]]:
    with ledger.engine.connect() as conn:
        entries = conn.execute(
            text(
                "SELECT seq, leaf, leaf_hash, kind, time FROM entry WHERE thread = :t ORDER BY seq"
            ),
            {"t": thread},
        ).all()
        subtrees = conn.execute(
            text("SELECT level, idx, hash FROM subtree WHERE thread = :t ORDER BY level, idx"),
            {"t": thread},
        ).all()
    return (
        [(r[0], bytes(r[1]), bytes(r[2]), r[3], r[4]) for r in entries],
        [(r[0], r[1], bytes(r[2])) for r in subtrees],
    )


def _stored(completed: list[tuple[int, int, bytes]]) -> list[tuple[int, int, bytes]]:
    """The subtree rows the store keeps of ``completed``, in primary-key order."""
    return sorted(done for done in completed if done[0] >= LOWEST_STORED_LEVEL)


def test_batches_store_exactly_the_signed_rows(ledger: Ledger, thread: Thread) -> None:
    entries = []
    for size in (1, 7, 100, 2, 33):  # odd sizes: subtrees completed across batch boundaries
        entries += thread.append_many([turn(f"t{len(entries) + k}") for k in range(size)])
    entries.append(thread.append(*turn("single")))
    stored_entries, stored_subtrees = _rows(ledger, thread.id)
    assert stored_entries == [(e.seq, e.leaf, e.leaf_hash, e.kind, e.time) for e in entries]
    frontier = CompactRange()
    expected = [done for e in entries for done in frontier.append(e.leaf_hash)]
    assert stored_subtrees == _stored(expected)
    assert min(level for level, _, _ in stored_subtrees) == LOWEST_STORED_LEVEL == 4
    head = thread.head()
    assert (head.size, head.root) == (frontier.size, frontier.root())
    assert len(verify_database(ledger)) == 1  # raises at the first failure


def test_two_threads_rows_stay_apart(ledger: Ledger) -> None:
    a, b = ledger.create_thread("a"), ledger.create_thread("b")
    first = a.append_many([turn(f"a{k}") for k in range(5)])
    second = b.append_many([turn(f"b{k}") for k in range(19)])
    assert [row[1] for row in _rows(ledger, "a")[0]] == [e.leaf for e in first]
    assert [row[1] for row in _rows(ledger, "b")[0]] == [e.leaf for e in second]
    assert _rows(ledger, "a")[1] == []  # 5 leaves: no subtree of level 4 yet
    assert [row[:2] for row in _rows(ledger, "b")[1]] == [(4, 0)]  # leaves 0-15


def test_batches_cut_into_several_statements_store_the_same_rows(
    ledger: Ledger, thread: Thread, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On PostgreSQL a batch past PG_CHUNK_ROWS rows (or PG_CHUNK_BYTES of leaves) takes
    several INSERT ... FROM unnest statements, in one transaction; the rows are the same."""
    monkeypatch.setattr(append, "PG_CHUNK_ROWS", 2)  # the 3 subtree rows: 2 statements
    monkeypatch.setattr(append, "PG_CHUNK_BYTES", 1500)
    entries = thread.append_many([turn("x" * (1 + k * 150)) for k in range(40)])
    stored_entries, stored_subtrees = _rows(ledger, thread.id)
    assert stored_entries == [(e.seq, e.leaf, e.leaf_hash, e.kind, e.time) for e in entries]
    frontier = CompactRange()
    assert stored_subtrees == _stored([d for e in entries for d in frontier.append(e.leaf_hash)])
    assert len(verify_database(ledger)) == 1


class _Leaf:
    def __init__(self, size: int) -> None:
        self.leaf = b"x" * size


@given(st.lists(st.integers(1, 50), max_size=40), st.integers(1, 5), st.integers(1, 120))
def test_pg_chunks_keep_order_and_bounds(sizes: list[int], rows: int, limit: int) -> None:
    entries: list[Any] = [_Leaf(size) for size in sizes]
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(append, "PG_CHUNK_ROWS", rows)
        patch.setattr(append, "PG_CHUNK_BYTES", limit)
        chunks = append._pg_chunks(entries)
    assert [e for chunk in chunks for e in chunk] == entries
    for chunk in chunks:
        assert 1 <= len(chunk) <= rows or not entries
        assert len(chunk) == 1 or sum(len(e.leaf) for e in chunk) <= limit
