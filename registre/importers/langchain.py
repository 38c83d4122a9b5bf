"""LangChain message dumps (``langchain``): ``messages_to_dict`` output, ``[{"type", "data"}]``.

``human`` / ``ai`` / ``system`` -> ``turn`` s of ``data.content`` (a string or content parts);
``ai`` ``data.tool_calls`` -> ``tool.call`` s (``id``, ``name``, ``args``); ``tool`` ->
``tool.result`` answering ``data.tool_call_id`` (``status: "error"`` is an error result);
any other type -> ``imported`` of that type. ``additional_kwargs``, ``response_metadata``,
``usage_metadata``, ``id``, ``invalid_tool_calls``, ``artifact`` ... stay verbatim.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from registre.importers.core import (
    At,
    Conversation,
    ImportedEntry,
    Path,
    describe,
)
from registre.importers.openai_chat import content_parts

__all__ = ["parse_langchain_values", "sniff"]

_ROLES = {"human": "user", "ai": "assistant", "system": "system", "AIMessageChunk": "assistant"}


def parse_langchain_values(
    values: Iterator[tuple[Any, At]], conversation: Conversation
) -> Iterator[ImportedEntry]:
    """Entries of LangChain message dicts (a list given as one document item by item)."""
    for value, at in values:
        items = value if isinstance(value, list) else [value]
        for index, item in enumerate(items):
            yield from _message(
                conversation, item, at.index(index) if isinstance(value, list) else at
            )


def _message(conversation: Conversation, value: object, at: At) -> Iterator[ImportedEntry]:
    message = conversation.message(value, at)
    kind, data = message.original.get("type"), message.original.get("data")
    if not isinstance(kind, str) or not isinstance(data, dict):
        at.fail(f"expected a LangChain message {{type, data}}, got {describe(message.original)}")
    role = _ROLES.get(kind)
    if role is not None:
        content_parts(message, role, data.get("content"), ("data", "content"), at.key("data"))
        calls = data.get("tool_calls")
        for index, call in enumerate(calls if isinstance(calls, list) else []):
            call_at = at.key("data").key("tool_calls").index(index)
            if not isinstance(call, dict) or not isinstance(call.get("id"), str):
                call_at.fail("expected a tool call {name, args, id}")
            here: Path = ("data", "tool_calls", index)
            fills = [
                ((*here, "id"), "call_id"),
                ((*here, "name"), "name"),
                ((*here, "args"), "input"),
            ]
            message.call(call["id"], str(call.get("name")), call.get("args"), fills, call_at)
    elif kind == "tool":
        call_id, content = data.get("tool_call_id"), data.get("content")
        if not isinstance(call_id, str):
            at.key("data").key("tool_call_id").fail("a tool message needs the id it answers")
        text = content if isinstance(content, str) else ""
        answer: list[tuple[Path, str]] = [(("data", "tool_call_id"), "call_id")]
        if isinstance(content, str):
            answer.append((("data", "content"), "content"))
        message.result(call_id, text, answer, is_error=data.get("status") == "error")
    else:
        content = data.get("content")
        message.imported(
            kind, text=content if isinstance(content, str) else None, fill=("data", "content")
        )
    yield from message.end()


_MESSAGE_TYPES = frozenset(("human", "ai", "system", "tool", "function", "chat", "AIMessageChunk"))


def sniff(value: dict[str, Any]) -> str | None:
    """Why ``value``, a file's first object, is a LangChain message dict; None if it is not."""
    kind = value.get("type")
    if kind in _MESSAGE_TYPES and isinstance(value.get("data"), dict):
        return f"a LangChain message dict of type {kind!r}"
    return None
