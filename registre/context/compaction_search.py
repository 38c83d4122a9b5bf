"""The search behind :func:`registre.context.compaction.plan_compaction`: token
accounting of the context after every candidate compaction (:class:`Layout`), the tiers tried
against a target (stubs, fold, refold; stand-ins inside the recent turns), and the elision of
the recent turns' own words and the latest turn's tool outputs to head and tail
(``specs/context.md`` section 5). Pure: the
state searched is never changed.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from registre.context.compaction_plan import (
    MIN_SUMMARY_TOKENS,
    SUMMARY_LINE_KIND,
    CompactionPlan,
    FoldItem,
)
from registre.context.fold import ContextState, TailItem, protected_start, safe_cuts
from registre.context.model import Span
from registre.context.policy import Policy
from registre.context.record import Elision
from registre.context.render import elided_message, message_tokens, stub_message
from registre.context.tokens import TokenCounter

__all__ = ["ANY", "DESIRED", "KEEP", "Layout"]

_UNSHOWN_KINDS: Final = frozenset(
    ("context.compaction", "model.call", "transcript.entry", "compaction.imported")
)

# How much room a planned summary gets at least (``Layout.fold``): its desired allowance;
# for a refold, the room of the summaries it folds again; anything from MIN_SUMMARY_TOKENS.
DESIRED, KEEP, ANY = range(3)


@dataclass(frozen=True, slots=True)
class _Choice:
    cut: int  # index of the last tail item folded; -1: no tail item
    refold: bool
    stubs: tuple[int, ...]  # tail indexes
    allowance: int
    elided: tuple[Elision, ...] = ()  # (tail index, head chars, tail chars)


class Layout:
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
            if item.kind in ("turn", "tool.call") and not item.control:
                if index >= self.protected and item.text:
                    elidable.append(index)  # a recent turn's own words: elided, never stubbed
                continue
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
        self, target: int, before: int, saved: int = 0, *, level: int = ANY
    ) -> _Choice | None:
        """The first of tiers 1-3 that reaches ``target`` and reduces the context, its
        summary given at least the room ``level`` says (:data:`DESIRED`, :data:`KEEP`,
        :data:`ANY`)."""
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
        level: int = ANY,
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
        floors = {DESIRED: (desired,), KEEP: (desired, keep)}.get(
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

    def reachable(self, saved: int = 0, level: int = ANY) -> int:
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
                MIN_SUMMARY_TOKENS if level == ANY else max(MIN_SUMMARY_TOKENS, min(nominal, live))
            )
            last_cut = self.cuts[-1] if self.cuts else -1
            options.append(self.pins + room + self.kept_after[last_cut + 1])
        return min(options) - saved

    def refold_share(self) -> int:
        """The most a refold's summary may take: three quarters of the summary share (the
        rest is left for the folds that follow it)."""
        return self.policy.summary_share_tokens * 3 // 4

    def recent_stubs(self, target: int, before: int, level: int = ANY) -> _Choice | None:
        """Tier 4a: stub tool results of the protected turns before the latest, biggest
        saving first, as few as let tiers 1-3 reach ``target``."""
        saved = 0
        for count, index in enumerate(self.recent, start=1):
            saved += self.recent_savings[index]
            choice = self.tiers(target, before, saved, level=level)
            if choice is not None:
                return _with_stand_ins(choice, self.recent[:count], ())
        return None

    def elide(self, budget: int, before: int, level: int = ANY) -> _Choice | None:
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
            tokens = message_tokens(
                elided_message(item.seq, item.body, *sizes, item.kind), self.counter
            )
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
            smallest = message_tokens(
                elided_message(item.seq, item.body, 0, 0, item.kind), self.counter
            )
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
        return message_tokens(elided_message(item.seq, item.body, *sizes, item.kind), counter)

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
