"""The core every transcript importer shares: places, errors, entries, lossless messages.

An importer reads a file as a sequence of *source messages* (a JSON object each: a chat
message, a session record, an event) and hands each to :meth:`Conversation.message`. The
format's code then says which entries the message makes (``turn``, ``tool.call``,
``tool.result``, or ``imported`` for everything registre has no entry kind of its own for:
thinking, images, reasoning items, compaction records, ...) and, for each entry, which
*leaves* of the message it supplies (``fill``: for each body field, the RFC 6901 JSON Pointer
of the leaf of the message it holds). :meth:`SourceMessage.end` then keeps **the rest of the
message verbatim** as the ``source`` member of the message's first entry (``message``: the
message with the filled leaves removed, or ``message_json``, its RFC 8785 text, when it
holds non-integer numbers), rebuilds the message from the entries (:func:`rebuild_message`)
and checks it equals the original; if it does not, the whole message is kept instead, so
import is lossless by check, not by hope. ``specs/entries.md`` section 6 is the normative text.

Every body is validated with :func:`registre.attest.entries.bodies.validate_body` before it is
handed
on; anything that cannot be recorded raises :class:`TranscriptError` naming the line or
JSON path and why. Nothing else is raised for any input.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple, NoReturn

from registre.attest.canonical_json import MAX_SAFE_INTEGER, canonical_bytes, parse_canonical
from registre.attest.entries import actor_name, check_actor_name, validate_body
from registre.errors import MalformedError
from registre.importers.pairing import Pairing

__all__ = [
    "At",
    "Conversation",
    "ImportedEntry",
    "SourceMessage",
    "TranscriptError",
    "describe",
    "rebuild_message",
]

Path = tuple[str | int, ...]


class ImportedEntry(NamedTuple):
    """One entry to append: unpacks as ``(kind, body, actor)``."""

    kind: str
    body: dict[str, Any]
    actor: str


class TranscriptError(MalformedError):
    """A transcript refused before anything is imported.

    ``where`` is ``"line N"`` (JSONL, 1-based, possibly followed by a field path), ``"item N"``
    (a JSON array) or a JSON path; ``line`` (also ``position``) is the line number for JSONL
    input and ``None`` otherwise; ``reason`` says what is wrong.
    """

    def __init__(self, where: str, reason: str, line: int | None = None) -> None:
        self.where = where
        self.reason = reason
        self.line = line
        super().__init__(f"{where}: {reason}")
        self.position = line


@dataclass(frozen=True)
class At:
    """A place in the file: a JSONL line number and/or a field path inside it."""

    line: int | None
    path: str

    def __str__(self) -> str:
        if self.line is None:
            return self.path
        return f"line {self.line}: {self.path}" if self.path else f"line {self.line}"

    def key(self, name: str) -> At:
        return At(self.line, f"{self.path}.{name}" if self.path else name)

    def index(self, number: int) -> At:
        return At(self.line, f"{self.path}[{number}]")

    def fail(self, reason: str) -> NoReturn:
        raise TranscriptError(str(self), reason, self.line)


def describe(value: object) -> str:
    """How a JSON value's type reads in a message: 'an object', 'a list', 'null', ..."""
    if isinstance(value, bool):
        return "a boolean"
    names = {dict: "an object", list: "a list", str: "a string", int: "an integer"}
    return names.get(type(value), "a number" if isinstance(value, float) else "null")


# --- JSON values in bodies --------------------------------------------------------------


def _holds_fraction(value: object) -> bool:
    """Whether a parsed JSON value holds a number that is not a safe integer."""
    if isinstance(value, float):
        return not (value.is_integer() and abs(value) <= MAX_SAFE_INTEGER)
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


def _copy(value: Any) -> Any:
    if isinstance(value, dict):
        return {key: _copy(item) for key, item in value.items()}
    if isinstance(value, list):
        return [_copy(item) for item in value]
    return value


def json_member(value: Any, name: str) -> dict[str, Any]:
    """``{name: value}`` if ``value`` holds only integers, else ``{name + "_json": its RFC 8785
    text}`` (entry bodies hold no floats, specs/entries.md section 4)."""
    if _holds_fraction(value):
        return {f"{name}_json": canonical_bytes(value).decode("utf-8")}
    return {name: _integral(value)}


def arguments_of(body: Mapping[str, Any]) -> Any:
    """A ``tool.call`` body's arguments as the parsed object (from ``arguments_json`` too)."""
    if "arguments_json" in body:
        return parse_canonical(str(body["arguments_json"]).encode("utf-8"))
    return body["arguments"]


def arguments_text(body: Mapping[str, Any]) -> str:
    """The arguments as OpenAI writes them: ``json.dumps`` with its default separators."""
    return json.dumps(arguments_of(body), ensure_ascii=False)


