"""Text tools of the extractive summarizer (:mod:`registre.context.extractive`).

* **Quoting.** A summary line quotes an entry's own words in curly quotes, and checked
  lineage accepts a quote only if it is a substring of an entry the line points at. So a
  quote here is always a substring of the text it came from: cut at whitespace only (never
  inside a word or a figure such as ``EUR 30.5m``), split where the text holds a ``”`` or a
  line break (which would end the span or break the rendered line), never of one character;
  a quote that was cut is followed by one ``…``.
* **Reading.** Sentences (each a substring of its text), figures (amounts, percentages,
  decimals, numbers), exception words ("except", "but", "failed", errors, ...) and line
  shapes (what makes one line of a tool output unlike the others).
* **Older lines**: a line of a summary folded again, normalized (a quote version 1 cut
  inside a word is cut back to a word boundary, ``……`` becomes ``…``, a one-character quote
  goes) and in shorter variants that keep its first quote.
* **Aggregate lines**, the one grammar in which the summarizer writes a line that stands for
  many entries, and reads it back when a summary is folded again, so merged lines carry real
  counts::

      N entries: K NOUN[ (ARGS)][: OUTCOMES][; exceptions: NAMES][; e.g. “QUOTE”]

  ``N`` is always the number of ledger entries the line points at; ``K`` counts entries of
  one kind (``18 sql calls``); ``OUTCOMES`` count result entries (``16 returned rows, 2
  empty``). Example: ``36 entries: 18 sql calls (database risk_mart; segment Hotels, Retail,
  Offices and 4 more): 16 returned rows, 2 empty; e.g. “loan_id | segment”…``.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, replace
from typing import Final

__all__ = [
    "ELLIPSIS",
    "Aggregate",
    "Segment",
    "cut_at_word",
    "distinct",
    "first_line_quote",
    "has_exception",
    "has_failure",
    "has_figure",
    "has_strong_exception",
    "has_strong_figure",
    "key_sentences",
    "line_shape",
    "merge_aggregates",
    "name_text",
    "older_line_variants",
    "plain",
    "plain_part",
    "prose_words",
    "quote",
    "read_aggregate",
    "render",
    "sentences",
    "split_segments",
    "write_aggregate",
]

Segment = tuple[str, str]
"""``(mark, text)``: mark ``""`` for plain text, else the opening quote mark."""

ELLIPSIS: Final = "…"
_CLOSE: Final = {"“": "”", '"': '"'}

_FIGURE: Final = re.compile(
    r"(?<![\w-])(?:[$€£]\s?)?\d+(?:[.,]\d+)*(?:\s?(?:%|bps?\b|[kmb]n?\b|million\b|billion\b))?",
    re.IGNORECASE,
)
_STRONG_FIGURE: Final = re.compile(
    r"\d[.,]\d|\d\s?%|(?:EUR|USD|GBP|CHF|€|\$|£)\s?\d|\b\d+\s?(?:k|m|bn|mn|bp|bps)\b"
)
_EXCEPTION: Final = re.compile(
    r"\b(?:except|excluding|but|however|although|unless|instead|fail(?:s|ed|ing|ure)?|"
    r"errors?|exceptions?|traceback|cannot|can't|couldn't|not|never|refused|rejected|denied|"
    r"mismatch(?:es|ed)?|exceed(?:s|ed)?|outside|contradicts?|wrong|invalid|missing|"
    r"unexpected|warning|broken|bug)\b",
    re.IGNORECASE,
)
_FAILURE: Final = re.compile(
    r"\b(?:\w*Error\b|ERROR|[Ee]rror:|\w*Exception\b|Traceback|FAIL(?:ED|URE)?\b|"
    r"[Ff]ail(?:s|ed|ing|ure)\b|[Rr]efused\b|[Dd]enied\b|[Tt]imed out\b|[Mm]ismatch|"
    r"not reconcile)"
)
_STRONG_EXCEPTION: Final = re.compile(
    r"\b(?:\w*Error\b|ERROR|[Ee]rror:|\w*Exception\b|Traceback|FAIL(?:ED|URE)?\b|"
    r"[Ff]ail(?:s|ed|ing|ure)\b|[Rr]efused\b|[Rr]ejected\b|[Dd]enied\b|[Tt]imed out\b|"
    r"[Tt]imeout\b|[Mm]ismatch|[Ee]xceed(?:s|ed)?\b|[Oo]utside\b|[Ii]nvalid\b|"
    r"[Uu]nexpected\b|not reconcile|[Ww]arning\b)"
)
_SENTENCE_BREAK: Final = re.compile(r"(?<=[.!?])\s+(?=\S)")
_PROSE_WORD: Final = re.compile(r"[^\W\d_]{2,}[.,;:!?)]*")
_UNSAFE_NAME: Final = re.compile(r"[()“”\";:,\n\r\t]+")


# --- quoting --------------------------------------------------------------------------------


def plain(text: str) -> str:
    """Text safe outside quotes: no quote marks, no line breaks, single spaces."""
    cleaned = text.replace('"', "'").replace("“", "'").replace("”", "'")
    return " ".join(cleaned.split())


def name_text(text: str, limit: int = 40) -> str:
    """A name or value safe inside an aggregate line's parts: :func:`plain`, without the
    marks the grammar uses (parentheses, ``;``, ``:``, ``,``), cut at a word boundary."""
    cleaned = " ".join(_UNSAFE_NAME.sub(" ", plain(text)).split())
    return cut_at_word(cleaned, limit) or cleaned[:limit].strip()


def cut_at_word(text: str, limit: int) -> str:
    """The longest prefix of ``text`` of at most ``limit`` characters that ends before
    whitespace (so never inside a word or a figure), without trailing spaces and ``,;:(``;
    ``""`` when there is none holding a letter or digit."""
    if len(text) <= limit:
        return text.strip()
    end = text.rfind(" ", 0, limit + 1)
    for space in ("\t", "\n"):
        end = max(end, text.rfind(space, 0, limit + 1))
    if end <= 0:
        return ""
    piece = text[:end].rstrip(" \t\n,;:(-–")
    return piece.strip() if any(char.isalnum() for char in piece) else ""


def quote(text: str) -> list[Segment]:
    """``text`` (a substring of an entry's text) as curly-quoted segments: split at ``”``
    and line breaks, pieces joined by a space; pieces without a letter or digit, or of one
    character, are left out (so the list may be empty)."""
    segments: list[Segment] = []
    for raw in re.split(r"[”\n\r\u2028\u2029]", text):
        piece = raw.strip()
        if len(piece) >= 2 and any(char.isalnum() for char in piece):
            if segments:
                segments.append(("", " "))
            segments.append(("“", piece))
    return segments


def first_line_quote(text: str, limit: int) -> list[Segment]:
    """Quoted segments of the first non-blank line of ``text``, cut at a word boundary to at
    most ``limit`` characters (then followed by ``…``)."""
    line = next((part.strip() for part in text.split("\n") if part.strip()), "")
    piece = cut_at_word(line, limit)
    segments = quote(piece)
    if segments and len(line) > len(piece):
        segments.append(("", ELLIPSIS))
    return segments


def distinct(values: Iterable[str]) -> list[str]:
    """The non-empty ``values`` without repeats, in first-seen order."""
    return [value for value in dict.fromkeys(values) if value]


def render(segments: Iterable[Segment]) -> str:
    """The text of ``segments``: plain ones as they are, quoted ones between their marks."""
    return "".join(text if not mark else f"{mark}{text}{_CLOSE[mark]}" for mark, text in segments)


def split_segments(text: str) -> tuple[Segment, ...]:
    """``text`` cut into plain and quoted segments by the quoting rule of checked lineage
    (:mod:`registre.context.lineage`)."""
    segments: list[Segment] = []
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


def plain_part(text: str) -> str:
    """The plain (unquoted) words of a line's ``text``."""
    return "".join(piece for mark, piece in split_segments(text) if not mark)


# --- reading --------------------------------------------------------------------------------


def sentences(text: str) -> list[tuple[int, int]]:
    """``(start, end)`` of each sentence of ``text``, line by line: stripped, non-empty,
    each ``text[start:end]`` a substring without a line break."""
    found: list[tuple[int, int]] = []
    offset = 0
    for line in text.split("\n"):
        start = 0
        for match in [*_SENTENCE_BREAK.finditer(line), None]:
            end = match.start() if match is not None else len(line)
            piece = line[start:end]
            stripped = piece.strip()
            if stripped:
                first = offset + start + (len(piece) - len(piece.lstrip()))
                found.append((first, first + len(stripped)))
            if match is not None:
                start = match.end()
        offset += len(line) + 1
    return found


def key_sentences(text: str, *, strong: bool = False) -> list[tuple[int, int]]:
    """The sentences of ``text`` that hold a figure or an exception word (``strong``: a
    strong exception word, as tool outputs are read), else its first sentence."""
    spans = sentences(text)
    if strong:
        keyed = [span for span in spans if has_strong_exception(text[span[0] : span[1]])]
        keyed = keyed or [span for span in spans if _STRONG_FIGURE.search(text[span[0] : span[1]])]
    else:
        keyed = [
            span
            for span in spans
            if has_figure(text[span[0] : span[1]]) or has_exception(text[span[0] : span[1]])
        ]
    return keyed or spans[:1]


def has_figure(text: str) -> bool:
    """Whether ``text`` holds a number standing on its own (an amount, a percentage, a
    count, a date); identifiers such as ``ev-12``, ``Q3`` or ``L7179730`` are not figures."""
    return _FIGURE.search(text) is not None


def has_strong_figure(text: str) -> bool:
    """Whether ``text`` holds a decimal, a percentage, an amount or a magnitude."""
    return _STRONG_FIGURE.search(text) is not None


def has_exception(text: str) -> bool:
    """Whether prose ``text`` says an exception: except, but, failed, error, not, ..."""
    return _EXCEPTION.search(text) is not None


def has_strong_exception(text: str) -> bool:
    """Whether ``text`` (a tool output, say) reports a failure, a mismatch or a value out of
    bounds (``exceeds``, ``outside``, ``invalid``, a warning)."""
    return _STRONG_EXCEPTION.search(text) is not None


def has_failure(text: str) -> bool:
    """Whether ``text`` reports a failure in the words programs use: an ``…Error`` or
    ``…Exception``, ``Traceback``, ``FAILED``, ``failed``, ``refused``, ``denied``,
    ``timed out``, a mismatch; prose about "a data error" is not one."""
    return _FAILURE.search(text) is not None


def line_shape(line: str) -> str:
    """The shape of a line: runs of words become ``a``, signed numbers ``9``, other
    characters stay; so rows of one table share a shape and a sentence among them stands
    out."""
    shape = re.sub(r"[^\W\d_]+", "a", line.strip())
    shape = re.sub(r"[+-]?\d+(?:[.,]\d+)*", "9", shape)
    return re.sub(r"a(?:[ _]a)+", "a", shape)


def prose_words(line: str) -> int:
    """How many words of ``line`` are words of prose: letters only, two or more, as
    whitespace separates them (trailing punctuation aside)."""
    return sum(1 for word in line.split() if _PROSE_WORD.fullmatch(word))


# --- lines of older summaries -------------------------------------------------------------

_VERSION_1_CUTS: Final = frozenset((20, 40, 60, 160))


def older_line_variants(text: str) -> list[list[Segment]]:
    """A line of an older summary as segments, normalized (:func:`_normalized`; none left:
    no variant), then shorter: without its quotes after the first, its first quote to its
    first sentence, then cut at a word boundary (to 100, then 50 characters)."""
    segments = _normalized(text)
    if not segments:
        return []
    variants = [segments]
    quotes = [index for index, (mark, _piece) in enumerate(segments) if mark]
    if not quotes:
        return variants
    first = quotes[0]
    if len(quotes) > 1:
        variants.append([*segments[: first + 1], ("", ELLIPSIS)])
    mark, piece = segments[first]
    spans = sentences(piece)
    shorter = [piece[: spans[0][1]]] if len(spans) > 1 else []
    shorter.extend(cut_at_word(piece, limit) for limit in (100, 50))
    for cut in shorter:
        if len(cut) >= 2 and any(char.isalnum() for char in cut) and len(cut) < len(piece):
            variants.append([*segments[:first], (mark, cut), ("", ELLIPSIS)])
    return variants


def _normalized(text: str) -> list[Segment]:
    """An older line's segments: a quote that version 1 cut inside a word (to 20, 40, 60 or
    160 characters, then ``…``) is cut back to a word boundary; quotes of one character are
    dropped (no segment at all when no quote is left); ``……`` becomes ``…``."""
    segments = list(split_segments(text))
    out: list[Segment] = []
    for index, (mark, piece) in enumerate(segments):
        if not mark:
            while ELLIPSIS * 2 in piece:
                piece = piece.replace(ELLIPSIS * 2, ELLIPSIS)
            if out and not out[-1][0]:
                out[-1] = ("", out[-1][1] + piece)
            else:
                out.append(("", piece))
            continue
        following = segments[index + 1][1] if index + 1 < len(segments) else ""
        cut_by_version_1 = len(piece) in _VERSION_1_CUTS and piece[-1:].isalnum()
        if following.startswith(ELLIPSIS) and cut_by_version_1:
            piece = cut_at_word(piece, len(piece) - 1)
        if len(piece.strip()) >= 2 and any(char.isalnum() for char in piece):
            out.append((mark, piece))
    if any(mark for mark, _piece in segments) and not any(mark for mark, _piece in out):
        return []  # its words were its quotes
    return out


# --- aggregate lines ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Aggregate:
    """The parts of an aggregate line (module docstring), without its entry count.

    ``noun`` is singular (``sql call``); ``args`` are ``(key, values, hidden)``: the values
    known, and how many more there are (``-1``: some, how many unknown); the text shows
    three values at most. ``outcomes`` are ``(label, count)``; ``exceptions`` names, with
    ``exceptions_hidden`` as ``hidden``; ``example`` the quoted segments of one entry.
    """

    count: int | None
    noun: str
    args: tuple[tuple[str, tuple[str, ...], int], ...] = ()
    outcomes: tuple[tuple[str, int], ...] = ()
    exceptions: tuple[str, ...] = ()
    exceptions_hidden: int = 0
    example: tuple[Segment, ...] = ()


def write_aggregate(entries: int, aggregate: Aggregate) -> str:
    """The text of an aggregate line pointing at ``entries`` entries."""
    head = f"{entries} {'entry' if entries == 1 else 'entries'}: "
    noun = aggregate.noun
    if aggregate.count is not None:
        noun = f"{aggregate.count} {noun if aggregate.count == 1 else _plural(noun)}"
    parts = [head + noun]
    if aggregate.args:
        parts.append(f" ({'; '.join(_write_values(k, v, h) for k, v, h in aggregate.args)})")
    if aggregate.outcomes:
        parts.append(": " + ", ".join(f"{count} {label}" for label, count in aggregate.outcomes))
    if aggregate.exceptions:
        parts.append(
            "; exceptions: " + _write_list(aggregate.exceptions, aggregate.exceptions_hidden)
        )
    if aggregate.example:
        parts.append("; e.g. " + render(aggregate.example))
    return "".join(parts)


_AGGREGATE: Final = re.compile(
    r"(?P<entries>\d+) entr(?:y|ies): (?:(?P<count>\d+) )?(?P<noun>[^(:;“”\"]+?)"
    r"(?: \((?P<args>[^()“”\"]*)\))?(?:: (?P<outcomes>[^;“”\"]*))?"
    r"(?:; exceptions: (?P<exceptions>[^;“”\"]*))?(?:; e\.g\. (?P<example>.*))?",
    re.DOTALL,
)
_HIDDEN: Final = re.compile(r"^(?P<shown>.*?)(?: and (?:(?P<count>\d+) )?more)?$")


def read_aggregate(text: str) -> tuple[int, Aggregate] | None:
    """``(entries, aggregate)`` of an aggregate line's text, or ``None`` for any other."""
    match = _AGGREGATE.fullmatch(text)
    if match is None:
        return None
    count = int(match["count"]) if match["count"] is not None else None
    noun = match["noun"].strip()
    if count is not None and count != 1 and noun.endswith("s"):
        noun = noun[:-1]
    args = []
    for part in (match["args"] or "").split("; "):
        key, _, values = part.partition(" ")
        if key and values:
            shown, hidden = _read_list(values)
            args.append((key, shown, hidden))
    outcomes = []
    for part in filter(None, (match["outcomes"] or "").split(", ")):
        number, _, label = part.partition(" ")
        if not number.isdigit() or not label:
            return None
        outcomes.append((label, int(number)))
    names, names_hidden = _read_list(match["exceptions"] or "")
    example = tuple(split_segments(match["example"] or ""))
    aggregate = Aggregate(count, noun, tuple(args), tuple(outcomes), names, names_hidden, example)
    return int(match["entries"]), aggregate


def merge_aggregates(parts: Sequence[Aggregate]) -> Aggregate:
    """One aggregate for ``parts`` of one noun (oldest first), standing for disjoint entries:
    counts and outcomes summed, argument values and exception names united (their number
    unknown once a part did not list them all), the newest example kept."""
    first = parts[0]
    if len(parts) == 1:
        return first
    counts = [part.count for part in parts]
    count = None if any(c is None for c in counts) else sum(c for c in counts if c is not None)
    keys: dict[str, tuple[list[str], int]] = {}
    for part in parts:
        for key, shown, hidden in part.args:
            values, unknown = keys.setdefault(key, ([], 0))
            values.extend(value for value in shown if value not in values)
            keys[key] = (values, -1 if hidden or unknown else 0)
    args = tuple((key, tuple(values), unknown) for key, (values, unknown) in keys.items())[:3]
    totals: dict[str, int] = {}
    for part in parts:
        for label, number in part.outcomes:
            totals[label] = totals.get(label, 0) + number
    names: list[str] = []
    names_unknown = 0
    for part in parts:
        names.extend(name for name in part.exceptions if name not in names)
        if part.exceptions_hidden:
            names_unknown = -1
    example = next((part.example for part in reversed(parts) if part.example), ())
    return replace(
        first,
        count=count,
        args=args,
        outcomes=tuple(totals.items()),
        exceptions=tuple(names),
        exceptions_hidden=names_unknown,
        example=example,
    )


def _plural(noun: str) -> str:
    return noun if noun.endswith("s") else noun + "s"


def _write_values(key: str, values: Sequence[str], hidden: int) -> str:
    return f"{key} {_write_list(values, hidden)}"


def _write_list(values: Sequence[str], hidden: int) -> str:
    extra = -1 if hidden < 0 else hidden + max(0, len(values) - 3)
    more = "" if extra == 0 else " and more" if extra < 0 else f" and {extra} more"
    return ", ".join(values[:3]) + more


def _read_list(text: str) -> tuple[tuple[str, ...], int]:
    match = _HIDDEN.fullmatch(text.strip())
    if match is None or not text.strip():
        return (), 0
    shown = tuple(value for value in match["shown"].split(", ") if value)
    if match["count"] is not None:
        return shown, int(match["count"])
    return shown, -1 if text.strip().endswith(" more") else 0
