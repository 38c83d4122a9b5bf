"""Summarizers: what turns a plan's folded items into structured summary lines.

A :class:`Summarizer` has a ``name``, a ``version`` (both recorded in the compaction) and
``summarize(entries, plan) -> Summary``. Whatever it returns goes through
:func:`registre.context.compaction.check_summary` before anything is recorded, so a
summarizer that fails (raises) or misbehaves (invented quotes, pointers outside the range,
over its share) leaves the ledger untouched.

* :class:`~registre.context.extractive.ExtractiveSummarizer`
  (``registre.extractive`` version ``3``) ships with the project: deterministic, no model,
  it writes lines by importance (the task, instructions, decisions, failures and exceptions,
  findings with their figures, then aggregates of the bulk saying what was done and what came
  out), quotes the entries' own words and points at exactly the entries each line stands for;
  a refold keeps important lines verbatim and merges only aggregates (defined in
  :mod:`registre.context.extractive`).
* :class:`PromptSummarizer` shows where a language model goes: it builds a prompt, hands it to
  a ``complete(prompt) -> reply`` callable the caller injects (registre itself never opens a
  network connection), and parses the reply's ``SECTION | SPANS | TEXT`` lines.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from typing import Protocol

from registre.context.compaction import SUMMARY_LINE_KIND, CompactionPlan, FoldItem
from registre.context.extractive import ExtractiveSummarizer
from registre.context.model import (
    SECTIONS,
    Span,
    Summary,
    SummaryLine,
    coalesce,
    span_count,
)
from registre.lifecycle.errors import LifecycleFormatError

__all__ = [
    "ExtractiveSummarizer",
    "PromptSummarizer",
    "Summarizer",
    "build_prompt",
    "parse_reply",
    "pointer_specificity",
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


# --- pointer specificity ---------------------------------------------------------------------


def pointer_specificity(lines: Iterable[SummaryLine]) -> tuple[float, float]:
    """How tight the pointers of ``lines`` are: the median and the 95th percentile (nearest
    rank) of the entries per pointer span, over every span of every line; ``(0.0, 0.0)``
    for no span. A line that points at exactly the entries it stands for has spans of one or
    two entries (a tool call and its result); a span of thousands is not one lookup away."""
    sizes = sorted(span_count((span,)) for line in lines for span in line.pointers)
    if not sizes:
        return (0.0, 0.0)
    middle = len(sizes) // 2
    median = float(sizes[middle]) if len(sizes) % 2 else (sizes[middle - 1] + sizes[middle]) / 2
    return (median, float(sizes[math.ceil(0.95 * len(sizes)) - 1]))


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