# --- rebuilding a message from its entries ------------------------------------------------


def _fill_value(body: Mapping[str, Any], what: str) -> Any:
    if what == "input":
        return arguments_of(body)
    if what == "arguments":
        return arguments_text(body)
    return body[what]


def pointer(path: Sequence[str | int]) -> str:
    """The RFC 6901 JSON Pointer of ``path`` (``("content", 1, "text")`` -> ``/content/1/text``)."""
    return "".join("/" + str(step).replace("~", "~0").replace("/", "~1") for step in path)


def pointer_path(text: str, target: Any) -> list[str | int]:
    """The steps of JSON Pointer ``text`` inside ``target`` (list steps as integers)."""
    steps: list[str | int] = []
    for raw in text.split("/")[1:]:
        step = raw.replace("~1", "/").replace("~0", "~")
        if isinstance(target, list):
            steps.append(int(step))
            target = target[int(step)] if int(step) < len(target) else None
        else:
            steps.append(step)
            target = target.get(step) if isinstance(target, dict) else None
    return steps


def _put(target: Any, path: Sequence[str | int], value: Any) -> None:
    for step in path[:-1]:
        target = target[step]
    last = path[-1]
    if isinstance(target, list) and isinstance(last, int) and last == len(target):
        target.append(value)
    else:
        target[last] = value


def _remove(target: Any, path: Sequence[str | int]) -> None:
    for step in path[:-1]:
        target = target[step]
    del target[path[-1]]


def skeleton_of(source: Mapping[str, Any]) -> dict[str, Any] | None:
    """The verbatim rest of the message a ``source`` member starts (``None``: it starts none)."""
    if "message" in source:
        return _copy(source["message"])  # type: ignore[no-any-return]
    if "message_json" in source:
        value = parse_canonical(str(source["message_json"]).encode("utf-8"))
        return value if isinstance(value, dict) else None
    return None


def rebuild_message(skeleton: dict[str, Any], bodies: Sequence[Mapping[str, Any]]) -> Any:
    """The source message again: ``skeleton`` with every entry's ``fill`` leaves put back.

    Raises KeyError/IndexError/TypeError/ValueError for entries that do not fit the skeleton.
    """
    message = _copy(skeleton)
    for body in bodies:
        source = body.get("source", {})
        for what, text in source.get("fill", {}).items():
            _put(message, pointer_path(text, message), _fill_value(body, what))
    return message


# --- the conversation ------------------------------------------------------------------


