"""``record_compaction`` given the plan ``Thread.compact`` made: used while the head is where
it was planned, never once the thread moved on (the head is folded and planned again)."""

from __future__ import annotations

from registre.context import ExtractiveSummarizer, default_counter, plan_compaction
from registre.ledger.context.store import PlannedCompaction, record_compaction
from registre.ledger.ledger import Ledger
from registre.ledger.thread import Thread
from registre.ledger.verify.database import verify_database
from tests.ledger.context_helpers import SMALL, step


def _planned(thread: Thread) -> PlannedCompaction:
    state = thread.context_state()
    plan = plan_compaction(state, SMALL, default_counter())
    assert plan is not None
    return PlannedCompaction(state, plan)


def test_a_plan_made_at_the_head_is_recorded_as_planning_again_would(
    ledger: Ledger, thread: Thread
) -> None:
    twin = ledger.create_thread("twin")
    for target in (thread, twin):
        for number in range(12):
            step(target, number)
    summarizer, counter = ExtractiveSummarizer(), default_counter()
    planned = _planned(thread)
    entry = record_compaction(
        thread.database, thread.id, SMALL, counter, summarizer, "registre", planned=planned
    )
    fresh = record_compaction(twin.database, twin.id, SMALL, counter, summarizer, "registre")
    assert entry is not None and fresh is not None
    assert entry.seq == fresh.seq and entry.body == fresh.body
    verify_database(ledger, thread=thread.id)


def test_a_plan_made_before_the_head_moved_is_not_used(ledger: Ledger, thread: Thread) -> None:
    for number in range(12):
        step(thread, number)
    planned = _planned(thread)
    step(thread, 12)  # the head moves on after planning
    entry = record_compaction(
        thread.database,
        thread.id,
        SMALL,
        default_counter(),
        ExtractiveSummarizer(),
        "registre",
        planned=planned,
    )
    assert entry is not None and entry.seq == thread.head().size - 1
    assert entry.body["tokens_before"] != planned.plan.tokens_before
