"""source.read: registration, idempotent re-reads, conflicts, partial reads."""

from __future__ import annotations

from registre.lifecycle import (
    LifecycleState,
    ReadOutcome,
    ReadRequest,
    Registered,
    Rejected,
    SourceRef,
    decide,
)
from tests.lifecycle.builders import digest, ref, run


def test_read_registers_each_reference() -> None:
    state, [event] = run(LifecycleState.empty(), ReadRequest((ref("r1"), ref("r2"))))
    assert event.outcome == ReadOutcome((Registered("r1"), Registered("r2")))
    assert state.reference("r1") == ref("r1")
    assert state.reference("r2") == ref("r2")


def test_identical_reread_is_accepted_and_changes_nothing() -> None:
    state, _ = run(LifecycleState.empty(), ReadRequest((ref("r1"),)))
    before = state.copy()
    state, [event] = run(state, ReadRequest((ref("r1"),)))
    assert event.outcome == ReadOutcome((Registered("r1"),))
    assert state == before


def test_reference_conflict_keeps_the_first_passage() -> None:
    state, _ = run(LifecycleState.empty(), ReadRequest((ref("r1"),)))
    other = SourceRef("r1", "report.pdf", "p. 1", digest("edited passage"))
    before = state.copy()
    state, [event] = run(state, ReadRequest((other,)))
    assert isinstance(event.outcome, ReadOutcome)
    [result] = event.outcome.results
    assert isinstance(result, Rejected)
    assert result.reason == "reference_conflict"
    assert "'r1'" in result.message
    assert state == before
    assert state.reference("r1") == ref("r1")


def test_conflict_within_one_read_is_decided_in_order() -> None:
    first = ref("r1", location="p. 1")
    second = ref("r1", location="p. 2")
    outcome = decide(LifecycleState.empty(), ReadRequest((first, ref("r2"), second)))
    assert isinstance(outcome, ReadOutcome)
    assert outcome.results[:2] == (Registered("r1"), Registered("r2"))
    assert isinstance(outcome.results[2], Rejected)
    assert outcome.results[2].reason == "reference_conflict"
