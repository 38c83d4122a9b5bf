"""The state view: copies are independent, equality is by content, snapshots are plain data."""

from __future__ import annotations

import json

from registre.lifecycle import (
    ComputeRequest,
    ConclusionReviseRequest,
    EvidenceReviseRequest,
    LifecycleState,
    Statement,
)
from tests.lifecycle.builders import run, with_evidence


def test_copy_is_independent() -> None:
    state = with_evidence("r1")
    fork = state.copy()
    after, _ = run(state, ComputeRequest("c", ("ev-1",)))
    assert fork.conclusion("cc-1") is None
    assert after.conclusion("cc-1") is not None
    assert fork != after


def test_equal_histories_give_equal_states_and_snapshots() -> None:
    def build() -> LifecycleState:
        state, _ = run(
            with_evidence("r1", statements=2),
            ComputeRequest("c", ("ev-1", "ev-2")),
            ComputeRequest("d", ("ev-2",)),
            EvidenceReviseRequest("ev-2", Statement("v2", ("r1",))),
        )
        return state

    first, second = build(), build()
    assert first == second
    assert first.snapshot() == second.snapshot()
    assert json.loads(json.dumps(first.snapshot())) == first.snapshot()
    assert first != LifecycleState.empty()
    assert first != "not a state"


def test_citers_drop_revised_versions() -> None:
    state, _ = run(
        with_evidence("r1", statements=2),
        ComputeRequest("c", ("ev-1",)),
        ComputeRequest("d", ("ev-1",)),
    )
    assert state.citers("ev-1") == ("cc-1", "cc-2")
    state, _ = run(state, EvidenceReviseRequest("ev-1", None))
    # Revising cc-1 off retracted ev-1 removes it from ev-1's citers; copying keeps equality.
    state, _ = run(state, ConclusionReviseRequest("cc-1", Statement("fixed", ("ev-2",))))
    assert state.citers("ev-1") == ("cc-2",)
    assert state.citers("ev-2") == ("cc-3",)
    assert state.copy() == state


def test_snapshot_shape() -> None:
    state, _ = run(with_evidence("r1"), ComputeRequest("c", ("ev-1",)))
    snapshot = state.snapshot()
    assert set(snapshot) == {"references", "evidence", "conclusions", "pins", "next"}
    assert snapshot["next"] == {"evidence": 2, "conclusion": 2, "pin": 1}
    assert snapshot["conclusions"] == {
        "cc-1": {
            "kind": "compute",
            "text": "c",
            "cites": ["ev-1"],
            "relies_on": ["ev-1"],
            "status": "active",
            "stale": False,
            "successor": None,
            "predecessor": None,
        }
    }
    assert "evidence=1" in repr(state)
