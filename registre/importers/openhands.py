"""OpenHands event streams (``openhands``): a JSON array or JSONL of events.

Each event is one source message, kept verbatim but for the leaves its entry carries:

* ``action: "message"`` -> a ``turn`` (``source`` ``user`` -> user, ``agent`` -> assistant)
  from ``args.content``; ``action: "system"`` -> a ``system`` turn;
* any other action with ``tool_call_metadata`` -> ``tool.call`` (``tool_call_id``,
  ``function_name``, the action's ``args`` as arguments); an observation with
  ``tool_call_metadata`` -> ``tool.result`` (``content``; ``observation: "error"`` is an
  error result);
* every other event -> ``imported`` ``action:NAME`` / ``observation:NAME``.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from registre.importers.core import At, Conversation, ImportedEntry

__all__ = ["parse_openhands_values", "sniff"]

_ROLES = {"user": "user", "agent": "assistant", "environment": "system"}


def parse_openhands_values(
    values: Iterator[tuple[Any, At]], conversation: Conversation
) -> Iterator[ImportedEntry]:
    """Entries of OpenHands events (a list given as one document is read item by item)."""
    for value, at in values:
        events = value if isinstance(value, list) else [value]
        for index, event in enumerate(events):
            event_at = at.index(index) if isinstance(value, list) else at
            yield from _event(conversation, event, event_at)


def _event(conversation: Conversation, value: object, at: At) -> Iterator[ImportedEntry]:
    message = conversation.message(value, at)
    event = message.original
    found = event.get("args")
    args: dict[str, Any] = found if isinstance(found, dict) else {}
    metadata = event.get("tool_call_metadata")
    call_id = metadata.get("tool_call_id") if isinstance(metadata, dict) else None
    name = metadata.get("function_name") if isinstance(metadata, dict) else None
    action, observation = event.get("action"), event.get("observation")
    role = _ROLES.get(str(event.get("source")), "system")
    if action in ("message", "system") and isinstance(args.get("content"), str):
        message.turn("system" if action == "system" else role, args["content"], ("args", "content"))
    elif isinstance(action, str) and isinstance(call_id, str) and isinstance(name, str):
        message.call(call_id, name, args)
    elif isinstance(observation, str) and isinstance(call_id, str):
        content = event.get("content")
        text = content if isinstance(content, str) else ""
        fills = [(("content",), "content")] if isinstance(content, str) else []
        message.result(call_id, text, fills, is_error=observation == "error")
    else:
        what = f"action:{action}" if isinstance(action, str) else f"observation:{observation}"
        said = event.get("message")
        message.imported(what, text=said if isinstance(said, str) else None, fill=("message",))
    yield from message.end()


def sniff(value: dict[str, Any]) -> str | None:
    """Why ``value``, a file's first object, is an OpenHands event; None if it is not."""
    if ("action" in value or "observation" in value) and "id" in value:
        return "an OpenHands event (action/observation with an id)"
    return None
