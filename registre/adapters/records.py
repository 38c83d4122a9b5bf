"""Entry bodies the adapters share: what a framework's tool call becomes on the ledger."""

from __future__ import annotations

import json
from typing import TYPE_CHECKING, Any

from registre.attest.canonical_json import canonical_bytes
from registre.kinds import TURN

if TYPE_CHECKING:
    from registre.ledger import Thread

__all__ = ["holds_float", "last_system_text", "tool_call_body"]

_SYSTEM_WINDOW = 256
"""How many entries back from the head :func:`last_system_text` looks."""


def holds_float(value: object) -> bool:
    """Whether ``value`` (plain JSON data) holds a float anywhere."""
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(holds_float(item) for item in value.values())
    if isinstance(value, list):
        return any(holds_float(item) for item in value)
    return False


def tool_call_body(call_id: str, name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    """A ``tool.call`` body: ``arguments`` as an object, or as ``arguments_json`` (their RFC
    8785 text) when they hold a non-integer number, which entry bodies cannot hold
    (``specs/entries.md`` section 4.2). Integral floats (``2.0``) become the integers they are.
    Raises MalformedError (from the canonical encoder) for NaN or infinities."""
    body: dict[str, Any] = {"call_id": call_id, "name": name}
    if not holds_float(arguments):
        body["arguments"] = arguments
        return body
    text = canonical_bytes(arguments).decode("utf-8")
    reparsed = json.loads(text)
    if holds_float(reparsed):
        body["arguments_json"] = text
    else:
        body["arguments"] = reparsed
    return body


def last_system_text(thread: Thread) -> str | None:
    """The text of the last system ``turn`` among the thread's last 256 entries, or None: the
    system prompt an adapter has already recorded, so that it records it again only when it
    changes."""
    size = thread.head().size
    for entry in reversed(list(thread.entries(max(0, size - _SYSTEM_WINDOW), size))):
        if entry.kind == TURN and entry.body["role"] == "system":
            return str(entry.body["text"])
    return None
