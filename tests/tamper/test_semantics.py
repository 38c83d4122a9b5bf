"""Semantic tampering (THREATS row 19): entries correctly signed by the pinned key -- a buggy
or dishonest writer -- whose meaning breaks the rules. The verifier replays the lifecycle and
checks compactions, pins, model calls and the chains behind conclusions.

Not here yet: a pin dropped by a compaction and a model-call digest that does not reproduce.
Both need the working-context module (issue 5) to fill ``SemanticHooks``; until then the
verifier reports them as not checked, and a test of them could not fail."""

from __future__ import annotations

from attest.bodies import BodySchemaError
from attest.verify_semantics import (
    ClaimCitesInactiveError,
    CompactionRangeError,
    LifecycleReplayError,
    ModelCallPrefixError,
    PinSourceError,
    UnresolvedClaimError,
)
from lifecycle import (
    Accepted,
    Event,
    EvidenceReviseRequest,
    FinalRequest,
    PinRequest,
    ReadRequest,
    Statement,
    UpsertOutcome,
    UpsertRequest,
    event_to_body,
)
from tests.bundles import Thread, build_thread, digest, ref
from tests.tamper.helpers import fails, passes

PIN_DIGEST = digest("pins")


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
    passes(forged.partial_bundle([0, 1, 2]))
    fails(forged.partial_bundle([0, 1, 2, 3]), ClaimCitesInactiveError, step=7, seq=3)


def test_evidence_id_forged_fail() -> None:
    """An upsert whose recorded id is not the one the rules assign (ev-7 for ev-1)."""
    thread = Thread()
    thread.decide(ReadRequest((ref("r1"),)))
    passes(thread.full_bundle())
    event = Event(UpsertRequest((Statement("claim", ("r1",)),)), UpsertOutcome((Accepted("ev-7"),)))
    thread.append(event.kind, event_to_body(event))
    fails(thread.full_bundle(), LifecycleReplayError, step=6, seq=1)


def compaction(folded_from: int, folded_to: int, pointers: list[int]) -> dict[str, object]:
    return {
        "folded": {"from": folded_from, "to": folded_to},
        "summary": [{"text": "earlier turns", "pointers": pointers}],
        "summarizer": {"name": "registre.extractive", "version": "1"},
        "policy": {"high_water_permille": 800},
        "tokens_before": 100,
        "tokens_after": 10,
        "pin_set_sha256": PIN_DIGEST,
    }


def test_compaction_folding_its_own_future_fail() -> None:
    """A compaction whose folded range reaches the compaction entry itself."""
    honest = build_thread(6, story=False)
    honest.append("context.compaction", compaction(0, 5, [1, 2]))
    passes(honest.full_bundle())
    forged = build_thread(6, story=False)
    forged.append("context.compaction", compaction(0, 6, [1, 2]))
    fails(forged.full_bundle(), CompactionRangeError, step=6, seq=6)


def test_compaction_pointer_outside_range_fail() -> None:
    """A summary line pointing at an entry outside what was folded (signed anyway)."""
    forged = build_thread(6, story=False)
    forged.forge("context.compaction", compaction(0, 3, [1, 5]))
    fails(forged.full_bundle(), BodySchemaError, step=3, seq=6)
    honest = build_thread(6, story=False)
    honest.forge("context.compaction", compaction(0, 3, [1, 3]))
    passes(honest.full_bundle())


def test_pin_pointing_forward_fail() -> None:
    """A pin claiming its text comes from an entry that does not exist yet."""
    honest = build_thread(4, story=False)
    honest.decide(PinRequest("definition", "Stage 2 means SICR", 3))
    passes(honest.full_bundle())
    forged = build_thread(4, story=False)
    forged.decide(PinRequest("definition", "Stage 2 means SICR", 9))
    fails(forged.full_bundle(), PinSourceError, step=6, seq=4)


def model_call(at_seq: int) -> dict[str, object]:
    return {
        "model": "test/model",
        "projection_sha256": digest("projection"),
        "at_seq": at_seq,
        "budget_tokens": 1000,
        "policy": {},
        "token_counter": "registre.default/1",
    }


def test_model_call_from_the_future_fail() -> None:
    """A model call claiming a projection of a prefix that includes the call itself."""
    honest = build_thread(4, story=False)
    honest.append("model.call", model_call(3))
    passes(honest.full_bundle())
    forged = build_thread(4, story=False)
    forged.append("model.call", model_call(4))
    fails(forged.full_bundle(), ModelCallPrefixError, step=6, seq=4)


def test_final_without_its_sources_fail() -> None:
    """A partial bundle disclosing a final and its evidence, but not the source read."""
    thread = build_thread(12)  # 1 read, 2 upsert, 3 compute, 5 final
    passes(thread.partial_bundle([1, 2, 3, 5]))
    fails(thread.partial_bundle([2, 3, 5]), UnresolvedClaimError, step=7, seq=3)
    fails(thread.partial_bundle([1, 2, 5]), UnresolvedClaimError, step=7, seq=5)
