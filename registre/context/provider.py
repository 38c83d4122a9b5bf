"""Provider-ready requests: a projection's messages in the shapes the OpenAI Chat
Completions, OpenAI Responses and Anthropic Messages APIs accept (``specs/context.md``
section 8.1). Pure, deterministic, O(messages + their text).

Each function returns plain JSON data to pass as keyword arguments to the SDK call, next to
the model name (and Anthropic's ``max_tokens``)::

    client.chat.completions.create(model=M, **openai_chat(messages))        # {"messages"}
    client.responses.create(model=M, **openai_responses(messages))          # {"input"}
    client.messages.create(model=M, max_tokens=N, **anthropic_messages(messages))
                                                                 # {"system"?, "messages"}

All three read the projection through one normalisation, so they agree on what the model
sees:

* **steps**: a run of adjacent tool-call messages and the run of tool-result messages right
  after it form one assistant step; each call is answered by the first result with its call
  id. A call whose name is not a function name the providers accept (:data:`TOOL_NAME`),
  whose arguments are not the JSON text of an object (finite numbers, integers within
  +/-(2^53-1)), whose id as sent is that of an earlier call of its run or of an earlier
  step, or that no result of the run answers, and a result that answers no call of the run
  before it, become *notes* (system messages ``[tool call NAME ID] ARGUMENTS`` and
  ``[tool result NAME ID] CONTENT``): providers refuse unanswered calls and unmatched
  results, and nothing is dropped. The notes of unusable calls come before the step, those of
  unmatched results after it;
* **ids**: a call id is sent as recorded when it matches :data:`CALL_ID`, otherwise as
  ``call_`` + the first 32 hex digits of its SHA-256 (:func:`provider_call_id`), the same in
  the call and its result;
* **arguments**: OpenAI gets the recorded arguments text byte for byte (RFC 8785 JSON, or
  ``arguments_json`` as recorded); Anthropic gets the object that text holds;
* **errors**: a result shown with the ``[error] `` prefix (an ``is_error`` result) keeps its
  text; Anthropic's ``tool_result`` also gets ``"is_error": true``.

Shapes:

* ``openai_chat``: ``{"messages": [...]}``: ``system``, ``user`` and ``assistant`` messages
  ``{"role", "content"}``; a step is one assistant message ``{"role": "assistant",
  "tool_calls": [{"id", "type": "function", "function": {"name", "arguments"}}]}`` (with
  ``"content"``: the text of an assistant message right before it, merged in) followed by
  one ``{"role": "tool", "tool_call_id", "content"}`` per result;
* ``openai_responses``: ``{"input": [...]}``: ``{"type": "message", "role", "content"}``
  items; a step is its ``{"type": "function_call", "call_id", "name", "arguments"}`` items
  then its ``{"type": "function_call_output", "call_id", "output"}`` items;
* ``anthropic_messages``: ``{"system": [text blocks], "messages": [...]}``: the system
  messages before the first other message become ``system`` (omitted when there are none);
  a later system message becomes a user text block ``[system note] TEXT``; a step is an
  assistant message's ``tool_use`` blocks ``{"type", "id", "name", "input"}`` and the next
  user message's ``tool_result`` blocks ``{"type", "tool_use_id", "content"?,
  "is_error"?}``; consecutive messages of one role are merged into one message (Anthropic
  requires alternation), every ``content`` is a list of blocks; text without a
  non-whitespace character is left out (the API refuses it), and so is a blank result's
  ``content``; when the first message would not be a user message, a user message
  :data:`ANTHROPIC_OPENING` comes first; a final assistant message loses its trailing
  whitespace (the API refuses it there, where it reads as the start of the reply).
"""

from __future__ import annotations

import hashlib
import json
import math
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

from registre.context.model import Message

__all__ = [
    "ANTHROPIC_OPENING",
    "CALL_ID",
    "PROVIDER_SHAPES",
    "SYSTEM_NOTE_PREFIX",
    "TOOL_NAME",
    "anthropic_messages",
    "openai_chat",
    "openai_responses",
    "provider_call_id",
    "provider_request",
]

PROVIDER_SHAPES: Final = ("openai.chat", "openai.responses", "anthropic")
"""The provider shapes, by the name a ``model.call`` records in its ``shape`` field."""

