"""What the extractive summarizer says about tool calls (:mod:`registre.context.
extractive`): the calls of one tool in a fold, read as a group.

:func:`digest_tool_group` turns the calls of one tool (each with its result) into

* **aggregates**, one per run of :data:`CHUNK` calls, in the grammar of
  :mod:`registre.context.excerpt`: how many calls, their key arguments (constant
  ones such as ``database risk_mart``, then those that vary, with how many values: ``segment
  Hotels, Retail, Offices and 4 more``; a long string argument such as a query or code gives
  the ``name = 'literal'`` pairs it holds), the outcomes of the results (``16 returned rows, 2
  empty``, ``1 failed``), the exceptions named by their distinguishing arguments, and the
  first line of the newest ordinary result;
* **quotes** to write as lines of their own: each failed call (``dead_ends``), each result
  unlike the others of its group (``tool_outputs``), the id and value fields of each JSON
  result (``"user_id": "sofia_kim_7287"``, not its first bytes; ``tool_outputs``), each line
  of a table-like output that is unlike its rows and states a figure (``tool_outputs``).

A result is *unlike the others* when most results of the group share one template (the text
with its numbers and the call's own argument words blanked) and it does not, or when it
holds a failure word most of them lack; in a group of one or two, when it reports a failure
in the words programs use (:func:`~registre.context.excerpt.has_failure`).
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Final

from registre.context.compaction import FoldItem
from registre.context.excerpt import (
    Aggregate,
    Segment,
    distinct,
    first_line_quote,
    has_failure,
    has_strong_exception,
    has_strong_figure,
    line_shape,
    name_text,
    prose_words,
    quote,
)
from registre.context.jsontext import canonical_text, json_fields
from registre.context.model import Span, coalesce

__all__ = ["CHUNK", "ToolDigest", "ToolPair", "ToolQuote", "digest_tool_group", "tool_name"]

CHUNK: Final = 4
"""Calls per aggregate of one fold: a summary folded again merges the newest of them first
when not all fit."""

_LITERAL: Final = re.compile(r"\b([A-Za-z_]\w{0,30})\s*=\s*'([^'\n]{1,40})'")
_EMPTY: Final = re.compile(
    r"\(0 rows?\)|^(?:no (?:results?|matches|rows|output|files?)(?: found)?|0 results?|"
    r"\[\]|\{\}|none|null|not found)\.?$",
    re.IGNORECASE | re.MULTILINE,
)
_ROWS: Final = re.compile(r"\([1-9]\d* rows?\)")
_OUTCOMES: Final = ("returned rows", "returned output", "empty", "failed", "unanswered")
_SHORT_VALUE: Final = 40


@dataclass(frozen=True, slots=True)
class ToolPair:
    """A tool call and its result as folded (either may be missing)."""

    call: FoldItem | None
    result: FoldItem | None

    @property
    def pointers(self) -> tuple[Span, ...]:
        """The call's and the result's seqs."""
        return coalesce((item.seq, item.seq) for item in (self.call, self.result) if item)

    @property
    def seq(self) -> int:
        """The first of them."""
        return self.pointers[0][0]


@dataclass(frozen=True, slots=True)
class ToolQuote:
    """A line of its own to write: ``prefix`` then quotes of ``source`` (a substring of an
    entry the pointers hold); ``strong``: choose sentences by failure words first;
    ``fields``: ``source`` is JSON fields, one a line, each quoted as it is (best first)."""

    section: str
    prefix: str
    source: str
    pointers: tuple[Span, ...]
    strong: bool
    fields: bool = False


@dataclass(frozen=True, slots=True)
class ToolDigest:
    """What a group of calls of one tool gives: aggregates with their pointers, quotes."""

    aggregates: tuple[tuple[Aggregate, tuple[Span, ...]], ...]
    quotes: tuple[ToolQuote, ...]


@dataclass(frozen=True, slots=True)
class _Arguments:
    values: Mapping[str, str]
    mined: frozenset[str] = field(default_factory=frozenset)


def tool_name(call: FoldItem | None, result: FoldItem | None) -> str:
    """The tool's name as recorded on the call (else the result), safe in a line."""
    for item in (call, result):
        name = (item.body or {}).get("name") if item is not None else None
        if isinstance(name, str) and name.strip():
            return name_text(name, 40).replace(" ", "_")
    return "tool"


