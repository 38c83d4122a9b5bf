"""Recorded compactions replayed by a verifier: one test per rule, named after the attack."""

from __future__ import annotations

import copy
import re

import pytest

from registre.context import (
    CompactionEmptySummaryError,
    CompactionFoldsRecentTurnsError,
    CompactionOverShareError,
    CompactionPinSetError,
    CompactionPointerError,
    CompactionQuoteError,
    CompactionRangeError,
    CompactionSplitsToolCallError,
    CompactionStubError,
    CompactionTokensError,
    CompactionVerificationError,
    ContextEntry,
    ContextState,
    ExtractiveSummarizer,
    Policy,
    SummaryLine,
    UnknownTokenCounterError,
    context_tokens,
    counter_registry,
    default_counter,
    prepare_compaction,
    project,
    validate_compaction,
)
from registre.context.render import message_tokens, summary_message
from registre.errors import VerificationError
from tests.context.example import POLICY, before_compaction, worked_example
from tests.context.threads import ThreadBuilder, honest_body

COUNTER = default_counter()
FIND = SummaryLine("findings", "modutils “resolves module paths”.", ((4, 4),))


def verify(builder: ThreadBuilder, body: dict[str, object]) -> None:
    """Validate ``body`` as the next entry of ``builder``'s thread."""
    entry = ContextEntry(builder.seq, "context.compaction", "registre", body)
    validate_compaction(builder.state, entry, builder.texts, counter_registry())


def honest(builder: ThreadBuilder, **kwargs: object) -> dict[str, object]:
    kwargs.setdefault("policy", POLICY)
    return honest_body(builder.state, **kwargs)  # type: ignore[arg-type]


def test_the_recorded_example_verifies() -> None:
    builder = worked_example()
    state = ContextState.replay(builder.entries[:9])
    entry = builder.entries[9]
    validate_compaction(state, entry, builder.texts, counter_registry())
    assert state.at == 8  # checked, not applied
    # the recorded numbers are the context's tokens before and after the fold
    assert entry.body["tokens_before"] == context_tokens(state, COUNTER) == 253  # the spec's
    state.apply(entry)
    assert entry.body["tokens_after"] == context_tokens(state, COUNTER) == 177
    assert project(state, 320, POLICY, COUNTER) == project(builder.state, 320, POLICY, COUNTER)


def test_validation_leaves_the_state_unchanged() -> None:
    builder = before_compaction()
    before = project(builder.state, 320, POLICY, COUNTER).to_json()
    verify(builder, honest(builder, folded=(0, 4), lines=(FIND,)))
    assert project(builder.state, 320, POLICY, COUNTER).to_json() == before


def test_compaction_pointer_outside_range_fail() -> None:
    builder = before_compaction()
    body = honest(builder, folded=(0, 4), lines=(FIND,))
    body["summary"] = [{"section": "findings", "text": "x", "pointers": [[5, 5]]}]
    with pytest.raises(CompactionPointerError, match="outside the folded range 0-4"):
        verify(builder, body)


def test_compaction_invented_quote_fail() -> None:
    builder = before_compaction()
    line = SummaryLine("findings", "The user wrote “the bug is in pylint”.", ((0, 4),))
    with pytest.raises(CompactionQuoteError, match="the bug is in pylint"):
        verify(builder, honest(builder, folded=(0, 4), lines=(line,)))


def test_compaction_pin_dropped_fail() -> None:
    builder = before_compaction()
    body = honest(builder, folded=(0, 4), lines=(FIND,))
    body["pin_set_sha256"] = ContextState().pin_set_sha256()  # as if no pin were live
    with pytest.raises(CompactionPinSetError, match="not carried verbatim"):
        verify(builder, body)


@pytest.mark.parametrize("field", ["tokens_before", "tokens_after"])
def test_compaction_forged_token_counts_fail(field: str) -> None:
    builder = before_compaction()
    body = honest(builder, folded=(0, 4), lines=(FIND,))
    body[field] = int(body[field]) - 1  # type: ignore[call-overload]
    with pytest.raises(CompactionTokensError, match=field):
        verify(builder, body)


