"""Thread.model_call(lifecycle_block=True): the context ends with the lifecycle block (the
active evidence ids the agent must cite, the stale conclusions, the open questions), the body
records ``"lifecycle_block": 2``, and ``verify --db``, the raw append path and the replay
rebuild it (specs/context.md sections 4.1 and 8); at every call, every active evidence id is
in the context sent while their list fits. Both engines."""

from __future__ import annotations

import re
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registre.attest.notes import Signer
from registre.attest.projection_digest import ContextDigestMismatchError, projection_digest
from registre.context import BLOCK_SHARE_PERMILLE, LIFECYCLE_BLOCK_VERSION, Policy
from registre.ledger.context.store import ContextEntryRefusedError
from registre.ledger.ledger import Ledger
from registre.ledger.thread import Thread
from registre.ledger.verify.database import verify_database
from registre.ledger.verify.errors import ModelCallDigestError
from tests.ledger.context_helpers import MODEL, SMALL, forge, opened, step

WIDE = Policy(budget_tokens=4000)


def investigated(thread: Thread) -> Thread:
    """A question, a pin, sources, four evidence entries, a compute on ev-2 and ev-3, ev-2
    superseded (the compute goes stale), an open question pinned."""
    opened(thread)
    thread.read_source([{"ref": "r1", "source": "q3.pdf", "location": "p. 4", "sha256": "a" * 64}])
    thread.evidence.upsert(
        [{"text": f"Segment {n} impairment is {n}.2m", "cites": ["r1"]} for n in range(1, 5)]
    )
    thread.conclude("compute", "Total impairment 5.4m", ["ev-2", "ev-3"])
    thread.evidence.revise("ev-2", {"text": "Segment 2 impairment is 2.5m", "cites": ["r1"]})
    thread.pin("open_question", "Is Offices in scope?", 0)
    return thread


def test_the_model_sees_what_it_must_cite(ledger: Ledger, thread: Thread) -> None:
    investigated(thread)
    projection, entry = thread.model_call(MODEL, 4000, WIDE, lifecycle_block=True)
    assert entry.body["lifecycle_block"] == 2
    assert entry.body["projection_sha256"] == projection_digest(projection)
    block = projection.messages[-1]
    assert block.role == "system"
    assert block.content == (
        f"[lifecycle at entry {entry.seq - 1}] a conclusion may cite only the active evidence "
        "below\n"
        "active evidence (4): ev-1, ev-3–5 (statements: registre evidence show ID)\n"
        "with statements, most cited and most recent first:\n"
        "- ev-3 (cited by 1): Segment 3 impairment is 3.2m\n"
        "- ev-5: Segment 2 impairment is 2.5m\n"
        "- ev-4: Segment 4 impairment is 4.2m\n"
        "- ev-1: Segment 1 impairment is 1.2m\n"
        "stale conclusions (evidence they rely on changed): cc-1 compute\n"
        "open questions (pinned): pin-2"
    )
    at = entry.seq - 1
    assert thread.project(at, 4000, WIDE, lifecycle_block=True) == projection
    verify_database(ledger, thread=thread.id)
    assert thread.replay_context(entry.seq) == projection


def test_the_block_at_the_head_and_before_it_is_the_replayed_one(
    ledger: Ledger, thread: Thread
) -> None:
    """At the head the block comes from the writer's cached lifecycle fold (a projection at
    1e5 entries replayed the whole lifecycle: 1.3 s, now 5.5 ms); earlier, from a replay.
    Either way it is the block of the lifecycle state after the same entries."""
    investigated(thread)
    head = thread.project(budget=4000, policy=WIDE, lifecycle_block=True)
    thread.evidence.revise("ev-3", None)  # retracted
    later = thread.project(budget=4000, policy=WIDE, lifecycle_block=True)
    assert later.block is not None and "ev-3" not in later.messages[-1].content
    assert thread.project(head.at, 4000, WIDE, lifecycle_block=True) == head
    other = Ledger.open(str(ledger.engine.url), ledger.signer)  # a cold cache
    assert other.thread(thread.id).project(head.at, 4000, WIDE, lifecycle_block=True) == head


