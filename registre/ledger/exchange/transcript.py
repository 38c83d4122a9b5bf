"""A thread's whole ledger as a readable transcript: a chat view in plain text (the default),
Markdown or HTML; and the one line of an entry that ``registre log`` prints.

Every entry is shown, in seq order, as a block: turns and decisions as messages, tool calls
and results as code, pins and unpins highlighted, lifecycle requests with what the rules made
of them (references registered, evidence admitted, superseded or retracted, conclusions and
the ones a change left stale, every refusal with its reason), model calls with the digest of
the context they were sent, and each ``context.compaction`` as a marker between the messages:
the range it folded, the results it stubbed, its summary lines with their pointers.
``imported`` entries (thinking, images, a source tool's own compaction) show their type, the
format they came from, their text and the SHA-256 of the bytes they carry.

``chat`` is the conversation as a terminal shows it: one block per entry, headed ``#SEQ``
and what it is (``#12 user``, ``#13 tool call sql (c1)``, ``#20 evidence proposed``) with its
actor and time, its text indented below; compactions between rules. :func:`entry_line` is
the same entry on one line, its text first (newlines as ``⏎``), cut only past a width.

The transcript is for reading; the ledger stays the record. Entries are read through
:meth:`registre.ledger.thread.Thread.entries` (every signature checked) and rendered one at a time,
so memory does not grow with the thread. All entry text is escaped: in HTML every ``<``,
``>``, ``&`` and quote (nothing in a transcript runs as markup or script); in Markdown the
HTML-special characters too, and code is fenced with more backticks than it contains.
"""

from __future__ import annotations

import html
import re
from collections.abc import Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from registre.attest.entries import Entry
from registre.context import entry_text
from registre.context.model import format_spans
from registre.kinds import (
    CONTEXT_COMPACTION,
    DECISION,
    IMPORTED,
    MODEL_CALL,
    TOOL_CALL,
    TOOL_RESULT,
    TURN,
)
from registre.lifecycle import (
    Accepted,
    ComputeRequest,
    ConclusionReviseRequest,
    EvidenceReviseRequest,
    FinalRequest,
    LifecycleFormatError,
    PinRequest,
    ReadOutcome,
    ReadRequest,
    Registered,
    Rejected,
    Revised,
    UnpinRequest,
    UpsertOutcome,
    UpsertRequest,
    parse_body,
)

if TYPE_CHECKING:
    from registre.ledger.thread import Thread

__all__ = ["FORMATS", "LOG_WIDTH", "Block", "describe", "entry_line", "render_transcript"]

FORMATS: Final = ("chat", "md", "html")
"""The transcript formats; the first, ``chat``, is the default of ``registre transcript``."""
LOG_WIDTH: Final = 2000
"""Characters of an entry's text :func:`entry_line` shows by default (``registre log``)."""
_BACKTICKS: Final = re.compile(r"`+")
_CSS: Final = """body{font-family:system-ui,sans-serif;max-width:60rem;margin:2rem auto}
.entry{border-left:3px solid #ccc;margin:.8rem 0;padding:.2rem .8rem}
.title{font-weight:600}.meta{color:#666;font-size:.85em}
.tool{border-color:#8aa}.pin{border-color:#d90;background:#fff8e6}
.evidence{border-color:#393;background:#f0fff0}.record{border-color:#999;color:#555}
.compaction{border:2px dashed #66c;background:#f3f3ff}
.refused{border-color:#c2410c;background:#fff1eb}
pre{white-space:pre-wrap;background:#f6f6f6;padding:.5rem}"""


@dataclass(frozen=True)
class Block:
    """One entry as the transcript shows it. ``style``: ``message``, ``tool``, ``pin``,
    ``evidence``, ``compaction`` or ``record``; ``code`` is shown preformatted; ``items`` as
    a list; ``refused``: a lifecycle request the rules refused, wholly or in part (a pin, a
    reference, an evidence statement, a revision, a compute or a final)."""

    seq: int
    style: str
    title: str
    meta: str
    text: str = ""
    code: str | None = None
    items: tuple[str, ...] = ()
    refused: bool = False


