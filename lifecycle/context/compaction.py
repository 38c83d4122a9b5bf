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
   folded again into the new one (pointers kept), which may take half the summary share.

If the live pins alone exceed the budget it raises
:class:`~registre.lifecycle.context.errors.PinsOverBudgetError`; if no plan fits the budget (the
most recent turns are too big)
:class:`~registre.lifecycle.context.errors.RecentTurnsOverBudgetError`; both say by how many tokens.

``check_summary`` is the controller's gate between a summarizer and the ledger: each refusal
is its own :class:`~registre.lifecycle.context.errors.SummaryRefusedError` subclass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from registre.lifecycle.context.errors import (
    ContextBudgetError,
    EmptySummaryError,
    InventedQuoteError,
    PinsOverBudgetError,
    RecentTurnsOverBudgetError,
    StalePlanError,
    SummaryOverShareError,
    SummaryPointerOutsideRangeError,
)
from registre.lifecycle.context.fold import ContextState, TailItem, protected_start, safe_cuts
from registre.lifecycle.context.lineage import (
    check_line_quotes,
    check_lines_present,
    check_pointers_inside,
)
from registre.lifecycle.context.model import Span, Summary, SummaryLine
from registre.lifecycle.context.policy import Policy
from registre.lifecycle.context.projection import context_tokens, live_pin_tokens
from registre.lifecycle.context.render import message_tokens, stub_message, summary_message
from registre.lifecycle.context.tokens import TokenCounter

__all__ = [
    "MIN_SUMMARY_TOKENS",
    "SUMMARY_LINE_KIND",
    "CompactionPlan",
    "FoldItem",
    "check_summary",
    "plan_compaction",
    "summary_tokens",
]

MIN_SUMMARY_TOKENS: Final = 64
"""The least a plan leaves for a summary's message; a fold that cannot leave this much is not
planned."""

SUMMARY_LINE_KIND: Final = "summary.line"
"""The ``kind`` of a :class:`FoldItem` that is a line of a summary being folded again."""

_UNSHOWN_KINDS: Final = frozenset(("context.compaction", "model.call"))


@dataclass(frozen=True, slots=True)
class FoldItem:
    """What a summarizer reads: a folded ledger entry, or a line of a summary folded again.

    For an entry: its ``seq``, ``kind``, ``actor``, ``text`` (its own words), ``body`` and the
    seq of its paired tool call or result (``partner``); ``pointers`` is ``((seq, seq),)``.
    For a summary line (``kind`` = :data:`SUMMARY_LINE_KIND`): ``seq`` is the compaction that
    wrote it, ``section``, ``text`` and ``pointers`` are the line's.
    """

    seq: int
    kind: str
    actor: str
    text: str
    pointers: tuple[Span, ...]
    section: str | None = None
    body: Mapping[str, object] | None = None
    partner: int | None = None


@dataclass(frozen=True, slots=True, eq=False)
class CompactionPlan:
    """A planned compaction, to be recorded as entry ``at + 1`` of the thread.

    ``folded`` is the range to fold (``None``: stubs only), ``refolded`` the seqs of the live
    summaries it folds again, ``stubbed`` the tool results to stub, ``items`` what the
    summarizer reads, ``max_summary_tokens`` the most the summary's message may take.
    """

    at: int
    folded: Span | None
    refolded: tuple[int, ...]
    stubbed: tuple[int, ...]
    items: tuple[FoldItem, ...]
    max_summary_tokens: int
    tokens_before: int
    policy: Policy
    counter: TokenCounter
    pin_set_sha256: str

    @property
    def seq(self) -> int:
        """The seq the compaction entry will have."""
        return self.at + 1

    def entry_texts(self) -> dict[int, str]:
        """Texts of the folded tail entries by seq (for :func:`check_summary`; a refold also
        needs the texts of the entries its summary lines point at)."""
        return {item.seq: item.text for item in self.items if item.kind != SUMMARY_LINE_KIND}


