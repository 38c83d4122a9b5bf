"""Anthropic Messages (``anthropic``): ``{"system": ..., "messages": [...]}``, or the messages
alone (a JSON array or JSONL).

The document's other members (``system``, ``model``, ``tools``, ...) are one source message
of their own (its ``system`` text gives ``system`` turns). Per content block (everything not
listed stays verbatim in ``source``, e.g. ``citations: null``, ``cache_control``,
``signature``):

* ``text`` -> ``turn``; ``tool_use`` -> ``tool.call`` (``input`` an object);
  ``tool_result`` -> ``tool.result`` (texts joined; ``is_error`` kept; images inside are
  ``imported`` entries signing their SHA-256);
* ``thinking`` -> ``imported`` ``thinking`` (its text; the signature kept);
  ``redacted_thinking``, ``server_tool_use``, ``web_search_tool_result`` and every other block
  -> ``imported`` of that type; ``image`` / ``document`` with base64 data sign its SHA-256.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from registre.importers.core import At, Conversation, ImportedEntry, Path, SourceMessage, describe

__all__ = ["anthropic_content", "parse_anthropic_values", "sniff", "sniff_document"]


def parse_anthropic_values(
    values: Iterator[tuple[Any, At]], conversation: Conversation
) -> Iterator[ImportedEntry]:
    """Entries of an Anthropic conversation document or a stream of its messages."""
    for value, at in values:
        if isinstance(value, dict) and "messages" in value and "role" not in value:
            yield from _document(value, at, conversation)
        elif isinstance(value, list):
            for index, item in enumerate(value):
                yield from anthropic_message(conversation, item, at.index(index)).end()
        else:
            yield from anthropic_message(conversation, value, at).end()


def _document(
    document: dict[str, Any], at: At, conversation: Conversation
) -> Iterator[ImportedEntry]:
    messages = document["messages"]
    if not isinstance(messages, list):
        at.key("messages").fail(f"expected a list of messages, got {describe(messages)}")
    header = {key: value for key, value in document.items() if key != "messages"}
    if header:
        message = conversation.message(header, at)
        system = header.get("system")
        if isinstance(system, str):
            message.turn("system", system, ("system",))
        elif isinstance(system, list):
            for index, block in enumerate(system):
                if isinstance(block, dict) and isinstance(block.get("text"), str):
                    message.turn("system", block["text"], ("system", index, "text"))
        yield from message.end()
    for index, item in enumerate(messages):
        yield from anthropic_message(conversation, item, at.key("messages").index(index)).end()


def anthropic_message(
    conversation: Conversation, value: object, at: At, fmt: str | None = None
) -> SourceMessage:
    """One ``{"role", "content"}`` message as a :class:`SourceMessage` to end."""
    message = conversation.message(value, at, fmt)
    role = message.original.get("role")
    if role not in ("user", "assistant"):
        at.key("role").fail(f"expected role user or assistant, got {describe(role)} {role!r}")
    anthropic_content(message, str(role), message.original.get("content"), ("content",), at)
    return message


def anthropic_content(
    message: SourceMessage, role: str, content: object, path: Path, at: At
) -> None:
    """A message's ``content`` (a string or blocks) at ``path`` inside the source message."""
    if isinstance(content, str):
        message.turn(role, content, path)
        return
    if not isinstance(content, list):
        at.key("content").fail(f"expected a string or a list of blocks, got {describe(content)}")
    for index, block in enumerate(content):
        block_at = at.key("content").index(index)
        if not isinstance(block, dict) or not isinstance(block.get("type"), str):
            block_at.fail(f"expected a content block with a type, got {describe(block)}")
        _block(message, role, block, (*path, index), block_at)


def _block(message: SourceMessage, role: str, block: dict[str, Any], path: Path, at: At) -> None:
    kind = block["type"]
    if kind == "text" and isinstance(block.get("text"), str):
        message.turn(role, block["text"], (*path, "text"))
    elif kind == "tool_use":
        call_id, name = block.get("id"), block.get("name")
        if not isinstance(call_id, str) or not isinstance(name, str):
            at.fail("a tool_use block needs an id and a name (strings)")
        fills = [((*path, "id"), "call_id"), ((*path, "name"), "name")]
        message.call(call_id, name, block.get("input"), [*fills, ((*path, "input"), "input")], at)
    elif kind == "tool_result":
        _tool_result(message, block, path, at)
    elif kind == "thinking" and isinstance(block.get("thinking"), str):
        message.imported(
            "thinking", role=role, text=block["thinking"], fill=(*path, "thinking"), at=at
        )
    else:
        message.imported(kind, role=role, data=_base64(block), at=at)


def _base64(block: dict[str, Any]) -> str | None:
    source = block.get("source")
    if isinstance(source, dict) and source.get("type") == "base64":
        data = source.get("data")
        return data if isinstance(data, str) else None
    return None


def _tool_result(message: SourceMessage, block: dict[str, Any], path: Path, at: At) -> None:
    call_id = block.get("tool_use_id")
    if not isinstance(call_id, str):
        at.key("tool_use_id").fail(f"expected the id of the call answered, got {describe(call_id)}")
    content = block.get("content", "")
    is_error = block.get("is_error") is True
    fills: list[tuple[Path, str]] = [((*path, "tool_use_id"), "call_id")]
    images = []
    if isinstance(content, str):
        text = content
        if "content" in block:
            fills.append(((*path, "content"), "content"))
    elif isinstance(content, list):
        parts = []
        for inner in content:
            if isinstance(inner, dict) and inner.get("type") == "text":
                parts.append(str(inner.get("text", "")))
            elif isinstance(inner, dict):
                images.append(inner)
        text = "".join(parts)
    elif content is None:
        text = ""
    else:
        at.key("content").fail(f"expected a string or blocks, got {describe(content)}")
    message.result(call_id, text, fills, is_error=is_error, at=at)
    for inner in images:
        message.imported(str(inner.get("type", "block")), role="user", data=_base64(inner), at=at)


_BLOCKS = frozenset(
    (
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "web_search_tool_result",
        "document",
    )
)
"""Content block types only Anthropic messages carry."""


def sniff_document(value: dict[str, Any]) -> str | None:
    """Why ``value``, a file's first object, is an Anthropic conversation document
    ``{messages}``; None if it is not."""
    if isinstance(value.get("messages"), list) and "role" not in value:
        return "a conversation document {messages}"
    return None


def sniff(value: dict[str, Any]) -> str | None:
    """Why ``value``, a file's first object, is an Anthropic message (its content holds
    Anthropic blocks); None if it is not."""
    content = value.get("content")
    if (
        "role" in value
        and isinstance(content, list)
        and any(isinstance(block, dict) and block.get("type") in _BLOCKS for block in content)
    ):
        return "a message whose content holds Anthropic blocks"
    return None
