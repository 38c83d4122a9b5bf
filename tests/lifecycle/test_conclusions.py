"""conclusion.compute, conclusion.final and conclusion.revise: each rejection reason,
staleness through computes, repair by revision, revisable finals."""

from __future__ import annotations

import pytest

from registre.lifecycle import (
    Accepted,
    ComputeRequest,
    ConclusionReviseRequest,
    EvidenceReviseRequest,
    FinalRequest,
    LifecycleState,
    Rejected,
    Request,
    Revised,
    Statement,
    decide,
)
from tests.lifecycle.builders import run, with_evidence


def investigation() -> LifecycleState:
    """ev-1, ev-2 active; cc-1 compute on ev-1; cc-2 final on cc-1 and ev-2."""
    state, _ = run(
        with_evidence("r1", statements=2),
        ComputeRequest("derived from ev-1", ("ev-1",)),
        FinalRequest("the answer", ("cc-1", "ev-2")),
    )
    return state


def reason_of(state: LifecycleState, request: Request) -> str:
    outcome = decide(state, request)
    assert isinstance(outcome, Rejected), outcome
    return outcome.reason


def test_compute_and_final_get_sequential_ids() -> None:
    state = investigation()
    first, second = state.conclusion("cc-1"), state.conclusion("cc-2")
    assert first is not None and first.kind == "compute" and first.relies_on == ("ev-1",)
    assert second is not None and second.kind == "final"
    assert second.relies_on == ("ev-1", "ev-2")
    assert decide(state, ComputeRequest("more", ("ev-2",))) == Accepted("cc-3")


@pytest.mark.parametrize("kind", [ComputeRequest, FinalRequest])
@pytest.mark.parametrize(
    ("text", "cites", "reason"),
    [
        ("  ", ("ev-1",), "empty_statement"),
        ("x", (), "no_citation"),
        ("x", ("ev-1", "ev-99"), "unknown_evidence"),
        ("x", ("cc-99",), "unknown_conclusion"),
        ("x", ("cc-2",), "not_citable"),
    ],
)
def test_conclusion_rejections(
    kind: type[ComputeRequest] | type[FinalRequest], text: str, cites: tuple[str, ...], reason: str
) -> None:
    assert reason_of(investigation(), kind(text, cites)) == reason


def test_compute_may_not_cite_a_compute() -> None:
    state = investigation()
    assert reason_of(state, ComputeRequest("x", ("cc-1",))) == "not_citable"
    message = decide(state, ComputeRequest("x", ("cc-1",)))
    assert isinstance(message, Rejected)
    assert "'cc-1' is a compute, which a compute may not cite" in message.message


@pytest.mark.parametrize("replacement", [None, Statement("v2", ("r1",))])
@pytest.mark.parametrize("kind", [ComputeRequest, FinalRequest])
def test_citing_inactive_evidence_is_refused(
    replacement: Statement | None, kind: type[ComputeRequest] | type[FinalRequest]
) -> None:
    state, _ = run(investigation(), EvidenceReviseRequest("ev-2", replacement))
    assert reason_of(state, kind("x", ("ev-2",))) == "inactive_evidence"


def test_final_citing_a_stale_compute_is_refused() -> None:
    state, [event] = run(investigation(), EvidenceReviseRequest("ev-1", None))
    assert event.outcome == Revised("ev-1", None, ("cc-1", "cc-2"))
    assert reason_of(state, FinalRequest("x", ("ev-2", "cc-1"))) == "stale_citation"


def test_final_citing_a_replaced_compute_is_refused() -> None:
    state, _ = run(investigation(), ConclusionReviseRequest("cc-1", Statement("v2", ("ev-2",))))
    assert reason_of(state, FinalRequest("x", ("cc-1",))) == "inactive_conclusion"
    assert decide(state, FinalRequest("x", ("cc-3",))) == Accepted("cc-4")


def test_supersession_flags_finals_relying_through_a_compute() -> None:
    state, [event] = run(investigation(), EvidenceReviseRequest("ev-1", Statement("v2", ("r1",))))
    assert event.outcome == Revised("ev-1", "ev-3", ("cc-1", "cc-2"))
    assert all(c.stale for c in state.iter_conclusions())


def test_revising_a_compute_flags_the_finals_citing_it() -> None:
    state, [event] = run(
        investigation(), ConclusionReviseRequest("cc-1", Statement("fixed", ("ev-2",)))
    )
    assert event.outcome == Revised("cc-1", "cc-3", ("cc-2",))
    final = state.conclusion("cc-2")
    assert final is not None and final.stale and final.text == "the answer"


def test_revision_repairs_a_stale_conclusion() -> None:
    state, _ = run(investigation(), EvidenceReviseRequest("ev-1", Statement("v2", ("r1",))))
    state, [event] = run(state, ConclusionReviseRequest("cc-1", Statement("redo", ("ev-3",))))
    assert event.outcome == Revised("cc-1", "cc-3", ("cc-2",))
    old, new = state.conclusion("cc-1"), state.conclusion("cc-3")
    assert old is not None and new is not None
    assert (old.status, old.successor, old.stale) == ("superseded", "cc-3", True)
    assert (new.kind, new.predecessor, new.stale, new.status) == (
        "compute",
        "cc-1",
        False,
        "active",
    )


def test_revision_with_inactive_evidence_is_refused_and_changes_nothing() -> None:
    state, _ = run(investigation(), EvidenceReviseRequest("ev-1", None))
    before = state.copy()
    state, [event] = run(state, ConclusionReviseRequest("cc-1", Statement("redo", ("ev-1",))))
    assert isinstance(event.outcome, Rejected) and event.outcome.reason == "inactive_evidence"
    assert state == before


def test_revision_keeps_the_kind() -> None:
    state = investigation()
    # A compute's new version is checked as a compute: it may not cite a compute.
    assert reason_of(state, ConclusionReviseRequest("cc-1", Statement("x", ("cc-1",)))) == (
        "not_citable"
    )
    state, _ = run(state, ConclusionReviseRequest("cc-2", Statement("answer v2", ("cc-1",))))
    final = state.conclusion("cc-3")
    assert final is not None and final.kind == "final" and final.predecessor == "cc-2"


def test_final_can_be_revised_but_a_stale_citation_still_blocks_it() -> None:
    state, _ = run(investigation(), EvidenceReviseRequest("ev-1", None))
    request = ConclusionReviseRequest("cc-2", Statement("answer v2", ("cc-1",)))
    assert reason_of(state, request) == "stale_citation"
    state, [event] = run(state, ConclusionReviseRequest("cc-2", Statement("v2", ("ev-2",))))
    assert event.outcome == Revised("cc-2", "cc-3", ())


def test_retracting_a_conclusion() -> None:
    state, [event] = run(investigation(), ConclusionReviseRequest("cc-1", None))
    assert event.outcome == Revised("cc-1", None, ("cc-2",))
    retracted = state.conclusion("cc-1")
    assert retracted is not None and retracted.status == "retracted"
    assert state.citers("ev-1") == ("cc-2",)


def test_revising_unknown_or_inactive_conclusion_is_refused() -> None:
    state, _ = run(investigation(), ConclusionReviseRequest("cc-1", None))
    assert reason_of(state, ConclusionReviseRequest("cc-9", None)) == "unknown_conclusion"
    assert reason_of(state, ConclusionReviseRequest("cc-1", None)) == "inactive_conclusion"
    rejected = decide(state, ConclusionReviseRequest("cc-1", None))
    assert isinstance(rejected, Rejected) and "retracted" in rejected.message
