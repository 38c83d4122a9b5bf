"""Projection: the messages sent to the model and the manifest that accounts for every entry.

``project(state, budget, policy, counter)`` lays out the context the fold describes
(``specs/context.md`` section 4), in this order:

1. the header: the pins live at the last compaction, task parameters first;
2. the live summaries, oldest range first, one message each;
3. the verbatim tail, one message per shown entry (stubs in place of stubbed results);
4. given recalled entries (``recalled=``, :mod:`registre.context.recall`), the recalled
   section: one message holding entries of the whole thread relevant to this call;
5. given the lifecycle state at ``at`` (``lifecycle=``), the lifecycle block: the active
   evidence ids with their statements, the stale conclusions and the open questions, as one
   last message, budgeted so it never makes the projection refuse
   (:mod:`registre.context.lifecycle_block`).

Parts 1 and 2 are the *stable prefix*: they change only when a compaction is applied, so a
provider's prompt cache stays valid between compactions. The manifest gives every entry
``0..at`` exactly one status (:data:`STATUSES`) as runs of consecutive entries, and reports
the stable prefix length in messages and tokens.

Cost: the state keeps what its projection shows (:meth:`ContextState.cache`): the prefix's
messages and manifest runs, built once per compaction in O(header + live summaries + their
pointer spans), and the tail's messages, manifest runs and per-counter token counts, extended
by the entries folded since the last projection. So a projection costs O(entries appended
since) plus copying the message and run lists into the result (C-level, tiny per item), and
:func:`context_tokens` O(entries appended since): independent of the history behind the
summaries, and close to independent of the budget. The first projection after a compaction
(or of a state restored from a snapshot) builds them in O(context).

``project`` never cuts anything silently: a context over
the budget raises :class:`~registre.context.errors.PinsOverBudgetError` (the pins alone do
not fit) or :class:`~registre.context.errors.ProjectionOverBudgetError` (compact first).
"""

from __future__ import annotations

from bisect import bisect_left, bisect_right
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, Final

from registre.context.errors import PinsOverBudgetError, ProjectionOverBudgetError
from registre.context.fold import ContextState, LiveSummary
from registre.context.lifecycle_block import (
    LIFECYCLE_BLOCK_VERSION,
    LifecycleBlock,
    block_allowance,
    lifecycle_block,
    lifecycle_view,
)
from registre.context.model import Message
from registre.context.policy import Policy
from registre.context.recall import RecallSection
from registre.context.refill import RefillPlan, refill_plan, refill_room
from registre.context.render import message_tokens, pin_message
from registre.context.tokens import TokenCounter
from registre.lifecycle.state import LifecycleState

__all__ = [
    "PROJECTION_FORMAT",
    "STATUSES",
    "Manifest",
    "ManifestRun",
    "Projection",
    "context_tokens",
    "live_pin_tokens",
    "project",
    "run_continues",
    "summarized_run",
]

PROJECTION_FORMAT: Final = "registre.projection/1"
STATUSES: Final = ("verbatim", "pinned", "summarized", "stubbed", "folded")
"""``verbatim``: the entry's own message is in the tail; ``pinned``: the entry made a pin
whose text is shown (in the header, or in the tail for a pin made since the last compaction);
``summarized``: a line of a live summary stands for it; ``stubbed``: a
bulky tool result shown as a one-line stub; ``folded``: not in the context and not
mentioned (folded without a line pointing at it, or an entry that is never shown)."""


@dataclass(frozen=True, slots=True)
class ManifestRun:
    """Entries ``first..last`` share a status.

    ``message`` is the index of the message holding them: for ``verbatim`` and ``stubbed``
    runs, entry ``first + k`` is message ``message + k``; for ``pinned`` (always a single
    entry) the pin's header message; for ``summarized`` the summary's message, whose line
    ``line`` stands for them (``compaction`` is the seq of the compaction that wrote it).
    """

    first: int
    last: int
    status: str
    message: int | None = None
    compaction: int | None = None
    line: int | None = None
    pin: str | None = None

    def to_json(self) -> dict[str, object]:
        """``{"from", "to", "status"}`` plus the fields that are set."""
        data: dict[str, object] = {"from": self.first, "to": self.last, "status": self.status}
        for name in ("message", "compaction", "line", "pin"):
            value = getattr(self, name)
            if value is not None:
                data[name] = value
        return data


