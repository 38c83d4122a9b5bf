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
shown head and tail only (:func:`~registre.lifecycle.context.render.elided_message`),
biggest first, each the biggest elision (cut at line, else word, boundaries) with which the
context fits the budget.

If the live pins alone exceed the budget it raises
:class:`~registre.lifecycle.context.errors.PinsOverBudgetError`; if even the fourth tier
cannot fit the budget (the recent turns are too big at their smallest)
:class:`~registre.lifecycle.context.errors.RecentTurnsOverBudgetError`; both say by how many
tokens.

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
from registre.lifecycle.context.record import Elision
from registre.lifecycle.context.render import (
    elided_message,
    message_tokens,
    stub_message,
    summary_message,
)
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

_UNSHOWN_KINDS: Final = frozenset(
    ("context.compaction", "model.call", "transcript.entry", "compaction.imported")
)

# How much room a planned summary gets at least (``_Layout.fold``): its desired allowance;
# for a refold, the room of the summaries it folds again; anything from MIN_SUMMARY_TOKENS.
_DESIRED, _KEEP, _ANY = range(3)


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
    summaries it folds again, ``stubbed`` the tool results to stub, ``elided`` the tool
    results to show head and tail only (``(seq, head_chars, tail_chars)``), ``items`` what
    the summarizer reads, ``max_summary_tokens`` the most the summary's message may take:
    with it the context stays strictly smaller than ``tokens_before``; ``pinned`` the folded
    entries whose whole text a live pin carries (the header shows it verbatim).
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
    elided: tuple[Elision, ...] = ()
    pinned: frozenset[int] = frozenset()

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
    state is not changed. O(tail + live summaries), plus O(log(size) x size) per latest
    output elided."""
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
    low, high = policy.low_water_tokens, policy.high_water_tokens
    # 1: a summary with its desired allowance, down to the low-water mark, else the high.
    for target in (low, high):
        choice = layout.tiers(target, before, level=_DESIRED)
        if choice is not None:
            return layout.plan(choice, before)
    # 2: a smaller summary, but never a refold with less room than the summaries it folds.
    for target in (low, budget):
        choice = layout.tiers(target, before, level=_KEEP)
        if choice is not None:
            return layout.plan(choice, before)
    if before <= budget:
        return None  # nothing can be folded yet without a loss, and the context still fits
    # 3: stand-ins inside the recent turns (tier 4), first with the room of 2, then any.
    for level in (_KEEP, _ANY):
        if level == _ANY:
            for target in (low, budget):
                choice = layout.tiers(target, before, level=_ANY)
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
    elided: tuple[Elision, ...] = ()  # (tail index, head chars, tail chars)


class _Layout:
    """Token accounting of the context after a compaction, for every candidate plan.

    ``saved`` below is what stand-ins inside the protected recent turns save (tier 4): they
    lie after every cut, so they lower every candidate's count alike."""

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
        self.latest = protected_start(tail, 1) if policy.keep_recent_turns else len(tail)
        threshold = policy.bulky_tool_output_tokens
        stub_tokens: dict[int, int] = {}
        elidable: list[int] = []
        for index, item in enumerate(tail):
            if item.kind != "tool.result" or item.stub_only:
                continue
            if index < self.protected and item.verbatim_tokens(counter) <= threshold:
                continue  # outside the recent turns, only bulky results are stubbed
            if index >= self.latest:
                if item.text:  # an elision leaves something out: an empty output has none
                    elidable.append(index)  # the latest turn's outputs are elided, not stubbed
                continue
            stub = message_tokens(stub_message(item.seq, item.body), counter)
            if stub < self.tokens[index]:  # a stub must pay for itself
                stub_tokens[index] = stub
        self.candidates = [index for index in stub_tokens if index < self.protected]
        self.stub_tokens = {index: stub_tokens[index] for index in self.candidates}
        # tier 4: stubs inside the protected turns, biggest saving first; elisions
        self.recent = sorted(
            (index for index in stub_tokens if index >= self.protected),
            key=lambda index: (stub_tokens[index] - self.tokens[index], index),
        )
        self.recent_savings = {
            index: self.tokens[index] - stub_tokens[index] for index in self.recent
        }
        self.elidable = sorted(elidable, key=lambda index: (-self.tokens[index], index))
        cuts = safe_cuts(tail)
        self.cuts = [index for index in range(self.protected) if cuts[index]]
        # kept[k]: tokens of tail[k + 1:] with every candidate there stubbed; kept[-1] whole.
        kept = [0] * (len(tail) + 1)
        for index in range(len(tail) - 1, -1, -1):
            kept[index] = kept[index + 1] + self.stub_tokens.get(index, self.tokens[index])
        self.kept_after = kept  # kept_after[k + 1] = tokens of tail[k + 1:], stubbed
        self.summary_tokens = [summary.tokens(counter) for summary in state.summaries]

    def tiers(
        self, target: int, before: int, saved: int = 0, *, level: int = _ANY
    ) -> _Choice | None:
        """The first of tiers 1-3 that reaches ``target`` and reduces the context, its
        summary given at least the room ``level`` says (:data:`_DESIRED`, :data:`_KEEP`,
        :data:`_ANY`)."""
        return (
            self.stubs_only(target, before, saved)
            or self.fold(target, before, saved, refold=False, level=level)
            or self.fold(target, before, saved, refold=True, level=level)
        )

    def stubs_only(self, target: int, before: int, saved: int = 0) -> _Choice | None:
        """Stub the oldest bulky results until ``target`` is reached -- possibly none, when
        refreshing the header (dropping pins unpinned since) is enough and does lower the
        count; a compaction that would not lower the count is never planned."""
        total = self.pins + sum(self.summary_tokens) + sum(self.tokens) - saved
        chosen = []
        for index in self.candidates:
            if total <= target:
                break
            total -= self.tokens[index] - self.stub_tokens[index]
            chosen.append(index)
        if total > target or total >= before:
            return None
        return _Choice(-1, False, tuple(chosen), 0)

    def fold(
        self,
        target: int,
        before: int,
        saved: int = 0,
        *,
        refold: bool,
        level: int = _ANY,
    ) -> _Choice | None:
        """The smallest cut that reaches ``target`` leaving the summary its desired
        allowance, else the smallest that leaves it at least MIN_SUMMARY_TOKENS. The
        allowance never lets the summary make the context as big as it was."""
        share = self.policy.summary_share_tokens
        if refold:
            if not self.summary_tokens:
                return None
            remaining, nominal = 0, self.refold_share()
            cuts = [-1, *self.cuts]
            desired = nominal
        else:
            remaining = sum(self.summary_tokens)
            nominal = share - remaining
            cuts = self.cuts
            desired = min(nominal, max(MIN_SUMMARY_TOKENS, share // 4))
        ceiling = min(target, before - 1) + saved - self.pins - remaining
        # a refold keeps the room of the summaries it folds again, up to its nominal share
        keep = min(nominal, sum(self.summary_tokens)) if refold else MIN_SUMMARY_TOKENS
        floors = {_DESIRED: (desired,), _KEEP: (desired, keep)}.get(
            level, (desired, keep, MIN_SUMMARY_TOKENS)
        )
        for floor in dict.fromkeys(floors):
            for cut in cuts:
                allowance = min(nominal, ceiling - self.kept_after[cut + 1])
                if allowance >= max(floor, MIN_SUMMARY_TOKENS):
                    stubs = tuple(index for index in self.candidates if index > cut)
                    return _Choice(cut, refold, stubs, allowance)
        return None

    def smallest(self, saved: int = 0) -> int:
        """The fewest tokens tiers 1-3 could leave were any summary possible: every bulky
        result outside the recent turns stubbed, and everything before the last safe cut
        (live summaries too) folded into a summary of MIN_SUMMARY_TOKENS."""
        last_cut = self.cuts[-1] if self.cuts else -1
        stubbed = self.pins + sum(self.summary_tokens) + self.kept_after[0]
        folded = self.pins + MIN_SUMMARY_TOKENS + self.kept_after[last_cut + 1]
        if not self.cuts and not self.summary_tokens:
            folded = stubbed  # nothing can be folded
        return min(stubbed, folded) - saved

    def reachable(self, saved: int = 0, level: int = _ANY) -> int:
        """The fewest tokens tiers 1-3 can actually leave (with the summary share as it
        is), a refold keeping the room ``level`` gives it."""
        share = self.policy.summary_share_tokens
        live = sum(self.summary_tokens)
        options = [self.pins + live + self.kept_after[0]]
        if self.cuts and share - live >= MIN_SUMMARY_TOKENS:
            options.append(
                self.pins + live + MIN_SUMMARY_TOKENS + self.kept_after[self.cuts[-1] + 1]
            )
        nominal = self.refold_share()
        if self.summary_tokens and nominal >= MIN_SUMMARY_TOKENS:
            room = (
                MIN_SUMMARY_TOKENS if level == _ANY else max(MIN_SUMMARY_TOKENS, min(nominal, live))
            )
            last_cut = self.cuts[-1] if self.cuts else -1
            options.append(self.pins + room + self.kept_after[last_cut + 1])
        return min(options) - saved

    def refold_share(self) -> int:
        """The most a refold's summary may take: three quarters of the summary share (the
        rest is left for the folds that follow it)."""
        return self.policy.summary_share_tokens * 3 // 4

    def recent_stubs(self, target: int, before: int, level: int = _ANY) -> _Choice | None:
        """Tier 4a: stub tool results of the protected turns before the latest, biggest
        saving first, as few as let tiers 1-3 reach ``target``."""
        saved = 0
        for count, index in enumerate(self.recent, start=1):
            saved += self.recent_savings[index]
            choice = self.tiers(target, before, saved, level=level)
            if choice is not None:
                return _with_stand_ins(choice, self.recent[:count], ())
        return None

    def elide(self, budget: int, before: int, level: int = _ANY) -> _Choice | None:
        """Tier 4b: every recent stub, and the latest turn's tool outputs shown head and
        tail, biggest first, each as big as the budget lets it be."""
        saved = sum(self.recent_savings.values())
        need = self.reachable(saved, level) - budget
        elided: list[Elision] = []
        for index in self.elidable:
            if need <= 0:
                break
            item = self.tail[index]
            sizes = _elision_sizes(item, self.tokens[index] - need, self.counter) or (0, 0)
            tokens = message_tokens(elided_message(item.seq, item.body, *sizes), self.counter)
            if tokens >= self.tokens[index]:
                continue
            elided.append((index, *sizes))
            saved += self.tokens[index] - tokens
            need -= self.tokens[index] - tokens
        if not elided:
            return None
        choice = self.tiers(budget, before, saved, level=level)
        if choice is None:
            return None
        return _with_stand_ins(choice, self.recent, tuple(elided))

    def elided_minimum(self) -> int:
        """What tier 4 saves at most: every recent stub, every latest output elided to its
        marker."""
        saved = sum(self.recent_savings.values())
        for index in self.elidable:
            item = self.tail[index]
            smallest = message_tokens(elided_message(item.seq, item.body, 0, 0), self.counter)
            saved += max(0, self.tokens[index] - smallest)
        return saved

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
            stubbed=tuple(tail[index].seq for index in sorted(choice.stubs)),
            items=tuple(items),
            max_summary_tokens=choice.allowance if folded is not None else 0,
            tokens_before=before,
            policy=self.policy,
            counter=self.counter,
            pin_set_sha256=state.pin_set_sha256(),
            elided=tuple(
                (tail[index].seq, head, last) for index, head, last in sorted(choice.elided)
            ),
            pinned=_pinned(state, items),
        )


def _pinned(state: ContextState, items: Sequence[FoldItem]) -> frozenset[int]:
    texts = {pin.seq: pin.text for pin in state.live_pins()}
    return frozenset(
        item.seq
        for item in items
        if item.kind != SUMMARY_LINE_KIND and texts.get(item.seq) == item.text
    )


def _with_stand_ins(choice: _Choice, recent: Sequence[int], elided: tuple[Elision, ...]) -> _Choice:
    return _Choice(choice.cut, choice.refold, (*choice.stubs, *recent), choice.allowance, elided)


def _elision_sizes(
    item: TailItem, max_tokens: int, counter: TokenCounter
) -> tuple[int, int] | None:
    """The head and tail sizes (characters) of the biggest elision of ``item`` whose message
    takes at most ``max_tokens``: the largest ``k`` whose head and tail of at most ``k``
    characters each, cut at line (else word) boundaries, fit; ``None`` if not even the
    marker fits. O(log(size) x size)."""
    content = item.text

    def tokens(sizes: tuple[int, int]) -> int:
        return message_tokens(elided_message(item.seq, item.body, *sizes), counter)

    if tokens((0, 0)) > max_tokens:
        return None
    low, high = 0, (len(content) - 1) // 2
    while low < high:
        middle = (low + high + 1) // 2
        if tokens(_cut(content, middle)) <= max_tokens:
            low = middle
        else:
            high = middle - 1
    sizes = _cut(content, low)
    return sizes if tokens(sizes) <= max_tokens else (0, 0)


def _cut(content: str, most: int) -> tuple[int, int]:
    """Head and tail lengths of at most ``most`` characters each: ending before a line break
    (else before a space) when that keeps at least half of ``most``, else cut hard."""
    if most <= 0:
        return (0, 0)
    length = len(content)
    head = most
    if content[most] != "\n":
        for mark in ("\n", " "):
            found = content.rfind(mark, 0, most)
            if found >= most / 2:
                head = found
                break
    start = length - most
    if content[start - 1] != "\n":
        for mark in ("\n", " "):
            found = content.find(mark, start, length)
            if found >= 0 and length - found - 1 >= most / 2:
                start = found + 1
                break
    return (head, length - start)
