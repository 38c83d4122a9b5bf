"""What the model was not seeing: the context at a point of the thread, read against the ledger.

:func:`context_diff` answers, for the context as it stood after entry ``at``, the question the
design asks of every model call -- "what was the agent no longer considering?" -- from the
projection's manifest (``specs/context.md`` section 4):

* **summarized**: entries the model saw only through a summary line (which compaction, which
  line, what the line says);
* **stubbed**: bulky tool results the model saw as a one-line stub;
* **folded without mention**: entries that were content (turns, tool calls and results,
  decisions, lifecycle requests, pins and unpins) but that no line of a live summary points
  at -- gone from the context without a trace in it;
* **records**: compactions and model calls, which are never part of a context (a count).

The projection is made with a budget equal to the context's own size, so it always exists;
the statuses do not depend on the budget. Reading the kinds of the folded entries costs
O(folded entries) (the ``entry.kind`` column only); everything else O(context).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Final

from sqlalchemy import Connection, bindparam, select

from registre.attest.projection_digest import projection_digest
from registre.context import (
    Policy,
    Projection,
    TokenCounter,
    context_tokens,
    default_counter,
    project,
)
from registre.ledger.context.api import ContextThread
from registre.ledger.store.engine import read_transaction
from registre.ledger.store.schema import tables

__all__ = ["RECORD_KINDS", "ContextDiff", "DiffRun", "context_diff"]

RECORD_KINDS: Final = frozenset(("context.compaction", "model.call"))
"""Kinds that record the context rather than take part in it."""

_entry = tables.entry
_KINDS = (
    select(_entry.c.seq, _entry.c.kind)
    .where(
        _entry.c.thread == bindparam("thread"),
        _entry.c.seq >= bindparam("first"),
        _entry.c.seq <= bindparam("last"),
    )
    .order_by(_entry.c.seq)
)


@dataclass(frozen=True)
class DiffRun:
    """Entries ``first..last``. For a summarized run, ``compaction`` and ``line`` name the
    summary line standing for them and ``text`` is what it says; for a folded run, ``kinds``
    counts the entries by kind."""

    first: int
    last: int
    compaction: int | None = None
    line: int | None = None
    text: str | None = None
    kinds: dict[str, int] = field(default_factory=dict)

    def to_json(self) -> dict[str, object]:
        data: dict[str, object] = {"from": self.first, "to": self.last}
        if self.compaction is not None:
            data.update({"compaction": self.compaction, "line": self.line, "text": self.text})
        if self.kinds:
            data["kinds"] = dict(sorted(self.kinds.items()))
        return data


@dataclass(frozen=True)
class ContextDiff:
    """What the context after entry ``at`` holds of the ledger, and what it does not."""

    at: int
    projection: Projection
    summarized: tuple[DiffRun, ...]
    stubbed: tuple[DiffRun, ...]
    folded: tuple[DiffRun, ...]
    records: int

    def to_json(self) -> dict[str, object]:
        return {
            "at": self.at,
            "messages": len(self.projection.messages),
            "tokens": self.projection.tokens,
            "projection_sha256": projection_digest(self.projection),
            "summarized": [run.to_json() for run in self.summarized],
            "stubbed": [run.to_json() for run in self.stubbed],
            "folded": [run.to_json() for run in self.folded],
            "records": self.records,
        }


def context_diff(
    thread: ContextThread, at: int, counter: TokenCounter | None = None
) -> ContextDiff:
    """The diff of the context after entry ``at`` (module docstring). EntryNotFoundError for
    an ``at`` that is not an entry of the thread."""
    counter = counter or default_counter()
    state = thread.context_state(at)
    budget = max(1, context_tokens(state, counter))
    projection = project(state, budget, Policy(budget_tokens=budget), counter)
    lines = {summary.seq: [line.text for line in summary.lines] for summary in state.summaries}
    summarized, stubbed, folded = [], [], []
    records = 0
    with read_transaction(thread.database.engine) as conn:
        for run in projection.manifest.runs:
            if run.status == "summarized" and run.compaction is not None:
                text = lines[run.compaction][run.line or 0]
                summarized.append(DiffRun(run.first, run.last, run.compaction, run.line, text))
            elif run.status == "stubbed":
                stubbed.append(DiffRun(run.first, run.last))
            elif run.status == "folded":
                for first, last, kinds in _split(conn, thread.id, run.first, run.last):
                    if kinds.keys() <= RECORD_KINDS:
                        records += sum(kinds.values())
                    else:
                        folded.append(DiffRun(first, last, kinds=kinds))
    return ContextDiff(
        projection.at, projection, tuple(summarized), tuple(stubbed), tuple(folded), records
    )


def _split(
    conn: Connection, thread: str, first: int, last: int
) -> Iterator[tuple[int, int, dict[str, int]]]:
    """``first..last`` cut into maximal runs of record kinds and of other kinds, each with
    its kind counts."""
    start, kinds, record = first, Counter[str](), None
    rows = conn.execute(_KINDS, {"thread": thread, "first": first, "last": last})
    for row in rows:
        is_record = row.kind in RECORD_KINDS
        if record is not None and is_record != record:
            yield start, int(row.seq) - 1, dict(kinds)
            start, kinds = int(row.seq), Counter()
        record = is_record
        kinds[str(row.kind)] += 1
    if kinds:
        yield start, last, dict(kinds)
