"""decide/apply/replay: deciding never mutates, replay rebuilds, and forged histories are
refused on replay (threat 19: semantic tampering)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import pytest

from registre.lifecycle import (
    Accepted,
    ComputeRequest,
    Event,
    EvidenceReviseRequest,
    FinalRequest,
    LifecycleState,
    ReadRequest,
    ReplayMismatchError,
    Revised,
    Statement,
    StateRetiredError,
    UpsertOutcome,
    UpsertRequest,
    apply,
    decide,
    parse_body,
    replay,
    step,
)
from tests.lifecycle.builders import ref, run, with_evidence

VECTORS = Path(__file__).resolve().parents[2] / "specs" / "vectors" / "lifecycle-bodies.json"


def recorded_events() -> list[Event]:
    data = json.loads(VECTORS.read_text(encoding="utf-8"))
    return [parse_body(item["kind"], item["body"]) for item in data["events"]]


def test_decide_does_not_change_the_state() -> None:
    state = with_evidence("r1", statements=2)
    before = state.copy()
    decide(state, EvidenceReviseRequest("ev-1", Statement("v2", ("r1",))))
    decide(state, UpsertRequest((Statement("x", ("r1",)),)))
    assert state == before
    assert state.next_ids == ("ev-3", "cc-1", "pin-1")


def test_replay_rebuilds_the_state_step_by_step() -> None:
    state, events = run(
        LifecycleState.empty(),
        ReadRequest((ref("r1"),)),
        UpsertRequest((Statement("a", ("r1",)), Statement("b", ("r1",)))),
        ComputeRequest("c", ("ev-1",)),
        FinalRequest("f", ("cc-1", "ev-2")),
        EvidenceReviseRequest("ev-1", None),
    )
    prefix = replay([])
    assert prefix == LifecycleState.empty()
    for event in events:
        prefix = apply(prefix, event)
    assert prefix == state.copy()
    assert prefix.snapshot() == state.snapshot()


def test_step_is_decide_then_apply() -> None:
    state = with_evidence("r1")
    expected = decide(state, ComputeRequest("c", ("ev-1",)))
    event, after = step(state, ComputeRequest("c", ("ev-1",)))
    assert event.outcome == expected == Accepted("cc-1")
    assert after.conclusion("cc-1") is not None


def test_forged_outcome_fail() -> None:
    """A rejected statement recorded as accepted is refused on replay."""
    events = recorded_events()
    upsert = events[1]
    assert isinstance(upsert.outcome, UpsertOutcome)
    forged_results = (*upsert.outcome.results[:3], Accepted("ev-4"), upsert.outcome.results[4])
    events[1] = Event(upsert.request, UpsertOutcome(forged_results))
    with pytest.raises(ReplayMismatchError, match=r"^event 1: .*outcome\.results\[3\]") as caught:
        replay(events)
    assert caught.value.index == 1


def test_final_citing_retracted_evidence_fail() -> None:
    state, _ = run(with_evidence("r1", statements=2), EvidenceReviseRequest("ev-1", None))
    forged = Event(FinalRequest("answer", ("ev-1",)), Accepted("cc-1"))
    with pytest.raises(ReplayMismatchError, match="inactive_evidence"):
        apply(state, forged)


def test_forged_stale_list_fail() -> None:
    """A supersession whose record hides the conclusion it leaves stale."""
    events = recorded_events()
    revise = events[6]
    assert revise.outcome == Revised("ev-2", "ev-4", ("cc-1", "cc-2"))
    events[6] = dataclasses.replace(revise, outcome=Revised("ev-2", "ev-4", ("cc-1",)))
    with pytest.raises(ReplayMismatchError, match=r"^event 6: "):
        replay(events)


def test_skipped_id_fail() -> None:
    events = recorded_events()
    events[2] = dataclasses.replace(events[2], outcome=Accepted("cc-2"))
    with pytest.raises(ReplayMismatchError, match=r"^event 2: "):
        replay(events)


def test_deleted_event_fail() -> None:
    """Dropping the read that registered r3 makes the supersession citing it unreplayable."""
    events = recorded_events()
    del events[5]
    with pytest.raises(ReplayMismatchError, match=r"^event 5: .*unregistered_reference"):
        replay(events)


def test_reordered_events_fail() -> None:
    events = recorded_events()
    events[2], events[3] = events[3], events[2]
    with pytest.raises(ReplayMismatchError, match=r"^event 2: "):
        replay(events)


def test_altered_rejection_message_fail() -> None:
    events = recorded_events()
    final = events[7]
    altered = dataclasses.replace(final.outcome, message="looks fine to me")  # type: ignore[type-var]
    events[7] = dataclasses.replace(final, outcome=altered)
    with pytest.raises(ReplayMismatchError, match=r"^event 7: "):
        replay(events)


def test_mismatch_leaves_the_state_usable_and_unchanged() -> None:
    state = with_evidence("r1")
    before = state.copy()
    with pytest.raises(ReplayMismatchError):
        apply(state, Event(ComputeRequest("c", ("ev-1",)), Accepted("cc-7")))
    assert not state.retired
    assert state == before


def test_a_state_is_retired_by_apply() -> None:
    state = with_evidence("r1")
    event = Event(ComputeRequest("c", ("ev-1",)), decide(state, ComputeRequest("c", ("ev-1",))))
    after = apply(state, event)
    assert state.retired and not after.retired
    with pytest.raises(StateRetiredError, match="copy"):
        state.evidence("ev-1")
    with pytest.raises(StateRetiredError):
        decide(state, ComputeRequest("c", ("ev-1",)))
    assert "retired" in repr(state)
