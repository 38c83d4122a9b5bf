"""Semantic tampering (THREATS row 19): entries correctly signed by the pinned key -- a buggy
or dishonest writer -- whose meaning breaks the rules. The verifier replays the lifecycle and
checks compactions, pins, model calls and the chains behind conclusions.

Compactions and model calls are replayed with the working-context module (issue 5): each
forgery starts from the body the honest writer recorded and changes one thing."""

from __future__ import annotations

import copy
import hashlib
from typing import Any

from registre.attest.entries import BodySchemaError, LifecycleOmittedError
from registre.attest.projection_digest import ContextDigestMismatchError, projection_digest
from registre.attest.verify import (
    CompactionFoldsFutureError,
    LifecycleReplayError,
    ModelCallPrefixError,
    PartialBundleRefusedError,
    PinSetDigestError,
    PinSourceError,
    TrustPolicy,
    report_of,
)
from registre.context import (
    LIFECYCLE_BLOCK_VERSION,
    CompactionTokensError,
    Policy,
    default_counter,
    project,
)
from registre.context.events import COMPACTION_ACTOR
from registre.lifecycle import (
    Accepted,
    Event,
    EvidenceReviseRequest,
    FinalRequest,
    LifecycleState,
    PinRequest,
    ReadRequest,
    Statement,
    UpsertOutcome,
    UpsertRequest,
    event_to_body,
    pin_set_sha256,
    step,
)
from tests.bundles import LOG, Thread, build_thread, ref, story_prefix
from tests.tamper.helpers import fails, passes


def retraction_story() -> Thread:
    """read r1 (0), admit ev-1 (1), retract ev-1 (2)."""
    thread = Thread()
    thread.decide(ReadRequest((ref("r1"),)))
    thread.decide(UpsertRequest((Statement("Impairment is 4.2m", ("r1",)),)))
    thread.decide(EvidenceReviseRequest("ev-1", None))
    return thread


def test_final_citing_retracted_evidence_fail() -> None:
    """A final whose recorded outcome accepts it although it cites retracted evidence."""
    honest = retraction_story()
    honest.decide(FinalRequest("Q3 reconciles", ("ev-1",)))  # the rules reject it
    passes(honest.full_bundle())
    forged = retraction_story()
    event = Event(FinalRequest("Q3 reconciles", ("ev-1",)), Accepted("cc-1"))
    forged.append(event.kind, event_to_body(event))
    fails(forged.full_bundle(), LifecycleReplayError, step=6, seq=3)


def test_final_citing_retracted_evidence_partial_fail() -> None:
    """The same forged final disclosed in a partial bundle with the retraction before it."""
    forged = retraction_story()
    event = Event(FinalRequest("Q3 reconciles", ("ev-1",)), Accepted("cc-1"))
    forged.append(event.kind, event_to_body(event))
    forged.turn("after")
    # the whole lifecycle is disclosed, so the partial bundle is replayed (6.1) ...
    fails(forged.partial_bundle([0, 1, 2, 3, 4]), LifecycleReplayError, step=6, seq=3)
    # ... and leaving the forged final out is seen by the signed lifecycle head (4.6)
    fails(forged.partial_bundle([0, 1, 2, 4]), LifecycleOmittedError, step=4, seq=4)


def test_evidence_id_forged_fail() -> None:
    """An upsert whose recorded id is not the one the rules assign (ev-7 for ev-1)."""
    thread = Thread()
    thread.decide(ReadRequest((ref("r1"),)))
    passes(thread.full_bundle())
    event = Event(UpsertRequest((Statement("claim", ("r1",)),)), UpsertOutcome((Accepted("ev-7"),)))
    thread.append(event.kind, event_to_body(event))
    fails(thread.full_bundle(), LifecycleReplayError, step=6, seq=1)


def test_pin_pointing_forward_fail() -> None:
    """A pin claiming its text comes from an entry that does not exist yet."""
    honest = build_thread(4, story=False)
    honest.decide(PinRequest("definition", "Stage 2 means SICR", 3))
    passes(honest.full_bundle())
    forged = build_thread(4, story=False)
    forged.decide(PinRequest("definition", "Stage 2 means SICR", 9))
    fails(forged.full_bundle(), PinSourceError, step=6, seq=4)


