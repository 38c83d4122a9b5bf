"""OpenAI Chat Completions messages (``openai``): JSONL, or one JSON array of messages.

Also the message reader of the formats that embed chat messages (tau-bench trajectories,
SWE-agent histories). Per message (everything not listed stays verbatim in ``source``):

* ``content`` a string -> a ``turn`` of the role (``developer`` is a ``system`` turn); a list
  of parts -> a ``turn`` per ``text`` part, an ``imported`` entry per other part (``image_url``
  with a ``data:`` URL signs the SHA-256 of its bytes; ``refusal``; ``input_audio``, ...);
* assistant ``tool_calls[]`` -> one ``tool.call`` each, in order (``index``, ``type`` and
  anything else kept); ``refusal`` and ``reasoning_content`` strings -> ``imported`` entries;
* ``tool`` -> a ``tool.result`` answering the most recent unanswered call with
  ``tool_call_id``; SWE-agent's ``tool_call_ids`` list is read the same way;
* any other role -> an ``imported`` entry of type ``message`` holding its text.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

from registre.attest.canonical_json import parse_strict
from registre.errors import MalformedError
from registre.importers.core import At, Conversation, ImportedEntry, Path, SourceMessage, describe

__all__ = ["chat_message", "content_parts", "parse_arguments", "parse_openai_values", "sniff"]

_TURN_ROLES = {"system": "system", "developer": "system", "user": "user", "assistant": "assistant"}


def parse_openai_values(
    values: Iterator[tuple[Any, At]], conversation: Conversation
) -> Iterator[ImportedEntry]:
    """Entries of chat messages (a list given as one document is read item by item)."""
    for value, at in values:
        if isinstance(value, list):
            for index, item in enumerate(value):
                yield from chat_message(conversation, item, at.index(index)).end()
        else:
            yield from chat_message(conversation, value, at).end()


def chat_message(
    conversation: Conversation, value: object, at: At, prefix: Path = (), fmt: str | None = None
) -> SourceMessage:
    """One chat message (at ``prefix`` inside ``value``) as a :class:`SourceMessage` to end."""
    message = conversation.message(value, at, fmt)
    fields: Any = message.original
    for step in prefix:
        fields = fields[step]
    if not isinstance(fields, dict):
        at.fail(f"expected a message (an object), got {describe(fields)}")
    role = fields.get("role")
    if not isinstance(role, str):
        at.key("role").fail(f"expected the message's role (a string), got {describe(role)}")
    if role == "tool":
        _tool(message, fields, at, prefix)
        return message
    turn_role = _TURN_ROLES.get(role)
    if turn_role is None:
        content = fields.get("content")
        text = content if isinstance(content, str) else None
        message.imported("message", text=text, fill=(*prefix, "content"))
        return message
    content_parts(
        message, turn_role, fields.get("content"), (*prefix, "content"), at.key("content")
    )
    if role == "assistant":
        for name in ("reasoning_content", "refusal"):
            text = fields.get(name)
            if isinstance(text, str) and text:
                kind = "reasoning" if name == "reasoning_content" else "refusal"
                message.imported(kind, role="assistant", text=text, fill=(*prefix, name))
        _calls(message, fields.get("tool_calls"), (*prefix, "tool_calls"), at.key("tool_calls"))
    return message


def content_parts(message: SourceMessage, role: str, content: object, path: Path, at: At) -> None:
    """A ``content`` field: null, a string, or a list of parts."""
    if content is None:
        return
    if isinstance(content, str):
        message.turn(role, content, path)
        return
    if not isinstance(content, list):
        at.fail(f"expected null, a string or a list of content parts, got {describe(content)}")
    for index, part in enumerate(content):
        part_at = at.index(index)
        if not isinstance(part, dict):
            part_at.fail(f"expected a content part (an object), got {describe(part)}")
        kind = part.get("type")
        text = part.get("text")
        if kind in ("text", "input_text", "output_text") and isinstance(text, str):
            message.turn(role, text, (*path, index, "text"))
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            message.imported(
                "refusal", role=role, text=part["refusal"], fill=(*path, index, "refusal")
            )
        else:
            message.imported(
                str(kind) if isinstance(kind, str) else "part", role=role, data=_data_url(part)
            )


def _data_url(part: dict[str, Any]) -> str | None:
    """The base64 bytes of an ``image_url`` part with a ``data:`` URL (or ``input_audio``)."""
    image = part.get("image_url")
    url = image.get("url") if isinstance(image, dict) else image
    if isinstance(url, str) and url.startswith("data:") and ";base64," in url:
        return url.split(";base64,", 1)[1]
    audio = part.get("input_audio")
    if isinstance(audio, dict) and isinstance(audio.get("data"), str):
        return str(audio["data"])
    return None


def _calls(message: SourceMessage, calls: object, path: Path, at: At) -> None:
    if calls is None:
        return
    if not isinstance(calls, list):
        at.fail(f"expected a list of tool calls, got {describe(calls)}")
    for index, call in enumerate(calls):
        call_at = at.index(index)
        if not isinstance(call, dict):
            call_at.fail(f"expected a tool call (an object), got {describe(call)}")
        function = call.get("function")
        call_id = call.get("id")
        if not isinstance(function, dict) or not isinstance(call_id, str):
            call_at.fail("expected a function call with an id and a function {name, arguments}")
        name = function.get("name")
        text = function.get("arguments")
        if not isinstance(name, str) or not isinstance(text, str):
            call_at.key("function").fail("expected name and arguments (the JSON text) strings")
        arguments = parse_arguments(text, call_at.key("function").key("arguments"))
        here: Path = (*path, index)
        fills: list[tuple[Path, str]] = [((*here, "id"), "call_id")]
        fills.append(((*here, "function", "name"), "name"))
        if json.dumps(arguments, ensure_ascii=False) == text:
            fills.append(((*here, "function", "arguments"), "arguments"))
        message.call(call_id, name, arguments, fills, call_at)


def parse_arguments(text: str, at: At) -> Any:
    try:
        arguments = parse_strict(text)
    except MalformedError as exc:
        at.fail(f"tool arguments are not JSON ({exc}); a call is recorded with its arguments")
    if not isinstance(arguments, dict):
        at.fail(f"tool arguments must be a JSON object, got {describe(arguments)}")
    return arguments


def _tool(message: SourceMessage, fields: dict[str, Any], at: At, prefix: Path) -> None:
    content = fields.get("content")
    if isinstance(content, str):
        text, content_fill = content, [((*prefix, "content"), "content")]
    elif isinstance(content, list):
        text = "".join(str(part.get("text", "")) for part in content if isinstance(part, dict))
        content_fill = []
    elif content is None:
        text, content_fill = "", []
    else:
        at.key("content").fail(f"expected a string or content parts, got {describe(content)}")
    call_id = fields.get("tool_call_id")
    name = fields.get("name") if isinstance(fields.get("name"), str) else None
    if isinstance(call_id, str):
        fills = [((*prefix, "tool_call_id"), "call_id"), *content_fill]
        message.result(call_id, text, fills, name=name, at=at)
        return
    ids = fields.get("tool_call_ids")
    if isinstance(ids, list) and ids and all(isinstance(item, str) for item in ids):
        for number, each in enumerate(ids):
            message.result(each, text, content_fill if number == 0 else (), name=name, at=at)
        return
    at.key("tool_call_id").fail("a tool message needs the id of the call it answers")


def sniff(value: dict[str, Any]) -> str | None:
    """Why ``value``, a file's first object, is a chat-completions message; None if it is not.
    Asked last: any object with a ``role`` is one."""
    if "role" not in value:
        return None
    if value.get("role") in ("tool", "developer") or "tool_calls" in value:
        return "a chat-completions message"
    return "a plain message with role and content"
