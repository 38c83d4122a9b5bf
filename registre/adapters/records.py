"""Entry bodies the adapters share: what a framework's tool call becomes on the ledger."""

from __future__ import annotations

import json
from typing import Any

from registre.attest.canonical_json import canonical_bytes

__all__ = ["holds_float", "tool_call_body"]


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
