"""attest.verify_context: the working-context replay behind step 6 (compactions and model
calls); the forgeries it catches are in tests/tamper/test_semantics.py."""

from __future__ import annotations

from dataclasses import dataclass

from registre.attest.projection_digest import projection_digest
from registre.attest.verify import ContextReplay, QuoteTexts, context_hooks
from registre.context import (
    DEFAULT_COUNTER_NAME,
    ContextEntry,
    ContextState,
    Policy,
    UnknownTokenCounterError,
    default_counter,
    entry_text,
    project,
)
from tests.bundles import Thread, story_prefix
from tests.long_threads import long_thread
from tests.tamper.helpers import fails, passes

WIDE = Policy(budget_tokens=1000)
"""A budget the story's uncompacted prefix fits in."""


def model_call_at(thread: Thread, at_seq: int, counter_name: str = DEFAULT_COUNTER_NAME) -> None:
    """Append a model call projecting the prefix ``0..at_seq`` (counted by the default rule)."""
    state = ContextState.replay(
        ContextEntry(e.seq, e.kind, e.actor, e.body) for e in thread.entries[: at_seq + 1]
    )
    counter = NamedCounter(counter_name)
    projection = project(state, WIDE.budget_tokens, WIDE, counter)
    thread.append(
        "model.call",
        {
            "model": "test/model",
            "projection_sha256": projection_digest(projection),
            "at_seq": at_seq,
            "budget_tokens": WIDE.budget_tokens,
            "policy": WIDE.to_json(),
            "token_counter": counter_name,
        },
    )


@dataclass(frozen=True)
class NamedCounter:
    """The default counting rule under another name (a counter the verifier may lack)."""

    name: str

    def count(self, text: str) -> int:
        return default_counter().count(text)


def test_model_call_projecting_an_earlier_prefix_refolds() -> None:
    thread = story_prefix()
    thread.compact()  # 7: the replay folds to 6 to check it
    model_call_at(thread, 3)  # 8: needs the fold at 3 again
    model_call_at(thread, 8 - 1)  # 9
    report = passes(thread.full_bundle())
    assert "2 model-call projection digests reproduced" in " ".join(report.step(6).checked)


def test_counters_other_than_the_default_must_be_given() -> None:
    thread = story_prefix()
    model_call_at(thread, 6, counter_name="vendor.tokens/2")
    fails(thread.full_bundle(), UnknownTokenCounterError, step=6, seq=7)
    passes(thread.full_bundle(), hooks=context_hooks([NamedCounter("vendor.tokens/2")]))


def test_the_replay_keeps_texts_for_the_live_context_only() -> None:
    """The quote checks' texts follow the live context, not the history: a 3,000-entry
    thread at 2k tokens compacts dozens of times, and the replay ends holding the texts of
    its tail and of what the live summaries point at, not of every entry."""
    thread = long_thread(3000, 2000)
    replay = ContextReplay()
    passes(thread.full_bundle(), hooks=replay.hooks())
    state = replay._state
    assert state.boundary > 2000
    kept = set(replay._texts)
    assert len(kept) < 600
    assert all(seq in kept for seq in range(state.boundary, state.at + 1))


def test_a_quote_of_an_entry_no_live_summary_points_at_is_read_back() -> None:
    thread = story_prefix()
    texts = QuoteTexts()
    texts.leaves = thread.leaves
    body = thread.entries[2].body
    assert texts[2] == entry_text(thread.entries[2].kind, body)
    assert texts.get(len(thread.leaves)) is None and list(texts) == []