def digest_tool_group(name: str, pairs: Sequence[ToolPair]) -> ToolDigest:
    """The aggregates and quotes of the calls ``pairs`` of tool ``name`` (module docstring)."""
    arguments = [_arguments(pair.call) for pair in pairs]
    varying = _varying_keys(arguments)
    outcomes = [_outcome(pair.result) for pair in pairs]
    unusual = _unusual(pairs, outcomes, arguments)
    quotes: list[ToolQuote] = []
    for index, pair in enumerate(pairs):
        label = f"{name} {_describe(arguments[index], varying)}".strip()
        result = pair.result
        if result is None:
            continue
        if outcomes[index] == "failed":
            source = _error_text(result.text)
            quotes.append(ToolQuote("dead_ends", f"{label} failed: ", source, pair.pointers, True))
        elif fields := json_fields(result.text):  # a record: its ids and values
            source = "\n".join(fields)
            strong = index in unusual
            quotes.append(
                ToolQuote("tool_outputs", f"{label}: ", source, pair.pointers, strong, fields=True)
            )
        elif index in unusual:
            quotes.append(ToolQuote("tool_outputs", f"{label}: ", result.text, pair.pointers, True))
        else:
            quotes.extend(
                ToolQuote("tool_outputs", f"{label}: ", line, pair.pointers, False)
                for line in _notable_lines(result.text)
            )
    aggregates = []
    for start in range(0, len(pairs), CHUNK):
        chunk = range(start, min(start + CHUNK, len(pairs)))
        aggregates.append(_aggregate(name, pairs, chunk, outcomes, arguments, varying, unusual))
    return ToolDigest(tuple(aggregates), tuple(quotes))


def _aggregate(
    name: str,
    pairs: Sequence[ToolPair],
    chunk: range,
    outcomes: Sequence[str],
    arguments: Sequence[_Arguments],
    varying: Sequence[str],
    unusual: set[int],
) -> tuple[Aggregate, tuple[Span, ...]]:
    tally = Counter(outcomes[index] for index in chunk)
    exceptions = [
        _exception_name(_describe(arguments[index], varying), pairs[index])
        for index in chunk
        if index in unusual or outcomes[index] == "failed"
    ]
    routine = [
        pairs[index]
        for index in chunk
        if index not in unusual and outcomes[index].startswith("returned")
    ]
    newest = routine[-1].result if routine else None
    calls = sum(1 for index in chunk if pairs[index].call is not None)
    aggregate = Aggregate(
        count=calls or len(chunk),
        noun=f"{name} call" if calls else f"{name} result",
        args=_args_digest([arguments[index] for index in chunk]),
        outcomes=tuple((label, tally[label]) for label in _OUTCOMES if tally[label]),
        exceptions=tuple(exceptions),
        example=_example(newest.text) if newest is not None else (),
    )
    return aggregate, coalesce(span for index in chunk for span in pairs[index].pointers)


def _example(text: str) -> tuple[Segment, ...]:
    """What an aggregate quotes of its newest ordinary result: the first two id and value
    fields of a JSON output (:func:`~registre.context.extractive.salience.json_fields`),
    else its first line."""
    fields = json_fields(text, 2)
    if fields:
        return tuple(quote("\n".join(fields)))
    return tuple(first_line_quote(text, 80))


def _arguments(call: FoldItem | None) -> _Arguments:
    """A call's arguments as short strings by key; a long string argument (a query, code)
    gives the ``name = 'literal'`` pairs it holds instead (``mined``)."""
    if call is None:
        return _Arguments({})
    body = call.body or {}
    arguments: object = body.get("arguments")
    if not isinstance(arguments, Mapping) and isinstance(body.get("arguments_json"), str):
        try:
            arguments = json.loads(str(body["arguments_json"]))
        except ValueError:
            arguments = None
    found: dict[str, str] = {}
    mined: set[str] = set()
    if not isinstance(arguments, Mapping):
        return _Arguments(found)
    for key, value in arguments.items():
        text = value if isinstance(value, str) else _json(value)
        name = name_text(str(key), 30).replace(" ", "_")
        if len(text) <= _SHORT_VALUE:
            shown = name_text(text, 30)
            if name and shown:
                found.setdefault(name, shown)
            continue
        for match in _LITERAL.finditer(text):
            if match[1] not in found:
                found[match[1]] = name_text(match[2], 30)
                mined.add(match[1])
    return _Arguments(found, frozenset(mined))


def _json(value: object) -> str:
    try:
        return canonical_text(value)
    except (ValueError, TypeError, LookupError):
        return str(value)


def _varying_keys(arguments: Sequence[_Arguments]) -> list[str]:
    keys = distinct(key for args in arguments for key in args.values)
    if len(arguments) < 2:
        return keys
    return [key for key in keys if len({args.values.get(key) for args in arguments}) > 1]