@dataclass
class SourceMessage:
    """One source message being turned into entries (made by :meth:`Conversation.message`)."""

    conversation: Conversation
    original: dict[str, Any]
    at: At
    fmt: str
    entries: list[ImportedEntry] = field(default_factory=list)
    _fills: dict[int, tuple[tuple[Path, str], ...]] = field(default_factory=dict)

    def turn(self, role: str, text: str, fill: Path | None = None) -> None:
        """A ``turn`` of ``role`` (user, assistant or system) saying ``text`` (nothing when
        empty: the text stays in the kept message); ``fill``: where the text sits."""
        if text:
            fills = () if fill is None else ((fill, "text"),)
            self._add("turn", {"role": role, "text": text}, role, fills)

    def call(
        self,
        call_id: str,
        name: str,
        arguments: object,
        fills: Sequence[tuple[Path, str]] = (),
        at: At | None = None,
    ) -> None:
        """A ``tool.call``; ``arguments`` must be an object. A reused id gets ``call_ref``."""
        where = at or self.at
        if not isinstance(arguments, dict):
            where.fail(f"tool arguments must be a JSON object, got {describe(arguments)}")
        body: dict[str, Any] = {
            "call_id": call_id,
            "name": name,
            **json_member(arguments, "arguments"),
        }
        ref = self.conversation.pairing.call(call_id, name, str(where))
        if ref is not None:
            body["call_ref"] = ref
        self._add("tool.call", body, "assistant", fills)

    def result(
        self,
        call_id: str,
        content: str,
        fills: Sequence[tuple[Path, str]] = (),
        *,
        is_error: bool = False,
        name: str | None = None,
        at: At | None = None,
    ) -> None:
        """A ``tool.result`` answering the most recent unanswered call with ``call_id``, in
        this file or earlier in the thread; refused if there is none."""
        where = at or self.at
        paired = self.conversation.pairing.result(call_id)
        if paired is None:
            try:
                where.fail(self.conversation.pairing.why_unpaired(call_id))
            except TranscriptError as error:
                raise error.with_hint(
                    "a transcript that starts with the results of calls made in another file "
                    "imports after that file (in the same run, or an earlier import)"
                ) from None
        ref, call_name = paired
        if name is not None and name != call_name:
            where.fail(f"result names tool {name!r} but call {call_id!r} was to {call_name!r}")
        body: dict[str, Any] = {"call_id": call_id, "content": content, "name": call_name}
        if ref is not None:
            body["call_ref"] = ref
        if is_error:
            body["is_error"] = True
        self._add("tool.result", body, actor_name(f"tool:{call_name}"), fills)

    def imported(
        self,
        what: str,
        *,
        role: str | None = None,
        text: str | None = None,
        fill: Path | None = None,
        data: str | None = None,
        at: At | None = None,
    ) -> None:
        """An ``imported`` entry: a part of the source with no registre kind of its own
        (``what``: its type, e.g. ``thinking``, ``image``, ``summary``). ``data``: base64
        bytes it carries (kept in the message; their SHA-256 is signed in ``sha256``)."""
        where = at or self.at
        body: dict[str, Any] = {"type": what}
        if role is not None:
            body["role"] = role
        fills: tuple[tuple[Path, str], ...] = ()
        if text:
            body["text"] = text
            if fill is not None:
                fills = ((fill, "text"),)
        if data is not None:
            try:
                raw = base64.b64decode(data, validate=True)
            except (binascii.Error, ValueError):
                where.fail("data is not base64; it cannot be addressed by its SHA-256")
            body["sha256"] = hashlib.sha256(raw).hexdigest()
        actor = role if role in ("user", "assistant", "system") else f"import:{self.fmt}"
        self._add("imported", body, actor, fills)

    def _add(
        self,
        kind: str,
        body: dict[str, Any],
        actor: str,
        fills: Sequence[tuple[Path, str]] | None,
    ) -> None:
        source: dict[str, Any] = {"format": self.fmt}
        if fills:
            source["fill"] = {what: pointer(path) for path, what in fills}
        body["source"] = source
        self.entries.append(ImportedEntry(kind, body, actor))
        self._fills[id(body)] = tuple(fills or ())

    def end(self) -> list[ImportedEntry]:
        """The message's entries, the first carrying the kept rest of the message; each body
        validated. A message that made no entry becomes one ``imported`` entry of type
        ``message``."""
        if not self.entries:
            self.imported("message", role=_role_of(self.original))
        skeleton = _copy(self.original)
        fills = [path for entry in self.entries for path, _ in self._fills[id(entry.body)]]
        try:
            for path in sorted(fills, key=_removal_order, reverse=True):
                _remove(skeleton, path)
            exact = rebuild_message(skeleton, [e.body for e in self.entries]) == self.original
        except (KeyError, IndexError, TypeError, ValueError, MalformedError):
            exact = False
        if not exact:  # keep the whole message: lossless whatever the format code did
            skeleton = _copy(self.original)
            for entry in self.entries:
                entry.body["source"].pop("fill", None)
        self.entries[0].body["source"].update(json_member(skeleton, "message"))
        if not self.conversation.validate:
            return self.entries
        for entry in self.entries:
            try:
                validate_body(entry.kind, entry.body)
                check_actor_name(entry.actor)
            except MalformedError as exc:
                self.at.fail(f"cannot be recorded as a {entry.kind} entry: {exc}")
        return self.entries


def _removal_order(path: Sequence[str | int]) -> tuple[Any, ...]:
    """Remove list items from the back so earlier indexes stay valid."""
    return tuple((0, step) if isinstance(step, int) else (1, step) for step in path)


def _role_of(message: Mapping[str, Any]) -> str | None:
    role = message.get("role")
    if role in ("user", "assistant", "system"):
        return str(role)
    inner = message.get("message")
    if isinstance(inner, dict) and inner.get("role") in ("user", "assistant", "system"):
        return str(inner["role"])
    return None


class Conversation:
    """Turns source messages into entries, pairing tool results with their calls.

    ``pairing`` carries the calls of the thread before this import
    (:meth:`Pairing.from_entries`), so a file may start with the result of a call an earlier
    import issued. ``validate=False`` skips the body check, for the second reading of a file
    already checked whole (the append checks every body again anyway).
    """

    def __init__(self, fmt: str, pairing: Pairing | None = None, *, validate: bool = True) -> None:
        self.fmt = fmt
        self.pairing = pairing if pairing is not None else Pairing()
        self.validate = validate

    def message(self, original: object, at: At, fmt: str | None = None) -> SourceMessage:
        """Start a source message (an object) at ``at``; ``fmt`` overrides the format name."""
        if not isinstance(original, dict):
            at.fail(f"expected a message (an object), got {describe(original)}")
        return SourceMessage(self, original, at, fmt or self.fmt)


def entries_of(messages: Iterator[SourceMessage]) -> Iterator[ImportedEntry]:
    """Every entry of every message, in order."""
    for message in messages:
        yield from message.end()