@dataclass(frozen=True, slots=True)
class Manifest:
    """Runs partitioning ``0..at`` in order, the stable prefix and the token total."""

    runs: tuple[ManifestRun, ...]
    stable_prefix_messages: int
    stable_prefix_tokens: int
    tokens: int

    def status_of(self, seq: int) -> ManifestRun:
        """The run holding entry ``seq`` (KeyError if ``seq`` is not in ``0..at``)."""
        index = bisect_right([run.first for run in self.runs], seq) - 1
        if index < 0 or self.runs[index].last < seq:
            raise KeyError(seq)
        return self.runs[index]

    def to_json(self) -> dict[str, object]:
        """``{"entries": [runs], "stable_prefix": {"messages", "tokens"}, "tokens"}``."""
        data = self.json_skeleton()
        data["entries"] = [run.to_json() for run in self.runs]
        return data

    def json_skeleton(self) -> dict[str, object]:
        """:meth:`to_json` with ``"entries"`` an empty list (the same keys, in order)."""
        return {
            "entries": [],
            "stable_prefix": {
                "messages": self.stable_prefix_messages,
                "tokens": self.stable_prefix_tokens,
            },
            "tokens": self.tokens,
        }


@dataclass(frozen=True, slots=True)
class Projection:
    """What ``project`` returns: the messages in order (with their token counts) and the
    manifest, with the parameters that produced them. ``block`` is the lifecycle block when
    the projection was asked for one (its form may be ``none``), else ``None``."""

    at: int
    budget: int
    counter: str
    policy: Policy
    messages: tuple[Message, ...]
    message_tokens: tuple[int, ...]
    manifest: Manifest
    block: LifecycleBlock | None = None
    refill_tokens: int = 0
    recalled: RecallSection | None = None

    @property
    def tokens(self) -> int:
        """Total tokens of the messages (<= ``budget``)."""
        return self.manifest.tokens

    @property
    def core_tokens(self) -> int:
        """Tokens of the pins, summaries and tail: the context without the refill and the
        lifecycle block (what compaction plans on)."""
        block = 0 if self.block is None else self.block.tokens
        return self.manifest.tokens - self.refill_tokens - block

    @property
    def compaction_due(self) -> bool:
        """Whether the context passed the policy's compaction mark: time to compact."""
        return self.core_tokens > self.policy.compact_above_tokens

    def to_json(self) -> dict[str, object]:
        """Plain JSON data, ready for RFC 8785: the projection digest is SHA-256 over its
        canonical bytes (``specs/context.md`` section 8). ``"lifecycle_block"`` is there
        only for a projection with the block."""
        data = self.json_skeleton()
        data["messages"] = [message.to_json() for message in self.messages]
        data["manifest"] = self.manifest.to_json()
        return data

    def json_skeleton(self) -> dict[str, object]:
        """:meth:`to_json` with ``"messages"`` and the manifest's ``"entries"`` empty lists
        (the same keys, in order): what a digest made of cached parts starts from."""
        data: dict[str, object] = {
            "format": PROJECTION_FORMAT,
            "at": self.at,
            "budget_tokens": self.budget,
            "token_counter": self.counter,
            "policy": self.policy.to_json(),
            "messages": [],
            "manifest": self.manifest.json_skeleton(),
        }
        if self.block is not None:
            shown = None if self.block.message is None else len(self.messages) - 1
            data["lifecycle_block"] = self.block.to_json(shown)
        if self.recalled is not None:
            last = len(self.messages) - 1
            shown_block = self.block is not None and self.block.message is not None
            data["recalled"] = self.recalled.to_json(last - 1 if shown_block else last)
        return data

    def as_openai_chat(self) -> dict[str, Any]:
        """``{"messages": [...]}`` for OpenAI Chat Completions
        (:func:`~registre.context.provider.openai_chat`)."""
        from registre.context.provider import openai_chat

        return openai_chat(self.messages)

    def as_openai_responses(self) -> dict[str, Any]:
        """``{"input": [...]}`` for OpenAI Responses
        (:func:`~registre.context.provider.openai_responses`)."""
        from registre.context.provider import openai_responses

        return openai_responses(self.messages)

    def as_anthropic(self) -> dict[str, Any]:
        """``{"system": [...], "messages": [...]}`` for Anthropic Messages
        (:func:`~registre.context.provider.anthropic_messages`)."""
        from registre.context.provider import anthropic_messages

        return anthropic_messages(self.messages)


