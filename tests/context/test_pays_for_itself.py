"""A compaction must pay for itself (issue 12, item 5): the policy never plans, the controller
never returns and the verifier refuses a compaction whose ``tokens_after`` is not strictly
below its ``tokens_before`` (``specs/context.md`` sections 5 and 7, rule 11)."""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence

import pytest
from hypothesis import event, given

from registre.context import (
    CompactionPlan,
    ContextEntry,
    ContextState,
    ExtractiveSummarizer,
    FoldItem,
    Policy,
    Summary,
    SummaryLine,
    context_tokens,
    counter_registry,
    default_counter,
    parse_compaction,
    plan_compaction,
    prepare_compaction,
    validate_compaction,
)
from registre.context import events as events_module
from registre.context.errors import CompactionDoesNotReduceError
from registre.errors import VerificationError
from tests.context.example import POLICY, before_compaction
from tests.context.strategies import policies, run_script, scripts
from tests.context.threads import ThreadBuilder, honest_body

COUNTER = default_counter()


def verify(builder: ThreadBuilder, body: dict[str, object]) -> None:
    entry = ContextEntry(builder.seq, "context.compaction", "registre", body)
    validate_compaction(builder.state, entry, builder.texts, counter_registry())


def tiny_first_entry() -> tuple[ThreadBuilder, Policy]:
    """Past the high-water mark, within the budget, and the only entry that may be folded is
    a two-word question: folding it into any summary grows the context (the measured
    ``folded 0-0 tokens 6646 -> 6675``)."""
    policy = Policy(
        budget_tokens=1000,
        high_water_permille=800,
        low_water_permille=500,
        keep_recent_turns=2,
        bulky_tool_output_tokens=2000,
        summary_share_permille=250,
    )
    builder = ThreadBuilder(policy=policy, compact=False)
    builder.turn("user", "Why?")
    builder.turn("assistant", "Reading the import machinery of astroid. " * 53)
    builder.turn("user", "Keep going and report what modutils does. " * 47)
    return builder, policy


def test_a_fold_that_would_grow_the_context_is_not_planned() -> None:
    builder, policy = tiny_first_entry()
    before = context_tokens(builder.state, COUNTER)
    assert policy.high_water_tokens < before <= policy.budget_tokens
    assert plan_compaction(builder.state, policy, COUNTER) is None
    assert prepare_compaction(builder.state, policy, COUNTER, ExtractiveSummarizer()) is None


def test_every_plan_leaves_room_only_for_a_smaller_context() -> None:
    """The allowance is capped so that even a summary taking all of it shrinks the
    context."""
    builder = before_compaction()
    plan = plan_compaction(builder.state, POLICY, COUNTER)
    assert plan is not None and plan.folded is not None
    state = builder.state
    kept = sum(item.tokens(COUNTER, -1) for item in state.tail[plan.folded[1] + 1 :])
    stubs = sum(
        item.verbatim_tokens(COUNTER) - item.tokens(COUNTER, -1)
        for item in state.tail
        if item.stubbed
    )
    assert stubs == 0  # nothing stubbed yet
    assert plan.max_summary_tokens < plan.tokens_before - kept


def test_compacting_again_and_again_always_shrinks_then_stops() -> None:
    """``registre compact`` run repeatedly: each run records a smaller context or nothing
    (the measured ``folded 0-12 6819 -> 6819`` on every run)."""
    policy = Policy(budget_tokens=900, keep_recent_turns=2, summary_share_permille=300)
    builder = ThreadBuilder(policy=policy)
    for step in range(40):
        builder.turn("user", f"Step {step}: what does module m{step} import, and why?")
        builder.tool("bash", f"grep import m{step}.py", f"import os\nimport sys  # {step}\n" * 6)
    recorded = len(builder.compactions)
    for _run in range(13):
        if builder.compact_now() is None:
            break
    for seq in builder.compactions:
        body = builder.entries[seq].body
        assert body["tokens_after"] < body["tokens_before"]  # type: ignore[operator]
    assert builder.compact_now() is None
    assert len(builder.compactions) >= recorded


