"""Projection latency on a SQLite ledger at a fixed budget: from the context snapshots, beside
re-folding the whole thread.

For each size N of ``bench_sizes()`` (at most 10^5: building a larger thread takes minutes) a
ledger thread of N entries is written once, in ``append_many`` batches, from the thread of
``tests/benchmarks/test_bench_context.py``: an agent loop of turns, tool calls with outputs of
1 to 80 lines, pins that come and go, decisions, and a ``context.compaction`` whenever one
falls due under an 8000-token budget (each checked and stored with its snapshot, as
``registre append`` would). Measured, never asserted, in group ``ledger projection n=N``:

* ``registre``: ``thread.project(budget=8000)`` on a ledger handle, at the head: one index
  probe for the latest snapshot, the tail and the entries since read back, restored and
  projected. Nothing is cached between rounds but the counter's compiled patterns;
* ``registre at mid-thread``: the same at ``at = N / 2``;
* ``naive refold``: every entry read back and parsed, folded from entry 0, then projected.

The goals (issue 5): the registre figure grows at most 2x from 10^3 to 10^5 entries, and is
at least 50x faster than the naive one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from registre.attest.entries import LIFECYCLE_KINDS
from registre.attest.notes import Signer
from registre.context import ContextState, Projection, project
from registre.ledger.ledger import Ledger
from registre.ledger.store.context_snapshots import context_entries
from registre.ledger.store.engine import read_transaction
from registre.ledger.thread import Thread
from tests.benchmarks.conftest import bench_sizes
from tests.benchmarks.test_bench_context import COUNTER, POLICY, thread_of
from tests.context.threads import ThreadBuilder

BUDGET = POLICY.budget_tokens
LARGEST = 100_000
SIGNER = Signer.from_seed("registre.bench/log", bytes(range(32)))
_LEDGERS: dict[int, Thread] = {}


def ledger_thread(entries: int, folder: Path) -> Thread:
    """A SQLite ledger thread holding the entries of ``thread_of(entries)``, written once."""
    if entries in _LEDGERS:
        return _LEDGERS[entries]
    thread = written(thread_of(entries), folder / f"context-{entries}.db")
    _LEDGERS[entries] = thread
    return thread


def written(built: ThreadBuilder, path: Path) -> Thread:
    """Thread ``bench`` of a new SQLite ledger at ``path`` holding ``built``'s entries, written
    in ``append_many`` batches (each compaction checked and stored with its snapshot)."""
    thread = Ledger.open(str(path), SIGNER).create_thread("bench")
    batch: list[tuple[str, Any, str]] = []
    for entry in built.entries:
        lifecycle = entry.kind in LIFECYCLE_KINDS
        if batch and (len(batch) >= 1000 or (batch[-1][0] in LIFECYCLE_KINDS) != lifecycle):
            thread.append_many(batch)  # lifecycle and context items go in separate batches
            batch = []
        batch.append((entry.kind, dict(entry.body), entry.actor))
    if batch:
        thread.append_many(batch)
    return thread


def naive(thread: Thread, at: int) -> Projection:
    with read_transaction(thread.database.engine) as conn:
        entries = list(context_entries(conn, thread.id, 0, at + 1))
    return project(ContextState.replay(entries), BUDGET, POLICY, COUNTER)


def sizes() -> list[int]:
    return [
        pytest.param(n, marks=pytest.mark.skip(reason="building over 10^5 entries takes minutes"))
        if n > LARGEST
        else n
        for n in bench_sizes()
    ]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("context-ledger")


@pytest.mark.parametrize("entries", sizes())
def test_bench_ledger_projection_registre(benchmark: Any, folder: Path, entries: int) -> None:
    benchmark.group = f"ledger projection n={entries}"
    thread = ledger_thread(entries, folder)
    projection = benchmark(thread.project, budget=BUDGET, policy=POLICY)
    assert projection.tokens <= BUDGET
    assert projection.manifest.runs[-1].last == thread.head().size - 1


@pytest.mark.parametrize("entries", sizes())
def test_bench_ledger_projection_registre_mid_thread(
    benchmark: Any, folder: Path, entries: int
) -> None:
    benchmark.group = f"ledger projection n={entries}"
    thread = ledger_thread(entries, folder)
    at = thread.head().size // 2
    projection = benchmark(thread.project, at=at, budget=BUDGET, policy=POLICY)
    assert projection.at == at


@pytest.mark.parametrize("entries", sizes())
def test_bench_ledger_projection_naive_refold(benchmark: Any, folder: Path, entries: int) -> None:
    benchmark.group = f"ledger projection n={entries}"
    thread = ledger_thread(entries, folder)
    at = thread.head().size - 1
    rounds = max(1, min(20, 100_000 // entries))
    projection = benchmark.pedantic(naive, args=(thread, at), rounds=rounds, iterations=1)
    assert projection == thread.project(budget=BUDGET, policy=POLICY)