def render_transcript(thread: Thread, fmt: str) -> Iterator[str]:
    """The transcript of ``thread`` in ``fmt`` (``chat``, ``md`` or ``html``), as chunks of
    text to write in order. ValueError for another format (the CLI offers only these)."""
    if fmt not in FORMATS:
        raise ValueError(f"format must be one of {', '.join(FORMATS)}, not {fmt!r}")
    head = thread.head()
    title = f"Transcript of thread {thread.id}"
    about = f"origin {thread.origin}, {head.size} entries"
    if fmt == "chat":
        yield f"{title} ({about})\n"
        for entry in thread.entries():
            yield _chat(describe(entry), entry)
        return
    if fmt == "md":
        yield f"# {_md_text(title)}\n\n_{_md_text(about)}_\n"
        for entry in thread.entries():
            yield _markdown(describe(entry))
        return
    yield (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f"<title>{html.escape(title)}</title><style>{_CSS}</style></head><body>\n"
        f'<h1>{html.escape(title)}</h1>\n<p class="meta">{html.escape(about)}</p>\n'
    )
    for entry in thread.entries():
        yield _html(describe(entry))
    yield "</body></html>\n"


# --- what each entry says -------------------------------------------------------------------


def describe(entry: Entry) -> Block:
    """The block showing ``entry`` (module docstring)."""
    kind, body, seq = entry.kind, entry.body, entry.seq
    meta = f"{kind} · {entry.actor} · {entry.time}"
    if kind == TURN:
        return Block(seq, "message", f"#{seq} {body['role']}", meta, str(body["text"]))
    if kind == DECISION:
        return Block(seq, "message", f"#{seq} decision", meta, str(body["text"]))
    if kind in (TOOL_CALL, TOOL_RESULT):
        return _tool(entry, meta)
    if kind == CONTEXT_COMPACTION:
        return _compaction(entry, meta)
    if kind == IMPORTED:
        source = body.get("source", {})
        title = f"#{seq} imported {body['type']} (from {source.get('format', '?')})"
        digest = f" · sha256 {body['sha256']}" if "sha256" in body else ""
        return Block(seq, "record", title, meta + digest, str(body.get("text", "")))
    if kind == MODEL_CALL:
        title = f"#{seq} model call: {body['model']}"
        meta += (
            f" · context of entries 0-{body['at_seq']}, budget {body['budget_tokens']} tokens "
            f"({body['token_counter']}), projection sha256 {body['projection_sha256']}"
        )
        return Block(seq, "record", title, meta)
    return _lifecycle(entry, meta)


def _tool(entry: Entry, meta: str) -> Block:
    body, seq = entry.body, entry.seq
    name = f" {body['name']}" if "name" in body else ""
    if entry.kind == TOOL_CALL:
        title = f"#{seq} tool call{name} ({body['call_id']})"
    else:
        error = " — error" if body.get("is_error") is True else ""
        title = f"#{seq} tool result{name} ({body['call_id']}){error}"
    return Block(seq, "tool", title, meta, code=entry_text(entry.kind, body))


def _compaction(entry: Entry, meta: str) -> Block:
    body, seq = entry.body, entry.seq
    parts = []
    if "folded" in body:
        parts.append(f"folded entries {body['folded']['from']}-{body['folded']['to']}")
    if body.get("stubbed"):
        parts.append("stubbed " + ", ".join(str(s) for s in body["stubbed"]))
    summarizer = body["summarizer"]
    meta += (
        f" · summarizer {summarizer['name']} {summarizer['version']} · "
        f"{body['tokens_before']} → {body['tokens_after']} tokens ({body['token_counter']}), "
        f"budget {body['policy']['budget_tokens']}"
    )
    items = tuple(
        f"{line['section']}: {line['text']} (seq "
        f"{format_spans(tuple(span) for span in line['pointers'])})"
        for line in body["summary"]
    )
    return Block(seq, "compaction", f"#{seq} compaction: {', '.join(parts)}", meta, items=items)


