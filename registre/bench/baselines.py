"""The baselines measured beside registre in the same run.

* :class:`TruncationBaseline` -- what an agent loop without registre does when the
  conversation outgrows the window: render the whole thread verbatim, as registre renders its
  tail (``specs/context.md`` section 3, pins and unpins included as the messages they are),
  and silently keep the most recent messages that fit ``budget`` tokens. Nothing says what
  was cut; :meth:`TruncationBaseline.lost` says it here. Its transcript (messages, their
  tokens by the same counter) is what the two other context baselines are built from:
* :class:`ObservationMaskingBaseline` -- every tool output older than the
  :data:`MASK_AFTER_TURNS` most recent turns replaced by the placeholder
  :data:`MASK_PLACEHOLDER`, everything else verbatim, then cut from the start to the budget
  if still over (a strong simple baseline in published studies of coding agents);
* :class:`RollingSummaryBaseline` -- a single rolling summary, deterministic and without a
  model: past the policy's high-water mark, everything older than the policy's most recent
  turns is replaced by one summary line made of the first sentence of each folded assistant
  turn (oldest sentences dropped first beyond the policy's summary share), then cut from the
  start of the verbatim part to the budget if still over.

Each gives, at a model call, a :class:`~registre.bench.quality.ContextView` (the messages it
would send, their tokens, the stable prefix it declares, its summary lines) for the quality
tallies of :mod:`registre.bench.quality`.
* :func:`naive_projection` -- registre's own projection computed the naive way: read every
  entry of the thread back from the ledger, by the same reader the real projection uses for
  its tail (:meth:`registre.ledger.Thread.context_entries`: parsed, signatures not
  re-checked), and fold the whole history again (``ContextState.replay``) for each call.
  Its result must equal the real projection (the harness compares them).
"""

from __future__ import annotations

import re
from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from registre.attest.entries import Entry
from registre.bench.quality import ContextView
from registre.context import (
    ContextEntry,
    ContextState,
    Message,
    Policy,
    Projection,
    project,
)
from registre.context.render import (
    message_tokens,
    pin_message,
    tail_message,
    unpin_message,
)
from registre.context.tokens import TokenCounter
from registre.lifecycle.model import PinnedItem

if TYPE_CHECKING:
    from registre.ledger import Ledger

__all__ = [
    "MASK_AFTER_TURNS",
    "MASK_PLACEHOLDER",
    "ObservationMaskingBaseline",
    "RollingSummaryBaseline",
    "TruncationBaseline",
    "TruncationWindow",
    "first_sentence",
    "naive_projection",
    "transcript_message",
]

MASK_PLACEHOLDER: Final = "[output omitted]"
"""What observation masking shows in place of an old tool output."""
MASK_AFTER_TURNS: Final = 10
"""Tool outputs among this many most recent turns stay verbatim under observation masking."""
_TURN_KINDS: Final = frozenset(("turn", "tool.call"))  # what begins a turn, as registre counts
_SENTENCE_END: Final = re.compile(r"(?<=[.!?])\s")


def transcript_message(kind: str, body: Mapping[str, Any]) -> Message | None:
    """How an entry reads in a plain transcript: its verbatim tail message; an accepted pin
    or unpin as the message registre shows for it; nothing for refused pins and unpins,
    compactions and model calls (they are not conversation)."""
    if kind in ("context.pin", "context.unpin"):
        outcome = body["outcome"]
        if not outcome.get("accepted"):
            return None
        request = body["request"]
        if kind == "context.unpin":
            return unpin_message(str(request["id"]), str(request["reason"]))
        pin = PinnedItem(
            id=str(outcome["id"]),
            kind=request["kind"],
            text=str(request["text"]),
            seq=int(request["seq"]),
        )
        return pin_message(pin)
    return tail_message(kind, body)


@dataclass(frozen=True)
class TruncationWindow:
    """The messages kept for a budget: transcript positions ``first..`` (``first_seq`` is the
    entry of the oldest kept message; the history's length if none fits) and their tokens."""

    first: int
    first_seq: int
    tokens: int


