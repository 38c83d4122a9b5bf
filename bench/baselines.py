"""The baselines measured beside registre in the same run.

* :class:`TruncationBaseline` -- what an agent loop without registre does when the
  conversation outgrows the window: render the whole thread verbatim, as registre renders its
  tail (``specs/context.md`` section 3, pins and unpins included as the messages they are),
  and silently keep the most recent messages that fit ``budget`` tokens. Nothing says what
  was cut; :meth:`TruncationBaseline.lost` says it here.
* :func:`naive_projection` -- registre's own projection computed the naive way: read every
  entry of the thread back from the ledger, by the same reader the real projection uses for
  its tail (:meth:`registre.ledger.Thread.context_entries`: parsed, signatures not
  re-checked), and fold the whole history again (``ContextState.replay``) for each call.
  Its result must equal the real projection (the harness compares them).
"""

from __future__ import annotations

from bisect import bisect_left
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from registre.attest.entry import Entry
from registre.lifecycle.context import (
    ContextEntry,
    ContextState,
    Message,
    Policy,
    Projection,
    project,
)
from registre.lifecycle.context.render import (
    message_tokens,
    pin_message,
    tail_message,
    unpin_message,
)
from registre.lifecycle.context.tokens import TokenCounter
from registre.lifecycle.model import PinnedItem

if TYPE_CHECKING:
    from registre.ledger import Ledger

__all__ = ["TruncationBaseline", "TruncationWindow", "naive_projection", "transcript_message"]


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
    every entry in seq order with :meth:`add`; O(1) amortised per entry, O(log n) per window."""

    def __init__(self, counter: TokenCounter) -> None:
        self.counter = counter
        self.seqs: list[int] = []
        self.messages: list[Message] = []
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
        self.seqs.append(entry.seq)
        self.messages.append(message)
        self._cumulative.append(self._cumulative[-1] + message_tokens(message, self.counter))

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


def naive_projection(
    ledger: Ledger, thread_id: str, at: int, budget: int, policy: Policy, counter: TokenCounter
) -> Projection:
    """The projection of entries ``0..at`` of ``thread_id``, re-read from the ledger and
    re-folded from the first entry: O(at) reads and fold steps per call."""
    entries = ledger.thread(thread_id).context_entries(0, at + 1)
    return project(ContextState.replay(entries), budget, policy, counter)
