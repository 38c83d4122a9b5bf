"""On the ledger: a compaction must pay for itself (issue 12, item 5) and a big tool output in
the latest turn no longer refuses the model call (item 4). ``Thread.compact`` returns None and
writes nothing when no compaction would shrink the context; a forged one that does not is
refused by raw appends and by ``verify --db``. Both engines."""

from __future__ import annotations

import pytest

from registre.attest.notes import Signer
from registre.context import Policy, SummaryLine, context_tokens, default_counter
from registre.context.errors import CompactionDoesNotReduceError
from registre.ledger.context.store import ContextEntryRefusedError
from registre.ledger.ledger import Ledger
from registre.ledger.thread import Thread
from registre.ledger.verify.database import verify_database
from registre.ledger.verify.errors import CompactionInvalidError
from tests.context.threads import honest_body
from tests.ledger.context_helpers import MODEL, SMALL, forge, opened, snapshot_rows, step

COUNTER = default_counter()


def grown(thread: Thread, steps: int) -> Thread:
    opened(thread)
    for number in range(steps):
        step(thread, number)
    return thread


def grows_the_context(thread: Thread) -> dict[str, object]:
    """Fold entry 0 (the question) into a longer line: every rule holds but rule 11."""
    line = SummaryLine(
        "open_threads",
        "user: “Why does astroid 2.9.1 fail on namespace packages?” asked at the start, "
        "before any tool was run or any file was read",
        ((0, 0),),
    )
    body = honest_body(thread.context_state(), folded=(0, 0), lines=(line,), policy=SMALL)
    assert body["tokens_after"] > body["tokens_before"]  # type: ignore[operator]
    return body


def test_compaction_that_grows_the_context_fail(
    ledger: Ledger, thread: Thread, signer: Signer
) -> None:
    grown(thread, 3)
    seq = forge(ledger.engine, signer, thread.id, "context.compaction", grows_the_context(thread))
    with pytest.raises(CompactionInvalidError) as failure:
        verify_database(ledger)
    assert failure.value.seq == seq
    assert isinstance(failure.value.__cause__, CompactionDoesNotReduceError)


def test_raw_compaction_that_grows_the_context_is_refused(ledger: Ledger, thread: Thread) -> None:
    grown(thread, 3)
    size = thread.head().size
    with pytest.raises(ContextEntryRefusedError) as refused:
        thread.append("context.compaction", grows_the_context(thread), "registre")
    assert isinstance(refused.value.__cause__, CompactionDoesNotReduceError)
    assert thread.head().size == size and snapshot_rows(ledger.engine, thread.id) == []


def test_compact_returns_none_when_no_compaction_would_shrink(
    ledger: Ledger, thread: Thread
) -> None:
    grown(thread, 3)
    tokens = context_tokens(thread.context_state(), COUNTER)
    # past H, nothing to fold, and within the window (no reserve): no tier-4 elision is due
    policy = Policy(budget_tokens=tokens, keep_recent_turns=100, output_reserve_tokens=0)
    assert tokens > policy.high_water_tokens
    size = thread.head().size
    assert thread.compact(policy=policy) is None
    assert thread.head().size == size and snapshot_rows(ledger.engine, thread.id) == []


def test_a_32_kib_output_in_the_latest_turn_no_longer_refuses_the_call(
    ledger: Ledger, thread: Thread
) -> None:
    """Measured before: RecentTurnsOverBudgetError at 8k; now the call is recorded with the
    output shown head and tail, and everything verifies, from snapshots too."""
    policy = Policy(budget_tokens=8000)
    grown(thread, 12)
    output = "\n".join(f"{n:05d} modutils resolves a path for import {n}" for n in range(720))
    assert len(output.encode()) > 32 * 1024
    thread.append_many(
        [
            ("tool.call", {"call_id": "big", "name": "bash", "arguments": {"cmd": "cat"}}, "a"),
            ("tool.result", {"call_id": "big", "name": "bash", "content": output}, "tool:bash"),
        ]
    )
    projection, entry = thread.model_call(MODEL, 8000, policy)
    assert projection.tokens <= 8000
    last = projection.messages[-1]
    assert last.call_id == "big" and last.content.startswith(
        f"[output elided: {len(output.encode())} bytes, showing the first "
    )
    assert thread.replay_context(entry.seq) == projection
    step(thread, 99)
    projection, entry = thread.model_call(MODEL, 8000, policy)  # the output is stubbed now
    assert projection.tokens <= 8000
    assert thread.replay_context(entry.seq) == projection
    compactions = [e for e in thread.entries() if e.kind == "context.compaction"]
    assert any("elided" in e.body for e in compactions)
    assert all(e.body["tokens_after"] < e.body["tokens_before"] for e in compactions)
    verify_database(ledger)
