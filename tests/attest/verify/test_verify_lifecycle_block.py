"""The lifecycle block through the offline verifier: a model call recording
``"lifecycle_block": V`` is checked against the lifecycle state replayed at its ``at_seq``,
the block rebuilt by the rules of version V (1 for calls recorded before version 2)
(specs/context.md sections 4.1 and 8); the forgeries are in tests/tamper/test_semantics.py."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from registre.attest.entries import BodySchemaError, validate_body
from registre.attest.projection_digest import ContextDigestMismatchError, projection_digest
from registre.context import (
    BLOCK_SHARE_PERMILLE,
    LIFECYCLE_BLOCK_VERSION,
    ContextBudgetError,
    ContextEntry,
    ContextState,
    ExtractiveSummarizer,
    Policy,
    default_counter,
    prepare_compaction,
    project,
)
from registre.context.events import COMPACTION_ACTOR
from registre.lifecycle import KINDS as LIFECYCLE_KINDS
from registre.lifecycle import (
    ComputeRequest,
    EvidenceReviseRequest,
    LifecycleState,
    PinRequest,
    ReadRequest,
    Statement,
    UpsertRequest,
    parse_body,
)
from registre.lifecycle import apply as apply_event
from tests.bundles import Thread, ref, story_prefix
from tests.tamper.helpers import fails, passes

COUNTER = default_counter()
WIDE = Policy(budget_tokens=1000)


def lifecycle_at(thread: Thread, at_seq: int) -> LifecycleState:
    state = LifecycleState.empty()
    for entry in thread.entries[: at_seq + 1]:
        if entry.kind in LIFECYCLE_KINDS:
            state = apply_event(state, parse_body(entry.kind, entry.body))
    return state


def block_call(
    thread: Thread,
    at_seq: int,
    lifecycle: LifecycleState,
    policy: Policy,
    version: int = LIFECYCLE_BLOCK_VERSION,
    recorded: int | None = None,
) -> Any:
    """A model call whose projection carries the block of ``version``, recording
    ``recorded`` (default: the same version)."""
    state = ContextState.replay(
        ContextEntry(e.seq, e.kind, e.actor, e.body) for e in thread.entries[: at_seq + 1]
    )
    projection = project(state, policy.budget_tokens, policy, COUNTER, lifecycle, version)
    thread.append(
        "model.call",
        {
            "model": "test/model",
            "projection_sha256": projection_digest(projection),
            "at_seq": at_seq,
            "budget_tokens": policy.budget_tokens,
            "policy": policy.to_json(),
            "token_counter": COUNTER.name,
            "lifecycle_block": version if recorded is None else recorded,
        },
    )
    return projection


def test_a_call_at_an_earlier_prefix_shows_the_lifecycle_there() -> None:
    thread = story_prefix()  # 0..6: ev-1, ev-2 at 2; cc-1 at 3; pin at 4; final cc-2 at 5
    projection = block_call(thread, 2, lifecycle_at(thread, 2), WIDE)  # 7
    assert projection.block is not None and projection.block.statements == 2
    assert "cited by" not in projection.messages[-1].content  # no conclusion yet at 2
    report = passes(thread.full_bundle())
    assert "1 model-call projection digest reproduced" in " ".join(report.step(6).checked)


@pytest.mark.parametrize("version", [1, 2])
def test_a_call_of_either_block_version_reproduces(version: int) -> None:
    thread = story_prefix()
    projection = block_call(thread, 6, thread.state, WIDE, version)
    assert projection.block is not None and projection.block.version == version
    report = passes(thread.full_bundle())
    assert "1 model-call projection digest reproduced" in " ".join(report.step(6).checked)


@pytest.mark.parametrize(("sent", "recorded"), [(2, 1), (1, 2)])
def test_a_call_recording_another_block_version_than_it_sent_fail(sent: int, recorded: int) -> None:
    thread = story_prefix()
    block_call(thread, 6, thread.state, WIDE, sent, recorded)
    fails(thread.full_bundle(), ContextDigestMismatchError, step=6, seq=7)


def test_a_call_showing_a_later_lifecycle_than_its_prefix_fails() -> None:
    thread = story_prefix()
    block_call(thread, 2, thread.state, WIDE)  # the head's lifecycle, not the one at 2
    fails(thread.full_bundle(), ContextDigestMismatchError, step=6, seq=7)


ACTIONS = st.lists(
    st.sampled_from(["turn", "tool", "upsert", "revise", "retract", "compute", "ask", "call"]),
    min_size=4,
    max_size=40,
)


@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(actions=ACTIONS, budget=st.integers(300, 3000), data=st.data())
def test_every_block_fits_and_reproduces_offline(
    actions: list[str], budget: int, data: st.DataObject
) -> None:
    policy = Policy(
        budget_tokens=budget,
        high_water_permille=700,
        low_water_permille=400,
        keep_recent_turns=1,
        bulky_tool_output_tokens=40,
        summary_share_permille=400,
    )
    thread = Thread()
    thread.turn("Reconcile the Q3 impairment figures.")
    thread.decide(ReadRequest((ref("r1"), ref("r2"))))
    calls = 0
    for number, action in enumerate(actions):
        active = [e.id for e in thread.state.iter_evidence() if e.status == "active"]
        if action == "turn":
            thread.turn(f"Step {number}: segment {number} reconciles within 0.{number}m.")
        elif action == "tool":
            call_id = f"call-{number}"
            thread.append(
                "tool.call", {"call_id": call_id, "name": "sql", "arguments": {"q": number}}
            )
            thread.append(
                "tool.result", {"call_id": call_id, "content": f"row {number}\n" * (number % 7)}
            )
        elif action == "upsert":
            words = data.draw(st.integers(1, 80))
            text = f"Segment {number} " + "figure " * words
            thread.decide(UpsertRequest((Statement(text, ("r1",)),)))
        elif action in ("revise", "retract") and active:
            target = data.draw(st.sampled_from(active))
            replacement = Statement(f"Corrected {number}", ("r2",)) if action == "revise" else None
            thread.decide(EvidenceReviseRequest(target, replacement))
        elif action == "compute" and active:
            cited = data.draw(
                st.lists(st.sampled_from(active), min_size=1, max_size=3, unique=True)
            )
            thread.decide(ComputeRequest(f"Total from {len(cited)}", tuple(cited)))
        elif action == "ask":
            thread.decide(PinRequest("open_question", f"Question {number}?", thread.size - 1))
        elif action == "call":
            assert thread.context is not None
            try:  # compact when due, as Thread.model_call does
                body = prepare_compaction(
                    thread.context, policy, COUNTER, ExtractiveSummarizer(), thread.texts
                )
                if body is not None:
                    thread.append("context.compaction", body, actor=COMPACTION_ACTOR)
                projection = block_call(thread, thread.size - 1, thread.state, policy)
            except ContextBudgetError:  # the context itself may not fit; never the block
                continue
            calls += 1
            assert projection.tokens <= budget
            assert projection.block is not None
            assert projection.block.tokens <= budget * BLOCK_SHARE_PERMILLE // 1000
    event(f"calls with the block: {min(calls, 3)}+")
    if calls:
        passes(thread.full_bundle())


def test_the_body_field_is_a_known_version_or_absent() -> None:
    thread = story_prefix()
    body = dict(block_call(thread, 6, thread.state, WIDE) and thread.entries[-1].body)
    validate_body("model.call", body)
    validate_body("model.call", body | {"lifecycle_block": 1})
    del body["lifecycle_block"]
    validate_body("model.call", body)
    for wrong in (0, 3, True, "1", "2", None):
        with pytest.raises(BodySchemaError, match="lifecycle_block"):
            validate_body("model.call", body | {"lifecycle_block": wrong})
