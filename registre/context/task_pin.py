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

from collections.abc import Iterable
from typing import Final

from registre.context.compaction import CompactionPlan
from registre.context.fold import ContextState
from registre.context.model import ContextEntry, Message
from registre.context.render import message_tokens
from registre.context.tokens import TokenCounter

__all__ = ["TASK_PIN_KIND", "TASK_PIN_SCAN", "TASK_PIN_SHARE_PERMILLE", "task_pins_due"]

TASK_PIN_KIND: Final = "task_parameter"
"""The pin kind of an automatic task pin (the header shows task parameters first)."""

TASK_PIN_SHARE_PERMILLE: Final = 125
"""An automatic task pin takes at most an eighth of the budget."""

TASK_PIN_SCAN: Final = 64
"""The task entries are looked for among the thread's first 64 entries."""


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
        if (seq, text) in made or not text.strip():
            continue
        shown = Message("system", f"[pinned {TASK_PIN_KIND} pin-000] {text}")
        if message_tokens(shown, counter) <= (
            system_limit if found.get("system") == (seq, text) else limit
        ):
            due.append((seq, text))
    return due
