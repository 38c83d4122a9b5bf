"""Working-context quality: what a context carries of what the agent needs, for registre and
for each baseline, measured the same way at the same model calls (``specs/bench.md``
section 2.1).

A :class:`ContextView` is a context as one method would send it at one model call: its
messages and their tokens, the stable prefix the method declares (``None`` when it declares
none) and the summary lines it shows (text and pointer spans). A :class:`MethodTally`
accumulates, call after call:

* **fact recall** -- each fact the step needs (:mod:`registre.bench.facts`) is *recalled*
  when a summary line whose pointers cover the fact's entry quotes it whole or quotes every
  key of the fact (``summarized``), or else when its words appear in a message of the
  context (``verbatim``: its entry shown, a pin);
* **pointer specificity** -- at sampled calls, the entries each pointer span of a live
  summary line covers (``last - first + 1``);
* **count-only lines** -- at sampled calls, the live summary lines whose text holds no
  quote, no figure and no name (:func:`count_only`);
* **stable prefix** -- the declared prefix's share of the context's tokens, whether it is
  byte-identical to the previous call's, and the share of tokens a provider's prompt cache
  could reuse from the previous call (the longest run of leading messages both contexts
  share), the last measured the same way for every method;
* **tokens used** over the budget, and the calls refused (registre only: a context that
  cannot fit is refused, never cut).
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from registre.bench.facts import Fact

if TYPE_CHECKING:
    from registre.context import Message

__all__ = [
    "LABEL_WORDS",
    "METHODS",
    "ContextView",
    "Line",
    "MethodTally",
    "common_prefix",
    "count_only",
    "covers",
    "method_rows",
    "span_sizes",
]

METHODS: Final = ("registre", "truncation", "observation_masking", "rolling_summary")
"""The methods compared, in the order the report lists them."""

Span = tuple[int, int]
Line = tuple[str, tuple[Span, ...]]

LABEL_WORDS: Final = frozenset(
    {
        "A", "All", "An", "And", "Answer", "Assistant", "Dead", "Decided", "Decision",
        "Decisions", "Ends", "Entries", "Evidence", "Finding", "Findings", "Folded", "In",
        "Items", "Latest", "No", "Of", "On", "Open", "Or", "Outputs", "Plus", "See", "Status",
        "Summary", "System", "The", "Threads", "Tool", "User",
    }
)  # fmt: skip
"""Capitalised words that are labels, not names: a section or label a summarizer writes, or
a word that starts a sentence."""

_QUOTE: Final = re.compile(r"[\"“]([^\"”]*)[\"”]")
_LETTERS3: Final = re.compile(r"[^\W\d_]{3,}")
_FIGURE: Final = re.compile(
    r"\d\.\d"  # a decimal: 3.47
    r"|\d\s?%"  # a percentage: 12%
    r"|(?:EUR|USD|GBP|CHF|€|\$|£)\s?\d"  # an amount: EUR 5m
    r"|\b\d+\s?(?:k|m|bn|mn|bp|bps)\b"  # a magnitude: 5m, 30bp
    r"|\b\d{4}-\d{2}-\d{2}\b"  # an ISO date
)
_WORD: Final = re.compile(r"\w+(?:[-_.]\w+)*")
_LETTER: Final = re.compile(r"[^\W\d_]")
_DIGIT: Final = re.compile(r"\d")


def count_only(text: str) -> bool:
    """Whether a summary line's ``text`` says only counts and labels: it holds no quote (a
    span in straight or curly double quotes with a word of three letters or more), no figure
    (a decimal, a percentage, an amount with a currency, a number with a magnitude suffix, an
    ISO date) and no name (a capitalised word not in :data:`LABEL_WORDS`, or an identifier:
    a word mixing letters and digits, or letters joined by ``_``)."""
    if any(_LETTERS3.search(quoted) for quoted in _QUOTE.findall(text)):
        return False
    if _FIGURE.search(text):
        return False
    for word in _WORD.findall(text):
        if _LETTER.search(word) and (_DIGIT.search(word) or "_" in word):
            return False
        if word[0].isupper() and word not in LABEL_WORDS:
            return False
    return True


def covers(spans: Sequence[Span], seq: int) -> bool:
    """Whether ``seq`` lies in one of ``spans``."""
    return any(first <= seq <= last for first, last in spans)


def span_sizes(lines: Iterable[Line]) -> list[int]:
    """Entries per pointer span, ``last - first + 1``, over every span of ``lines``."""
    return [last - first + 1 for _text, spans in lines for first, last in spans]


def common_prefix(first: Sequence[Message], second: Sequence[Message]) -> int:
    """How many leading messages ``first`` and ``second`` share, byte for byte. Both must be
    tuples or both lists (a binary search over prefix comparisons: a prefix shared is shared
    by every shorter one)."""
    low, high = 0, min(len(first), len(second))
    if first[:high] == second[:high]:
        return high
    while low < high:  # invariant: first[:low] == second[:low], first[:high] != second[:high]
        middle = (low + high + 1) // 2
        if middle == high:
            break
        if first[:middle] == second[:middle]:
            low = middle
        else:
            high = middle
    return low


@dataclass(frozen=True)
class ContextView:
    """A context as a method sends it at one call (module docstring): ``messages`` with
    their ``tokens``; ``prefix``: how many leading messages the method declares stable
    (``None``: it declares none); ``lines``: its summary lines, ``(text, spans)``."""

    messages: tuple[Message, ...]
    tokens: tuple[int, ...]
    prefix: int | None
    lines: tuple[Line, ...] = ()

    @staticmethod
    def of(
        messages: Iterable[Message],
        tokens: Iterable[int],
        prefix: int | None,
        lines: Iterable[Line] = (),
    ) -> ContextView:
        """A view, its sequences made tuples."""
        return ContextView(tuple(messages), tuple(tokens), prefix, tuple(lines))

    @property
    def total(self) -> int:
        """Tokens of the context."""
        return sum(self.tokens)


@dataclass
class MethodTally:
    """Working-context quality of one method over one run (module docstring)."""

    calls: int = 0
    refused: int = 0
    refused_pins_fit: int = 0
    needs: int = 0
    verbatim: int = 0
    summarized: int = 0
    by_kind: dict[str, list[int]] = field(default_factory=dict)  # kind -> [needs, recalled]
    samples: int = 0
    spans: list[int] = field(default_factory=list)
    lines: int = 0
    count_only: int = 0
    compactions: int = 0
    not_reducing: int = 0
    declared: list[float] = field(default_factory=list)
    identical: list[bool] = field(default_factory=list)
    reused: list[float] = field(default_factory=list)
    uses: list[float] = field(default_factory=list)
    _previous: ContextView | None = field(default=None, repr=False)

    def refuse(self, needs: Sequence[Fact], *, pins_fit: bool) -> None:
        """A call the method refused: nothing sent, every fact needed is missed."""
        self.refused += 1
        self.refused_pins_fit += pins_fit
        for fact in needs:
            self._count(fact, recalled=False)

    def observe(
        self, view: ContextView, needs: Sequence[Fact], budget: int, *, sample: bool
    ) -> None:
        """Tally the context ``view`` sent at a call whose next step ``needs`` these facts;
        ``sample``: a quality sample point (pointer spans and count-only lines)."""
        self.calls += 1
        total = view.total
        if needs:
            text = "\x00".join(message.content for message in view.messages)
            for fact in needs:
                if any(
                    covers(spans, fact.seq) and (fact.text in line or fact.quoted_by(line))
                    for line, spans in view.lines
                ):
                    self.summarized += 1
                    self._count(fact, recalled=True)
                elif fact.text in text:
                    self.verbatim += 1
                    self._count(fact, recalled=True)
                else:
                    self._count(fact, recalled=False)
        self.uses.append(total / budget)
        previous = self._previous
        if view.prefix is not None and total:
            self.declared.append(sum(view.tokens[: view.prefix]) / total)
        if previous is not None and total:
            if view.prefix is not None and previous.prefix is not None:
                self.identical.append(
                    view.messages[: view.prefix] == previous.messages[: previous.prefix]
                )
            shared = common_prefix(previous.messages, view.messages)
            self.reused.append(sum(view.tokens[:shared]) / total)
        if sample:
            self.samples += 1
            self.spans.extend(span_sizes(view.lines))
            self.lines += len(view.lines)
            self.count_only += sum(1 for line, _spans in view.lines if count_only(line))
        self._previous = view

    def _count(self, fact: Fact, *, recalled: bool) -> None:
        self.needs += 1
        tally = self.by_kind.setdefault(fact.kind, [0, 0])
        tally[0] += 1
        tally[1] += recalled

    @property
    def recalled(self) -> int:
        """Needed facts the contexts carried."""
        return self.verbatim + self.summarized

    def to_json(self, summary_lines: bool) -> dict[str, Any]:
        """The method's entry of ``working_context.methods`` (``specs/bench.md``);
        ``summary_lines``: whether the method shows summary lines at all (span and
        count-only figures are null otherwise)."""
        spans = sorted(self.spans)
        return {
            "calls": self.calls,
            "refused": {"calls": self.refused, "pins_fit": self.refused_pins_fit},
            "fact_recall": {
                "needs": self.needs,
                "recalled": self.recalled,
                "verbatim": self.verbatim,
                "summarized": self.summarized,
                "share": _share(self.recalled, self.needs),
                "by_kind": {
                    kind: {"needs": needs, "recalled": recalled}
                    for kind, (needs, recalled) in sorted(self.by_kind.items())
                },
            },
            "pointers": {
                "samples": self.samples,
                "spans": len(spans),
                "span_p50": _rank(spans, 50) if summary_lines else None,
                "span_p95": _rank(spans, 95) if summary_lines else None,
                "span_max": (spans[-1] if spans else None) if summary_lines else None,
            },
            "count_only": {
                "lines": self.lines,
                "count_only": self.count_only,
                "share": _share(self.count_only, self.lines) if summary_lines else None,
            },
            "compactions": {"count": self.compactions, "not_reducing": self.not_reducing},
            "stable_prefix": {
                "declared_share": _mean(self.declared),
                "identical_share": _mean([float(same) for same in self.identical]),
                "reused_share": _mean(self.reused),
            },
            "tokens": {
                "mean_use": _mean(self.uses, 4),
                "max_use": round(max(self.uses), 4) if self.uses else None,
            },
        }


def _share(part: int, whole: int) -> float | None:
    return None if whole == 0 else round(part / whole, 6)


def _mean(values: Sequence[float], digits: int = 6) -> float | None:
    return None if not values else round(sum(values) / len(values), digits)


def _rank(ordered: Sequence[int], rank: float) -> int | None:
    """Nearest-rank percentile of the sorted ``ordered``."""
    if not ordered:
        return None
    return ordered[max(0, math.ceil(len(ordered) * rank / 100) - 1)]


def method_rows(methods: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """``(name, figures)`` of the methods of a run, in the report's order."""
    return [(name, methods[name]) for name in METHODS if name in methods]
