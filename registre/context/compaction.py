"""Planning a compaction and checking a summary before it is recorded (``specs/context.md``
section 5).

``plan_compaction(state, policy, counter)`` returns ``None`` while the context is at or below
the policy's high-water mark. Past it, it returns the smallest :class:`CompactionPlan` of the
first tier that brings the context down to the low-water mark (or, failing that, within the
budget), trying targets and tiers in this order (and ``None`` if no tier applies while the
context still fits the budget):

1. **stubs**: bulky tool results of the tail (more than ``bulky_tool_output_tokens``) become
   one-line stubs, oldest first, as many as needed;
2. **fold**: the oldest tail entries up to the smallest cut that reaches the target, never
   splitting a tool call from its result and never touching the most recent turns; bulky
   results of the kept tail are stubbed too. The summary may take what the summary share
   leaves after the live summaries; the cut is chosen to leave it a quarter of the share (or
   all that is left, if less), else at least :data:`MIN_SUMMARY_TOKENS`;
3. **refold**: as 2, but the range starts at the oldest live summary, so every live summary is
   folded again into the new one (pointers kept), which may take three quarters of the
   summary share.

Tiers are tried in rounds (``specs/context.md`` section 5): first each summary with its
desired allowance, down to the low-water mark, else the high; then a smaller one, but never
a refold with less room than the summaries it folds again (if that is all that is left while
the context still fits the budget, nothing is planned).

A compaction must pay for itself: no plan is made whose context, with the summary at its full
allowance, would not be strictly smaller than the context now (every allowance is capped so),
and a stub is planned only where it is smaller than what it replaces.

When no such plan fits the budget and the context does not fit it either (a big tool output
in the most recent turns), a fourth tier puts stand-ins inside the recent turns before the
search above is run again: first tool results of the recent turns before the latest one
become stubs (whatever their size: the context does not fit), biggest saving first, as few as
reach the low-water mark (else the budget); then the tool results of the latest turn are
shown head and tail only (:func:`~registre.context.render.elided_message`),
biggest first, each the biggest elision (cut at line, else word, boundaries) with which the
context fits the budget.

For a version 2 policy "the budget" of the tiers is the window, the budget less the output
reserve (``Policy.window_tokens``): the reply keeps its room. If the live pins alone exceed
the budget it raises
:class:`~registre.context.errors.PinsOverBudgetError`; if even the fourth tier
cannot fit the budget (the recent turns are too big at their smallest)
:class:`~registre.context.errors.RecentTurnsOverBudgetError`; both say by how many
tokens.

``check_summary`` is the controller's gate between a summarizer and the ledger: each refusal
is its own :class:`~registre.context.errors.SummaryRefusedError` subclass.

This module holds the two entry points; the plan and what a summarizer reads
(:class:`CompactionPlan`, :class:`FoldItem`, :func:`summary_tokens`) are in
:mod:`registre.context.compaction_plan` and the search over candidate plans in
:mod:`registre.context.compaction_search`; the names in ``__all__`` stay importable
from here.
"""

from __future__ import annotations

from collections.abc import Mapping

from registre.context.compaction_plan import (
    MIN_SUMMARY_TOKENS,
    SUMMARY_LINE_KIND,
    CompactionPlan,
    FoldItem,
    summary_tokens,
)
from registre.context.compaction_search import ANY, DESIRED, KEEP, Layout
from registre.context.errors import (
    ContextBudgetError,
    EmptySummaryError,
    InventedQuoteError,
    PinsOverBudgetError,
    RecentTurnsOverBudgetError,
    StalePlanError,
    SummaryOverShareError,
    SummaryPointerOutsideRangeError,
)
from registre.context.fold import ContextState
from registre.context.lineage import (
    check_line_quotes,
    check_lines_present,
    check_pointers_inside,
)
from registre.context.model import Summary
from registre.context.policy import Policy
from registre.context.projection import context_tokens, live_pin_tokens
from registre.context.tokens import TokenCounter

__all__ = [
    "MIN_SUMMARY_TOKENS",
    "SUMMARY_LINE_KIND",
    "CompactionPlan",
    "FoldItem",
    "check_summary",
    "plan_compaction",
    "summary_tokens",
]


