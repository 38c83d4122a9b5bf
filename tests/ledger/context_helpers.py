"""Helpers for the working-context tests on the ledger (plain functions, not fixtures)."""

from __future__ import annotations

from typing import Any

from sqlalchemy import Engine, select

from registre.attest.notes import Signer
from registre.context import ContextState, Policy
from registre.ledger.core.append import append_entries
from registre.ledger.store.context_snapshots import CONTEXT_SNAPSHOT, context_entries
from registre.ledger.store.engine import read_transaction, write_transaction
from registre.ledger.thread import Thread

SMALL = Policy(
    budget_tokens=600,
    high_water_permille=800,
    low_water_permille=500,
    keep_recent_turns=2,
    bulky_tool_output_tokens=60,
    summary_share_permille=400,
)
"""A budget small enough that a dozen steps of an agent loop call for a compaction."""

MODEL = "test/model-1"


def step(thread: Thread, number: int, *, output_lines: int = 6) -> None:
    """One step of an agent loop: a tool call, its result, and the assistant's note."""
    call_id = f"call-{number}"
    thread.append_many(
        [
            (
                "tool.call",
                {"call_id": call_id, "name": "bash", "arguments": {"cmd": f"ls {number}"}},
                "agent",
            ),
            (
                "tool.result",
                {"call_id": call_id, "content": f"module_{number}.py\n" * output_lines},
                "tool:bash",
            ),
            (
                "turn",
                {
                    "role": "assistant",
                    "text": f"Step {number}: the spec lookup misses namespace packages.",
                },
                "agent",
            ),
        ]
    )


def agent_loop(thread: Thread, steps: int, *, policy: Policy = SMALL, start: int = 0) -> list[int]:
    """``steps`` steps, each followed by a model call (compacting when due); returns the seqs
    of the model calls."""
    calls = []
    for number in range(start, start + steps):
        step(thread, number, output_lines=4 + number % 9)
        _projection, entry = thread.model_call(MODEL, policy.budget_tokens, policy)
        calls.append(entry.seq)
    return calls


def opened(thread: Thread) -> Thread:
    """The thread with a question and a pinned task parameter (entries 0 and 1)."""
    thread.append(
        "turn",
        {"role": "user", "text": "Why does astroid 2.9.1 fail on namespace packages?"},
        "alice",
    )
    thread.pin("task_parameter", "Do not modify tests.", 0)
    return thread


def replayed(thread: Thread, at: int | None = None) -> ContextState:
    """The context fold of the thread's entries, replayed from entry 0 (no snapshot)."""
    engine = thread.database.engine
    with read_transaction(engine) as conn:
        size = thread.head().size if at is None else at + 1
        return ContextState.replay(list(context_entries(conn, thread.id, 0, size)))


def snapshot_rows(engine: Engine, thread: str) -> list[tuple[Any, ...]]:
    """The thread's context_snapshot rows, in seq order."""
    table = CONTEXT_SNAPSHOT
    with read_transaction(engine) as conn:
        rows = conn.execute(
            select(table.c.seq, table.c.boundary, table.c.snapshot)
            .where(table.c.thread == thread)
            .order_by(table.c.seq)
        ).all()
    return [tuple(row) for row in rows]


def forge(engine: Engine, signer: Signer, thread: str, kind: str, body: dict[str, Any]) -> int:
    """Append a signed entry without any context check (a writer that bypasses the API, with
    the operator key); return its seq."""
    with write_transaction(engine) as conn:
        (entry,) = append_entries(conn, signer, thread, [(kind, body, "registre")])
    return entry.seq
