"""Planning compactions (tiers, cuts, budgets) and the controller's refusals of summaries."""

from __future__ import annotations

import pytest

from registre.context import (
    ContextBudgetError,
    EmptySummaryError,
    ExtractiveSummarizer,
    InventedQuoteError,
    PinsOverBudgetError,
    Policy,
    RecentTurnsOverBudgetError,
    StalePlanError,
    Summary,
    SummaryLine,
    SummaryOverShareError,
    SummaryPointerOutsideRangeError,
    check_summary,
    compaction_body,
    default_counter,
    plan_compaction,
    summary_tokens,
)
from registre.context.compaction import CompactionPlan
from registre.context.projection import live_pin_tokens
from tests.context.example import POLICY, before_compaction, worked_example
from tests.context.threads import ThreadBuilder

COUNTER = default_counter()


def example_plan() -> CompactionPlan:
    plan = plan_compaction(before_compaction().state, POLICY, COUNTER)
    assert plan is not None
    return plan


def refuse(plan: CompactionPlan, *lines: SummaryLine) -> None:
    check_summary(plan, Summary(lines), plan.entry_texts(), POLICY, COUNTER)


# --- planning ----------------------------------------------------------------------------


def test_no_compaction_at_or_below_the_high_water_mark() -> None:
    assert plan_compaction(worked_example().state, POLICY, COUNTER) is None


def test_worked_example_folds_the_oldest_entries_and_stubs_the_bulky_result() -> None:
    plan = example_plan()
    assert plan.seq == 9
    assert plan.folded == (0, 4)
    assert plan.stubbed == (6,)
    assert plan.refolded == ()
    assert plan.tokens_before == 253
    assert plan.max_summary_tokens == 104
    assert [item.seq for item in plan.items] == [0, 1, 2, 3, 4]


def test_stubbing_alone_when_it_is_enough() -> None:
    builder = ThreadBuilder(policy=Policy(budget_tokens=400, keep_recent_turns=1), compact=False)
    builder.turn("user", "Read the log.")
    builder.tool("bash", "cat log", "error line\n" * 120)
    builder.turn("assistant", "Read it.")
    policy = Policy(budget_tokens=400, keep_recent_turns=1, bulky_tool_output_tokens=50)
    plan = plan_compaction(builder.state, policy, COUNTER)
    assert plan is not None
    assert (plan.folded, plan.stubbed, plan.items) == (None, (2,), ())


def test_refold_when_the_live_summaries_use_up_their_share() -> None:
    policy = Policy(budget_tokens=1200, keep_recent_turns=2, summary_share_permille=250)
    builder = ThreadBuilder(policy=policy)
    seen_refold = False
    for step in range(60):
        builder.turn("user", f"Step {step}: what does module {step} import?")
        builder.tool("bash", f"grep import m{step}.py", f"import os\nimport sys  # {step}\n" * 4)
        summaries = builder.state.summaries
        if len(summaries) == 1 and summaries[0].first == 0 and len(builder.compactions) > 1:
            seen_refold = True
    assert seen_refold
    assert sum(s.tokens(COUNTER) for s in builder.state.summaries) <= 300


def test_a_refold_keeps_the_room_of_the_summaries_it_folds() -> None:
    policy = Policy(budget_tokens=1200, keep_recent_turns=2, summary_share_permille=250)
    builder = ThreadBuilder(policy=policy, compact=False)
    refolds = 0
    for step in range(80):
        builder.turn("user", f"Step {step}: what does module {step} import? Exception: {step}.5m")
        builder.tool("bash", f"grep import m{step}.py", f"import os\nimport sys  # {step}\n" * 4)
        state = builder.state
        plan = plan_compaction(state, policy, COUNTER)
        if plan is not None and plan.refolded:
            live = sum(summary.tokens(COUNTER) for summary in state.summaries)
            refold_share = policy.summary_share_tokens * 3 // 4
            assert plan.max_summary_tokens >= min(refold_share, live)
            refolds += 1
        builder.compact_now()
    assert refolds >= 2


def test_an_unanswered_call_is_never_folded() -> None:
    policy = Policy(budget_tokens=300, keep_recent_turns=1, low_water_permille=300)
    builder = ThreadBuilder(policy=policy, compact=False)
    builder.turn("user", "Start the build and keep going.")
    builder.append("tool.call", "assistant", {"call_id": "b1", "name": "build", "arguments": {}})
    for step in range(20):
        builder.turn("assistant", f"While the build runs, step {step} of reading the code base.")
    with pytest.raises(RecentTurnsOverBudgetError):
        plan_compaction(builder.state, policy, COUNTER)  # only entry 0 may be folded
    builder.append("tool.result", "tool:build", {"call_id": "b1", "content": "ok"})
    builder.turn("assistant", "The build passed.")
    plan = plan_compaction(builder.state, policy, COUNTER)
    assert plan is not None and plan.folded is not None and plan.folded[1] >= 22


