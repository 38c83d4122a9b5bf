"""How ledger entries, pins, stubs and summaries read in a projection (``specs/context.md``
section 3). Every function here is pure and O(size of what it renders).

Two texts per entry:

* :func:`entry_text` -- the entry's own words, what a summary may quote (checked lineage) and
  what a summarizer reads: a turn's or decision's text, a tool call's arguments as RFC 8785
  JSON (or its ``arguments_json`` as recorded), a tool result's content, a lifecycle body as
  RFC 8785 JSON, a pin's text, an unpin's reason, a compaction's summary lines joined by
  ``\\n``, nothing for a model call;
* :func:`tail_message` -- the message the entry becomes in the verbatim tail, or ``None`` for
  the kinds that never appear there themselves (pins, unpins, compactions, model calls; the
  fold renders pins and unpins with :func:`pin_message` and :func:`unpin_message`).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Final

from registre.context.jsontext import canonical_text
from registre.context.model import Message, SummaryLine, format_spans
from registre.context.tokens import TokenCounter
from registre.lifecycle.codec import KINDS as LIFECYCLE_KINDS
from registre.lifecycle.errors import LifecycleFormatError
from registre.lifecycle.model import PinnedItem

__all__ = [
    "CONTENT_KINDS",
    "CONTROL_KINDS",
    "ELISION_MARK",
    "MESSAGE_OVERHEAD_TOKENS",
    "MIRROR_KINDS",
    "elided_message",
    "entry_text",
    "message_of",
    "message_tokens",
    "pin_message",
    "stub_message",
    "summary_message",
    "tail_message",
    "unpin_message",
]

MESSAGE_OVERHEAD_TOKENS: Final = 4
"""Tokens charged per message for its framing (role, separators), on top of its texts."""

_OWN_CONTENT_KINDS: Final = ("turn", "tool.call", "tool.result", "decision")
_LIFECYCLE_CONTENT_KINDS: Final = tuple(
    kind for kind in LIFECYCLE_KINDS if kind not in ("context.pin", "context.unpin")
)
CONTENT_KINDS: Final = frozenset(_OWN_CONTENT_KINDS + _LIFECYCLE_CONTENT_KINDS)
"""Kinds that become a message of their own in the verbatim tail."""

MIRROR_KINDS: Final = frozenset(("transcript.entry", "compaction.imported"))
"""Kinds that mirror another framework's own transcript and compactions: on the record, never
in registre's context (no text, no message)."""

CONTROL_KINDS: Final = (
    frozenset(("context.pin", "context.unpin", "context.compaction", "model.call", "imported"))
    | MIRROR_KINDS
)
"""Kinds that change or record the context rather than feed it (``imported``: a part of an
imported transcript with no registre kind -- thinking, images, a source tool's own
compaction summary -- kept in the ledger, not sent to the model)."""


def entry_text(kind: str, body: Mapping[str, object]) -> str:
    """The entry's own words (module docstring). Raises
    :class:`~registre.lifecycle.errors.LifecycleFormatError` for an unknown kind or a body missing
    the field the text comes from."""
    if kind in ("turn", "decision"):
        return _string(body, "text")
    if kind == "tool.call":
        return _arguments_text(body)
    if kind == "tool.result":
        return _string(body, "content")
    if kind == "context.pin":
        return _string(_object(body, "request"), "text", "body.request")
    if kind == "context.unpin":
        return _string(_object(body, "request"), "reason", "body.request")
    if kind == "context.compaction":
        lines = body.get("summary")
        if not isinstance(lines, list):
            raise LifecycleFormatError("body.summary", "expected a list of summary lines")
        return "\n".join(
            _string(line, "text", f"body.summary[{index}]")
            for index, line in enumerate(lines)
            if isinstance(line, Mapping)
        )
    if kind == "model.call" or kind in MIRROR_KINDS:
        return ""
    if kind == "imported":
        text = body.get("text", "")
        return text if isinstance(text, str) else ""
    if kind in _LIFECYCLE_CONTENT_KINDS:
        return canonical_text(body, "body")
    raise LifecycleFormatError("kind", f"{kind!r} is not an entry kind the context knows")


def tail_message(kind: str, body: Mapping[str, object]) -> Message | None:
    """The verbatim message of an entry of a content kind; ``None`` for the control kinds.

    ``turn``: its role and text; ``tool.call``: ``assistant``, the arguments text, the tool
    name and call id; ``tool.result``: ``tool``, the content (prefixed ``[error] `` when
    ``is_error``), the tool name if recorded and the call id; ``decision``: ``system``,
    ``[decision] `` + text; lifecycle kinds: ``system``, ``[KIND] `` + the body as RFC 8785
    JSON.
    """
    if kind in CONTROL_KINDS:
        return None
    return message_of(kind, body, entry_text(kind, body))


def message_of(kind: str, body: Mapping[str, object], text: str) -> Message:
    """:func:`tail_message` of an entry of a content kind whose
    :func:`entry_text` is ``text`` (computed already: the fold keeps it too). Raises as
    tail_message does."""
    if kind == "turn":
        role = _string(body, "role")
        if role not in ("user", "assistant", "system"):
            raise LifecycleFormatError(
                "body.role", f"expected user, assistant or system, got {role!r}"
            )
        return Message(role, text)
    if kind == "tool.call":
        return Message("assistant", text, _string(body, "name"), _string(body, "call_id"))
    if kind == "tool.result":
        prefix = "[error] " if body.get("is_error") is True else ""
        return Message(
            "tool", prefix + text, _optional_string(body, "name"), _string(body, "call_id")
        )
    if kind == "decision":
        return Message("system", f"[decision] {text}")
    return Message("system", f"[{kind}] {text}")