def test_compaction_splitting_a_tool_call_from_its_result_fail() -> None:
    builder = before_compaction()
    line = SummaryLine("tool_outputs", "Listed astroid.", ((2, 2),))
    with pytest.raises(CompactionSplitsToolCallError, match="ends its range at 2"):
        verify(builder, honest(builder, folded=(0, 2), lines=(line,)))


def test_compaction_folding_the_recent_turns_fail() -> None:
    builder = before_compaction()
    with pytest.raises(CompactionFoldsRecentTurnsError, match="2 most recent turns"):
        verify(builder, honest(builder, folded=(0, 7), lines=(FIND,)))


def test_compaction_stubbing_inside_the_recent_turns_fail() -> None:
    """The context (253 tokens) fits the budget (320): the recent turns stay whole (stand-ins
    there are for a context over budget: tests/context/test_stand_ins.py)."""
    builder = before_compaction()
    policy = Policy(**(POLICY.to_json() | {"keep_recent_turns": 4}))  # type: ignore[arg-type]
    with pytest.raises(CompactionFoldsRecentTurnsError, match="stubs entry 6, inside the 4"):
        verify(builder, honest(builder, folded=None, stubbed=(6,), policy=policy))


def test_compaction_stubbing_a_small_result_fail() -> None:
    builder = before_compaction()
    with pytest.raises(CompactionStubError, match="not above the policy's bulky threshold"):
        verify(builder, honest(builder, folded=None, stubbed=(3,)))


def test_compaction_stubbing_a_turn_fail() -> None:
    builder = before_compaction()
    body = honest(builder, folded=None, stubbed=(6,))
    body["stubbed"] = [4]
    with pytest.raises(CompactionStubError, match=r"not an unstubbed tool\.result"):
        verify(builder, body)


def test_compaction_summary_over_its_share_fail() -> None:
    builder = before_compaction()
    line = SummaryLine("findings", "Looked at modutils. " * 40, ((0, 4),))
    with pytest.raises(CompactionOverShareError, match="over the 128"):
        verify(builder, honest(builder, folded=(0, 4), lines=(line,)))


def test_compaction_blank_summary_line_fail() -> None:
    builder = before_compaction()
    line = SummaryLine("findings", "  ", ((0, 4),))
    with pytest.raises(CompactionEmptySummaryError, match="blank"):
        verify(builder, honest(builder, folded=(0, 4), lines=(line,)))


def test_compaction_fold_without_summary_fail() -> None:
    builder = before_compaction()
    body = honest(builder, folded=(0, 4), lines=(FIND,))
    body["summary"] = []
    with pytest.raises(CompactionEmptySummaryError, match="without a summary line"):
        verify(builder, body)


def test_compaction_range_not_at_a_boundary_fail() -> None:
    builder = before_compaction()
    body = honest(builder, folded=(0, 4), lines=(FIND,))
    body["folded"] = {"from": 1, "to": 4}
    with pytest.raises(CompactionRangeError):
        verify(builder, body)


def test_compaction_with_an_unknown_counter_fail() -> None:
    builder = before_compaction()
    body = honest(builder, folded=(0, 4), lines=(FIND,))
    body["token_counter"] = "tiktoken/o200k_base"
    with pytest.raises(UnknownTokenCounterError, match="tiktoken/o200k_base"):
        verify(builder, body)


def test_every_compaction_failure_is_a_verification_error() -> None:
    for error in (CompactionVerificationError, UnknownTokenCounterError):
        assert issubclass(error, VerificationError)
        assert error("x").exit_code == 1


def test_prepare_compaction_returns_a_body_that_verifies() -> None:
    builder = before_compaction()
    body = prepare_compaction(builder.state, POLICY, COUNTER, ExtractiveSummarizer())
    assert body is not None
    verify(builder, copy.deepcopy(body))
    assert body["tokens_before"] == 253
    assert body["tokens_after"] == 177
    assert (
        prepare_compaction(worked_example().state, POLICY, COUNTER, ExtractiveSummarizer()) is None
    )


