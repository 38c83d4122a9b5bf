"""Summarizers: what turns a plan's folded items into structured summary lines.

A :class:`Summarizer` has a ``name``, a ``version`` (both recorded in the compaction) and
``summarize(entries, plan) -> Summary``. Whatever it returns goes through
:func:`registre.lifecycle.context.compaction.check_summary` before anything is recorded, so a
summarizer that fails (raises) or misbehaves (invented quotes, pointers outside the range,
over its share) leaves the ledger untouched.

* :class:`ExtractiveSummarizer` (``registre.extractive`` version ``1``) ships with the
  project: deterministic, no model, it quotes the entries' own words and degrades step by
  step (shorter quotes, then one line per section, then one line) until the summary fits the
  plan's allowance.
* :class:`PromptSummarizer` shows where a language model goes: it builds a prompt, hands it to
  a ``complete(prompt) -> reply`` callable the caller injects (registre itself never opens a
  network connection), and parses the reply's ``SECTION | SPANS | TEXT`` lines.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from registre.lifecycle.context.compaction import (
    SUMMARY_LINE_KIND,
    CompactionPlan,
    FoldItem,
    summary_tokens,
)
from registre.lifecycle.context.jsontext import escape_string
from registre.lifecycle.context.model import SECTIONS, Span, Summary, SummaryLine, coalesce
from registre.lifecycle.errors import LifecycleFormatError

__all__ = [
    "ExtractiveSummarizer",
    "PromptSummarizer",
    "Summarizer",
    "build_prompt",
    "parse_reply",
]


class Summarizer(Protocol):
    """Turns folded items into a summary. Contract: every line points only at seqs inside
    ``plan.folded``, quotes only text the pointed entries hold, and the rendered summary
    stays within ``plan.max_summary_tokens`` -- or the summary is refused."""

    @property
    def name(self) -> str:
        """Recorded as ``summarizer.name``."""
        ...

    @property
    def version(self) -> str:
        """Recorded as ``summarizer.version``."""
        ...

    def summarize(self, entries: Sequence[FoldItem], plan: CompactionPlan) -> Summary:
        """The summary of ``entries`` (``plan.items``) for ``plan``."""
        ...


# --- the extractive default -------------------------------------------------------------------

_Segment = tuple[str, str]  # (mark, text): mark "" for plain text, else the opening quote mark
_CLOSE: Final = {"“": "”", '"': '"'}
_LABELS: Final = {
    "findings": "findings",
    "decisions": "decisions",
    "dead_ends": "dead ends",
    "tool_outputs": "tool outputs",
    "open_threads": "open threads",
}
_QUOTE_LIMITS: Final = (160, 60, 20)
_SECTION_SPANS: Final = 3


@dataclass(frozen=True, slots=True)
class _Candidate:
    section: str
    segments: tuple[_Segment, ...]
    pointers: tuple[Span, ...]

    def text(self, quote_limit: int) -> str:
        parts = []
        for mark, text in self.segments:
            if not mark:
                parts.append(text)
            elif len(text) <= quote_limit:
                parts.append(f"{mark}{text}{_CLOSE[mark]}")
            else:
                parts.append(f"{mark}{text[:quote_limit]}{_CLOSE[mark]}…")
        return "".join(parts)


class ExtractiveSummarizer:
    """``registre.extractive`` / ``1``: one line per folded item, quoting its own words.

    Sections: user questions go to ``open_threads``, other user and system turns and
    ``decision`` entries to ``decisions``, assistant turns and accepted evidence and
    conclusions to ``findings``, tool calls with their results to ``tool_outputs`` (to
    ``dead_ends`` when the tool reported an error, as for refused lifecycle requests and
    retractions); a line of a summary folded again keeps its section, words and pointers.
    Pins and unpins get no line (the header carries pins). Quotes are the first line of the
    entry's own text, cut at the first ``”``.

    Degradation, first that fits ``plan.max_summary_tokens``: quotes of at most 160, 60, 20
    characters; one line per section with its count and latest item; one line per section
    with its count only; the same with each section's pointers widened to one span; a single
    line. A section line's pointers are at most three spans (the smallest gaps between its
    items are bridged). Deterministic: equal items and plans give equal summaries.
    """

    name: Final = "registre.extractive"
    version: Final = "1"

    def summarize(self, entries: Sequence[FoldItem], plan: CompactionPlan) -> Summary:
        """The summary of ``entries`` for ``plan`` (class docstring)."""
        if plan.folded is None:
            return Summary(())
        candidates = _candidates(entries)
        attempts: list[tuple[SummaryLine, ...]] = []
        if candidates:
            attempts.extend(_each(candidates, limit) for limit in _QUOTE_LIMITS)
            attempts.append(_per_section(candidates, latest=True))
            attempts.append(_per_section(candidates, latest=False))
            attempts.append(_per_section(candidates, latest=False, widen=True))
        first, last = plan.folded
        count = len(entries)
        attempts.append((SummaryLine("findings", f"{count} items folded", ((first, last),)),))
        for lines in attempts:
            if summary_tokens(plan, lines, plan.counter) <= plan.max_summary_tokens:
                return Summary(lines)
        return Summary(attempts[-1])


def _each(candidates: Sequence[_Candidate], limit: int) -> tuple[SummaryLine, ...]:
    ordered = sorted(candidates, key=lambda c: SECTIONS.index(c.section))
    return tuple(SummaryLine(c.section, c.text(limit), c.pointers) for c in ordered)


def _per_section(
    candidates: Sequence[_Candidate], *, latest: bool, widen: bool = False
) -> tuple[SummaryLine, ...]:
    lines = []
    for section in SECTIONS:
        group = [c for c in candidates if c.section == section]
        if not group:
            continue
        pointers = coalesce(span for c in group for span in c.pointers)
        pointers = _bridge(pointers, 1 if widen else _SECTION_SPANS)
        text = f"{len(group)} {_LABELS[section]}"
        if latest:
            text += f"; latest: {group[-1].text(40)}"
        lines.append(SummaryLine(section, text, pointers))
    return tuple(lines)


def _bridge(spans: tuple[Span, ...], most: int) -> tuple[Span, ...]:
    """At most ``most`` spans covering ``spans``: the smallest gaps are bridged (earlier gap
    first among equals), so a section line keeps a few readable pointers."""
    if len(spans) <= most:
        return spans
    gaps = sorted(range(len(spans) - 1), key=lambda i: (spans[i + 1][0] - spans[i][1], i))
    bridged = set(gaps[: len(spans) - most])
    merged = [spans[0]]
    for index in range(1, len(spans)):
        if index - 1 in bridged:
            merged[-1] = (merged[-1][0], spans[index][1])
        else:
            merged.append(spans[index])
    return tuple(merged)


def _candidates(entries: Sequence[FoldItem]) -> list[_Candidate]:
    folded = {item.seq: item for item in entries if item.kind != SUMMARY_LINE_KIND}
    candidates = []
    for item in entries:
        if item.kind == SUMMARY_LINE_KIND:
            if item.section in SECTIONS and item.text.strip():
                candidates.append(_Candidate(item.section, _segments(item.text), item.pointers))
            continue
        result = folded.get(item.partner) if item.partner is not None else None
        if item.kind == "tool.result" and result is not None:
            continue  # described with its call
        candidates.extend(_entry_candidates(item, result))
    return candidates


def _entry_candidates(item: FoldItem, result: FoldItem | None) -> list[_Candidate]:
    body: Mapping[str, object] = item.body or {}
    one: tuple[Span, ...] = ((item.seq, item.seq),)
    if item.kind == "turn":
        role = str(body.get("role", "user"))
        if role == "assistant":
            section = "findings"
        elif role == "user" and "?" in item.text:
            section = "open_threads"
        else:
            section = "decisions"
        return [_Candidate(section, ((("", f"{_plain(role)}: "), _quote(item.text))), one)]
    if item.kind == "decision":
        return [_Candidate("decisions", (("", "decided: "), _quote(item.text)), one)]
    if item.kind == "tool.call":
        name = _plain(str(body.get("name", "tool")))
        segments: list[_Segment] = [("", f"{name} "), _quote(item.text)]
        section = "tool_outputs"
        pointers = one
        if result is not None:
            error = (result.body or {}).get("is_error") is True
            section = "dead_ends" if error else "tool_outputs"
            segments += [("", " failed: " if error else " gave "), _quote(result.text)]
            pointers = coalesce((one[0], (result.seq, result.seq)))
        return [_Candidate(section, tuple(segments), pointers)]
    if item.kind == "tool.result":
        return [_Candidate("tool_outputs", (("", "tool output: "), _quote(item.text)), one)]
    if item.kind in ("evidence.upsert", "conclusion.compute", "conclusion.final"):
        return _lifecycle_candidates(item, body, one)
    if item.kind in ("evidence.revise", "conclusion.revise"):
        return [_revision_candidate(item, body, one)]
    if item.kind == "source.read":
        return [_Candidate("tool_outputs", (("", _reads(body)),), one)]
    return []


def _lifecycle_candidates(
    item: FoldItem, body: Mapping[str, object], one: tuple[Span, ...]
) -> list[_Candidate]:
    request = _mapping(body.get("request"))
    outcome = _mapping(body.get("outcome"))
    if item.kind == "evidence.upsert":
        statements = _list(request.get("statements"))
        results = _list(outcome.get("results"))
        pairs = list(zip(statements, results, strict=False))
    else:
        pairs = [(request, outcome)]
    candidates = []
    for statement, result in pairs:
        text = _mapping(statement).get("text")
        decided = _mapping(result)
        if not isinstance(text, str):
            continue
        quote = _quote(escape_string(text))  # the entry's text is the body as RFC 8785 JSON
        what = "evidence" if item.kind == "evidence.upsert" else item.kind.split(".")[1]
        if decided.get("accepted") is True:
            label = f"{what} {_plain(str(decided.get('id', '')))}: "
            candidates.append(_Candidate("findings", (("", label), quote), one))
        else:
            reason = _plain(str(decided.get("reason", "refused")))
            candidates.append(
                _Candidate("dead_ends", (("", f"{what} refused ({reason}): "), quote), one)
            )
    return candidates


def _revision_candidate(
    item: FoldItem, body: Mapping[str, object], one: tuple[Span, ...]
) -> _Candidate:
    outcome = _mapping(body.get("outcome"))
    target = _plain(str(_mapping(body.get("request")).get("id", "")))
    if outcome.get("accepted") is not True:
        reason = _plain(str(outcome.get("reason", "refused")))
        return _Candidate("dead_ends", (("", f"revision of {target} refused ({reason})"),), one)
    successor = outcome.get("successor")
    if successor is None:
        return _Candidate("dead_ends", (("", f"{target} retracted"),), one)
    return _Candidate("findings", (("", f"{target} superseded by {_plain(str(successor))}"),), one)


def _reads(body: Mapping[str, object]) -> str:
    refs = [_mapping(ref) for ref in _list(_mapping(body.get("request")).get("refs"))]
    named = [
        f"{_plain(str(ref.get('ref', '')))} ({_plain(str(ref.get('source', '')))}, "
        f"{_plain(str(ref.get('location', '')))})"
        for ref in refs[:3]
    ]
    more = f" and {len(refs) - 3} more" if len(refs) > 3 else ""
    return f"read {', '.join(named)}{more}"


def _quote(text: str) -> _Segment:
    """A curly-quoted segment of ``text``'s first non-blank line (a substring of ``text``)."""
    line = next((part.strip() for part in text.split("\n") if part.strip()), "")
    return ("“", line.split("”", 1)[0])