def genuine_compaction() -> dict[str, Any]:
    """The body of the compaction the story records at seq 7."""
    body: dict[str, Any] = copy.deepcopy(build_thread(10).entries[7].body)
    return body


def with_compaction(body: dict[str, Any], *, forge: bool = False) -> bytes:
    """The story up to seq 6, then ``body`` as the compaction at seq 7, then a turn."""
    thread = story_prefix()
    if forge:
        thread.forge("context.compaction", body)
    else:
        thread.append("context.compaction", body, actor=COMPACTION_ACTOR)
    thread.turn("after")
    return thread.full_bundle()


def test_genuine_compaction_passes() -> None:
    """The story's compaction, recorded as prepare_compaction made it, verifies in full."""
    report = passes(with_compaction(genuine_compaction()))
    assert "1 compaction checked against the working-context rules" in " ".join(
        report.step(6).checked
    )


def test_compaction_folding_its_own_future_fail() -> None:
    """A compaction whose folded range reaches the compaction entry itself."""
    body = genuine_compaction()
    body["folded"]["to"] = 7
    fails(with_compaction(body), CompactionFoldsFutureError, step=6, seq=7)


def test_compaction_stubbing_its_future_fail() -> None:
    """A compaction stubbing an entry that comes after it."""
    body = genuine_compaction()
    body["stubbed"] = [8]
    fails(with_compaction(body), CompactionFoldsFutureError, step=6, seq=7)


def test_compaction_eliding_its_future_fail() -> None:
    """A compaction eliding an entry that comes after it (caught before any fold, so in a
    partial bundle too)."""
    body = genuine_compaction()
    body["elided"] = [[8, 10, 10]]
    fails(with_compaction(body), CompactionFoldsFutureError, step=6, seq=7)


def test_compaction_pointer_outside_range_fail() -> None:
    """A summary line pointing at an entry outside what was folded (signed anyway)."""
    body = genuine_compaction()
    outside = body["folded"]["to"] + 1  # still before the compaction's own seq
    assert outside < 7
    body["summary"][0]["pointers"] = [[2, 3], [outside, outside]]
    fails(with_compaction(body, forge=True), BodySchemaError, step=3, seq=7)


def test_pin_missing_after_compaction_fail() -> None:
    """A compaction recording the digest of a pin set without the pin that was live."""
    body = genuine_compaction()
    body["pin_set_sha256"] = pin_set_sha256(LifecycleState.empty())
    fails(with_compaction(body), PinSetDigestError, step=6, seq=7)


def test_compaction_token_counts_forged_fail() -> None:
    """A compaction claiming it shrank the context more than it did."""
    body = genuine_compaction()
    body["tokens_after"] -= 1
    fails(with_compaction(body), CompactionTokensError, step=6, seq=7)


def with_model_call(body: dict[str, Any]) -> bytes:
    thread = story_prefix()
    thread.compact()
    thread.append("model.call", body)
    thread.turn("after")
    return thread.full_bundle()


def genuine_model_call() -> dict[str, Any]:
    body: dict[str, Any] = copy.deepcopy(build_thread(10).entries[8].body)
    return body


def test_model_call_digest_not_reproducing_fail() -> None:
    """A model call whose recorded projection is not the one the ledger prefix gives."""
    passes(with_model_call(genuine_model_call()))
    body = genuine_model_call()
    body["projection_sha256"] = hashlib.sha256(b"another context").hexdigest()
    fails(with_model_call(body), ContextDigestMismatchError, step=6, seq=8)


WIDE_CALL = Policy(budget_tokens=2000)
"""A model call budget with room for the story's lifecycle block."""