class _Verbose:
    """A summarizer that writes one long line whatever the plan allows."""

    name = "test.verbose"
    version = "1"

    def summarize(self, entries: Sequence[FoldItem], plan: CompactionPlan) -> Summary:
        assert plan.folded is not None
        first, last = plan.folded
        return Summary((SummaryLine("findings", "looked around " * 30, ((first, last),)),))


def test_a_summary_that_would_not_shrink_the_context_is_never_returned(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """A plan whose allowance would let the summary grow the context (as plans did before
    the cap): the controller returns None rather than a body a verifier refuses."""
    builder, policy = tiny_first_entry()
    state = builder.state
    plan = CompactionPlan(
        at=state.at,
        folded=(0, 0),
        refolded=(),
        stubbed=(),
        items=(FoldItem(0, "turn", "user", "Why?", ((0, 0),), body={"role": "user"}),),
        max_summary_tokens=policy.summary_share_tokens,
        tokens_before=context_tokens(state, COUNTER),
        policy=policy,
        counter=COUNTER,
        pin_set_sha256=state.pin_set_sha256(),
    )
    monkeypatch.setattr(events_module, "plan_compaction", lambda *args: plan)
    assert prepare_compaction(state, policy, COUNTER, _Verbose()) is None
    grown = events_module.compaction_body(state, plan, _Verbose().summarize((), plan), _Verbose())
    assert grown["tokens_after"] > grown["tokens_before"]  # type: ignore[operator]
    entry = ContextEntry(builder.seq, "context.compaction", "registre", grown)
    with pytest.raises(CompactionDoesNotReduceError, match="must make the context smaller"):
        validate_compaction(state, entry, builder.texts, counter_registry())


# --- the rule, replayed ----------------------------------------------------------------------


def test_compaction_that_grows_the_context_fail() -> None:
    builder, policy = tiny_first_entry()
    line = SummaryLine("open_threads", "user asked “Why?” " + "and more " * 10, ((0, 0),))
    body = honest_body(builder.state, folded=(0, 0), lines=(line,), policy=policy)
    assert body["tokens_after"] > body["tokens_before"]  # type: ignore[operator]
    with pytest.raises(CompactionDoesNotReduceError, match="not below the"):
        verify(builder, body)


def test_compaction_that_keeps_the_size_fail() -> None:
    """A compaction that changes nothing (no fold, no stub): signed, counted right, useless."""
    builder = before_compaction()
    body = honest_body(builder.state, folded=None, policy=POLICY)
    assert body["tokens_after"] == body["tokens_before"]
    with pytest.raises(CompactionDoesNotReduceError):
        verify(builder, body)


def test_the_rule_is_checked_last_after_the_token_counts() -> None:
    """Rule 11 compares counts rule 10 has proved: a forged count is a CompactionTokensError."""
    from registre.context import CompactionTokensError

    builder, policy = tiny_first_entry()
    line = SummaryLine("open_threads", "user asked “Why?”", ((0, 0),))
    body = honest_body(builder.state, folded=(0, 0), lines=(line,), policy=policy)
    body["tokens_after"] = 1
    with pytest.raises(CompactionTokensError):
        verify(builder, body)


def test_does_not_reduce_is_a_compaction_verification_error() -> None:
    assert issubclass(CompactionDoesNotReduceError, VerificationError)
    assert CompactionDoesNotReduceError("x").exit_code == 1


# --- property ----------------------------------------------------------------------------------


@given(script=scripts(), policy=policies())
def test_no_recorded_compaction_keeps_or_grows_the_context(script: list, policy: Policy) -> None:
    outcome = run_script(script, policy)
    state = ContextState()
    count = 0
    for entry in outcome.builder.entries:
        if entry.kind == "context.compaction":
            record = parse_compaction(entry.seq, entry.body)
            assert record.tokens_after < record.tokens_before
            assert record.tokens_before == context_tokens(state, COUNTER)
            validate_compaction(state, entry, outcome.builder.texts, counter_registry())
            count += 1
        state.apply(entry)
    event(f"compactions: {min(count, 3)}+")


def test_plan_is_a_plain_dataclass_with_elisions_defaulting_to_none() -> None:
    plan = plan_compaction(before_compaction().state, POLICY, COUNTER)
    assert plan is not None and plan.elided == ()
    assert dataclasses.replace(plan, max_summary_tokens=1).max_summary_tokens == 1
