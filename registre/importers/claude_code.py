"""Claude Code session files (``claude-code``): ``~/.claude/projects/<project>/<session>.jsonl``.

One JSON record a line. Every record is one source message, kept verbatim but for the leaves
its entries carry (``uuid``, ``parentUuid``, ``isSidechain``, ``sessionId``, ``timestamp``,
``toolUseResult``, ... all stay in ``source``):

* ``user`` / ``assistant`` -> the Anthropic blocks of ``message.content``
  (:mod:`~registre.importers.anthropic`);
* a ``user`` record with ``isCompactSummary`` -> ``imported`` ``compact_summary`` (the summary
  Claude Code wrote when it compacted; never presented as a registre compaction);
* ``system`` with ``subtype`` ``compact_boundary`` -> ``imported`` ``compact_boundary`` (its
  ``compactMetadata`` kept); other ``system`` records -> ``imported`` ``system``;
* ``summary`` -> ``imported`` ``summary`` (its text); any other record type (file history
  snapshots, queue operations, ...) -> ``imported`` of that type.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from registre.importers.anthropic import anthropic_content
from registre.importers.core import At, Conversation, ImportedEntry, describe

__all__ = ["parse_claude_code_values", "sniff"]


def parse_claude_code_values(
    values: Iterator[tuple[Any, At]], conversation: Conversation
) -> Iterator[ImportedEntry]:
    """Entries of the records of a Claude Code session."""
    for value, at in values:
        message = conversation.message(value, at)
        record = message.original
        kind = record.get("type")
        if not isinstance(kind, str):
            at.key("type").fail(f"expected the record's type (a string), got {describe(kind)}")
        inner = record.get("message")
        if kind in ("user", "assistant") and isinstance(inner, dict):
            content = inner.get("content")
            role = inner.get("role", kind)
            if role not in ("user", "assistant"):
                at.key("message").key("role").fail(f"expected user or assistant, got {role!r}")
            if record.get("isCompactSummary") is True:
                text = content if isinstance(content, str) else _joined(content)
                fill = ("message", "content") if isinstance(content, str) else None
                message.imported("compact_summary", role="user", text=text, fill=fill)
            else:
                anthropic_content(message, str(role), content, ("message", "content"), at)
        elif kind == "summary":
            summary = record.get("summary")
            message.imported(
                "summary", text=summary if isinstance(summary, str) else None, fill=("summary",)
            )
        elif kind == "system":
            what = "compact_boundary" if record.get("subtype") == "compact_boundary" else "system"
            said = record.get("content")
            message.imported(
                what, role="system", text=said if isinstance(said, str) else None, fill=("content",)
            )
        else:
            message.imported(kind)
        yield from message.end()


def _joined(content: object) -> str:
    if not isinstance(content, list):
        return ""
    return "".join(str(block.get("text", "")) for block in content if isinstance(block, dict))


def sniff(value: dict[str, Any]) -> str | None:
    """Why ``value``, a file's first object, is a Claude Code session record; None if it is
    not."""
    kind = value.get("type")
    if isinstance(kind, str) and ("uuid" in value or "sessionId" in value or "leafUuid" in value):
        return f"a Claude Code session record of type {kind!r}"
    return None