class TruncationBaseline:
    """The whole thread as a transcript, cut to the last ``budget`` tokens on demand. Feed it
    every entry in seq order with :meth:`add`; O(1) amortised per entry, O(log n) per window.
    ``keep=False`` keeps no message, only :attr:`size` and :attr:`history_tokens` (a lean
    run: O(1) memory; the windows and views are then empty)."""

    def __init__(self, counter: TokenCounter, *, keep: bool = True) -> None:
        self.counter = counter
        self.keep = keep
        self.seqs: list[int] = []
        self.kinds: list[str] = []
        self.messages: list[Message] = []
        self.tokens: list[int] = []
        self.turn_starts: list[int] = []  # indices of the messages that begin a turn
        self._cumulative: list[int] = [0]  # tokens of messages[:i]
        self.size = 0

    @property
    def history_tokens(self) -> int:
        """Tokens of the whole transcript: what replaying the thread verbatim would send."""
        return self._cumulative[-1]

    def add(self, entry: Entry | ContextEntry) -> None:
        """Append the next entry (its seq must be the next one)."""
        if entry.seq != self.size:
            raise ValueError(f"expected entry {self.size}, got {entry.seq}")
        self.size += 1
        message = transcript_message(entry.kind, entry.body)
        if message is None:
            return
        tokens = message_tokens(message, self.counter)
        if not self.keep:  # only the history's length in tokens (a lean run)
            self._cumulative[-1] += tokens
            return
        if entry.kind in _TURN_KINDS:
            self.turn_starts.append(len(self.messages))
        self.seqs.append(entry.seq)
        self.kinds.append(entry.kind)
        self.messages.append(message)
        self.tokens.append(tokens)
        self._cumulative.append(self._cumulative[-1] + tokens)

    def cumulative(self, index: int) -> int:
        """Tokens of ``messages[:index]``."""
        return self._cumulative[index]

    def first_fitting(self, start: int, budget: int) -> int:
        """The smallest ``first >= start`` such that ``messages[first:]`` fit ``budget``."""
        total = self._cumulative[-1]
        return max(start, bisect_left(self._cumulative, total - budget))

    def window(self, budget: int) -> TruncationWindow:
        """The most recent messages taking at most ``budget`` tokens together."""
        total = self._cumulative[-1]
        first = bisect_left(self._cumulative, total - budget)
        first_seq = self.seqs[first] if first < len(self.seqs) else self.size
        return TruncationWindow(first, first_seq, total - self._cumulative[first])

    def kept(self, budget: int) -> Sequence[Message]:
        """The messages the window keeps, oldest first."""
        return self.messages[self.window(budget).first :]

    def lost(self, texts: Iterable[str], budget: int) -> list[str]:
        """Those of ``texts`` that appear in no kept message: what the cut silently lost."""
        kept = self.kept(budget)
        return [text for text in texts if not any(text in m.content for m in kept)]

    def view(self, budget: int) -> ContextView:
        """The context silent truncation sends: the window, no declared stable prefix."""
        first = self.window(budget).first
        return ContextView.of(self.messages[first:], self.tokens[first:], None)


class ObservationMaskingBaseline:
    """Observation masking over ``transcript`` (module docstring): tool outputs older than
    the ``keep_turns`` most recent turns read :data:`MASK_PLACEHOLDER`. The masked part only
    grows, so each output is masked and counted once; O(log n) per window, O(window) per
    view."""

    def __init__(self, transcript: TruncationBaseline, keep_turns: int = MASK_AFTER_TURNS):
        self.transcript = transcript
        self.keep_turns = keep_turns
        self._shown: list[Message] = []  # messages[:boundary] as shown (outputs masked)
        self._shown_tokens: list[int] = []
        self._cumulative: list[int] = [0]

    @property
    def boundary(self) -> int:
        """Transcript messages before this index have their tool outputs masked."""
        starts = self.transcript.turn_starts
        return starts[-self.keep_turns] if len(starts) >= self.keep_turns else 0

    def _advance(self) -> int:
        transcript = self.transcript
        boundary = self.boundary
        for index in range(len(self._shown), boundary):
            message = transcript.messages[index]
            tokens = transcript.tokens[index]
            if transcript.kinds[index] == "tool.result":
                message = Message("tool", MASK_PLACEHOLDER, message.name, message.call_id)
                tokens = message_tokens(message, transcript.counter)
            self._shown.append(message)
            self._shown_tokens.append(tokens)
            self._cumulative.append(self._cumulative[-1] + tokens)
        return boundary

    def view(self, budget: int) -> ContextView:
        """The masked transcript, cut from the start to ``budget``; no declared prefix."""
        transcript = self.transcript
        boundary = self._advance()
        recent = transcript.history_tokens - transcript.cumulative(boundary)
        if recent > budget:
            first = transcript.first_fitting(boundary, budget)
            return ContextView.of(transcript.messages[first:], transcript.tokens[first:], None)
        masked = self._cumulative[boundary]
        first = bisect_left(self._cumulative, masked + recent - budget)
        return ContextView.of(
            [*self._shown[first:boundary], *transcript.messages[boundary:]],
            [*self._shown_tokens[first:boundary], *transcript.tokens[boundary:]],
            None,
        )


