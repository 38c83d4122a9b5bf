"""registre.witness.state: the witness's SQLite memory (THREATS rows 6, 17 for the witness)."""

from __future__ import annotations

import sqlite3
from collections.abc import Iterator
from pathlib import Path

import pytest

from registre.attest.notes import Checkpoint
from registre.attest.tree import empty_root
from registre.witness.errors import WitnessStateError
from registre.witness.state import FollowedLog, LatestCheckpoint, WitnessState
from tests.witness.conftest import read_only_file

ORIGIN = "example.com/log/t1"


def checkpoint(size: int, fill: int = 1) -> Checkpoint:
    return Checkpoint(ORIGIN, size, bytes([fill]) * 32)


def accept(_held: LatestCheckpoint) -> None:
    return None


@pytest.fixture
def state(tmp_path: Path) -> Iterator[WitnessState]:
    created = WitnessState.create(tmp_path / "witness.db")
    yield created
    created.close()


def advance(state: WitnessState, cp: Checkpoint, stamp: int = 1) -> str:
    return state.advance(cp, f"note {cp.size}\n", accept, lambda: (f"line {stamp}\n", stamp))


def test_nothing_held_is_size_zero_and_empty_root(state: WitnessState) -> None:
    held = state.latest(ORIGIN)
    assert (held.size, held.root, held.note) == (0, empty_root(), None)


def test_advance_stores_latest_and_history(state: WitnessState) -> None:
    assert advance(state, checkpoint(3)) == "line 1\n"
    advance(state, checkpoint(5, 2), stamp=2)
    held = state.latest(ORIGIN)
    assert (held.size, held.note, held.cosignature) == (5, "note 5\n", "line 2\n")
    assert [(r.size, r.timestamp) for r in state.history(ORIGIN)] == [(3, 1), (5, 2)]
    assert [o.origin for o in state.origins()] == [ORIGIN]


def test_refusing_check_stores_nothing(state: WitnessState) -> None:
    advance(state, checkpoint(3))

    def refuse(_held: LatestCheckpoint) -> None:
        raise WitnessStateError("no")

    with pytest.raises(WitnessStateError):
        state.advance(checkpoint(4), "n\n", refuse, lambda: ("l\n", 9))
    assert state.latest(ORIGIN).size == 3 and len(state.history(ORIGIN)) == 1


def test_follow_once_and_prefix_cover(state: WitnessState) -> None:
    assert state.follow("k", "example.com/log/") is True
    assert state.follow("k", "example.com/log/") is False
    (log,) = state.followed()
    assert log == FollowedLog("k", "example.com/log/")
    assert log.covers("example.com/log/t1")
    assert not log.covers("example.com/log/")
    assert not log.covers("example.com/logbook/t1")


def test_state_survives_reopen(tmp_path: Path) -> None:
    path = tmp_path / "witness.db"
    first = WitnessState.create(path)
    advance(first, checkpoint(7))
    first.close()
    again = WitnessState.open(path)
    assert again.latest(ORIGIN).size == 7
    again.close()


def test_create_over_existing_state_fail(state: WitnessState) -> None:
    with pytest.raises(WitnessStateError, match="already exists"):
        WitnessState.create(state.path)


def test_open_missing_or_foreign_file_fail(tmp_path: Path) -> None:
    with pytest.raises(WitnessStateError, match="no witness state at") as raised:
        WitnessState.open(tmp_path / "absent.db")
    assert raised.value.hint is not None
    assert "registre witness init" in raised.value.hint
    assert "registre" not in str(raised.value).replace(str(tmp_path), "")
    (tmp_path / "junk.db").write_bytes(b"not sqlite at all" * 100)
    with pytest.raises(WitnessStateError, match="not a witness state"):
        WitnessState.open(tmp_path / "junk.db")


def sql(state: WitnessState, statement: str) -> None:
    conn = sqlite3.connect(state.path, isolation_level=None)
    try:
        conn.execute(statement)
    finally:
        conn.close()


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE latest SET size = 1",  # rollback of the held checkpoint
        "DELETE FROM latest",
        "UPDATE cosigned SET note = 'forged'",
        "DELETE FROM cosigned",
        "UPDATE evidence SET reason = 'x'",
        "DELETE FROM evidence",
    ],
)
def test_direct_rewrite_of_witness_memory_fail(state: WitnessState, statement: str) -> None:
    advance(state, checkpoint(5))
    state.record_evidence(checkpoint(5, 9), "fork\n", "split-view", "two roots")
    with pytest.raises(sqlite3.IntegrityError, match="witness: "):
        sql(state, statement)
    assert state.latest(ORIGIN).size == 5
    assert len(state.history(ORIGIN)) == 1 and len(state.evidence()) == 1


def test_evidence_kept_once_per_note(state: WitnessState) -> None:
    for _ in range(3):
        state.record_evidence(checkpoint(5, 9), "fork\n", "split-view", "two roots")
    state.record_evidence(checkpoint(6, 9), "fork 6\n", "bad-proof", "proof")
    assert [(e.size, e.kind) for e in state.evidence(ORIGIN)] == [
        (5, "split-view"),
        (6, "bad-proof"),
    ]


def test_compare_and_swap_miss_stores_nothing(state: WitnessState) -> None:
    advance(state, checkpoint(5))

    def moved_meanwhile(_held: LatestCheckpoint) -> None:
        # what a second writer would do if the transaction did not hold the write lock
        state._conn().execute("UPDATE latest SET size = 6 WHERE origin = ?", (ORIGIN,))

    with pytest.raises(WitnessStateError, match="changed during the update"):
        state.advance(checkpoint(8), "n\n", moved_meanwhile, lambda: ("l\n", 2))
    assert state.latest(ORIGIN).size == 5 and len(state.history(ORIGIN)) == 1


def test_read_only_state_refused_for_writing_fail(tmp_path: Path) -> None:
    path = tmp_path / "witness.db"
    created = WitnessState.create(path)
    created.follow("example.org/log+00000000+AAAA", "example.org/log/")
    created.close()
    with read_only_file(path):
        with pytest.raises(WitnessStateError, match="is read-only") as info:
            WitnessState.open(path)  # what `witness follow` and `witness serve` open
        assert "registre witness show" in str(info.value.hint)
        reader = WitnessState.open(path, read_only=True)
        try:
            assert [f.origin_prefix for f in reader.followed()] == ["example.org/log/"]
            with pytest.raises(WitnessStateError, match="opened read-only"):
                reader.follow("example.org/other+00000000+AAAA", "example.org/other/")
        finally:
            reader.close()