def _lifecycle(entry: Entry, meta: str) -> Block:
    seq = entry.seq
    try:
        event = parse_body(entry.kind, entry.body)
    except LifecycleFormatError:
        return Block(seq, "record", f"#{seq} {entry.kind}", meta, code=str(entry.body))
    request, outcome = event.request, event.outcome
    if isinstance(request, PinRequest):
        if isinstance(outcome, Accepted):
            title = f"#{seq} pinned {request.pin_kind} {outcome.id}"
            return Block(seq, "pin", title, f"{meta} · text from entry {request.seq}", request.text)
        return Block(
            seq, "pin", f"#{seq} pin refused{_why(outcome)}", meta, request.text, refused=True
        )
    if isinstance(request, UnpinRequest):
        if isinstance(outcome, Accepted):
            return Block(seq, "pin", f"#{seq} unpinned {request.id}", meta, request.reason)
        title = f"#{seq} unpin of {request.id} refused{_why(outcome)}"
        return Block(seq, "pin", title, meta, refused=True)
    if isinstance(request, ReadRequest) and isinstance(outcome, ReadOutcome):
        items = tuple(
            f"{ref.ref} ({ref.source}, {ref.location}): "
            + ("registered" if isinstance(result, Registered) else f"rejected{_why(result)}")
            for ref, result in zip(request.refs, outcome.results, strict=False)
        )
        refused = any(not isinstance(result, Registered) for result in outcome.results)
        return Block(seq, "evidence", f"#{seq} source read", meta, items=items, refused=refused)
    if isinstance(request, UpsertRequest) and isinstance(outcome, UpsertOutcome):
        items = tuple(
            (f"{result.id} admitted" if isinstance(result, Accepted) else f"rejected{_why(result)}")
            + f": {statement.text} (cites {', '.join(statement.cites) or 'nothing'})"
            for statement, result in zip(request.statements, outcome.results, strict=False)
        )
        refused = any(not isinstance(result, Accepted) for result in outcome.results)
        title = f"#{seq} evidence proposed"
        return Block(seq, "evidence", title, meta, items=items, refused=refused)
    if isinstance(request, (EvidenceReviseRequest, ConclusionReviseRequest)):
        refused = not isinstance(outcome, Revised)
        title = _revision(seq, request, outcome)
        return Block(seq, "evidence", title, meta, _replacement(request), refused=refused)
    if isinstance(request, (ComputeRequest, FinalRequest)):
        what = "compute" if isinstance(request, ComputeRequest) else "final conclusion"
        if isinstance(outcome, Accepted):
            title = f"#{seq} {what} {outcome.id} (cites {', '.join(request.cites)})"
        else:
            title = f"#{seq} {what} refused{_why(outcome)}"
        refused = not isinstance(outcome, Accepted)
        return Block(seq, "evidence", title, meta, request.text, refused=refused)
    return Block(seq, "record", f"#{seq} {entry.kind}", meta)


def _revision(seq: int, request: Any, outcome: object) -> str:
    if not isinstance(outcome, Revised):
        return f"#{seq} revision of {request.id} refused{_why(outcome)}"
    if outcome.successor is None:
        title = f"#{seq} {outcome.id} retracted"
    else:
        title = f"#{seq} {outcome.id} superseded by {outcome.successor}"
    if outcome.stale:
        title += f"; left stale: {', '.join(outcome.stale)}"
    return title


def _replacement(request: Any) -> str:
    replacement = request.replacement
    if replacement is None:
        return ""
    return f"{replacement.text} (cites {', '.join(replacement.cites)})"


