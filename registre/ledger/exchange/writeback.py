"""A thread written back as a provider transcript: OpenAI chat JSONL, Anthropic Messages
JSON, or a Claude Code session JSONL
(``registre transcript THREAD --format openai|anthropic|claude-code``).

Entries imported from the same format are written back **exactly**: the message kept in the
first entry's ``source`` with every entry's ``fill`` leaves put back
(:func:`registre.importers.rebuild_message`), so the JSON equals the
original message for message (Anthropic: the document's members too). Every other entry is
converted: ``turn`` -> a text message or block (Claude Code: a ``system`` turn is a
``system`` record, which imports back as ``imported``); ``tool.call`` -> a tool call
(consecutive calls into one assistant message); ``tool.result`` -> a tool message (OpenAI
has no error flag: ``is_error`` is lost there) or a ``tool_result`` block. Entries with no
counterpart in the target (``imported`` parts from another format, lifecycle events,
compactions, model calls) are left out and counted in :attr:`Writeback.skipped`.
Re-importing the output gives identical bodies for the exact messages, and the same bodies
but for ``source`` for converted ones.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from registre.importers import rebuild_message, skeleton_of
from registre.importers.core import arguments_of, arguments_text
from registre.kinds import TOOL_CALL, TOOL_RESULT, TURN

__all__ = ["WRITEBACK_FORMATS", "Writeback", "dump_line", "write_chunks"]

WRITEBACK_FORMATS: Final = ("openai", "anthropic", "claude-code")
_NAMESPACE: Final = uuid.UUID("8f7f0c52-4a8a-4c55-9a3c-7d1a9e0b7a11")


@dataclass
class Writeback:
    """Turns ``(kind, body)`` entries into messages of ``fmt``; ``thread`` names the session."""

    fmt: str
    thread: str = "thread"
    skipped: int = 0
    header: dict[str, Any] = field(default_factory=dict)
    _generic: list[dict[str, Any]] = field(default_factory=list)
    _parent: str | None = None

    def __post_init__(self) -> None:
        if self.fmt not in WRITEBACK_FORMATS:
            raise ValueError(f"format must be one of {', '.join(WRITEBACK_FORMATS)}")

    def messages(
        self, entries: Iterable[tuple[str, Mapping[str, Any]]]
    ) -> Iterator[dict[str, Any]]:
        """The messages (Claude Code: records) in order; Anthropic's document members other
        than ``messages`` collect in :attr:`header`."""
        group: list[Mapping[str, Any]] = []
        skeleton: dict[str, Any] | None = None
        for seq, (kind, body) in enumerate(entries):
            source = body.get("source")
            if isinstance(source, Mapping) and source.get("format") == self._source_format():
                start = skeleton_of(source)
                if start is not None:
                    if skeleton is not None:
                        yield from self._exact(skeleton, group)
                    skeleton, group = start, [body]
                    continue
                if skeleton is not None:
                    group.append(body)
                    continue
            if skeleton is not None:
                yield from self._exact(skeleton, group)
                skeleton, group = None, []
            yield from self._convert(seq, kind, body)
        if skeleton is not None:
            yield from self._exact(skeleton, group)
        yield from self._flush()

    def _source_format(self) -> str:
        return self.fmt

    def _exact(
        self, skeleton: dict[str, Any], group: list[Mapping[str, Any]]
    ) -> Iterator[dict[str, Any]]:
        yield from self._flush()
        message = rebuild_message(skeleton, group)
        if self.fmt == "anthropic" and "role" not in message:
            self.header.update(message)
            return
        if self.fmt == "claude-code" and isinstance(message.get("uuid"), str):
            self._parent = message["uuid"]
        yield message

    # --- converting entries of other origins ----------------------------------------------

    def _convert(self, seq: int, kind: str, body: Mapping[str, Any]) -> Iterator[dict[str, Any]]:
        if kind == TURN:
            role, text = str(body["role"]), str(body["text"])
            if self.fmt == "openai":
                yield from self._flush()
                yield {"role": role, "content": text}
            elif role == "system" and not self._generic and self.fmt == "anthropic":
                self.header.setdefault("system", []).append({"type": "text", "text": text})
            elif role == "system" and self.fmt == "claude-code":
                yield from self._flush()
                yield self._record(seq, {"type": "system", "content": text})
            else:
                yield from self._block(
                    seq, "user" if role == "system" else role, {"type": "text", "text": text}
                )
        elif kind == TOOL_CALL:
            if self.fmt == "openai":
                call = {
                    "id": body["call_id"],
                    "type": "function",
                    "function": {"name": body["name"], "arguments": arguments_text(body)},
                }
                last = self._generic[-1] if self._generic else None
                if last is None or last.get("role") != "assistant":
                    yield from self._flush()
                    last = {"role": "assistant", "content": None, "tool_calls": []}
                    self._generic.append(last)
                last["tool_calls"].append(call)
            else:
                block = {
                    "type": "tool_use",
                    "id": body["call_id"],
                    "name": body["name"],
                    "input": arguments_of(body),
                }
                yield from self._block(seq, "assistant", block)
        elif kind == TOOL_RESULT:
            if self.fmt == "openai":
                yield from self._flush()
                yield {"role": "tool", "tool_call_id": body["call_id"], "content": body["content"]}
            else:
                block = {
                    "type": "tool_result",
                    "tool_use_id": body["call_id"],
                    "content": body["content"],
                }
                if body.get("is_error") is True:
                    block["is_error"] = True
                yield from self._block(seq, "user", block)
        else:
            self.skipped += 1

    def _block(self, seq: int, role: str, block: dict[str, Any]) -> Iterator[dict[str, Any]]:
        last = self._generic[-1] if self._generic else None
        if last is not None and _role(last) == role:
            _content(last).append(block)
            return
        yield from self._flush()
        message: dict[str, Any] = {"role": role, "content": [block]}
        if self.fmt == "claude-code":
            message = self._record(seq, {"type": role, "message": message})
        self._generic.append(message)

    def _record(self, seq: int, record: dict[str, Any]) -> dict[str, Any]:
        """A Claude Code record: ``record`` with a uuid (derived from the thread and seq),
        the previous record's as ``parentUuid``, not a sidechain."""
        record_id = str(uuid.uuid5(_NAMESPACE, f"{self.thread}/{seq}"))
        record.update(
            uuid=record_id, parentUuid=self._parent, isSidechain=False, sessionId=self.thread
        )
        self._parent = record_id
        return record

    def _flush(self) -> Iterator[dict[str, Any]]:
        yield from self._generic
        self._generic = []


