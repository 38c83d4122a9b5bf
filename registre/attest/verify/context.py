"""Steps 6.5 and 6.7 of bundle verification: the working context replayed (``specs/context.md``).

:class:`ContextReplay` fills :class:`~registre.attest.verify.semantics.SemanticHooks` with the
working-context module (``registre.context``, issue 5): it folds the verified entries of a
full bundle into a :class:`~registre.context.ContextState`, in seq order, as far as each
check needs, and

* for every ``context.compaction``: :func:`registre.context.validate_compaction` against
  the fold of the entries before it -- fold boundaries, stubs, tool calls kept with their
  results, recent turns, summary share, quoted spans, pin set, token counts -- raising that
  rule's ``Compaction*Error`` (or ``UnknownTokenCounterError``);
* for every ``model.call``: :func:`registre.attest.projection_digest.digest.verify_model_call`'s
  check against
  the fold of entries ``0..at_seq`` -- the projection the recorded budget, policy and counter
  give must have the recorded digest (``ContextDigestMismatchError``,
  ``ModelCallOverBudgetError``) -- run by a
  :class:`~registre.attest.projection_digest.stream.ModelCallChecker`, which carries the
  projection's
  parts forward with the fold instead of rebuilding them for every call.

One pass: the fold moves forward once over the entries, each entry's tokens are counted once
(the fold caches them) and carried, and nothing is copied per call. Memory follows the live
context, not the history: the texts a quote check may need are kept for the tail and for the
entries the live summaries point at (what a refold's lines point at), and any other entry a
summary line points at is read back from the bundle when asked (:class:`QuoteTexts`).

Token counts are recounted with the counter each event names; the default counter ships with
registre, others must be given (``counters``). One replay serves one bundle.
"""

from __future__ import annotations

import itertools
from bisect import bisect_right
from collections.abc import Iterable, Iterator, Mapping, Sequence

from registre.attest.entries import load_leaf
from registre.attest.projection_digest import ModelCallChecker, claims_block
from registre.attest.verify.semantics import Compaction, ModelCall, SemanticHooks
from registre.context import (
    ContextEntry,
    ContextState,
    TokenCounter,
    counter_registry,
    entry_text,
    validate_compaction,
)
from registre.lifecycle import KINDS as LIFECYCLE_KINDS
from registre.lifecycle import LifecycleState, apply, parse_body

__all__ = ["BundleEntries", "ContextReplay", "QuoteTexts", "context_hooks"]


class QuoteTexts(Mapping[int, str]):
    """Entry texts by seq for the quote checks of a compaction: the texts kept (the tail's,
    and those of the entries live summaries point at), else the entry read back from
    ``leaves`` (verified leaves, re-read from the bundle) when a line points elsewhere.
    Iterating gives the kept seqs only."""

    def __init__(self) -> None:
        self.kept: dict[int, str] = {}
        self.leaves: Sequence[bytes] = ()

    def __getitem__(self, seq: int) -> str:
        text = self.kept.get(seq)
        if text is not None:
            return text
        if not isinstance(seq, int) or not 0 <= seq < len(self.leaves):
            raise KeyError(seq)
        envelope = load_leaf(self.leaves[seq])["entry"]
        return entry_text(envelope["kind"], envelope["body"])

    def __iter__(self) -> Iterator[int]:
        return iter(self.kept)

    def __len__(self) -> int:
        return len(self.kept)

    def keep_live(self, state: ContextState) -> None:
        """Drop the texts no later compaction is expected to quote: those before the tail
        that no live summary line points at."""
        spans = sorted(
            span for summary in state.summaries for line in summary.lines for span in line.pointers
        )
        firsts = [first for first, _ in spans]
        reach = list(itertools.accumulate((last for _, last in spans), max))
        boundary = state.boundary

        def pointed(seq: int) -> bool:
            index = bisect_right(firsts, seq) - 1
            return index >= 0 and reach[index] >= seq

        self.kept = {
            seq: text for seq, text in self.kept.items() if seq >= boundary or pointed(seq)
        }