def test_a_failing_summarizer_leaves_nothing_written() -> None:
    class Broken:
        name = "test.broken"
        version = "1"

        def summarize(self, entries: object, plan: object) -> object:
            raise RuntimeError("model unavailable")

    builder = before_compaction()
    before = len(builder.entries)
    with pytest.raises(RuntimeError, match="model unavailable"):
        prepare_compaction(builder.state, POLICY, COUNTER, Broken())  # type: ignore[arg-type]
    assert builder.state.at == before - 1


def _fold_view(state: ContextState) -> tuple[object, ...]:
    from registre.context.snapshot import state_snapshot

    tail = [(item.seq, item.message, item.stub, item.elision, item.partner) for item in state.tail]
    return state_snapshot(state), tail


def test_a_compaction_read_once_folds_as_the_entry_read_again() -> None:
    """apply_compaction with the record validate_compaction read gives the state apply
    gives (and refuses what it refuses)."""
    from registre.context.record import parse_compaction
    from tests.long_threads import long_thread

    thread = long_thread(600, 8_000)
    state = ContextState()
    compactions = 0
    for entry in thread.entries:
        folded = ContextEntry(entry.seq, entry.kind, entry.actor, entry.body)
        if entry.kind == "context.compaction":
            compactions += 1
            again, once = state.copy(), state.copy()
            again.apply(folded)
            once.apply_compaction(folded, parse_compaction(entry.seq, entry.body))
            assert _fold_view(once) == _fold_view(again)
            forged = copy.deepcopy(dict(entry.body))
            forged["stubbed"] = [entry.seq - 1]
            bad = ContextEntry(entry.seq, entry.kind, entry.actor, forged)
            with pytest.raises(CompactionVerificationError) as refused:
                state.copy().apply(bad)
            with pytest.raises(type(refused.value), match=re.escape(str(refused.value))):
                state.copy().apply_compaction(bad, parse_compaction(entry.seq, forged))
        state.apply(folded)
    assert compactions >= 3


def test_compaction_stubbing_a_result_exactly_at_the_threshold_fail() -> None:
    """Only results *above* the bulky threshold may be stubbed: one of exactly the threshold's
    size is not bulky."""
    builder = before_compaction()
    tokens = builder.state.tail[6 - builder.state.boundary].verbatim_tokens(COUNTER)
    at = Policy(**(POLICY.to_json() | {"bulky_tool_output_tokens": tokens}))  # type: ignore[arg-type]
    with pytest.raises(CompactionStubError, match=f"whose {tokens} tokens are not above"):
        verify(builder, honest(builder, folded=None, stubbed=(6,), policy=at))
    below = Policy(**(POLICY.to_json() | {"bulky_tool_output_tokens": tokens - 1}))  # type: ignore[arg-type]
    verify(builder, honest(builder, folded=None, stubbed=(6,), policy=below))


def test_compaction_summary_over_the_share_left_beside_a_live_summary_fail() -> None:
    """The summary share is for all live summaries together: a new summary that fits the
    share alone but not beside the live summary it keeps is refused."""
    builder = before_compaction()
    builder.append("context.compaction", "registre", honest(builder, folded=(0, 4), lines=(FIND,)))
    for n in range(4):
        builder.turn(("assistant", "user")[n % 2], f"turn {n} about the spec lookup in modutils")
    kept = sum(summary.tokens(COUNTER) for summary in builder.state.summaries)
    share = POLICY.summary_share_tokens
    assert kept > 0

    def summary(sentences: int) -> tuple[SummaryLine, int]:
        line = SummaryLine("findings", "Ran the namespace test. " * sentences, ((5, 8),))
        return line, message_tokens(summary_message(builder.seq, 5, 8, (line,)), COUNTER)

    sentences = 1
    while summary(sentences)[1] <= share - kept:
        sentences += 1
    line, tokens = summary(sentences)
    assert share - kept < tokens <= share  # fits the share alone, not beside the kept one
    with pytest.raises(CompactionOverShareError, match=f"over the {share - kept} the summary"):
        verify(builder, honest(builder, folded=(5, 8), lines=(line,)))
    verify(builder, honest(builder, folded=(5, 8), lines=(summary(sentences - 1)[0],)))
