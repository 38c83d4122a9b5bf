"""Transcript import: OpenAI chat-completions JSONL and Anthropic Messages JSON to entries.

Pure parsing: bytes in, a list of :class:`ImportedEntry` out, no database. A file is read
completely and every entry body is checked with :func:`registre.attest.bodies.validate_body` before
the list is returned, so a caller that writes the list in one transaction writes all of a
file or none of it. Any problem raises :class:`TranscriptError` naming where it is (OpenAI:
``line N``, 1-based, then the field; Anthropic: a JSON path such as
``$.messages[12].content[1]``) and what is wrong. Nothing else is raised for any input bytes.

The mapping (normative text and the reasons for each choice: ``specs/entries.md``,
"Importing transcripts"):

* every non-empty text part or block becomes one ``turn`` (actor: its role); empty texts
  make no entry;
* every tool call (OpenAI ``tool_calls[]``, Anthropic ``tool_use``) becomes one
  ``tool.call`` (actor ``assistant``); arguments must be a JSON object. Arguments holding a
  non-integer number are carried as ``arguments_json``, their RFC 8785 canonical text;
  otherwise as the object ``arguments`` (integral numbers such as ``2.0`` written ``2``);
* every tool result becomes one ``tool.result`` (actor ``tool:NAME``) carrying the name of
  the call it answers; its text parts are joined without a separator; ``is_error`` is kept
  only when true;
* call ids are unique; a result must answer an issued, unanswered call; the calls a message
  makes must be answered before any later message says anything else, except at the end of
  the file, where unanswered calls are allowed (a transcript saved while a tool ran);
* fields the format allows but registre cannot carry (images, ``name`` on a user message,
  ``cache_control``, ...) are refused, never dropped.

Both shapes of one conversation give the same entries.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, NoReturn

from registre.attest.bodies import validate_body
from registre.attest.canonical import MAX_SAFE_INTEGER, canonical_bytes, parse_strict
from registre.attest.entry import check_actor
from registre.attest.errors import MalformedError

__all__ = [
    "FORMATS",
    "ImportedEntry",
    "TranscriptError",
    "parse_anthropic",
    "parse_openai",
]


class ImportedEntry(NamedTuple):
    """One entry to append: unpacks as ``(kind, body, actor)``."""

    kind: str
    body: dict[str, Any]
    actor: str


class TranscriptError(MalformedError):
    """A transcript refused before anything is imported.

    ``where`` is ``"line N"`` (OpenAI JSONL, 1-based, possibly followed by a field path) or a
    JSON path (Anthropic); ``line`` (also ``position``) is the line number for JSONL input
    and ``None`` otherwise; ``reason`` says what is wrong.
    """

    def __init__(self, where: str, reason: str, line: int | None = None) -> None:
        self.where = where
        self.reason = reason
        self.line = line
        super().__init__(f"{where}: {reason}")
        self.position = line


# --- locations and typed access --------------------------------------------------------


@dataclass(frozen=True)
class _At:
    """A place in the file: a JSONL line number and/or a field path inside it."""

    line: int | None
    path: str

    def __str__(self) -> str:
        if self.line is None:
            return self.path
        return f"line {self.line}: {self.path}" if self.path else f"line {self.line}"

    def key(self, name: str) -> _At:
        return _At(self.line, f"{self.path}.{name}" if self.path else name)

    def index(self, number: int) -> _At:
        return _At(self.line, f"{self.path}[{number}]")

    def fail(self, reason: str) -> NoReturn:
        raise TranscriptError(str(self), reason, self.line)


def _describe(value: object) -> str:
    if isinstance(value, bool):
        return "a boolean"
    names = {dict: "an object", list: "a list", str: "a string", int: "an integer"}
    return names.get(type(value), "a number" if isinstance(value, float) else "null")


def _parse_json(data: bytes | str, at: _At) -> Any:
    try:
        return parse_strict(data)
    except MalformedError as exc:
        at.fail(f"invalid JSON: {exc}")


def _record(
    value: object, at: _At, what: str, required: Sequence[str], optional: Sequence[str] = ()
) -> dict[str, Any]:
    """``value`` as an object with all ``required`` keys and no key outside both lists."""
    if not isinstance(value, dict):
        at.fail(f"expected {what} (an object), got {_describe(value)}")
    allowed = (*required, *optional)
    for key in value:
        if key not in allowed:
            at.key(key).fail(
                f"field not imported here: {what} may hold only {', '.join(allowed)} "
                "(registre refuses fields it would otherwise drop)"
            )
    for key in required:
        if key not in value:
            at.key(key).fail(f"required field of {what} is missing")
    return value


def _arguments_object(value: object, at: _At) -> dict[str, Any]:
    if not isinstance(value, dict):
        at.fail(f"tool arguments must be a JSON object, got {_describe(value)}")
    return value


def _string(value: object, at: _At) -> str:
    if not isinstance(value, str):
        at.fail(f"expected a string, got {_describe(value)}")
    return value


def _text_parts(value: object, at: _At, part_type: str) -> list[str]:
    """Texts of a content field: a string, or a list of ``{"type": "text", "text": ...}``."""
    if isinstance(value, str):
        return [value]
    if not isinstance(value, list):
        at.fail(f"expected a string or a list of {part_type}s, got {_describe(value)}")
    texts = []
    for number, part in enumerate(value):
        part_at = at.index(number)
        _block_type(part, part_at, ("text",), part_type)
        fields = _record(part, part_at, f"a text {part_type}", ("type", "text"))
        texts.append(_string(fields["text"], part_at.key("text")))
    return texts


def _block_type(value: object, at: _At, allowed: Sequence[str], what: str) -> str:
    if not isinstance(value, dict):
        at.fail(f"expected a {what} (an object), got {_describe(value)}")
    kind = value.get("type")
    if kind not in allowed:
        shown = repr(kind) if isinstance(kind, str) else _describe(kind)
        at.key("type").fail(
            f"{what} type {shown} is not imported here; expected {' or '.join(allowed)}"
        )
    return str(kind)


# --- the conversation both formats feed --------------------------------------------------


@dataclass(frozen=True)
class _Call:
    name: str
    at: _At
    message: int


class _Conversation:
    """Collects entries in order and enforces the call/result rules of both formats."""

    def __init__(self) -> None:
        self.entries: list[ImportedEntry] = []
        self._calls: dict[str, _Call] = {}
        self._pending: dict[str, _Call] = {}

    def turn(self, role: str, text: str, at: _At, message: int) -> None:
        if text:
            self._settle(at, message)
            self._add("turn", {"role": role, "text": text}, role, at)

    def call(
        self, call_id: str, name: str, arguments: dict[str, Any], at: _At, message: int
    ) -> None:
        self._settle(at, message)
        earlier = self._calls.get(call_id)
        if earlier is not None:
            at.fail(f"tool call id {call_id!r} was already used at {earlier.at}; ids are unique")
        body: dict[str, Any] = {"call_id": call_id, "name": name}
        if _holds_fraction(arguments):
            body["arguments_json"] = canonical_bytes(arguments).decode("utf-8")
        else:
            body["arguments"] = _integral(arguments)
        self._add("tool.call", body, "assistant", at)
        self._calls[call_id] = self._pending[call_id] = _Call(name, at, message)

    def result(
        self, call_id: str, content: str, is_error: bool, at: _At, name: str | None = None
    ) -> None:
        call = self._calls.get(call_id)
        if call is None:
            at.fail(f"result for tool call {call_id!r}, which no earlier message issued")
        if call_id not in self._pending:
            at.fail(f"second result for tool call {call_id!r} (issued at {call.at})")
        if name is not None and name != call.name:
            at.fail(f"result names tool {name!r} but call {call_id!r} was to {call.name!r}")
        del self._pending[call_id]
        body: dict[str, Any] = {"call_id": call_id, "content": content, "name": call.name}
        if is_error:
            body["is_error"] = True
        self._add("tool.result", body, f"tool:{call.name}", at)

    def _settle(self, at: _At, message: int) -> None:
        """Refuse to move on while calls of an earlier message still wait for results."""
        for call_id, call in self._pending.items():
            if call.message != message:
                at.fail(
                    f"tool call {call_id!r} (issued at {call.at}) has no result before this "
                    "message; results must directly follow the message that made the calls "
                    "(only the end of a transcript may leave calls unanswered)"
                )

    def _add(self, kind: str, body: dict[str, Any], actor: str, at: _At) -> None:
        try:
            validate_body(kind, body)
            check_actor(actor)
        except MalformedError as exc:
            at.fail(f"cannot be recorded as a {kind} entry: {exc}")
        self.entries.append(ImportedEntry(kind, body, actor))


def _is_integral(number: float) -> bool:
    return number.is_integer() and abs(number) <= MAX_SAFE_INTEGER


def _holds_fraction(value: object) -> bool:
    """Whether a parsed JSON value holds a number that is not a safe integer."""
    if isinstance(value, float):
        return not _is_integral(value)
    if isinstance(value, dict):
        return any(_holds_fraction(item) for item in value.values())
    if isinstance(value, list):
        return any(_holds_fraction(item) for item in value)
    return False


def _integral(value: Any) -> Any:
    """``value`` with every float (all integral, see :func:`_holds_fraction`) made an int."""
    if isinstance(value, float):
        return int(value)
    if isinstance(value, dict):
        return {key: _integral(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_integral(item) for item in value]
    return value


# --- OpenAI chat completions, one message per line -----------------------------------------


def parse_openai(data: bytes) -> list[ImportedEntry]:
    """Read OpenAI chat-completions messages, one JSON object per line (blank lines skipped).

    Roles ``system`` and ``user`` (``content``: string or text parts), ``assistant``
    (``content``: null, string or text parts; ``tool_calls``: function calls whose
    ``arguments`` is the JSON text of an object) and ``tool`` (``tool_call_id``,
    ``content``, optional ``name``). Raises :class:`TranscriptError` (``line`` set).
    """
    conversation = _Conversation()
    for number, line in enumerate(bytes(data).split(b"\n"), start=1):
        if line.strip():
            at = _At(number, "")
            _openai_message(_parse_json(line, at), at, number, conversation)
    return conversation.entries


def _openai_message(message: object, at: _At, number: int, conversation: _Conversation) -> None:
    if not isinstance(message, dict):
        at.fail(f"expected a message (an object), got {_describe(message)}")
    role = message.get("role")
    if not isinstance(role, str) or role not in _OPENAI_MESSAGES:
        shown = repr(role) if isinstance(role, str) else _describe(role)
        at.key("role").fail(f"unknown role {shown}; expected one of {', '.join(_OPENAI_MESSAGES)}")
    _OPENAI_MESSAGES[role](message, at, number, conversation)


def _openai_text(message: object, at: _At, number: int, conversation: _Conversation) -> None:
    """A system or user message: text only."""
    fields = _record(message, at, "a system or user message", ("role", "content"))
    for text in _text_parts(fields["content"], at.key("content"), "content part"):
        conversation.turn(fields["role"], text, at, number)


def _openai_assistant(message: object, at: _At, number: int, conversation: _Conversation) -> None:
    fields = _record(message, at, "an assistant message", ("role",), ("content", "tool_calls"))
    if fields.get("content") is not None:
        for text in _text_parts(fields["content"], at.key("content"), "content part"):
            conversation.turn("assistant", text, at, number)
    calls = fields.get("tool_calls", [])
    if not isinstance(calls, list):
        at.key("tool_calls").fail(f"expected a list, got {_describe(calls)}")
    for index, call in enumerate(calls):
        call_at = at.key("tool_calls").index(index)
        _block_type(call, call_at, ("function",), "tool call")
        call_fields = _record(call, call_at, "a tool call", ("id", "type", "function"))
        function_at = call_at.key("function")
        function = _record(
            call_fields["function"], function_at, "a function", ("name", "arguments")
        )
        arguments_at = function_at.key("arguments")
        arguments_text = _string(function["arguments"], arguments_at)
        arguments = _arguments_object(_parse_json(arguments_text, arguments_at), arguments_at)
        conversation.call(
            _string(call_fields["id"], call_at.key("id")),
            _string(function["name"], function_at.key("name")),
            arguments,
            call_at,
            number,
        )


def _openai_tool(message: object, at: _At, number: int, conversation: _Conversation) -> None:
    fields = _record(message, at, "a tool message", ("role", "tool_call_id", "content"), ("name",))
    name = None if "name" not in fields else _string(fields["name"], at.key("name"))
    content = "".join(_text_parts(fields["content"], at.key("content"), "content part"))
    call_id = _string(fields["tool_call_id"], at.key("tool_call_id"))
    conversation.result(call_id, content, False, at, name)


_MessageHandler = Callable[[object, _At, int, _Conversation], None]
_OPENAI_MESSAGES: dict[str, _MessageHandler] = {
    "system": _openai_text,
    "user": _openai_text,
    "assistant": _openai_assistant,
    "tool": _openai_tool,
}


# --- Anthropic Messages, one JSON object ---------------------------------------------------


def parse_anthropic(data: bytes) -> list[ImportedEntry]:
    """Read an Anthropic Messages conversation: ``{"system": ..., "messages": [...]}``.

    ``system`` (optional): a string or text blocks. Each message: ``role`` ``user`` or
    ``assistant``; ``content`` a string or blocks: ``text``; ``tool_use`` (assistant:
    ``id``, ``name``, ``input`` object); ``tool_result`` (user: ``tool_use_id``, optional
    ``content`` string or text blocks, optional ``is_error``). Raises
    :class:`TranscriptError` with a JSON path.
    """
    root = _At(None, "$")
    document = _record(
        _parse_json(bytes(data), root), root, "a conversation", ("messages",), ("system",)
    )
    conversation = _Conversation()
    if "system" in document:
        for text in _text_parts(document["system"], root.key("system"), "system block"):
            conversation.turn("system", text, root.key("system"), -1)
    messages = document["messages"]
    if not isinstance(messages, list):
        root.key("messages").fail(f"expected a list of messages, got {_describe(messages)}")
    for number, message in enumerate(messages):
        _anthropic_message(message, root.key("messages").index(number), number, conversation)
    return conversation.entries


_BLOCKS = {"user": ("text", "tool_result"), "assistant": ("text", "tool_use")}


def _anthropic_message(message: object, at: _At, number: int, conversation: _Conversation) -> None:
    fields = _record(message, at, "a message", ("role", "content"))
    role = fields["role"]
    if not isinstance(role, str) or role not in _BLOCKS:
        shown = repr(role) if isinstance(role, str) else _describe(role)
        at.key("role").fail(f"unknown role {shown}; expected user or assistant")
    content = fields["content"]
    if isinstance(content, str):
        conversation.turn(role, content, at.key("content"), number)
        return
    if not isinstance(content, list):
        at.key("content").fail(f"expected a string or a list of blocks, got {_describe(content)}")
    for index, block in enumerate(content):
        block_at = at.key("content").index(index)
        handler = _ANTHROPIC_BLOCKS[_block_type(block, block_at, _BLOCKS[role], f"{role} block")]
        handler(block, block_at, role, number, conversation)


def _text_block(
    block: object, at: _At, role: str, number: int, conversation: _Conversation
) -> None:
    fields = _record(block, at, "a text block", ("type", "text"))
    conversation.turn(role, _string(fields["text"], at.key("text")), at, number)


def _tool_use_block(
    block: object, at: _At, role: str, number: int, conversation: _Conversation
) -> None:
    fields = _record(block, at, "a tool_use block", ("type", "id", "name", "input"))
    call_id = _string(fields["id"], at.key("id"))
    name = _string(fields["name"], at.key("name"))
    conversation.call(
        call_id, name, _arguments_object(fields["input"], at.key("input")), at, number
    )


def _tool_result_block(
    block: object, at: _At, role: str, number: int, conversation: _Conversation
) -> None:
    fields = _record(
        block, at, "a tool_result block", ("type", "tool_use_id"), ("content", "is_error")
    )
    content = fields.get("content", "")
    text = "".join(_text_parts(content, at.key("content"), "content block"))
    is_error = fields.get("is_error", False)
    if not isinstance(is_error, bool):
        at.key("is_error").fail(f"expected a boolean, got {_describe(is_error)}")
    conversation.result(_string(fields["tool_use_id"], at.key("tool_use_id")), text, is_error, at)


_BlockHandler = Callable[[object, _At, str, int, _Conversation], None]
_ANTHROPIC_BLOCKS: dict[str, _BlockHandler] = {
    "text": _text_block,
    "tool_use": _tool_use_block,
    "tool_result": _tool_result_block,
}

FORMATS: dict[str, Callable[[bytes], list[ImportedEntry]]] = {
    "openai": parse_openai,
    "anthropic": parse_anthropic,
}
"""Transcript formats by the name the CLI's ``--format`` takes."""