def project(
    state: ContextState,
    budget: int,
    policy: Policy,
    counter: TokenCounter,
    lifecycle: LifecycleState | None = None,
    block_version: int = LIFECYCLE_BLOCK_VERSION,
    *,
    recalled: RecallSection | None = None,
) -> Projection:
    """The projection of ``state`` for a model with ``budget`` tokens (module docstring).

    ``recalled``, a section laid out by :mod:`registre.context.recall`, is shown after the
    tail and before the lifecycle block (whose allowance is reckoned without it: the caller
    sizes the section to what the block leaves); with it the whole must fit ``budget``
    (ProjectionOverBudgetError otherwise).

    ``lifecycle``, the lifecycle state after the same entries ``0..at``, adds the lifecycle
    block as the last message, by the rules of ``block_version``, in the largest form that
    fits min(⌊budget/10⌋, what the other messages leave); it never causes a refusal.

    Deterministic: equal states (the fold of equal entries) and equal arguments give equal
    projections. Raises PinsOverBudgetError or ProjectionOverBudgetError (both
    ContextBudgetError, with ``over_by``) when the context, without the block, exceeds
    ``budget``.
    """
    if budget < 1:
        raise ValueError(f"budget must be at least 1 token, got {budget}")
    view = _view(state)
    counts = view.counts(state, counter)
    view.extend(state)
    total = counts.prefix_total + counts.total
    if total > budget:
        _refuse(state, budget, total, counter)
    refill, start = None, 0
    if policy.refills and state.folded:
        room = refill_room(policy, budget, total, block=lifecycle is not None)
        refill = refill_plan(state, policy, counter, budget)
        start = refill.start(room)
        if start == len(refill.items):
            refill = None
    if refill is None:
        messages = view.prefix_messages + view.messages
        tokens = counts.prefix + counts.values
        runs = view.manifest_runs()
        refilled = 0
    else:
        messages = [*view.prefix_messages, *refill.messages[start:], *view.messages]
        tokens = [*counts.prefix, *refill.tokens[start:], *counts.values]
        runs = _refilled_runs(view, refill, start)
        refilled = sum(refill.tokens[start:])
        total += refilled
    block = None
    if lifecycle is not None:
        allowance = block_allowance(budget, total)
        block = lifecycle_block(
            lifecycle_view(lifecycle), state.at, allowance, counter, block_version
        )
    if recalled is not None:
        messages.append(recalled.message)
        tokens.append(recalled.tokens)
        total += recalled.tokens
    if block is not None and block.message is not None:
        messages.append(block.message)
        tokens.append(block.tokens)
        total += block.tokens
    if recalled is not None and total > budget:
        raise ProjectionOverBudgetError(
            f"the context with its recalled section takes {total} tokens, {total - budget} "
            f"over the budget of {budget}",
            needed=total,
            budget=budget,
        )
    manifest = Manifest(runs, len(view.prefix_messages), counts.prefix_total, total)
    return Projection(
        state.at,
        budget,
        counter.name,
        policy,
        tuple(messages),
        tuple(tokens),
        manifest,
        block,
        refilled,
        recalled,
    )


def context_tokens(state: ContextState, counter: TokenCounter) -> int:
    """Tokens of the context the state describes, whatever the budget (what
    ``tokens_before`` and ``tokens_after`` of a compaction record). O(entries folded since
    the last call with this counter, or since the last compaction)."""
    counts = _view(state).counts(state, counter)
    return counts.prefix_total + counts.total


def live_pin_tokens(state: ContextState, counter: TokenCounter) -> int:
    """Tokens the live pins take as header messages: the floor no compaction can go below."""
    return sum(message_tokens(pin_message(pin), counter) for pin in state.live_pins())


def _refuse(state: ContextState, budget: int, total: int, counter: TokenCounter) -> None:
    pins = live_pin_tokens(state, counter)
    if pins > budget:
        raise PinsOverBudgetError(
            f"the live pins alone take {pins} tokens, {pins - budget} over the budget of "
            f"{budget}; unpin something or raise the budget",
            needed=pins,
            budget=budget,
        )
    raise ProjectionOverBudgetError(
        f"the context takes {total} tokens, {total - budget} over the budget of {budget}",
        needed=total,
        budget=budget,
    )


# --- the manifest ---------------------------------------------------------------------------


_VIEW: Final = "registre.projection/view"