def plan_compaction(
    state: ContextState, policy: Policy, counter: TokenCounter
) -> CompactionPlan | None:
    """The compaction the policy calls for now, or ``None`` (module docstring). Pure: the
    state is not changed. O(tail + live summaries), plus O(log(size) x size) per latest
    output elided."""
    before = context_tokens(state, counter)
    if before <= policy.compact_above_tokens:
        return None
    pins = live_pin_tokens(state, counter)
    if pins > policy.budget_tokens:
        raise PinsOverBudgetError(
            f"the live pins alone take {pins} tokens, {pins - policy.budget_tokens} over the "
            f"budget of {policy.budget_tokens}; unpin something or raise the budget",
            needed=pins,
            budget=policy.budget_tokens,
        )
    budget = policy.window_tokens()  # what the context may take: the reply keeps its room
    layout = Layout(state, policy, counter, pins)
    high = policy.compact_above_tokens
    low = policy.compact_to_tokens
    # 1: a summary with its desired allowance, down to the low-water mark, else the high.
    for target in (low, high):
        choice = layout.tiers(target, before, level=DESIRED)
        if choice is not None:
            return layout.plan(choice, before)
    # 2: a smaller summary, but never a refold with less room than the summaries it folds.
    for target in (low, budget):
        choice = layout.tiers(target, before, level=KEEP)
        if choice is not None:
            return layout.plan(choice, before)
    if before <= budget:
        return None  # nothing can be folded yet without a loss, and the context still fits
    # 3: stand-ins inside the recent turns (tier 4), first with the room of 2, then any.
    for level in (KEEP, ANY):
        if level == ANY:
            for target in (low, budget):
                choice = layout.tiers(target, before, level=ANY)
                if choice is not None:
                    return layout.plan(choice, before)
        for target in (low, budget):
            choice = layout.recent_stubs(target, before, level)
            if choice is not None:
                return layout.plan(choice, before)
        choice = layout.elide(budget, before, level)
        if choice is not None:
            return layout.plan(choice, before)
    needed = layout.smallest(layout.elided_minimum())
    if needed <= budget:
        share = policy.summary_share_tokens
        least = -(-MIN_SUMMARY_TOKENS * 4 // 3)  # the share whose three quarters hold one
        raise ContextBudgetError(
            f"the summary share of {share} tokens is {least - share} tokens short of the "
            f"{least} a refold needs (three quarters of the share must hold a summary of "
            f"{MIN_SUMMARY_TOKENS}); raise summary_share_permille or the budget",
            needed=least,
            budget=share,
        )
    raise RecentTurnsOverBudgetError(
        f"the pins ({pins} tokens), the smallest summary ({MIN_SUMMARY_TOKENS} tokens) and "
        f"the {policy.keep_recent_turns} most recent turns that are never folded, at their "
        "smallest (tool outputs stubbed, the latest turn's elided to their marker), "
        f"take at least {needed} tokens, {needed - budget} over the budget of {budget}; "
        f"lower keep_recent_turns ({policy.keep_recent_turns}) or raise the budget",
        needed=needed,
        budget=budget,
    )


def check_summary(
    plan: CompactionPlan,
    summary: Summary,
    entries_text_by_seq: Mapping[int, str],
    policy: Policy,
    counter: TokenCounter,
) -> None:
    """Refuse a summary the plan cannot record, in this order:

    1. the plan was made with another policy or counter: :class:`StalePlanError`;
    2. a plan that folds nothing with summary lines, or one that folds a range with no line
       or a blank line: :class:`EmptySummaryError` / :class:`SummaryPointerOutsideRangeError`;
    3. a pointer outside the folded range: :class:`SummaryPointerOutsideRangeError`;
    4. the summary's message over ``plan.max_summary_tokens``: :class:`SummaryOverShareError`
       (saying by how many tokens);
    5. a quoted span that no entry the line points at contains: :class:`InventedQuoteError`.
    """
    if plan.policy != policy or plan.counter.name != counter.name:
        raise StalePlanError(
            "the summary is checked with another policy or counter than the plan was made "
            "with; plan again with the policy and counter in force"
        )
    where = f"compaction planned at seq {plan.seq}"
    if plan.folded is None:
        if summary.lines:
            raise SummaryPointerOutsideRangeError(
                f"{where}: the plan only stubs, so there is no folded range for summary lines "
                "to point into; record no lines"
            )
        return
    check_lines_present(summary.lines, where, EmptySummaryError)
    check_pointers_inside(summary.lines, plan.folded, where, SummaryPointerOutsideRangeError)
    tokens = summary_tokens(plan, summary.lines, counter)
    if tokens > plan.max_summary_tokens:
        raise SummaryOverShareError(
            f"{where}: the summary takes {tokens} tokens, {tokens - plan.max_summary_tokens} "
            f"over its share of {plan.max_summary_tokens}; summarize more tightly"
        )
    for index, line in enumerate(summary.lines):
        check_line_quotes(line, index, entries_text_by_seq, where, InventedQuoteError)
