"""The tail of the working context: :class:`TailItem`, one entry from the fold boundary on,
and the rules over the tail that compaction planning and verification share.

A tail item holds how its entry reads when shown, its tool call/result pairing, whether it
begins a turn, the pin it made, and the stand-ins (stub, elision) a compaction gave it; it
caches its token counts per counter. The fold
(:class:`~registre.context.fold.ContextState`) never changes an item once it is in
a tail: it replaces it by a changed :meth:`TailItem.clone`, so states forked by ``copy`` can
share their items.

:func:`protected_start` and :func:`safe_cuts` say where a compaction may cut the tail: not
into the most recent turns (``keep_recent_turns``), not between a tool call and its result.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from registre.context.model import Message
from registre.context.render import message_tokens
from registre.context.tokens import TokenCounter

__all__ = ["TailItem", "protected_start", "safe_cuts"]


@dataclass(slots=True, eq=False)
class TailItem:
    """An entry of the tail. ``message`` is how it reads when shown (``None``: never shown);
    ``control`` marks a pin or unpin, shown only when it comes after the header snapshot;
    ``partner`` is the seq of the paired tool call or result; ``begins_turn`` marks a
    ``turn`` or ``tool.call`` entry (``specs/context.md`` section 5); ``pin_id`` is the pin
    an accepted ``context.pin`` made; ``stub`` and ``elision`` are the stand-ins a
    compaction gave a bulky tool result (an elision is shown in preference to a stub: a
    restored snapshot lists elided results among its stubs, and a compaction that stubs an
    elided result drops its elision)."""

    seq: int
    kind: str
    actor: str
    body: Mapping[str, object]
    text: str
    message: Message | None
    control: bool = False
    begins_turn: bool = False
    call_id: str | None = None
    partner: int | None = None
    stub: Message | None = None
    pin_id: str | None = None
    elision: Message | None = None
    _tokens: dict[str, int] = field(default_factory=dict)

    @property
    def stubbed(self) -> bool:
        """Whether a compaction replaced this tool result by a stand-in: its stub, or its
        head-and-tail elision."""
        return self.stub is not None or self.elision is not None

    @property
    def elided(self) -> bool:
        """Whether this tool result is shown head and tail only."""
        return self.elision is not None

    @property
    def stub_only(self) -> bool:
        """Whether this tool result is shown as its one-line stub (no elision)."""
        return self.stub is not None and self.elision is None

    def shown(self, header_seq: int) -> Message | None:
        """The message this entry contributes to the tail now, if any."""
        if self.elision is not None:
            return self.elision
        if self.stub is not None:
            return self.stub
        if self.control and self.seq < header_seq:
            return None
        return self.message

    def tokens(self, counter: TokenCounter, header_seq: int) -> int:
        """Tokens of :meth:`shown` (0 when nothing is shown), cached per counter name."""
        shown = self.shown(header_seq)
        if shown is None:
            return 0
        if shown is self.message:
            key = counter.name
        elif shown is self.elision:
            key = f"elided:{counter.name}"
        else:
            key = f"stub:{counter.name}"
        cached = self._tokens.get(key)
        if cached is None:
            cached = self._tokens[key] = message_tokens(shown, counter)
        return cached

    def elide(self, elision: Message) -> None:
        """Show this tool result as ``elision`` from now on (replacing any earlier one)."""
        self.elision = elision
        for key in [key for key in self._tokens if key.startswith("elided:")]:
            del self._tokens[key]

    def verbatim_tokens(self, counter: TokenCounter) -> int:
        """Tokens of the unstubbed message (0 if it has none), cached per counter name."""
        if self.message is None:
            return 0
        cached = self._tokens.get(counter.name)
        if cached is None:
            cached = self._tokens[counter.name] = message_tokens(self.message, counter)
        return cached

    def clone(self) -> TailItem:
        """An independent copy (the body and messages are immutable and shared)."""
        return TailItem(
            self.seq,
            self.kind,
            self.actor,
            self.body,
            self.text,
            self.message,
            self.control,
            self.begins_turn,
            self.call_id,
            self.partner,
            self.stub,
            self.pin_id,
            self.elision,
            dict(self._tokens),
        )


# --- the tail's rules (shared by planning and verification) ---------------------------------


def protected_start(tail: Sequence[TailItem], keep_recent_turns: int) -> int:
    """The index of the first tail item of the ``keep_recent_turns`` most recent turns: the
    K-th last item that begins a turn; ``len(tail)`` when K is 0; 0 when the tail has fewer
    than K turn starts (then the whole tail is kept). O(tail)."""
    if keep_recent_turns == 0:
        return len(tail)
    seen = 0
    for index in range(len(tail) - 1, -1, -1):
        if tail[index].begins_turn:
            seen += 1
            if seen == keep_recent_turns:
                return index
    return 0


def safe_cuts(tail: Sequence[TailItem]) -> list[bool]:
    """``cuts[k]`` is whether folding ``tail[0..k]`` keeps every tool call with its result:
    no call in it is answered after ``k`` and no call in it is unanswered. O(tail)."""
    cuts = []
    pending = 0
    unanswered = 0
    for item in tail:
        if item.kind == "tool.call" and item.call_id is not None:
            if item.partner is None:
                unanswered += 1
            else:
                pending += 1
        elif item.kind == "tool.result" and item.partner is not None:
            pending -= 1
        cuts.append(pending == 0 and unanswered == 0)
    return cuts