def _why(outcome: object) -> str:
    return f" ({outcome.reason}: {outcome.message})" if isinstance(outcome, Rejected) else ""


# --- formats ---------------------------------------------------------------------------------


def _label(block: Block) -> str:
    """The block's title without its ``#SEQ``."""
    prefix = f"#{block.seq} "
    return block.title[len(prefix) :] if block.title.startswith(prefix) else block.title


def _content(block: Block) -> str:
    """What the block says: its text, else its code, else its items."""
    return block.text or block.code or "\n".join(block.items)


def entry_line(entry: Entry, width: int = LOG_WIDTH) -> str:
    """``entry`` on one line: ``SEQ  TIME  KIND  ACTOR  WHAT: TEXT`` (tab-separated), its
    text first -- never the body's import metadata -- newlines as ``⏎``, the text cut past
    ``width`` characters with how many more there are (``width`` 0: never cut)."""
    block = describe(entry)
    label, content = _label(block), _content(block)
    text = content if label in (entry.kind, "") else f"{label}: {content}" if content else label
    text = " ⏎ ".join(line.strip() for line in text.strip().split("\n"))
    if width and len(text) > width:
        text = f"{text[:width]}… (+{len(text) - width:,} characters; --width 0 shows all)"
    return f"{entry.seq}\t{entry.time}\t{entry.kind}\t{entry.actor}\t{text}"


def _chat(block: Block, entry: Entry) -> str:
    """A block of the chat view: ``#SEQ what (actor, time)``, then the text indented."""
    lines = [f"#{block.seq} {_label(block)}  ({entry.actor}, {entry.time})"]
    if block.text:
        lines += [f"    {line}".rstrip() for line in block.text.split("\n")]
    lines += [f"    - {item}" for item in block.items]
    if block.code is not None:
        lines += [f"    | {line}".rstrip() for line in block.code.split("\n")]
    if block.style == "compaction":
        rule = "-" * 72
        lines = [rule, *lines, rule]
    return "\n" + "\n".join(lines) + "\n"


def _markdown(block: Block) -> str:
    quote = "> " if block.style in ("compaction", "pin", "evidence") else ""
    lines = [f"**{_md_text(block.title)}**  ", f"_{_md_text(block.meta)}_"]
    if block.text:
        lines += ["", *(_md_text(line) for line in block.text.split("\n"))]
    lines += [f"- {_md_text(item)}" for item in block.items]
    body = [f"{quote}{line}".rstrip() if line else quote.rstrip() for line in lines]
    if block.style == "compaction":
        body = ["---", *body, "", "---"]
    if block.code is not None:
        fence = "`" * max(
            3, 1 + max((len(run) for run in _BACKTICKS.findall(block.code)), default=0)
        )
        body += ["", f"{fence}text", block.code, fence]
    return "\n" + "\n".join(body) + "\n"


def _md_text(text: str) -> str:
    """Text safe in a Markdown paragraph: HTML-special characters as entities, Markdown
    emphasis and link characters escaped."""
    escaped = html.escape(text, quote=False)
    return re.sub(r"([\\`*_\[\]#|])", r"\\\1", escaped)


def _html(block: Block) -> str:
    parts = [
        f'<div class="entry {block.style}{" refused" if block.refused else ""}" '
        f'id="seq-{block.seq}">',
        f'<div class="title">{html.escape(block.title)}</div>',
        f'<div class="meta">{html.escape(block.meta)}</div>',
    ]
    if block.text:
        paragraphs = html.escape(block.text).split("\n")
        parts.append("<p>" + "<br>".join(paragraphs) + "</p>")
    if block.items:
        parts.append("<ul>" + "".join(f"<li>{html.escape(i)}</li>" for i in block.items) + "</ul>")
    if block.code is not None:
        parts.append(f"<pre>{html.escape(block.code)}</pre>")
    parts.append("</div>")
    return "\n".join(parts) + "\n"
