"""The automatic task pin (``specs/context.md`` section 5.1): the thread's system prompt and
first user turn, carried word for word once a compaction would fold them.

A summary keeps a task statement only as well as its allowance lets it, and a long system
prompt ends up as its first sentence. So before the first compaction that folds them, the
controller pins these entries (``context.pin``, kind ``task_parameter``, the entry's whole
text, taken from that entry), and the header carries them verbatim from then on. The pin is
an ordinary signed lifecycle entry: verifiers replay it like any other, and the fold, the
projection and their digests are unchanged. :func:`task_pins_due` says which entries to pin;
it is pure, and a caller may opt out (``Thread.compact(task_pin=False)``,
``registre compact --no-task-pin``).

An entry is pinned only once: never again after a pin of its whole text (a caller who
unpinned it has said it is no longer needed), and only when its pin takes at most
:data:`TASK_PIN_SHARE_PERMILLE` per mille of the budget -- for the system prompt of a
version 2 policy, its ``system_share_permille`` (default half the budget: a policy the agent
must follow stays whole) -- (a bigger one stays in the summary's ``task:`` line, which
quotes as much of it as fits).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Final

from registre.context.compaction import CompactionPlan
from registre.context.fold import ContextState
from registre.context.model import ContextEntry, Message
from registre.context.render import message_tokens
from registre.context.tokens import TokenCounter

__all__ = [
    "TASK_PIN_ACTOR",
    "TASK_PIN_KIND",
    "TASK_PIN_SCAN",
    "TASK_PIN_SHARE_PERMILLE",
    "TaskScan",
    "stale_task_pins",
    "task_pins_due",
]

TASK_PIN_ACTOR: Final = "registre"
"""The actor of an automatic task pin's ``context.pin`` (and of its unpin)."""

TASK_PIN_KIND: Final = "task_parameter"
"""The pin kind of an automatic task pin (the header shows task parameters first)."""

TASK_PIN_SHARE_PERMILLE: Final = 125
"""An automatic task pin takes at most an eighth of the budget."""

TASK_PIN_SCAN: Final = 64
"""The first task's turns are looked for among the thread's first 64 entries."""


class TaskScan:
    """The task turns of a thread's *current task*, read entry by entry (:meth:`feed`, in
    seq order; only ``turn`` entries with a string ``text`` matter).

    A thread runs one task, or tasks one after another: a new task starts at a ``turn`` of
    role ``system`` whose next turn is of role ``user`` (a session restarted with its system
    prompt, as an agent serving one customer after another does). Its *task turns* are that
    system turn and that user turn; before any such restart, the thread's first system turn
    and its first user turn among entries ``0 .. TASK_PIN_SCAN - 1``. :attr:`turns` gives
    them in seq order; the result never depends on how the entries were split between
    calls to :meth:`feed`."""

    __slots__ = ("_pending", "_system", "_user")

    def __init__(self) -> None:
        self._system: ContextEntry | None = None
        self._user: ContextEntry | None = None
        self._pending: ContextEntry | None = None  # a system turn not yet followed by a turn

    def feed(self, entry: ContextEntry) -> None:
        """Read the next entry (seq order)."""
        role, text = entry.body.get("role"), entry.body.get("text")
        if entry.kind != "turn" or not isinstance(text, str):
            return
        pending, self._pending = self._pending, None
        if role == "system":
            self._pending = entry
            if self._system is None and entry.seq < TASK_PIN_SCAN:
                self._system = entry  # the first task's system turn
        elif role == "user":
            if pending is not None and pending is not self._system:
                self._system, self._user = pending, entry  # a new task starts
            elif self._user is None and entry.seq < TASK_PIN_SCAN:
                self._user = entry

    @property
    def turns(self) -> list[ContextEntry]:
        """The current task's system and user turns (those found), in seq order."""
        found = [entry for entry in (self._system, self._user) if entry is not None]
        return sorted(found, key=lambda entry: entry.seq)


def stale_task_pins(
    live: Iterable[tuple[str, int, str]], turns: Sequence[ContextEntry]
) -> list[str]:
    """The ids of the automatic task pins ``live`` (``(pin id, source seq, text)`` of each
    live ``task_parameter`` pin the writer made itself) that belong to an earlier task: made
    from an entry before the current task's first task turn (``turns``, from
    :class:`TaskScan`), with a text no current task turn has. Empty while the thread runs
    its first task."""
    if not turns:
        return []
    start = turns[0].seq
    current = {entry.body.get("text") for entry in turns}
    return [pin_id for pin_id, seq, text in live if seq < start and text not in current]


def task_pins_due(
    entries: Iterable[ContextEntry],
    state: ContextState,
    plan: CompactionPlan | None,
    counter: TokenCounter,
) -> list[tuple[int, str]]:
    """``(seq, text)`` of each task entry to pin before ``plan`` is recorded: the first
    ``turn`` of role ``system`` and the first of role ``user`` among ``entries`` (the
    thread's first entries, in order), that the plan folds (or an earlier compaction
    folded), whose whole text was never pinned before, whose text is not blank and whose pin
    message fits :data:`TASK_PIN_SHARE_PERMILLE` of the plan's budget (the system turn: the
    policy's ``system_share_permille`` for a version 2 policy). Empty when nothing is
    planned to fold."""
    if plan is None or plan.folded is None:
        return []
    folded_to = plan.folded[1]
    policy = plan.policy
    limit = policy.budget_tokens * TASK_PIN_SHARE_PERMILLE // 1000
    system_limit = limit
    if policy.version == 2:
        system_limit = policy.budget_tokens * policy.system_share_permille // 1000
    made = state.pinned_texts()
    carried = {pin.text for pin in state.live_pins()}  # the same text is never pinned twice
    found: dict[str, tuple[int, str]] = {}
    for entry in entries:
        if entry.seq > folded_to or len(found) == 2:
            break
        role, text = entry.body.get("role"), entry.body.get("text")
        if entry.kind != "turn" or role not in ("system", "user") or not isinstance(text, str):
            continue
        if role in found:
            continue
        found[str(role)] = (entry.seq, text)
    due = []
    for seq, text in sorted(found.values()):
        if (seq, text) in made or text in carried or not text.strip():
            continue
        shown = Message("system", f"[pinned {TASK_PIN_KIND} pin-000] {text}")
        if message_tokens(shown, counter) <= (
            system_limit if found.get("system") == (seq, text) else limit
        ):
            due.append((seq, text))
    return due