def _segments(text: str) -> tuple[_Segment, ...]:
    """``text`` cut into plain and quoted segments, by the quoting rule of lineage."""
    segments: list[_Segment] = []
    position = plain_start = 0
    while position < len(text):
        mark = text[position]
        end = text.find(_CLOSE[mark], position + 1) if mark in _CLOSE else -1
        if end < 0:
            position += 1
            continue
        if position > plain_start:
            segments.append(("", text[plain_start:position]))
        segments.append((mark, text[position + 1 : end]))
        position = plain_start = end + 1
    if plain_start < len(text):
        segments.append(("", text[plain_start:]))
    return tuple(segments)


def _plain(text: str) -> str:
    """Text safe outside quotes: no quote marks, no line breaks."""
    cleaned = text.replace('"', "'").replace("“", "'").replace("”", "'")
    return " ".join(cleaned.split())


def _mapping(value: object) -> Mapping[str, object]:
    return value if isinstance(value, Mapping) else {}


def _list(value: object) -> list[object]:
    return value if isinstance(value, list) else []


# --- a language model, injected --------------------------------------------------------------


class PromptSummarizer:
    """Summaries written by a language model the caller provides.

    ``complete`` receives the prompt of :func:`build_prompt` and returns the model's reply;
    :func:`parse_reply` reads it. Any exception ``complete`` raises propagates (nothing is
    recorded); a reply that does not follow the format raises
    :class:`~registre.lifecycle.errors.LifecycleFormatError`. Example::

        summarizer = PromptSummarizer(lambda prompt: my_client.complete(prompt), name="acme.gpt")
    """

    def __init__(
        self,
        complete: Callable[[str], str],
        *,
        name: str = "registre.prompt",
        version: str = "1",
    ) -> None:
        self._complete = complete
        self._name = name
        self._version = version

    @property
    def name(self) -> str:
        """The name recorded for this summarizer (say which model it wraps)."""
        return self._name

    @property
    def version(self) -> str:
        """The version recorded for this summarizer."""
        return self._version

    def summarize(self, entries: Sequence[FoldItem], plan: CompactionPlan) -> Summary:
        """Ask the model; parse its reply."""
        if plan.folded is None:
            return Summary(())
        return parse_reply(self._complete(build_prompt(entries, plan)))