class ContextReplay:
    """The working context of one full bundle, folded on demand by the two hooks.

    The hooks are called in seq order; the fold only moves forward, except for a model call
    projecting an earlier prefix than the fold has reached, which refolds from the start.
    """

    def __init__(self, counters: Iterable[TokenCounter] = ()) -> None:
        self._counters = counter_registry(counters)
        self._state = ContextState()
        self._texts = QuoteTexts()
        self._calls = ModelCallChecker(self._counters)

    def hooks(self) -> SemanticHooks:
        """The :class:`SemanticHooks` that run this replay."""
        return SemanticHooks(compaction=self.check_compaction, model_call=self.check_model_call)

    def check_compaction(self, point: Compaction) -> None:
        """Validate the compaction at ``point.seq`` against the fold of the entries before it."""
        self._fold_to(point.prefix, point.seq - 1)
        entry = ContextEntry(point.seq, "context.compaction", point.actor, point.body)
        self._texts.leaves = point.prefix
        # the fold after the entry, as validated: carried on, not folded again
        self._state = validate_compaction(self._state, entry, self._texts, self._counters)
        self._kept(point.seq)

    def check_model_call(self, call: ModelCall) -> None:
        """Require the model call's projection digest to reproduce from ``0..at_seq`` (with
        the lifecycle block, from the lifecycle state there too)."""
        self._fold_to(call.prefix, call.body["at_seq"])
        lifecycle = None
        if claims_block(call.body):
            lifecycle = call.lifecycle
            if lifecycle is None:
                lifecycle = _replay_lifecycle(call.prefix)
        self._calls.check(call.body, self._state, lifecycle, BundleEntries(call.prefix))

    def _fold_to(self, leaves: Sequence[bytes], seq: int) -> None:
        """Fold entries up to ``seq`` (inclusive) from ``leaves``, already verified in step 3
        (canonical JSON, so the C parser reads exactly what the strict one read)."""
        if self._state.at > seq:
            self._state, self._texts = ContextState(), QuoteTexts()
        for position in range(self._state.at + 1, seq + 1):
            envelope = load_leaf(leaves[position])["entry"]
            self._state.apply(
                ContextEntry(position, envelope["kind"], envelope["actor"], envelope["body"])
            )
            self._kept(position)

    def _kept(self, seq: int) -> None:
        """Keep the text of entry ``seq``, just folded (the fold's own: its tail item's)."""
        item = self._state.tail[-1]
        assert item.seq == seq  # every entry folded joins the tail
        self._texts.kept[seq] = item.text
        if item.kind == "context.compaction":
            self._texts.keep_live(self._state)


class BundleEntries:
    """The entries of a bundle's verified ``leaves`` by seq, parsed when asked (a model
    call's recalls)."""

    def __init__(self, leaves: Sequence[bytes]) -> None:
        self._leaves = leaves

    def __call__(self, seq: int) -> ContextEntry:
        envelope = load_leaf(self._leaves[seq])["entry"]
        return ContextEntry(seq, envelope["kind"], envelope["actor"], envelope["body"])


def _replay_lifecycle(leaves: Sequence[bytes]) -> LifecycleState:
    """The lifecycle state after ``leaves`` (their events replayed in step 6.1 already, so
    they apply): for a model call whose ``at_seq`` lies before later lifecycle entries."""
    state = LifecycleState.empty()
    for leaf in leaves:
        envelope = load_leaf(leaf)["entry"]
        if envelope["kind"] in LIFECYCLE_KINDS:
            state = apply(state, parse_body(envelope["kind"], envelope["body"]))
    return state


def context_hooks(counters: Iterable[TokenCounter] = ()) -> SemanticHooks:
    """Fresh hooks replaying the working context (the verifier's default)."""
    return ContextReplay(counters).hooks()