def test_a_call_without_the_block_is_unchanged(thread: Thread) -> None:
    investigated(thread)
    projection, entry = thread.model_call(MODEL, 4000, WIDE, lifecycle_block=False)
    assert "lifecycle_block" not in entry.body
    assert projection.block is None
    assert not projection.messages[-1].content.startswith("[lifecycle")


def test_a_model_call_shows_the_block_by_default(thread: Thread) -> None:
    investigated(thread)
    projection, entry = thread.model_call(MODEL, 4000, WIDE)
    assert entry.body["lifecycle_block"] == 2
    assert projection.messages[-1].content.startswith("[lifecycle at entry")
    assert thread.replay_context(entry.seq) == projection


def block_body(thread: Thread, *, block: bool = True, claim: bool = True) -> dict[str, Any]:
    projection = thread.project(budget=4000, policy=WIDE, lifecycle_block=block)
    body: dict[str, Any] = {
        "model": MODEL,
        "projection_sha256": projection_digest(projection),
        "at_seq": projection.at,
        "budget_tokens": 4000,
        "policy": WIDE.to_json(),
        "token_counter": "registre.default/1",
    }
    if claim:
        body["lifecycle_block"] = LIFECYCLE_BLOCK_VERSION
    return body


def test_raw_model_calls_claiming_the_block_must_reproduce(thread: Thread) -> None:
    investigated(thread)
    size = thread.head().size
    forged = block_body(thread, block=False)  # the block claimed, the digest without it
    with pytest.raises(ContextEntryRefusedError) as refused:
        thread.append("model.call", forged, "registre")
    assert isinstance(refused.value.__cause__, ContextDigestMismatchError)
    dropped = block_body(thread, claim=False)  # the digest with the block, the claim dropped
    with pytest.raises(ContextEntryRefusedError):
        thread.append("model.call", dropped, "registre")
    assert thread.head().size == size
    assert thread.append("model.call", block_body(thread), "registre").seq == size


def test_model_call_claiming_the_block_with_a_forged_digest_fail(
    ledger: Ledger, thread: Thread, signer: Signer
) -> None:
    """A signed model call recording ``lifecycle_block`` with the digest of the context
    without the block: ``verify --db`` and the replay refuse it."""
    investigated(thread)
    body = block_body(thread, block=False)
    seq = forge(ledger.engine, signer, thread.id, "model.call", body)
    step(thread, 0)
    with pytest.raises(ModelCallDigestError) as failure:
        verify_database(ledger)
    assert failure.value.seq == seq
    assert isinstance(failure.value.__cause__, ContextDigestMismatchError)
    with pytest.raises(ContextDigestMismatchError):
        thread.replay_context(seq)


def test_a_call_at_an_earlier_prefix_is_checked_against_the_lifecycle_there(
    ledger: Ledger, thread: Thread, signer: Signer
) -> None:
    """A call whose ``at_seq`` lies before later lifecycle entries: ``verify --db`` replays
    the lifecycle to ``at_seq`` rather than using the state at the call."""
    investigated(thread)
    body = block_body(thread)
    thread.evidence.upsert([{"text": "Segment 5 impairment is 0.1m", "cites": ["r1"]}])
    seq = forge(ledger.engine, signer, thread.id, "model.call", body)
    verify_database(ledger, thread=thread.id)
    assert "ev-6" not in thread.replay_context(seq).messages[-1].content
    head = block_body(thread)  # the block with ev-6, claimed for the earlier prefix
    head["at_seq"] = body["at_seq"]
    forge(ledger.engine, signer, thread.id, "model.call", head)
    with pytest.raises(ModelCallDigestError):
        verify_database(ledger, thread=thread.id)