def build_prompt(
    entries: Sequence[FoldItem], plan: CompactionPlan, *, item_chars: int = 2000
) -> str:
    """The instructions and the folded items, each item's text cut to ``item_chars``."""
    first, last = plan.folded if plan.folded is not None else (0, -1)
    rules = (
        f"Summarize ledger entries {first}-{last} of an agent's work for its own later use, "
        f"in at most about {plan.max_summary_tokens} tokens.\n"
        "Write one line per point, exactly: SECTION | SEQS | TEXT\n"
        f"SECTION is one of: {', '.join(SECTIONS)}.\n"
        f"SEQS lists the entries the point stands for, like 2-5, 12, all within {first}-{last}.\n"
        "Quote exact words in “curly quotes” only when they appear verbatim in an entry the "
        "line lists; do not use straight double quotes.\n\nEntries:\n"
    )
    listed = []
    for item in entries:
        where = f"{item.pointers[0][0]}-{item.pointers[-1][1]}"
        label = f"summary {item.section}" if item.kind == SUMMARY_LINE_KIND else item.kind
        listed.append(f"[{where} {label} {item.actor}] {item.text[:item_chars]}")
    return rules + "\n".join(listed)


def parse_reply(reply: str) -> Summary:
    """Lines ``SECTION | SEQS | TEXT`` (blank lines skipped) as a summary. Raises
    :class:`~registre.lifecycle.errors.LifecycleFormatError` naming the reply line at fault."""
    lines = []
    for number, raw in enumerate(reply.splitlines(), start=1):
        if not raw.strip():
            continue
        parts = [part.strip() for part in raw.split("|", 2)]
        where = f"reply line {number}"
        if len(parts) != 3:
            raise LifecycleFormatError(where, "expected SECTION | SEQS | TEXT")
        section, seqs, text = parts
        if section not in SECTIONS:
            raise LifecycleFormatError(where, f"unknown section {section!r}")
        lines.append(SummaryLine(section, text, _parse_spans(seqs, where)))
    return Summary(tuple(lines))


def _parse_spans(text: str, where: str) -> tuple[Span, ...]:
    spans = []
    for part in text.split(","):
        first, dash, last = part.strip().partition("-")
        if not first.isdigit() or (dash and not last.isdigit()):
            raise LifecycleFormatError(where, f"expected seqs like 2-5, 12; got {text!r}")
        span = (int(first), int(last) if dash else int(first))
        if span[0] > span[1]:
            raise LifecycleFormatError(where, f"span {part.strip()} runs backwards")
        spans.append(span)
    return coalesce(spans)