class _Counts:
    """Token counts of one counter: of the prefix messages, and of the shown tail items
    among the first ``items`` items of the tail (``values``, summed in ``total``)."""

    __slots__ = ("items", "prefix", "prefix_total", "total", "values")

    def __init__(self, prefix: list[int]) -> None:
        self.prefix = prefix
        self.prefix_total = sum(prefix)
        self.items = 0
        self.values: list[int] = []
        self.total = 0

    def copy(self) -> _Counts:
        other = _Counts.__new__(_Counts)
        other.prefix, other.prefix_total = self.prefix, self.prefix_total
        other.items, other.values, other.total = self.items, list(self.values), self.total
        return other


class _View:
    """What a projection of a state shows, kept with the state
    (:meth:`ContextState.cache`) and extended as the tail grows: the prefix messages and
    manifest runs (fixed until the next compaction, which drops the view; the runs built
    when first asked for: a compaction's token counts need none), the messages and manifest
    runs of the first ``items`` tail items, and per counter their token counts."""

    __slots__ = (
        "boundary",
        "counters",
        "header_seq",
        "items",
        "messages",
        "pinned",
        "prefix_messages",
        "prefix_source",
        "runs_of_prefix",
        "tail_runs",
    )

    def __init__(self, state: ContextState) -> None:
        self.header_seq = state.header_seq
        self.boundary = state.boundary
        self.prefix_messages = [pin.message for pin in state.header]
        self.prefix_messages += [summary.message for summary in state.summaries]
        self.pinned = {pin.entry_seq: (pin.pin.id, index) for index, pin in enumerate(state.header)}
        self.prefix_source = (len(state.header), tuple(state.summaries))
        self.runs_of_prefix: tuple[ManifestRun, ...] | None = None
        self.items = 0
        self.messages: list[Message] = []
        self.tail_runs: list[ManifestRun] = []
        self.counters: dict[str, _Counts] = {}

    def copy(self) -> _View:
        other = _View.__new__(_View)
        other.header_seq, other.boundary = self.header_seq, self.boundary
        other.prefix_messages, other.pinned = self.prefix_messages, self.pinned
        other.prefix_source, other.runs_of_prefix = self.prefix_source, self.runs_of_prefix
        other.items = self.items
        other.messages, other.tail_runs = list(self.messages), list(self.tail_runs)
        other.counters = {name: counts.copy() for name, counts in self.counters.items()}
        return other

    def fits(self, state: ContextState) -> bool:
        """Whether this view can be extended to ``state`` (a cheap sanity check)."""
        return (
            self.header_seq == state.header_seq
            and self.boundary == state.boundary
            and self.items <= len(state.tail)
        )

    def counts(self, state: ContextState, counter: TokenCounter) -> _Counts:
        """``counter``'s counts, extended to the whole tail."""
        counts = self.counters.get(counter.name)
        if counts is None:
            prefix = [pin.tokens(counter) for pin in state.header]
            prefix += [summary.tokens(counter) for summary in state.summaries]
            counts = self.counters[counter.name] = _Counts(prefix)
        tail = state.tail
        if counts.items < len(tail):
            header_seq, values, total = self.header_seq, counts.values, counts.total
            for item in tail[counts.items :]:
                if item.shown(header_seq) is not None:
                    value = item.tokens(counter, header_seq)
                    values.append(value)
                    total += value
            counts.total, counts.items = total, len(tail)
        return counts

    def extend(self, state: ContextState) -> None:
        """Extend the messages and the tail's manifest runs to the whole tail."""
        tail = state.tail
        if self.items >= len(tail):
            return
        header_seq, pinned, runs, messages = (
            self.header_seq,
            self.pinned,
            self.tail_runs,
            self.messages,
        )
        base = len(self.prefix_messages)
        for item in tail[self.items :]:
            shown = item.shown(header_seq)
            if shown is not None:
                message = base + len(messages)
                messages.append(shown)
                if item.pin_id is not None:
                    _push(runs, ManifestRun(item.seq, item.seq, "pinned", message, pin=item.pin_id))
                else:
                    status = "stubbed" if item.stubbed else "verbatim"
                    _push(runs, ManifestRun(item.seq, item.seq, status, message))
            elif item.seq in pinned:
                pin_id, pin_message_index = pinned[item.seq]
                _push(
                    runs, ManifestRun(item.seq, item.seq, "pinned", pin_message_index, pin=pin_id)
                )
            else:
                _push(runs, ManifestRun(item.seq, item.seq, "folded"))
        self.items = len(tail)

    def prefix_runs(self) -> tuple[ManifestRun, ...]:
        """The manifest's runs of the header pins and live summaries (built once)."""
        if self.runs_of_prefix is None:
            header, summaries = self.prefix_source
            self.runs_of_prefix = _prefix_runs(header, summaries, self.pinned)
        return self.runs_of_prefix

    def manifest_runs(self) -> tuple[ManifestRun, ...]:
        """The manifest's runs: the prefix's, then the tail's (the first may continue the
        prefix's last run, as when pushed one after the other)."""
        runs = list(self.prefix_runs())
        if self.tail_runs:
            _push(runs, self.tail_runs[0])
            runs.extend(self.tail_runs[1:])
        return tuple(runs)