def _args_digest(
    arguments: Sequence[_Arguments],
) -> tuple[tuple[str, tuple[str, ...], int], ...]:
    """At most three keys: the constant ones given as such, then those that vary (fewest
    values first), then constants found inside long arguments; about 110 characters."""
    keys = distinct(key for args in arguments for key in args.values)
    values = {key: distinct(a.values[key] for a in arguments if key in a.values) for key in keys}
    mined = set().union(*(args.mined for args in arguments)) if arguments else set()
    constant = [k for k in keys if len(values[k]) == 1 and all(k in a.values for a in arguments)]
    varying = sorted((k for k in keys if k not in constant), key=lambda k: len(values[k]))
    chosen = [k for k in constant if k not in mined][:2] + varying
    chosen = (chosen + [k for k in constant if k in mined])[:3]
    digest = [(key, tuple(values[key]), 0) for key in chosen]
    while (
        len(digest) > 1
        and sum(len(k) + sum(len(v) + 2 for v in vs[:3]) for k, vs, _ in digest) > 110
    ):
        digest.pop()
    return tuple(digest)


def _describe(arguments: _Arguments, varying: Sequence[str]) -> str:
    keys = [key for key in varying if key in arguments.values][:3] or list(arguments.values)[:2]
    return ", ".join(f"{key} {arguments.values[key]}" for key in keys)


def _exception_name(described: str, pair: ToolPair) -> str:
    name = name_text(described, 40) if described else ""
    return f"{name} at {pair.seq}" if name else f"seq {pair.seq}"


def _outcome(result: FoldItem | None) -> str:
    if result is None:
        return "unanswered"
    if (result.body or {}).get("is_error") is True:
        return "failed"
    text = result.text.strip()
    if not text or _EMPTY.search(text):
        return "empty"
    return "returned rows" if _ROWS.search(text) else "returned output"


def _unusual(
    pairs: Sequence[ToolPair], outcomes: Sequence[str], arguments: Sequence[_Arguments]
) -> set[int]:
    texts = {
        index: result.text
        for index, (pair, outcome) in enumerate(zip(pairs, outcomes, strict=True))
        if (result := pair.result) is not None and outcome.startswith("returned")
    }
    if len(texts) < 3:
        return {index for index, text in texts.items() if has_failure(text)}
    templates = {i: _template(text, arguments[i].values.values()) for i, text in texts.items()}
    tally = Counter(templates.values())
    common, count = tally.most_common(1)[0]
    unusual = set()
    if count >= 2 and 2 * count >= len(texts):
        unusual = {i for i, t in templates.items() if t != common and tally[t] == 1}
    flagged = {index for index, text in texts.items() if has_strong_exception(text)}
    if 2 * len(flagged) < len(texts):
        unusual |= flagged
    return unusual


def _template(text: str, values: Iterable[str]) -> str:
    template = text.lower()
    for value in sorted((v.lower() for v in values if len(v) >= 3), key=len, reverse=True):
        template = template.replace(value, "@")
    template = re.sub(r"[+-]?\d+(?:[.,]\d+)*", "#", template)
    return " ".join(template.split())[:400]


def _notable_lines(text: str) -> list[str]:
    """Lines of a table-like output (at least half of its lines are not prose: rows, a
    header, a footer, records of ``key=value`` fields) that read as prose, state a figure
    and have a shape no other line has: at most two."""
    lines = [line.strip() for line in text.split("\n") if line.strip()]
    prose = [line for line in lines if prose_words(line) >= 4 and not _is_row(line)]
    stated = [line for line in prose if has_strong_figure(line)]
    if len(lines) < 2 or not stated or 2 * len(stated) > len(lines):
        return []
    if 2 * len(prose) > len(lines):
        return []
    shapes = Counter(line_shape(line) for line in lines)
    return [line for line in stated if shapes[line_shape(line)] == 1][:2]


def _is_row(line: str) -> bool:
    """Whether ``line`` is a row or header of a table or a record of fields (cells separated
    by ``|`` or tabs, or ``key=value`` pairs), not prose, whatever its words."""
    return line.count("|") >= 2 or line.count("\t") >= 2 or line.count("=") >= 2


def _error_text(text: str) -> str:
    """The lines of an error output worth quoting: those with a failure word (the last
    two), else the last line (where a traceback says what went wrong)."""
    lines = [line for line in text.split("\n") if line.strip()]
    flagged = [line for line in lines if has_strong_exception(line)]
    return "\n".join(flagged[-2:] or lines[-1:])