def pin_message(pin: PinnedItem) -> Message:
    """``system``: ``[pinned KIND ID] TEXT`` -- the same words in the pins section and in the
    tail, so a pin is always carried verbatim."""
    return Message("system", f"[pinned {pin.kind} {pin.id}] {pin.text}")


def unpin_message(pin_id: str, reason: str) -> Message:
    """``system``: ``[unpinned ID] REASON``."""
    return Message("system", f"[unpinned {pin_id}] {reason}")


def stub_message(seq: int, body: Mapping[str, object]) -> Message:
    """The one-line stand-in of a bulky tool result: ``tool``, ``[output elided: N bytes;
    ledger entry SEQ]`` (N = UTF-8 bytes of the content), with the result's name and call id,
    so the call keeps its answer and the pointer says where the output is."""
    size = len(_string(body, "content").encode("utf-8", "surrogatepass"))
    return Message(
        "tool",
        f"[output elided: {size} bytes; ledger entry {seq}]",
        _optional_string(body, "name"),
        _string(body, "call_id"),
    )


ELISION_MARK: Final = "\u2026"
"""The line that stands for the characters an elided tool result leaves out (``…``)."""


def elided_message(
    seq: int,
    body: Mapping[str, object],
    head_chars: int,
    tail_chars: int,
    kind: str = "tool.result",
) -> Message:
    """The head-and-tail rendering of a bulky entry, with the role, name and call id of its
    own message. A tool result's content is::

        [output elided: N bytes, showing the first A and last B characters; ledger entry SEQ]
        HEAD
        …
        TAIL

    N is the UTF-8 bytes of the content; HEAD its first A characters (Unicode code points)
    and TAIL its last B, each line left out when empty; ``[error] `` comes first when
    ``is_error``. A ``turn`` reads ``[turn elided: …]`` over its text, a ``tool.call``
    ``[arguments elided: …]`` over its arguments text (``specs/context.md`` section 7).
    Raises ValueError unless ``0 <= A``, ``0 <= B`` and ``A + B`` is less than the text's
    length (an elision leaves something out)."""
    if kind == "tool.result":
        content, what = _string(body, "content"), "output"
    elif kind in ("turn", "tool.call"):
        content, what = entry_text(kind, body), "turn" if kind == "turn" else "arguments"
    else:
        raise ValueError(f"entry {seq} is a {kind}; only turns, tool calls and results elide")
    if head_chars < 0 or tail_chars < 0 or head_chars + tail_chars >= len(content):
        raise ValueError(
            f"an elision of entry {seq} shows {head_chars} + {tail_chars} of its "
            f"{len(content)} characters; it must leave some out"
        )
    size = len(content.encode("utf-8", "surrogatepass"))
    prefix = "[error] " if kind == "tool.result" and body.get("is_error") is True else ""
    parts = [
        f"{prefix}[{what} elided: {size} bytes, showing the first {head_chars} and last "
        f"{tail_chars} characters; ledger entry {seq}]"
    ]
    if head_chars:
        parts.append(content[:head_chars])
    parts.append(ELISION_MARK)
    if tail_chars:
        parts.append(content[len(content) - tail_chars :])
    text = "\n".join(parts)
    if kind == "turn":
        return message_of(kind, body, text)
    if kind == "tool.call":
        return Message("assistant", text, _string(body, "name"), _string(body, "call_id"))
    return Message("tool", text, _optional_string(body, "name"), _string(body, "call_id"))


def summary_message(
    compaction_seq: int, first: int, last: int, lines: Iterable[SummaryLine]
) -> Message:
    """The message of one live summary: ``system``, a header
    ``[summary of ledger entries FIRST-LAST, compaction SEQ]`` then, per line,
    ``\\n- SECTION: TEXT (seq SPANS)`` with spans written ``2-5, 12``."""
    parts = [f"[summary of ledger entries {first}-{last}, compaction {compaction_seq}]"]
    parts.extend(
        f"\n- {line.section}: {line.text} (seq {format_spans(line.pointers)})" for line in lines
    )
    return Message("system", "".join(parts))


def message_tokens(message: Message, counter: TokenCounter) -> int:
    """Tokens a message takes: :data:`MESSAGE_OVERHEAD_TOKENS` + its content, name and call
    id as counted by ``counter``."""
    total = MESSAGE_OVERHEAD_TOKENS + counter.count(message.content)
    if message.name is not None:
        total += counter.count(message.name)
    if message.call_id is not None:
        total += counter.count(message.call_id)
    return total


# --- reading body fields -------------------------------------------------------------------


def _string(body: object, key: str, path: str = "body") -> str:
    value = body.get(key) if isinstance(body, Mapping) else None
    if not isinstance(value, str):
        raise LifecycleFormatError(f"{path}.{key}", "expected a string")
    return value


def _optional_string(body: Mapping[str, object], key: str) -> str | None:
    return _string(body, key) if key in body else None


def _object(body: Mapping[str, object], key: str) -> Mapping[str, object]:
    value = body.get(key)
    if not isinstance(value, Mapping):
        raise LifecycleFormatError(f"body.{key}", "expected an object")
    return value


def _arguments_text(body: Mapping[str, object]) -> str:
    if "arguments_json" in body:
        return _string(body, "arguments_json")
    arguments = body.get("arguments")
    if not isinstance(arguments, Mapping):
        raise LifecycleFormatError("body.arguments", "expected an object")
    return canonical_text(arguments, "body.arguments")