@settings(
    max_examples=8,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(
    actions=st.lists(st.sampled_from(["step", "upsert", "revise", "call"]), max_size=16),
    budget=st.sampled_from([600, 1200, 3000]),
)
def test_every_block_fits_and_verify_db_reproduces_it(
    ledger: Ledger, signer: Signer, actions: list[str], budget: int
) -> None:
    thread = ledger.create_thread(f"t-{len(ledger.threads())}")
    opened(thread)
    thread.read_source([{"ref": "r1", "source": "q3.pdf", "location": "p. 4", "sha256": "a" * 64}])
    policy = Policy(
        budget_tokens=budget,
        high_water_permille=SMALL.high_water_permille,
        low_water_permille=SMALL.low_water_permille,
        keep_recent_turns=SMALL.keep_recent_turns,
        bulky_tool_output_tokens=SMALL.bulky_tool_output_tokens,
        summary_share_permille=SMALL.summary_share_permille,
        output_reserve_tokens=0,  # the whole budget is the window: 600 is sized for it
    )
    calls = []
    for number, action in enumerate([*actions, "call"]):
        if action == "step":
            step(thread, number)
        elif action == "upsert":
            text = f"Segment {number} " + "figure " * (number * 7 % 40)
            thread.evidence.upsert([{"text": text, "cites": ["r1"]}])
        elif action == "revise":
            active = thread.evidence.list("active")
            if active:
                thread.evidence.revise(active[0].id, None)
        else:
            projection, entry = thread.model_call(MODEL, budget, policy, lifecycle_block=True)
            assert projection.tokens <= budget
            assert projection.block is not None
            assert projection.block.tokens <= budget * BLOCK_SHARE_PERMILLE // 1000
            calls.append((entry.seq, projection))
    verify_database(ledger, thread=thread.id)
    for seq, projection in calls:
        assert thread.replay_context(seq) == projection


def named_ids(text: str) -> set[str]:
    """The evidence ids ``text`` names, as words or inside ranges (``ev-3–5``)."""
    ids: set[str] = set()
    for first, last in re.findall(r"(?<![\w-])ev-(\d+)(?:–(\d+))?(?![\w-])", text):
        ids.update(f"ev-{n}" for n in range(int(first), int(last or first) + 1))
    return ids


def test_at_every_model_call_every_active_evidence_id_is_in_the_context(thread: Thread) -> None:
    """What an agent relies on to cite: after many admissions, revisions and retractions
    (far more active entries than the block has room to state), every active id is named in
    the context each call sends, and a final citing any of them is accepted."""
    opened(thread)
    thread.read_source([{"ref": "r1", "source": "q3.pdf", "location": "p. 4", "sha256": "a" * 64}])
    policy = Policy(
        budget_tokens=3000,
        high_water_permille=SMALL.high_water_permille,
        low_water_permille=SMALL.low_water_permille,
        keep_recent_turns=SMALL.keep_recent_turns,
        bulky_tool_output_tokens=SMALL.bulky_tool_output_tokens,
        summary_share_permille=SMALL.summary_share_permille,
    )
    calls = 0
    for number in range(30):
        step(thread, number)
        thread.evidence.upsert(
            [
                {"text": f"Segment {number}.{k} impairment is {k}.{number}m", "cites": ["r1"]}
                for k in range(4)
            ]
        )
        if number % 3 == 0:
            thread.evidence.revise(f"ev-{number * 4 + 2}", None)
        if number % 5 == 0:
            replacement = {"text": f"Segment {number} corrected", "cites": ["r1"]}
            thread.evidence.revise(f"ev-{number * 4 + 1}", replacement)
        projection, entry = thread.model_call(MODEL, 3000, policy)
        calls += 1
        active = {record.id for record in thread.evidence.list("active")}
        sent = thread.replay_context(entry.seq)
        assert sent == projection
        assert sent.block is not None and sent.block.form in ("statements", "ids")
        assert active <= named_ids("\n".join(m.content for m in sent.messages))
    assert len(active) > 90 and projection.block is not None
    assert projection.block.statements < len(active)  # not every statement fits
    oldest = min(active, key=lambda evidence_id: int(evidence_id[3:]))
    result = thread.conclude("final", "The figures reconcile.", [oldest])  # refused: raises
    assert result.id.startswith("cc-")
    assert calls == 30
