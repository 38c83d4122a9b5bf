"""The refill: verbatim entries a compaction folded, shown again while the budget has room
(``specs/context.md`` section 4.2).

After a compaction the context drops to the low-water mark; left there, a model is sent a
half-empty window while the turns it just lost are one summary line each. A version 2
policy (:attr:`~registre.context.policy.Policy.refills`) shows, between the stable prefix
and the tail, the most recent folded entries again, whole, as long as the context stays
within the *refill room*: the budget less the output reserve, the recall share and, when the
projection ends with the lifecycle block, the block's share.

The refill is cut in **blocks**, fixed at the compaction: walking back from the boundary,
a block ends at the first *safe start* (an entry that is not a tool result, with no tool
result from it on answering a call before it) where it holds at least a fifth of the window
(:data:`REFILL_BLOCK_PERMILLE`); the oldest entries form a last, smaller block from the
oldest safe start. A projection shows the largest number of whole blocks, newest first,
that fit the room. So between compactions the refill changes only when the tail has grown
by a block: a provider's prompt cache stays valid past the stable prefix and the refill on
every other call, and the context stays within a block of the room.

Which entries: those of :attr:`~registre.context.fold.ContextState.folded` (the last
:data:`~registre.context.fold.REFILL_WINDOW` entries before the boundary) that show a
message and are neither a pin, an unpin, nor the entry of a header pin carrying its text; a
tool result above ``bulky_tool_output_tokens`` is shown as its stub. Pairing is decided
among these entries alone, so a state restored from a snapshot refills exactly as the
state that folded the entries did.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final

from registre.context.fold import ContextState, StateCache, TailItem
from registre.context.lifecycle_block import BLOCK_SHARE_PERMILLE
from registre.context.model import Message
from registre.context.policy import Policy
from registre.context.render import message_tokens, stub_message
from registre.context.tokens import TokenCounter

__all__ = ["REFILL_BLOCK_PERMILLE", "RefillPlan", "refill_plan", "refill_room"]

REFILL_BLOCK_PERMILLE: Final = 200
"""A refill block holds at least this share of the window (budget less output reserve)
less the recall share."""


@dataclass(frozen=True, slots=True)
class RefillPlan:
    """The refill candidates of one state for one counter and block size: their messages
    and tokens in seq order, and ``blocks``: for each number of whole blocks shown, newest
    first, ``(index of its first item, tokens from there to the end)``."""

    items: tuple[TailItem, ...]
    messages: tuple[Message, ...]
    tokens: tuple[int, ...]
    blocks: tuple[tuple[int, int], ...]

    def copy(self) -> StateCache:
        """Itself: the plan is immutable."""
        return self

    def start(self, room: int) -> int:
        """The index of the first item shown for ``room`` tokens (``len(items)``: none)."""
        start = len(self.items)
        for index, tokens in self.blocks:
            if tokens > room:
                break
            start = index
        return start


def refill_room(policy: Policy, budget: int, core: int, *, block: bool) -> int:
    """The tokens a refill may take: the window for ``budget`` (less the recall share and,
    with the lifecycle ``block``, its share) minus the ``core`` context (pins, summaries,
    tail). 0 for a version 1 policy."""
    if not policy.refills:
        return 0
    room = policy.window_tokens(budget) - policy.recall_tokens(budget) - core
    if block:
        room -= budget * BLOCK_SHARE_PERMILLE // 1000
    return max(0, room)


def refill_plan(
    state: ContextState, policy: Policy, counter: TokenCounter, budget: int
) -> RefillPlan:
    """The :class:`RefillPlan` of ``state`` (cached with the state until its next
    compaction). O(folded entries) the first time."""
    room = policy.window_tokens(budget) - policy.recall_tokens(budget)
    step = max(1, room * REFILL_BLOCK_PERMILLE // 1000)
    name = f"registre.refill/{counter.name}/{step}/{policy.bulky_tool_output_tokens}"
    cached = state.cache(name)
    if isinstance(cached, RefillPlan):
        return cached
    plan = _plan(state, policy, counter, step)
    state.set_cache(name, plan)
    return plan


def _plan(state: ContextState, policy: Policy, counter: TokenCounter, step: int) -> RefillPlan:
    pinned = {(pin.pin.seq, pin.pin.text) for pin in state.header}
    items = tuple(
        item
        for item in state.folded
        if item.message is not None and not item.control and (item.seq, item.text) not in pinned
    )
    messages: list[Message] = []
    tokens: list[int] = []
    for item in items:
        assert item.message is not None
        message, count = item.message, item.verbatim_tokens(counter)
        if item.kind == "tool.result" and count > policy.bulky_tool_output_tokens:
            message = stub_message(item.seq, item.body)
            count = message_tokens(message, counter)
        messages.append(message)
        tokens.append(count)
    safe = _safe_starts(items)
    blocks: list[tuple[int, int]] = []
    total = since = 0
    oldest_safe = None
    for index in range(len(items) - 1, -1, -1):
        total += tokens[index]
        since += tokens[index]
        if safe[index]:
            oldest_safe = index
            if since >= step:
                blocks.append((index, total))
                since = 0
    if oldest_safe is not None and (not blocks or blocks[-1][0] != oldest_safe):
        blocks.append((oldest_safe, sum(tokens[oldest_safe:])))
    return RefillPlan(items, tuple(messages), tuple(tokens), tuple(blocks))


def _safe_starts(items: Sequence[TailItem]) -> list[bool]:
    """``safe[i]``: showing ``items[i:]`` shows no tool result without its call (pairs
    found among ``items`` by ``call_ref``, else ``call_id``)."""
    count = len(items)
    unsafe = [0] * (count + 1)
    open_calls: dict[str, int] = {}
    for index, item in enumerate(items):
        key = _key(item)
        if item.kind == "tool.call" and key is not None:
            open_calls.setdefault(key, index)
        elif item.kind == "tool.result":
            call = open_calls.pop(key, -1) if key is not None else -1
            unsafe[call + 1] += 1  # starts in call+1 .. index lose the call
            unsafe[index + 1] -= 1
    safe = []
    running = 0
    for index, item in enumerate(items):
        running += unsafe[index]
        safe.append(running == 0 and item.kind != "tool.result")
    return safe


def _key(item: TailItem) -> str | None:
    ref = item.body.get("call_ref")
    if isinstance(ref, str):
        return ref
    call_id = item.body.get("call_id")
    return call_id if isinstance(call_id, str) else None