def _refilled_runs(view: _View, refill: RefillPlan, start: int) -> tuple[ManifestRun, ...]:
    """The manifest's runs with ``refill.items[start:]`` shown verbatim after the prefix:
    their entries ``verbatim`` (the others of the prefix runs keep their status), the tail's
    messages moved down by the refill's."""
    base = len(view.prefix_messages)
    items = refill.items[start:]
    shown = {item.seq: base + index for index, item in enumerate(items)}
    first = items[0].seq
    runs: list[ManifestRun] = []
    for run in view.prefix_runs():
        if run.last < first:
            _push(runs, run)
            continue
        if run.first < first:
            _push(runs, replace(run, last=first - 1))
        for seq in range(max(run.first, first), run.last + 1):
            message = shown.get(seq)
            if message is None:
                _push(runs, replace(run, first=seq, last=seq))
            else:
                _push(runs, ManifestRun(seq, seq, "verbatim", message))
    moved = len(items)
    for run in view.tail_runs:
        if run.message is not None and run.message >= base:
            run = replace(run, message=run.message + moved)
        _push(runs, run)
    return tuple(runs)


def _view(state: ContextState) -> _View:
    view = state.cache(_VIEW)
    if not isinstance(view, _View) or not view.fits(state):
        view = _View(state)
        state.set_cache(_VIEW, view)
    return view


def _runs(state: ContextState) -> tuple[ManifestRun, ...]:
    """The manifest's runs of ``state``, built from nothing (what the view keeps)."""
    view = _View(state)
    view.extend(state)
    return view.manifest_runs()


def _prefix_runs(
    header: int, summaries: Sequence[LiveSummary], pinned: dict[int, tuple[str, int]]
) -> tuple[ManifestRun, ...]:
    """The runs of the live ``summaries`` (shown after ``header`` pin messages), the
    ``pinned`` entries (seq -> pin id, message) cut out of them."""
    runs: list[ManifestRun] = []
    pinned_seqs = sorted(pinned)
    message = header
    for summary in summaries:
        for first, last, line in summary.runs:
            low = bisect_left(pinned_seqs, first)
            high = bisect_right(pinned_seqs, last)
            start = first
            for seq in pinned_seqs[low:high]:
                if seq > start:
                    _push(runs, summarized_run(start, seq - 1, summary.seq, line, message))
                pin_id, pin_message_index = pinned[seq]
                _push(runs, ManifestRun(seq, seq, "pinned", pin_message_index, pin=pin_id))
                start = seq + 1
            if start <= last:
                _push(runs, summarized_run(start, last, summary.seq, line, message))
        message += 1
    return tuple(runs)


def summarized_run(
    first: int, last: int, compaction: int, line: int | None, message: int
) -> ManifestRun:
    """The run of entries ``first..last`` of the summary in ``message`` (written by the
    compaction at ``compaction``): ``summarized`` by its line ``line``, ``folded`` if none."""
    if line is None:
        return ManifestRun(first, last, "folded")
    return ManifestRun(first, last, "summarized", message, compaction, line)


def _push(runs: list[ManifestRun], run: ManifestRun) -> None:
    """Append ``run``, merging it into the previous run when they continue each other."""
    if runs and run_continues(runs[-1], run):
        previous = runs[-1]
        runs[-1] = ManifestRun(
            previous.first, run.last, run.status, previous.message, run.compaction, run.line
        )
    else:
        runs.append(run)


def run_continues(previous: ManifestRun, run: ManifestRun) -> bool:
    """Whether ``run`` extends ``previous``, so that the manifest merges them into one run."""
    if previous.last + 1 != run.first or previous.status != run.status:
        return False
    if run.status == "folded":
        return True
    if run.status == "summarized":
        return (previous.compaction, previous.line) == (run.compaction, run.line)
    if run.status in ("verbatim", "stubbed") and previous.message is not None:
        return previous.message + (previous.last - previous.first + 1) == run.message
    return False