def _role(message: Mapping[str, Any]) -> str | None:
    inner = message.get("message", message)
    return inner.get("role") if isinstance(inner, Mapping) else None


def _content(message: dict[str, Any]) -> list[Any]:
    inner = message.get("message", message)
    content = inner["content"]
    assert isinstance(content, list)
    return content


def dump_line(message: Mapping[str, Any]) -> str:
    """One JSONL line."""
    return json.dumps(message, ensure_ascii=False) + "\n"


def write_chunks(
    entries: Iterable[tuple[str, Mapping[str, Any]]], fmt: str, thread: str = "thread"
) -> Iterator[str]:
    """The transcript file's text in chunks: JSONL (one message or record a line) for
    ``openai`` and ``claude-code``; one JSON document ``{..., "messages": [...]}`` for
    ``anthropic`` (held in memory to put the document's members first)."""
    writer = Writeback(fmt, thread)
    if fmt != "anthropic":
        for message in writer.messages(entries):
            yield dump_line(message)
        return
    messages = list(writer.messages(entries))
    header = dict(writer.header)
    if (
        isinstance(header.get("system"), list)
        and all(
            isinstance(block, dict) and set(block) == {"type", "text"} for block in header["system"]
        )
        and len(header["system"]) == 1
    ):
        header["system"] = header["system"][0]["text"]
    yield json.dumps({**header, "messages": messages}, ensure_ascii=False, indent=1) + "\n"