def plan_compaction(
    state: ContextState, policy: Policy, counter: TokenCounter
) -> CompactionPlan | None:
    """The compaction the policy calls for now, or ``None`` (module docstring). Pure: the
    state is not changed. O(tail + live summaries)."""
    before = context_tokens(state, counter)
    if before <= policy.high_water_tokens:
        return None
    budget = policy.budget_tokens
    pins = live_pin_tokens(state, counter)
    if pins > budget:
        raise PinsOverBudgetError(
            f"the live pins alone take {pins} tokens, {pins - budget} over the budget of "
            f"{budget}; unpin something or raise the budget",
            needed=pins,
            budget=budget,
        )
    layout = _Layout(state, policy, counter, pins)
    for target in (policy.low_water_tokens, budget):
        choice = layout.stubs_only(target, before) or layout.fold(target, refold=False)
        choice = choice or layout.fold(target, refold=True)
        if choice is not None:
            return layout.plan(choice, before)
    if before <= budget:
        return None  # nothing can be folded yet, and the context still fits
    needed = layout.smallest_possible()
    if needed <= budget:
        share = policy.summary_share_tokens
        short = 2 * MIN_SUMMARY_TOKENS - share
        raise ContextBudgetError(
            f"the summary share of {share} tokens is {short} tokens short of the "
            f"{2 * MIN_SUMMARY_TOKENS} a refold needs (half the share must hold a summary of "
            f"{MIN_SUMMARY_TOKENS}); raise summary_share_permille or the budget",
            needed=2 * MIN_SUMMARY_TOKENS,
            budget=share,
        )
    raise RecentTurnsOverBudgetError(
        f"the pins, the smallest summary ({MIN_SUMMARY_TOKENS} tokens) and the most recent "
        f"turns that are never folded take at least {needed} tokens, {needed - budget} over the "
        f"budget of {budget}; lower keep_recent_turns ({policy.keep_recent_turns}) or raise "
        "the budget",
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


def summary_tokens(
    plan: CompactionPlan, lines: Sequence[SummaryLine], counter: TokenCounter
) -> int:
    """Tokens the summary's message will take once recorded by ``plan``."""
    if plan.folded is None:
        return 0
    first, last = plan.folded
    return message_tokens(summary_message(plan.seq, first, last, lines), counter)


# --- the search -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Choice:
    cut: int  # index of the last tail item folded; -1: no tail item
    refold: bool
    stubs: tuple[int, ...]  # tail indexes
    allowance: int


class _Layout:
    """Token accounting of the context after a compaction, for every candidate plan."""

    def __init__(
        self, state: ContextState, policy: Policy, counter: TokenCounter, pins: int
    ) -> None:
        self.state, self.policy, self.counter, self.pins = state, policy, counter, pins
        tail = state.tail
        self.tail = tail
        # After the compaction the header holds every live pin, so no pin or unpin entry of
        # the tail is shown any more.
        self.tokens = [0 if item.control else item.tokens(counter, -1) for item in tail]
        self.protected = protected_start(tail, policy.keep_recent_turns)
        self.candidates = [
            index
            for index in range(self.protected)
            if _bulky(tail[index], self.tokens[index], policy.bulky_tool_output_tokens)
        ]
        self.stub_tokens = {
            index: message_tokens(stub_message(tail[index].seq, tail[index].body), counter)
            for index in self.candidates
        }
        cuts = safe_cuts(tail)
        self.cuts = [index for index in range(self.protected) if cuts[index]]
        # kept[k]: tokens of tail[k + 1:] with every candidate there stubbed; kept[-1] whole.
        kept = [0] * (len(tail) + 1)
        for index in range(len(tail) - 1, -1, -1):
            kept[index] = kept[index + 1] + self.stub_tokens.get(index, self.tokens[index])
        self.kept_after = kept  # kept_after[k + 1] = tokens of tail[k + 1:], stubbed
        self.summary_tokens = [summary.tokens(counter) for summary in state.summaries]

    def stubs_only(self, target: int, before: int) -> _Choice | None:
        """Stub the oldest bulky results until ``target`` is reached -- possibly none, when
        refreshing the header (dropping pins unpinned since) is enough and does lower the
        count; a compaction that would change nothing is never planned."""
        total = self.pins + sum(self.summary_tokens) + sum(self.tokens)
        chosen = []
        for index in self.candidates:
            if total <= target:
                break
            total -= self.tokens[index] - self.stub_tokens[index]
            chosen.append(index)
        if total > target or (not chosen and total >= before):
            return None
        return _Choice(-1, False, tuple(chosen), 0)

    def fold(self, target: int, *, refold: bool) -> _Choice | None:
        """The smallest cut that reaches ``target`` leaving the summary its desired
        allowance, else the smallest that leaves it at least MIN_SUMMARY_TOKENS."""
        share = self.policy.summary_share_tokens
        if refold:
            if not self.summary_tokens:
                return None
            remaining, nominal = 0, share // 2
            cuts = [-1, *self.cuts]
            desired = nominal
        else:
            remaining = sum(self.summary_tokens)
            nominal = share - remaining
            cuts = self.cuts
            desired = min(nominal, max(MIN_SUMMARY_TOKENS, share // 4))
        for floor in dict.fromkeys((desired, MIN_SUMMARY_TOKENS)):
            for cut in cuts:
                rest = self.kept_after[cut + 1]
                allowance = min(nominal, target - self.pins - remaining - rest)
                if allowance >= max(floor, MIN_SUMMARY_TOKENS):
                    stubs = tuple(index for index in self.candidates if index > cut)
                    return _Choice(cut, refold, stubs, allowance)
        return None

    def smallest_possible(self) -> int:
        last_cut = self.cuts[-1] if self.cuts else -1
        return self.pins + MIN_SUMMARY_TOKENS + self.kept_after[last_cut + 1]

    def plan(self, choice: _Choice, before: int) -> CompactionPlan:
        state, tail = self.state, self.tail
        summaries = state.summaries
        folded: Span | None = None
        refolded: tuple[int, ...] = ()
        items: list[FoldItem] = []
        if choice.refold:
            refolded = tuple(summary.seq for summary in summaries)
            for summary in summaries:
                items.extend(
                    FoldItem(
                        summary.seq, SUMMARY_LINE_KIND, "", line.text, line.pointers, line.section
                    )
                    for line in summary.lines
                )
            last = tail[choice.cut].seq if choice.cut >= 0 else summaries[-1].last
            folded = (summaries[0].first, last)
        elif choice.cut >= 0:
            folded = (state.boundary, tail[choice.cut].seq)
        items.extend(
            FoldItem(
                item.seq,
                item.kind,
                item.actor,
                item.text,
                ((item.seq, item.seq),),
                body=item.body,
                partner=item.partner,
            )
            for item in tail[: choice.cut + 1]
            if item.kind not in _UNSHOWN_KINDS
        )
        return CompactionPlan(
            at=state.at,
            folded=folded,
            refolded=refolded,
            stubbed=tuple(tail[index].seq for index in choice.stubs),
            items=tuple(items),
            max_summary_tokens=choice.allowance if folded is not None else 0,
            tokens_before=before,
            policy=self.policy,
            counter=self.counter,
            pin_set_sha256=state.pin_set_sha256(),
        )


def _bulky(item: TailItem, tokens: int, threshold: int) -> bool:
    return item.kind == "tool.result" and not item.stubbed and tokens > threshold
