"""SWE-agent trajectories (``swe-agent``): a ``.traj`` JSON document.

SWE-agent writes ``{"history": [...], "trajectory": [...], "info": {...}, ...}``;
mini-swe-agent ``{"messages": [...], "info": {...}, "trajectory_format": ...}``. The
document without those lists is an ``imported`` ``run`` entry (info, model stats, the
submission kept verbatim); each ``history`` / ``messages`` item is read as an OpenAI chat
message (``tool_call_ids``, ``agent``, ``message_type``, ``thought``, ``action`` and
mini-swe-agent's ``extra`` kept; its final ``exit`` record is an ``imported`` ``message``);
each ``trajectory`` step (action, observation, response, thought, state) is an ``imported``
``trajectory_step`` after them.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from registre.importers.core import At, Conversation, ImportedEntry, describe
from registre.importers.openai_chat import chat_message

__all__ = ["parse_swe_agent_values", "sniff"]


def parse_swe_agent_values(
    values: Iterator[tuple[Any, At]], conversation: Conversation
) -> Iterator[ImportedEntry]:
    """Entries of a SWE-agent or mini-swe-agent trajectory document."""
    for document, at in values:
        if not isinstance(document, dict):
            at.fail(f"expected a trajectory document (an object), got {describe(document)}")
        key = "history" if isinstance(document.get("history"), list) else "messages"
        messages = document.get(key, [])
        steps = document.get("trajectory", [])
        if not isinstance(messages, list) or not isinstance(steps, list):
            at.fail("expected history/messages and trajectory lists")
        header = {name: item for name, item in document.items() if name not in (key, "trajectory")}
        run = conversation.message(header, at)
        run.imported("run")
        yield from run.end()
        for index, item in enumerate(messages):
            yield from chat_message(conversation, item, at.key(key).index(index)).end()
        for index, step in enumerate(steps):
            message = conversation.message(step, at.key("trajectory").index(index))
            thought = step.get("thought") if isinstance(step, dict) else None
            message.imported(
                "trajectory_step",
                role="assistant",
                text=thought if isinstance(thought, str) else None,
                fill=("thought",),
            )
            yield from message.end()


def sniff(value: dict[str, Any]) -> str | None:
    """Why ``value``, a file's first object, is a SWE-agent (or mini-swe-agent) trajectory;
    None if it is not."""
    if (
        "history" in value
        or "trajectory" in value
        or ("messages" in value and ("trajectory_format" in value or "info" in value))
    ):
        return "a trajectory document (history/trajectory or messages with info)"
    return None