def test_pins_alone_too_big_says_by_how_much() -> None:
    builder = ThreadBuilder(compact=False)
    builder.pin("definition", "term " * 120)
    pins = live_pin_tokens(builder.state, COUNTER)
    policy = Policy(budget_tokens=pins - 11, high_water_permille=500, low_water_permille=100)
    with pytest.raises(PinsOverBudgetError) as caught:
        plan_compaction(builder.state, policy, COUNTER)
    assert caught.value.over_by == 11
    assert caught.value.needed == pins
    assert f"{pins} tokens, 11 over the budget of {pins - 11}" in str(caught.value)


def test_recent_turns_too_big_are_elided_not_refused() -> None:
    """Issue 28 item 5: long recent turns are shown head and tail, not refused."""
    policy = Policy(budget_tokens=500, keep_recent_turns=3)
    builder = ThreadBuilder(policy=policy, compact=False)
    for step in range(3):
        builder.turn("assistant", f"Turn {step}: " + "reading the source carefully " * 40)
    plan = plan_compaction(builder.state, policy, COUNTER)
    assert plan is not None and plan.elided


def test_recent_turns_too_big_even_at_their_markers_says_by_how_much() -> None:
    policy = Policy(budget_tokens=200, keep_recent_turns=12, summary_share_permille=500)
    builder = ThreadBuilder(policy=policy, compact=False)
    for step in range(12):
        builder.turn("assistant", f"Turn {step}: " + "reading the source carefully " * 4)
    with pytest.raises(RecentTurnsOverBudgetError, match="lower keep_recent_turns") as caught:
        plan_compaction(builder.state, policy, COUNTER)
    assert caught.value.over_by == caught.value.needed - caught.value.budget > 0
    assert isinstance(caught.value, ContextBudgetError)


# --- the controller's refusals -------------------------------------------------------------


def test_default_summary_of_the_example_is_accepted() -> None:
    plan = example_plan()
    summary = ExtractiveSummarizer().summarize(plan.items, plan)
    refuse(plan, *summary.lines)  # accepted: no exception
    assert summary_tokens(plan, summary.lines, COUNTER) <= plan.max_summary_tokens


def test_pointer_outside_range_fail() -> None:
    plan = example_plan()
    with pytest.raises(SummaryPointerOutsideRangeError, match="points at 4-5, outside"):
        refuse(plan, SummaryLine("findings", "Ran the tests.", ((4, 5),)))


def test_invented_quote_fail() -> None:
    plan = example_plan()
    line = SummaryLine("findings", "The user said “astroid 3.0 is broken”.", ((0, 0),))
    with pytest.raises(InventedQuoteError, match=r"astroid 3\.0 is broken"):
        refuse(plan, line)


def test_quote_found_only_outside_the_lines_pointers_fail() -> None:
    plan = example_plan()
    line = SummaryLine("tool_outputs", 'ls showed "modutils.py".', ((0, 0),))
    with pytest.raises(InventedQuoteError):
        refuse(plan, line)
    refuse(plan, SummaryLine("tool_outputs", 'ls showed "modutils.py".', ((3, 3),)))


def test_empty_summary_fail() -> None:
    plan = example_plan()
    with pytest.raises(EmptySummaryError, match="no line"):
        refuse(plan)
    with pytest.raises(EmptySummaryError, match="line 1 is blank"):
        refuse(
            plan, SummaryLine("findings", "x", ((0, 0),)), SummaryLine("findings", " ", ((1, 1),))
        )


def test_summary_over_its_share_fail() -> None:
    plan = example_plan()
    line = SummaryLine("findings", "The assistant looked around. " * 30, ((0, 4),))
    over = summary_tokens(plan, (line,), COUNTER) - plan.max_summary_tokens
    with pytest.raises(SummaryOverShareError, match=f"{over} over its share of 104"):
        refuse(plan, line)


def test_summary_lines_for_a_plan_that_folds_nothing_fail() -> None:
    builder = ThreadBuilder(compact=False)
    builder.turn("user", "Read the log.")
    builder.tool("bash", "cat log", "error line\n" * 120)
    builder.turn("assistant", "Read it.")
    policy = Policy(budget_tokens=400, keep_recent_turns=1, bulky_tool_output_tokens=50)
    plan = plan_compaction(builder.state, policy, COUNTER)
    assert plan is not None and plan.folded is None
    with pytest.raises(SummaryPointerOutsideRangeError, match="only stubs"):
        check_summary(
            plan, Summary((SummaryLine("findings", "x", ((0, 0),)),)), {}, policy, COUNTER
        )


def test_plan_used_with_another_policy_or_state_fail() -> None:
    plan = example_plan()
    with pytest.raises(StalePlanError):
        check_summary(plan, Summary(()), {}, Policy(), COUNTER)
    moved = before_compaction()
    moved.turn("user", "One more thing.")
    summary = ExtractiveSummarizer().summarize(plan.items, plan)
    with pytest.raises(StalePlanError, match="plan again"):
        compaction_body(moved.state, plan, summary, ExtractiveSummarizer())
