"""OpenAI Responses API / Agents SDK items (``openai-responses``): JSONL or a JSON array of
items (a response's ``output``, an Agents SDK ``to_input_list()``, a session's items).

* ``message`` (or an item with a ``role`` and no type) -> a ``turn`` per ``input_text`` /
  ``output_text`` part (``annotations`` and ``id`` kept), other parts ``imported``;
* ``function_call`` -> ``tool.call`` (``call_id``; the item ``id`` and ``status`` kept);
  ``function_call_output`` -> ``tool.result`` answering it;
* ``reasoning`` -> ``imported`` ``reasoning`` (summary texts; ``encrypted_content`` kept);
  ``compaction`` -> ``imported`` ``compaction`` (the provider's own compaction, recorded as
  imported, never as a registre compaction); any other item -> ``imported`` of its type.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from registre.importers.core import At, Conversation, ImportedEntry, Path, SourceMessage, describe
from registre.importers.openai_chat import content_parts, parse_arguments

__all__ = ["parse_responses_values", "sniff"]

_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}


def parse_responses_values(
    values: Iterator[tuple[Any, At]], conversation: Conversation
) -> Iterator[ImportedEntry]:
    """Entries of Responses items (a document ``{"output": [...]}`` or ``{"input": [...]}``
    is read item by item)."""
    for value, at in values:
        if isinstance(value, dict) and "type" not in value and "role" not in value:
            key = "output" if isinstance(value.get("output"), list) else "input"
            items = value.get(key)
            if not isinstance(items, list):
                at.fail("expected an item, a list of items, or {output: [...]} / {input: [...]}")
            for index, item in enumerate(items):
                yield from _item(conversation, item, at.key(key).index(index)).end()
        elif isinstance(value, list):
            for index, item in enumerate(value):
                yield from _item(conversation, item, at.index(index)).end()
        else:
            yield from _item(conversation, value, at).end()


def _item(conversation: Conversation, value: object, at: At) -> SourceMessage:
    message = conversation.message(value, at)
    item = message.original
    kind = item.get("type", "message" if "role" in item else None)
    if not isinstance(kind, str):
        at.key("type").fail(f"expected the item's type (a string), got {describe(kind)}")
    if kind == "message":
        role = _ROLES.get(str(item.get("role")))
        if role is None:
            at.key("role").fail(f"expected a message role, got {item.get('role')!r}")
        content_parts(message, role, item.get("content"), ("content",), at.key("content"))
    elif kind == "function_call":
        call_id, name, text = item.get("call_id"), item.get("name"), item.get("arguments")
        if not isinstance(call_id, str) or not isinstance(name, str) or not isinstance(text, str):
            at.fail("a function_call needs call_id, name and arguments (strings)")
        arguments = parse_arguments(text, at.key("arguments"))
        fills: list[tuple[Path, str]] = [(("call_id",), "call_id"), (("name",), "name")]
        if json.dumps(arguments, ensure_ascii=False) == text:
            fills.append((("arguments",), "arguments"))
        message.call(call_id, name, arguments, fills)
    elif kind == "function_call_output":
        call_id, output = item.get("call_id"), item.get("output")
        if not isinstance(call_id, str):
            at.key("call_id").fail(f"expected the id of the call answered, got {describe(call_id)}")
        if isinstance(output, str):
            message.result(call_id, output, [(("call_id",), "call_id"), (("output",), "content")])
        else:
            text = (
                "".join(
                    str(part.get("text", "")) for part in output or [] if isinstance(part, dict)
                )
                if isinstance(output, list)
                else ""
            )
            message.result(call_id, text, [(("call_id",), "call_id")])
    elif kind == "reasoning":
        summary = item.get("summary")
        texts = (
            [
                str(part.get("text", ""))
                for part in summary or []
                if isinstance(part, dict) and isinstance(part.get("text"), str)
            ]
            if isinstance(summary, list)
            else []
        )
        fill = ("summary", 0, "text") if len(texts) == 1 else None
        message.imported("reasoning", role="assistant", text="\n\n".join(texts), fill=fill)
    else:
        message.imported(kind)
    return message


_ITEM_TYPES = frozenset(
    (
        "message",
        "function_call",
        "function_call_output",
        "reasoning",
        "compaction",
        "web_search_call",
        "file_search_call",
        "computer_call",
        "computer_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "mcp_call",
        "image_generation_call",
        "local_shell_call",
        "item_reference",
    )
)


def sniff(value: dict[str, Any]) -> str | None:
    """Why ``value``, a file's first object, is an OpenAI Responses item; None if it is not."""
    kind = value.get("type")
    if kind in _ITEM_TYPES:
        return f"a Responses item of type {kind!r}"
    return None
