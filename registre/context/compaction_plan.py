"""What a planned compaction is (``specs/context.md`` section 5): :class:`CompactionPlan`, the
:class:`FoldItem` values a summarizer reads, and what a summary recorded by a plan costs
(:func:`summary_tokens`). Planned by :func:`registre.context.compaction.plan_compaction`
(the search itself in :mod:`registre.context.compaction_search`), a summary checked
by :func:`registre.context.compaction.check_summary`.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from registre.context.model import Span, SummaryLine
from registre.context.policy import Policy
from registre.context.record import Elision
from registre.context.render import message_tokens, summary_message
from registre.context.tokens import TokenCounter

__all__ = [
    "MIN_SUMMARY_TOKENS",
    "SUMMARY_LINE_KIND",
    "CompactionPlan",
    "FoldItem",
    "summary_tokens",
]

MIN_SUMMARY_TOKENS: Final = 64
"""The least a plan leaves for a summary's message; a fold that cannot leave this much is not
planned."""

SUMMARY_LINE_KIND: Final = "summary.line"
"""The ``kind`` of a :class:`FoldItem` that is a line of a summary being folded again."""


@dataclass(frozen=True, slots=True)
class FoldItem:
    """What a summarizer reads: a folded ledger entry, or a line of a summary folded again.

    For an entry: its ``seq``, ``kind``, ``actor``, ``text`` (its own words), ``body`` and the
    seq of its paired tool call or result (``partner``); ``pointers`` is ``((seq, seq),)``.
    For a summary line (``kind`` = :data:`SUMMARY_LINE_KIND`): ``seq`` is the compaction that
    wrote it, ``section``, ``text`` and ``pointers`` are the line's.
    """

    seq: int
    kind: str
    actor: str
    text: str
    pointers: tuple[Span, ...]
    section: str | None = None
    body: Mapping[str, object] | None = None
    partner: int | None = None


@dataclass(frozen=True, slots=True, eq=False)
class CompactionPlan:
    """A planned compaction, to be recorded as entry ``at + 1`` of the thread.

    ``folded`` is the range to fold (``None``: stubs only), ``refolded`` the seqs of the live
    summaries it folds again, ``stubbed`` the tool results to stub, ``elided`` the tool
    results to show head and tail only (``(seq, head_chars, tail_chars)``), ``items`` what
    the summarizer reads, ``max_summary_tokens`` the most the summary's message may take:
    with it the context stays strictly smaller than ``tokens_before``; ``pinned`` the folded
    entries whose whole text a live pin carries (the header shows it verbatim).
    """

    at: int
    folded: Span | None
    refolded: tuple[int, ...]
    stubbed: tuple[int, ...]
    items: tuple[FoldItem, ...]
    max_summary_tokens: int
    tokens_before: int
    policy: Policy
    counter: TokenCounter
    pin_set_sha256: str
    elided: tuple[Elision, ...] = ()
    pinned: frozenset[int] = frozenset()

    @property
    def seq(self) -> int:
        """The seq the compaction entry will have."""
        return self.at + 1

    def entry_texts(self) -> dict[int, str]:
        """Texts of the folded tail entries by seq (for :func:`check_summary`; a refold also
        needs the texts of the entries its summary lines point at)."""
        return {item.seq: item.text for item in self.items if item.kind != SUMMARY_LINE_KIND}


def summary_tokens(
    plan: CompactionPlan, lines: Sequence[SummaryLine], counter: TokenCounter
) -> int:
    """Tokens the summary's message will take once recorded by ``plan``."""
    if plan.folded is None:
        return 0
    first, last = plan.folded
    return message_tokens(summary_message(plan.seq, first, last, lines), counter)