def first_sentence(text: str) -> str:
    """The first sentence of ``text``'s first non-blank line (up to ``.``, ``!`` or ``?``
    followed by a space, or the end of the line)."""
    line = next((part.strip() for part in text.split("\n") if part.strip()), "")
    return _SENTENCE_END.split(line, maxsplit=1)[0]


class RollingSummaryBaseline:
    """A single rolling summary over ``transcript`` at the policy's marks (module
    docstring). :meth:`view` is called at every model call, in order: that is when it
    compacts. ``compactions`` lists ``(tokens before, tokens after)``."""

    def __init__(self, transcript: TruncationBaseline, policy: Policy) -> None:
        self.transcript = transcript
        self.policy = policy
        self.tail = 0  # transcript messages before this index are folded
        self.sentences: list[str] = []
        self.summary: Message | None = None
        self.summary_tokens = 0
        self.folded_to = -1  # the last seq the summary stands for
        self.compactions: list[tuple[int, int]] = []

    def _tokens(self) -> int:
        transcript = self.transcript
        return self.summary_tokens + transcript.history_tokens - transcript.cumulative(self.tail)

    def _compact(self) -> None:
        transcript = self.transcript
        keep = self.policy.keep_recent_turns
        starts = transcript.turn_starts
        boundary = starts[-keep] if keep and len(starts) >= keep else self.tail
        if keep == 0:
            boundary = len(transcript.messages)
        if boundary <= self.tail:
            return
        before = self._tokens()
        for index in range(self.tail, boundary):
            message = transcript.messages[index]
            if transcript.kinds[index] == "turn" and message.role == "assistant":
                sentence = first_sentence(message.content)
                if sentence:
                    self.sentences.append(sentence)
        self.tail = boundary
        self.folded_to = transcript.seqs[boundary] - 1
        share = self.policy.summary_share_tokens
        while True:
            message = Message(
                "system",
                f"[summary of ledger entries 0-{self.folded_to}] " + " ".join(self.sentences),
            )
            tokens = message_tokens(message, transcript.counter)
            if tokens <= share or not self.sentences:
                break
            self.sentences.pop(0)
        self.summary, self.summary_tokens = message, tokens
        self.compactions.append((before, self._tokens()))

    def view(self, budget: int) -> ContextView:
        """The context at this call: compact first if past the high-water mark; the summary
        (the declared stable prefix) and the verbatim part, cut from its start to fit."""
        if self._tokens() > self.policy.high_water_tokens:
            self._compact()
        transcript = self.transcript
        first = transcript.first_fitting(self.tail, budget - self.summary_tokens)
        messages, tokens = transcript.messages[first:], transcript.tokens[first:]
        if self.summary is None:
            return ContextView.of(messages, tokens, 0)
        line = (" ".join(self.sentences), ((0, self.folded_to),))
        return ContextView.of([self.summary, *messages], [self.summary_tokens, *tokens], 1, (line,))


def naive_projection(
    ledger: Ledger, thread_id: str, at: int, budget: int, policy: Policy, counter: TokenCounter
) -> Projection:
    """The projection of entries ``0..at`` of ``thread_id``, re-read from the ledger and
    re-folded from the first entry: O(at) reads and fold steps per call."""
    entries = ledger.thread(thread_id).context_entries(0, at + 1)
    return project(ContextState.replay(entries), budget, policy, counter)