TOOL_NAME: Final = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""A function name both providers accept (``fullmatch``)."""

CALL_ID: Final = re.compile(r"[A-Za-z0-9_-]{1,40}")
"""A call id sent as recorded (``fullmatch``): Anthropic accepts only these characters and
OpenAI Chat Completions at most 40 of them."""

ERROR_PREFIX: Final = "[error] "
SYSTEM_NOTE_PREFIX: Final = "[system note] "
_MAX_SAFE: Final = 2**53 - 1
ANTHROPIC_OPENING: Final = "[continued]"
"""The user message an Anthropic request opens with when the context does not start with
one (after a compaction the tail often starts with the assistant)."""


def provider_call_id(call_id: str) -> str:
    """``call_id`` if it matches :data:`CALL_ID`, else ``call_`` + 32 hex digits of its
    SHA-256 (UTF-8)."""
    if CALL_ID.fullmatch(call_id):
        return call_id
    digest = hashlib.sha256(call_id.encode("utf-8", "surrogatepass")).hexdigest()
    return f"call_{digest[:32]}"


def openai_chat(messages: Sequence[Message]) -> dict[str, Any]:
    """OpenAI Chat Completions: ``{"messages": [...]}`` (module docstring)."""
    out: list[dict[str, Any]] = []
    previous: _Item | None = None
    for item in _items(messages):
        if isinstance(item, _Text):
            out.append({"role": item.role, "content": item.text})
        else:
            message: dict[str, Any] = {"role": "assistant"}
            if isinstance(previous, _Text) and previous.role == "assistant":
                message["content"] = out.pop()["content"]
            message["tool_calls"] = [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in item.calls
            ]
            out.append(message)
            out.extend(
                {"role": "tool", "tool_call_id": result.id, "content": result.content}
                for result in item.results
            )
        previous = item
    return {"messages": out}


def openai_responses(messages: Sequence[Message]) -> dict[str, Any]:
    """OpenAI Responses: ``{"input": [...]}`` (module docstring)."""
    out: list[dict[str, Any]] = []
    for item in _items(messages):
        if isinstance(item, _Text):
            out.append({"type": "message", "role": item.role, "content": item.text})
            continue
        out.extend(
            {
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": call.arguments,
            }
            for call in item.calls
        )
        out.extend(
            {"type": "function_call_output", "call_id": result.id, "output": result.content}
            for result in item.results
        )
    return {"input": out}


def anthropic_messages(messages: Sequence[Message]) -> dict[str, Any]:
    """Anthropic Messages: ``{"system": [...], "messages": [...]}`` (module docstring)."""
    items = _items(messages)
    start = 0
    system: list[dict[str, Any]] = []
    while start < len(items):
        item = items[start]
        if not isinstance(item, _Text) or item.role != "system":
            break
        if _visible(item.text):
            system.append(_text_block(item.text))
        start += 1
    turns: list[tuple[str, list[dict[str, Any]]]] = []
    for item in items[start:]:
        if isinstance(item, _Text):
            if not _visible(item.text):
                continue
            if item.role == "system":
                _add(turns, "user", [_text_block(SYSTEM_NOTE_PREFIX + item.text)])
            else:
                _add(turns, item.role, [_text_block(item.text)])
        else:
            _add(turns, "assistant", [_tool_use_block(call) for call in item.calls])
            _add(turns, "user", [_tool_result_block(result) for result in item.results])
    if turns and turns[-1][0] == "assistant":
        last = turns[-1][1][-1]
        if last["type"] == "text":
            last["text"] = last["text"].rstrip()
    if not turns or turns[0][0] != "user":
        turns.insert(0, ("user", [_text_block(ANTHROPIC_OPENING)]))
    shape: dict[str, Any] = {}
    if system:
        shape["system"] = system
    shape["messages"] = [{"role": role, "content": blocks} for role, blocks in turns]
    return shape


_BUILDERS: Final[dict[str, Callable[[Sequence[Message]], dict[str, Any]]]] = {
    "openai.chat": openai_chat,
    "openai.responses": openai_responses,
    "anthropic": anthropic_messages,
}


def provider_request(messages: Sequence[Message], shape: str) -> dict[str, Any]:
    """The request data of ``shape`` (one of :data:`PROVIDER_SHAPES`; ValueError for any
    other name)."""
    builder = _BUILDERS.get(shape)
    if builder is None:
        raise ValueError(f"unknown provider shape {shape!r}; the shapes are {PROVIDER_SHAPES}")
    return builder(messages)


# --- the normalisation ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class _Text:
    """A ``system``, ``user`` or ``assistant`` text (notes are system texts)."""

    role: str
    text: str


@dataclass(frozen=True, slots=True)
class _Call:
    id: str
    name: str
    arguments: str
    input: dict[str, Any]


@dataclass(frozen=True, slots=True)
class _Result:
    id: str
    content: str
    is_error: bool


@dataclass(frozen=True, slots=True)
class _Step:
    """Tool calls made together, each answered by one of ``results`` (at least one of each)."""

    calls: tuple[_Call, ...]
    results: tuple[_Result, ...]


_Item = _Text | _Step


def _items(messages: Sequence[Message]) -> list[_Item]:
    items: list[_Item] = []
    used: set[str] = set()
    index = 0
    while index < len(messages):
        message = messages[index]
        if _is_call(message):
            calls_end = index
            while calls_end < len(messages) and _is_call(messages[calls_end]):
                calls_end += 1
            results_end = calls_end
            while results_end < len(messages) and messages[results_end].role == "tool":
                results_end += 1
            items.extend(_step(messages[index:calls_end], messages[calls_end:results_end], used))
            index = results_end
            continue
        if message.role == "tool":
            items.append(_result_note(message))
        elif message.role in ("system", "user", "assistant"):
            items.append(_Text(message.role, message.content))
        else:
            raise ValueError(
                f"message role {message.role!r} is not system, user, assistant or tool"
            )
        index += 1
    return items


def _is_call(message: Message) -> bool:
    return message.role == "assistant" and message.call_id is not None


def _step(calls: Sequence[Message], results: Sequence[Message], used: set[str]) -> list[_Item]:
    """The step of these calls and results, with the notes of those that cannot be in it."""
    usable: dict[str, tuple[int, _Call]] = {}
    unusable: list[int] = []
    for index, message in enumerate(calls):
        call = _call(message)
        if call is None or call.id in used or call.id in usable:
            unusable.append(index)
        else:
            usable[call.id] = (index, call)
    answered: list[tuple[int, _Call]] = []
    step_results: list[_Result] = []
    unmatched: list[Message] = []
    for message in results:
        key = None if message.call_id is None else provider_call_id(message.call_id)
        found = None if key is None else usable.pop(key, None)
        if found is None:
            unmatched.append(message)
            continue
        answered.append(found)
        step_results.append(
            _Result(found[1].id, message.content, message.content.startswith(ERROR_PREFIX))
        )
    unusable.extend(index for index, _unanswered in usable.values())
    items: list[_Item] = [_call_note(calls[index]) for index in sorted(unusable)]
    if answered:
        answered.sort(key=lambda pair: pair[0])
        used.update(call.id for _index, call in answered)
        items.append(_Step(tuple(call for _index, call in answered), tuple(step_results)))
    items.extend(_result_note(message) for message in unmatched)
    return items


def _call(message: Message) -> _Call | None:
    """The call a tool-call message makes, or None when no provider could take it."""
    name, call_id = message.name, message.call_id
    if name is None or call_id is None or not TOOL_NAME.fullmatch(name):
        return None
    try:
        arguments = json.loads(
            message.content, parse_float=_finite, parse_int=_safe, parse_constant=_no_constant
        )
    except ValueError:
        return None
    if not isinstance(arguments, dict):
        return None
    return _Call(provider_call_id(call_id), name, message.content, arguments)


def _finite(text: str) -> float:
    number = float(text)
    if not math.isfinite(number):
        raise ValueError(f"number {text} is out of range")
    return number


def _safe(text: str) -> int:
    number = int(text)
    if abs(number) > _MAX_SAFE:
        raise ValueError(f"integer {text} is beyond +/-(2^53-1)")
    return number


def _no_constant(text: str) -> None:
    raise ValueError(f"{text} is not JSON")


def _call_note(message: Message) -> _Text:
    return _Text("system", f"[tool call{_label(message)}] {message.content}")


def _result_note(message: Message) -> _Text:
    return _Text("system", f"[tool result{_label(message)}] {message.content}")


def _label(message: Message) -> str:
    return "".join(f" {part}" for part in (message.name, message.call_id) if part is not None)


# --- Anthropic blocks -----------------------------------------------------------------------


def _visible(text: str) -> bool:
    return bool(text.strip())


def _text_block(text: str) -> dict[str, Any]:
    return {"type": "text", "text": text}


def _tool_use_block(call: _Call) -> dict[str, Any]:
    return {"type": "tool_use", "id": call.id, "name": call.name, "input": call.input}


def _tool_result_block(result: _Result) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": result.id}
    if _visible(result.content):
        block["content"] = result.content
    if result.is_error:
        block["is_error"] = True
    return block


def _add(
    turns: list[tuple[str, list[dict[str, Any]]]], role: str, blocks: list[dict[str, Any]]
) -> None:
    """Append ``blocks`` as a message of ``role``, merged into the last one if it has it."""
    if not blocks:
        return
    if turns and turns[-1][0] == role:
        turns[-1][1].extend(blocks)
    else:
        turns.append((role, blocks))
