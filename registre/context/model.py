"""Values of the working context: ledger entries as the fold sees them, messages, summary
lines and pointer spans. All frozen; collections are tuples.

A *span* ``(first, last)`` is an inclusive range of ledger sequence numbers. A pointer set is a
tuple of spans that is sorted, non-empty, and *coalesced*: spans neither overlap nor touch
(``last + 1 < next first``), so each set of sequence numbers has exactly one spelling
(``((2, 5), (12, 13), (20, 20))``). :func:`coalesce` gives that spelling for any spans.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Final

from registre.lifecycle.errors import LifecycleFormatError

__all__ = [
    "SECTIONS",
    "ContextEntry",
    "Message",
    "Span",
    "Summary",
    "SummaryLine",
    "coalesce",
    "format_spans",
    "span_count",
]

Span = tuple[int, int]

SECTIONS: Final = ("findings", "decisions", "dead_ends", "tool_outputs", "open_threads")
"""The sections of a structured summary, in the order the default summarizer writes them."""


@dataclass(frozen=True, slots=True)
class ContextEntry:
    """A ledger entry as the context fold reads it: ``body`` is the entry's (already
    schema-checked) body. The fold never changes ``body``."""

    seq: int
    kind: str
    actor: str
    body: Mapping[str, object]


@dataclass(frozen=True, slots=True)
class Message:
    """One message of a projection: ``role`` is ``system``, ``user``, ``assistant`` or
    ``tool``; ``name`` and ``call_id`` are set for tool calls and tool results only."""

    role: str
    content: str
    name: str | None = None
    call_id: str | None = None

    def to_json(self) -> dict[str, object]:
        """``{"role", "content"}`` plus ``"name"`` and ``"call_id"`` when set."""
        data: dict[str, object] = {"role": self.role, "content": self.content}
        if self.name is not None:
            data["name"] = self.name
        if self.call_id is not None:
            data["call_id"] = self.call_id
        return data


@dataclass(frozen=True, slots=True)
class SummaryLine:
    """One line of a structured summary: what ``text`` says stands for the ledger entries
    ``pointers`` (coalesced spans). Construction refuses an unknown section, a text that is
    not a string, and pointers that are not a coalesced, non-empty span tuple
    (:class:`~registre.lifecycle.errors.LifecycleFormatError`)."""

    section: str
    text: str
    pointers: tuple[Span, ...]

    def __post_init__(self) -> None:
        if self.section not in SECTIONS:
            raise LifecycleFormatError(
                "summary line.section",
                f"expected one of {', '.join(SECTIONS)}, got {self.section!r}",
            )
        if not isinstance(self.text, str):
            raise LifecycleFormatError("summary line.text", "expected a string")
        if not self.pointers or coalesce(self.pointers) != tuple(self.pointers):
            raise LifecycleFormatError(
                "summary line.pointers",
                f"expected sorted, non-overlapping, non-touching spans, got {self.pointers!r:.120}",
            )

    def covers(self, seq: int) -> bool:
        """Whether ``seq`` is one of the entries the line points at. O(log spans)."""
        low, high = 0, len(self.pointers)
        while low < high:
            middle = (low + high) // 2
            if self.pointers[middle][1] < seq:
                low = middle + 1
            else:
                high = middle
        return low < len(self.pointers) and self.pointers[low][0] <= seq

    def to_json(self) -> dict[str, object]:
        """``{"section", "text", "pointers": [[first, last], ...]}``."""
        return {
            "section": self.section,
            "text": self.text,
            "pointers": [[first, last] for first, last in self.pointers],
        }


@dataclass(frozen=True, slots=True)
class Summary:
    """What a summarizer returns: its lines, in order."""

    lines: tuple[SummaryLine, ...]


def coalesce(spans: Iterable[Span]) -> tuple[Span, ...]:
    """The one spelling of the union of ``spans``: sorted, merged where they overlap or
    touch. Raises :class:`~registre.lifecycle.errors.LifecycleFormatError` for a span with
    ``first > last`` or a negative number."""
    ordered = sorted(spans)
    merged: list[Span] = []
    for first, last in ordered:
        if first < 0 or first > last:
            raise LifecycleFormatError("pointers", f"invalid span ({first}, {last})")
        if merged and first <= merged[-1][1] + 1:
            if last > merged[-1][1]:
                merged[-1] = (merged[-1][0], last)
        else:
            merged.append((first, last))
    return tuple(merged)


def span_count(spans: Iterable[Span]) -> int:
    """How many sequence numbers coalesced ``spans`` hold."""
    return sum(last - first + 1 for first, last in spans)


def format_spans(spans: Iterable[Span]) -> str:
    """``2-5, 12-13, 20``: how pointers are written inside a rendered summary."""
    return ", ".join(str(first) if first == last else f"{first}-{last}" for first, last in spans)