def block_call(*, forge: str | None = None) -> bytes:
    """The story, its compaction (7) and a model call carrying the lifecycle block (8),
    genuine or forged (``forge``: ``"plain"``, the block claimed with the digest of the
    context without it; ``"drop"``, the claim dropped from a call whose digest has the block;
    ``"other"``, the digest of the block of a lifecycle state the replay does not give)."""
    thread = story_prefix()
    thread.compact()
    assert thread.context is not None
    budget, counter = WIDE_CALL.budget_tokens, default_counter()
    lifecycle = thread.state
    if forge == "other":  # as if ev-2 had been retracted
        lifecycle = step(thread.state.copy(), EvidenceReviseRequest("ev-2", None))[1]
    projection = project(
        thread.context, budget, WIDE_CALL, counter, None if forge == "plain" else lifecycle
    )
    assert projection.block is None or projection.block.statements >= 1
    body: dict[str, Any] = {
        "model": "test/model",
        "projection_sha256": projection_digest(projection),
        "at_seq": thread.size - 1,
        "budget_tokens": budget,
        "policy": WIDE_CALL.to_json(),
        "token_counter": counter.name,
    }
    if forge != "drop":
        body["lifecycle_block"] = LIFECYCLE_BLOCK_VERSION
    thread.append("model.call", body)
    thread.turn("after")
    return thread.full_bundle()


def test_model_call_with_the_lifecycle_block_passes() -> None:
    passes(block_call())


def test_model_call_claiming_the_lifecycle_block_with_a_forged_digest_fail() -> None:
    """A call that says its context showed the lifecycle block, with the digest of a context
    without it, or of a block the lifecycle replay does not give; or a call whose context had
    the block, with the claim dropped."""
    for forge in ("plain", "drop", "other"):
        fails(block_call(forge=forge), ContextDigestMismatchError, step=6, seq=8)


def test_model_call_from_the_future_fail() -> None:
    """A model call claiming a projection of a prefix that includes the call itself."""
    body = genuine_model_call()
    body["at_seq"] = 8
    fails(with_model_call(body), ModelCallPrefixError, step=6, seq=8)


def test_final_without_its_sources_fail() -> None:
    """A partial bundle disclosing a final and its evidence, but not the source read."""
    thread = build_thread(12)  # 1 read, 2 upsert, 3 compute, 5 final
    passes(thread.partial_bundle([1, 2, 3, 4, 5, 11]))
    fails(thread.partial_bundle([2, 3, 4, 5, 11]), LifecycleOmittedError, step=4, seq=2)
    fails(thread.partial_bundle([1, 2, 4, 5, 11]), LifecycleOmittedError, step=4, seq=4)


# --- issue 13 item 2: downgrade to "partial" ---------------------------------------------


def test_forged_model_call_labelled_partial_fail() -> None:
    """A thread with a forged model.call digest is refused as a full bundle; the same entries
    relabelled "partial" (every seq disclosed, with proofs) used to verify with the replay
    "not checked". A bundle disclosing every seq from 0 is checked as full."""
    body = genuine_model_call()
    body["projection_sha256"] = hashlib.sha256(b"another context").hexdigest()
    thread = story_prefix()
    thread.compact()
    thread.append("model.call", body)
    thread.turn("after")
    fails(thread.full_bundle(), ContextDigestMismatchError, step=6, seq=8)
    relabelled = thread.partial_bundle(list(range(thread.size)))
    error = fails(relabelled, ContextDigestMismatchError, step=6, seq=8)
    report = report_of(error)
    assert report is not None and report.disclosure == "full"
    assert "checked as a full bundle" in " ".join(report.step(1).checked)


def test_partial_bundle_under_require_full_fail() -> None:
    """A verifier that requires full bundles refuses a partial one at step 1 (exit 2), and
    accepts a full one, or one labelled partial that discloses every entry."""
    thread = build_thread(12)
    strict = TrustPolicy(log_key=LOG.verifier(), require_full=True)
    error = fails(thread.partial_bundle([1, 2, 3, 4, 5, 11]), PartialBundleRefusedError, strict)
    assert error.exit_code == 2 and "6 of the 12 entries" in str(error)
    assert error.hint is not None and "full bundle" in error.hint
    passes(thread.full_bundle(), strict)
    passes(thread.partial_bundle(list(range(12))), strict)


def test_partial_verdict_says_partial_and_what_was_not_checked() -> None:
    report = passes(build_thread(12).partial_bundle([1, 2, 3, 4, 5, 11]))
    first = report.render().splitlines()[0]
    assert first.startswith(
        "registre bundle verification: VERIFIED, PARTIAL (6 undisclosed entries of 12); "
        "not checked: witnesses, undisclosed entries, "
    )
    assert "compaction(s) checked against the working-context rules" not in first  # none sent
    assert report.to_json()["result"] == report.verdict()
