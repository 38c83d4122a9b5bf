"""Projection: order, manifest statuses, the stable prefix and the budget refusals."""

from __future__ import annotations

import pytest

from registre.context import (
    ContextState,
    Message,
    PinsOverBudgetError,
    Policy,
    ProjectionOverBudgetError,
    default_counter,
    project,
)
from registre.context.render import message_tokens, pin_message
from tests.context.example import POLICY, before_compaction, worked_example
from tests.context.threads import ThreadBuilder

COUNTER = default_counter()


def test_pins_then_summaries_then_the_verbatim_tail() -> None:
    projection = project(worked_example().state, 320, POLICY, COUNTER)
    roles = [(m.role, m.content[:16]) for m in projection.messages]
    assert roles == [
        ("system", "[pinned task_par"),
        ("system", "[summary of ledg"),
        ("assistant", '{"cmd":"pytest -'),
        ("tool", "[output elided: "),
        ("assistant", "The namespace te"),
        ("user", "Find where the s"),
    ]
    assert projection.manifest.stable_prefix_messages == 2
    assert projection.manifest.stable_prefix_tokens == sum(projection.message_tokens[:2])


def test_manifest_gives_every_entry_one_status() -> None:
    manifest = project(worked_example().state, 320, POLICY, COUNTER).manifest
    assert [run.to_json() for run in manifest.runs] == [
        {"from": 0, "to": 0, "status": "summarized", "message": 1, "compaction": 9, "line": 1},
        {"from": 1, "to": 1, "status": "pinned", "message": 0, "pin": "pin-1"},
        {"from": 2, "to": 3, "status": "folded"},  # the summary had no room for the listing
        {"from": 4, "to": 4, "status": "summarized", "message": 1, "compaction": 9, "line": 0},
        {"from": 5, "to": 5, "status": "verbatim", "message": 2},
        {"from": 6, "to": 6, "status": "stubbed", "message": 3},
        {"from": 7, "to": 8, "status": "verbatim", "message": 4},
        {"from": 9, "to": 9, "status": "folded"},
    ]
    assert manifest.status_of(8).status == "verbatim"
    assert manifest.status_of(0).line == 1
    with pytest.raises(KeyError):
        manifest.status_of(10)


def test_a_summarized_range_entry_not_pointed_at_is_folded_without_mention() -> None:
    builder = worked_example()
    builder.turn("assistant", "Looking at modutils.")
    state = builder.state
    summary = state.summaries[0]
    assert all(not line.covers(1) for line in summary.lines)  # the pin entry: no line
    unpinned = before_compaction()
    unpinned.unpin("pin-1")
    unpinned.compact_now()
    manifest = project(unpinned.state, 320, POLICY, COUNTER).manifest
    assert manifest.status_of(1).status in ("folded", "summarized")
    assert all(run.status != "pinned" for run in manifest.runs)


def test_projection_is_a_pure_function_of_the_state() -> None:
    state = worked_example().state
    first = project(state, 320, POLICY, COUNTER)
    assert project(state, 320, POLICY, COUNTER) == first
    assert project(state.copy(), 320, POLICY, COUNTER).to_json() == first.to_json()
    assert project(state, 321, POLICY, COUNTER).to_json() != first.to_json()  # budget is bound


def test_pins_alone_over_budget_says_by_how_much() -> None:
    builder = ThreadBuilder(compact=False)
    builder.pin("definition", "word " * 200)
    pins = message_tokens(pin_message(builder.state.live_pins()[0]), COUNTER)
    with pytest.raises(PinsOverBudgetError) as caught:
        project(builder.state, pins - 7, Policy(), COUNTER)
    assert caught.value.over_by == 7
    assert "7 over the budget" in str(caught.value)


def test_context_over_budget_asks_for_a_compaction() -> None:
    state = before_compaction().state
    with pytest.raises(ProjectionOverBudgetError, match="53 over the budget of 200") as caught:
        project(state, 200, POLICY, COUNTER)
    assert caught.value.hint is not None
    assert "record a compaction first" in caught.value.hint
    assert "registre" not in str(caught.value)
    assert caught.value.over_by == 53  # 253 tokens against 200
    assert caught.value.needed == 253


def test_compaction_due_past_the_high_water_mark() -> None:
    assert project(before_compaction().state, 320, POLICY, COUNTER).compaction_due
    assert not project(worked_example().state, 320, POLICY, COUNTER).compaction_due


def test_empty_thread_projects_to_nothing() -> None:
    projection = project(ContextState(), 10, Policy(), COUNTER)
    assert projection.messages == ()
    assert projection.to_json()["at"] == -1
    assert projection.manifest.runs == ()


def test_message_json_omits_unset_fields() -> None:
    assert Message("user", "hi").to_json() == {"role": "user", "content": "hi"}


def test_budget_must_be_positive() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        project(ContextState(), 0, Policy(), COUNTER)
