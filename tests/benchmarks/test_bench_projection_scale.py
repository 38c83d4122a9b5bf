"""Projection and model-call latency on a SQLite ledger at budgets of 8k, 128k and 1M tokens,
beside the naive refold (issue 17, item 1).

For each size N of ``bench_sizes()`` (at most 10^5) and each budget B, a ledger thread of
about N entries is written once: the agent loop of ``tests/benchmarks/test_bench_context.py``
(turns, tool calls with outputs of 1 to 80 lines, pins that come and go, decisions) with a
``context.compaction`` whenever one falls due under budget B. Measured, never asserted, in
group ``projection scale n=N budget=B``:

* ``registre project``: ``thread.project(budget=B)`` at the head, repeated on one handle (what
  an agent loop does between appends: the process's cached fold and projection are used);
* ``registre model_call``: ``thread.model_call(...)`` (compact if due, project, digest, append
  the ``model.call`` durably): each round appends one entry;
* ``naive refold``: every entry read back, folded from entry 0, then projected.

The goals: p50 <= 10 ms and p99 <= 25 ms for both of ours at 10^5 entries, at every budget, and
at least 10x faster than the naive refold at every size >= 10^3.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from registre.context import ContextState, Policy, Projection, default_counter, project
from registre.ledger.store.context_snapshots import context_entries
from registre.ledger.store.engine import read_transaction
from registre.ledger.thread import Thread
from tests.benchmarks.conftest import bench_sizes
from tests.benchmarks.test_bench_context import agent_loop
from tests.benchmarks.test_bench_context_ledger import written

BUDGETS = (8_000, 128_000, 1_000_000)
LARGEST = 100_000
_LEDGERS: dict[tuple[int, int], Thread] = {}


def policy_of(budget: int) -> Policy:
    return Policy(budget_tokens=budget, keep_recent_turns=6, bulky_tool_output_tokens=400)


def ledger_thread(entries: int, budget: int, folder: Path) -> Thread:
    """A SQLite ledger thread of about ``entries`` entries compacted under ``budget``."""
    if (entries, budget) in _LEDGERS:
        return _LEDGERS[entries, budget]
    built = agent_loop(entries, policy_of(budget))
    thread = written(built, folder / f"scale-{entries}-{budget}.db")
    _LEDGERS[entries, budget] = thread
    return thread


def naive(thread: Thread, budget: int) -> Projection:
    with read_transaction(thread.database.engine) as conn:
        size = thread.head().size
        entries = list(context_entries(conn, thread.id, 0, size))
    return project(ContextState.replay(entries), budget, policy_of(budget), default_counter())


def cases() -> list[Any]:
    return [
        pytest.param(n, budget, marks=pytest.mark.skip(reason="building over 10^5 entries"))
        if n > LARGEST
        else pytest.param(n, budget)
        for n in bench_sizes()
        for budget in BUDGETS
    ]


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("projection-scale")


@pytest.mark.parametrize(("entries", "budget"), cases())
def test_bench_scale_project_registre(
    benchmark: Any, folder: Path, entries: int, budget: int
) -> None:
    benchmark.group = f"projection scale n={entries} budget={budget}"
    thread = ledger_thread(entries, budget, folder)
    projection = benchmark(thread.project, budget=budget, policy=policy_of(budget))
    assert projection.tokens <= budget
    assert projection.manifest.runs[-1].last == thread.head().size - 1


@pytest.mark.parametrize(("entries", "budget"), cases())
def test_bench_scale_model_call_registre(
    benchmark: Any, folder: Path, entries: int, budget: int
) -> None:
    benchmark.group = f"projection scale n={entries} budget={budget}"
    thread = ledger_thread(entries, budget, folder)
    policy = policy_of(budget)
    projection, entry = benchmark.pedantic(
        thread.model_call, args=("bench/model", budget, policy), rounds=50, iterations=1
    )
    assert entry.body["at_seq"] == projection.at


@pytest.mark.parametrize(("entries", "budget"), cases())
def test_bench_scale_naive_refold(benchmark: Any, folder: Path, entries: int, budget: int) -> None:
    benchmark.group = f"projection scale n={entries} budget={budget}"
    thread = ledger_thread(entries, budget, folder)
    rounds = max(1, min(10, 50_000 // entries))
    projection = benchmark.pedantic(naive, args=(thread, budget), rounds=rounds, iterations=1)
    assert projection == thread.project(budget=budget, policy=policy_of(budget))
