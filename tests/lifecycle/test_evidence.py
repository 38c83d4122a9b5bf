"""evidence.upsert and evidence.revise: each rejection reason, partial batches, ids,
supersession, retraction, refused revisions."""

from __future__ import annotations

import pytest

from registre.lifecycle import (
    Accepted,
    ComputeRequest,
    EvidenceReviseRequest,
    LifecycleState,
    Rejected,
    Revised,
    Statement,
    UpsertOutcome,
    UpsertRequest,
    decide,
)
from tests.lifecycle.builders import run, with_evidence


def upsert_results(state: LifecycleState, *statements: Statement) -> tuple[object, ...]:
    outcome = decide(state, UpsertRequest(statements))
    assert isinstance(outcome, UpsertOutcome)
    return outcome.results


@pytest.mark.parametrize("text", ["", " ", "\t\n\r\x0b\x0c "])
def test_blank_statement_is_rejected_as_empty_statement(text: str) -> None:
    [result] = upsert_results(with_evidence("r1", statements=0), Statement(text, ("r1",)))
    assert isinstance(result, Rejected) and result.reason == "empty_statement"


def test_non_ascii_space_counts_as_text() -> None:
    [result] = upsert_results(with_evidence("r1", statements=0), Statement("\u00a0", ("r1",)))
    assert result == Accepted("ev-1")


def test_statement_without_citation_is_rejected_as_no_citation() -> None:
    [result] = upsert_results(with_evidence("r1", statements=0), Statement("claim", ()))
    assert isinstance(result, Rejected) and result.reason == "no_citation"


def test_unregistered_reference_names_the_first_one() -> None:
    state = with_evidence("r1", statements=0)
    [result] = upsert_results(state, Statement("claim", ("r1", "r7", "r8")))
    assert isinstance(result, Rejected) and result.reason == "unregistered_reference"
    assert "'r7'" in result.message and "'r8'" not in result.message


def test_blank_text_is_reported_before_missing_citations() -> None:
    [result] = upsert_results(LifecycleState.empty(), Statement("", ()))
    assert isinstance(result, Rejected) and result.reason == "empty_statement"


def test_partial_batch_numbers_only_accepted_statements() -> None:
    state = with_evidence("r1", statements=0)
    results = upsert_results(
        state,
        Statement("a", ("r1",)),
        Statement("b", ("nope",)),
        Statement("c", ("r1",)),
    )
    assert results[0] == Accepted("ev-1")
    assert isinstance(results[1], Rejected)
    assert results[2] == Accepted("ev-2")


def test_rejected_batch_changes_nothing() -> None:
    state = with_evidence("r1", statements=1)
    before = state.copy()
    state, _ = run(state, UpsertRequest((Statement("", ("r1",)), Statement("x", ()))))
    assert state == before
    assert state.next_ids[0] == "ev-2"


def test_supersession_links_both_ways_and_keeps_the_old_text() -> None:
    state = with_evidence("r1", statements=1)
    state, [event] = run(state, EvidenceReviseRequest("ev-1", Statement("better", ("r1",))))
    assert event.outcome == Revised("ev-1", "ev-2", ())
    old, new = state.evidence("ev-1"), state.evidence("ev-2")
    assert old is not None and new is not None
    assert (old.status, old.successor, old.text) == ("superseded", "ev-2", "claim 0")
    assert (new.status, new.predecessor, new.text) == ("active", "ev-1", "better")


def test_retraction_keeps_the_entry_in_the_record() -> None:
    state = with_evidence("r1", statements=1)
    state, [event] = run(state, EvidenceReviseRequest("ev-1", None))
    assert event.outcome == Revised("ev-1", None, ())
    entry = state.evidence("ev-1")
    assert entry is not None and entry.status == "retracted" and entry.successor is None


def test_ids_are_never_reused_after_retraction() -> None:
    state = with_evidence("r1", statements=2)
    state, _ = run(state, EvidenceReviseRequest("ev-2", None))
    [result] = upsert_results(state, Statement("again", ("r1",)))
    assert result == Accepted("ev-3")


def test_revising_unknown_evidence_is_refused() -> None:
    outcome = decide(with_evidence("r1"), EvidenceReviseRequest("ev-9", None))
    assert isinstance(outcome, Rejected) and outcome.reason == "unknown_evidence"


@pytest.mark.parametrize("first", [None, Statement("v2", ("r1",))], ids=["retracted", "superseded"])
def test_revising_inactive_evidence_is_refused(first: Statement | None) -> None:
    state, _ = run(with_evidence("r1"), EvidenceReviseRequest("ev-1", first))
    status = "retracted" if first is None else "superseded"
    for again in (None, Statement("v3", ("r1",))):
        outcome = decide(state, EvidenceReviseRequest("ev-1", again))
        assert isinstance(outcome, Rejected) and outcome.reason == "inactive_evidence"
        assert status in outcome.message


@pytest.mark.parametrize(
    ("replacement", "reason"),
    [
        (Statement(" ", ("r1",)), "empty_statement"),
        (Statement("x", ()), "no_citation"),
        (Statement("x", ("r404",)), "unregistered_reference"),
    ],
)
def test_failed_replacement_changes_nothing(replacement: Statement, reason: str) -> None:
    state, _ = run(with_evidence("r1"), ComputeRequest("uses ev-1", ("ev-1",)))
    before = state.copy()
    state, [event] = run(state, EvidenceReviseRequest("ev-1", replacement))
    assert isinstance(event.outcome, Rejected) and event.outcome.reason == reason
    assert state == before
    conclusion = state.conclusion("cc-1")
    assert conclusion is not None and not conclusion.stale


def test_revision_lists_and_flags_citing_conclusions_without_editing_them() -> None:
    state = with_evidence("r1", statements=2)
    state, _ = run(
        state,
        ComputeRequest("from ev-1", ("ev-1",)),
        ComputeRequest("from ev-2", ("ev-2",)),
        ComputeRequest("from both", ("ev-2", "ev-1")),
    )
    state, [event] = run(state, EvidenceReviseRequest("ev-1", None))
    assert event.outcome == Revised("ev-1", None, ("cc-1", "cc-3"))
    stale = {c.id: c.stale for c in state.iter_conclusions()}
    assert stale == {"cc-1": True, "cc-2": False, "cc-3": True}
    conclusion = state.conclusion("cc-3")
    assert conclusion is not None
    assert (conclusion.text, conclusion.cites, conclusion.status) == (
        "from both",
        ("ev-2", "ev-1"),
        "active",
    )
