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

import random
from pathlib import Path
from typing import Any

import pytest

from registre.attest.bodies import LIFECYCLE_KINDS
from registre.attest.keys import Signer
from registre.ledger.ledger import Ledger
from registre.ledger.store.context_snapshots import context_entries
from registre.ledger.store.engine import read_transaction
from registre.ledger.thread import Thread
from registre.lifecycle.context import ContextState, Policy, Projection, default_counter, project
from tests.benchmarks.conftest import bench_sizes
from tests.lifecycle.context.strategies import WORDS
from tests.lifecycle.context.threads import ThreadBuilder

BUDGETS = (8_000, 128_000, 1_000_000)
LARGEST = 100_000
SIGNER = Signer.from_seed("registre.bench/log", bytes(range(32)))
_LEDGERS: dict[tuple[int, int], Thread] = {}


def policy_of(budget: int) -> Policy:
    return Policy(budget_tokens=budget, keep_recent_turns=6, bulky_tool_output_tokens=400)


def _sentences(rng: random.Random, count: int, words: int) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(words)) for _ in range(count)]


def _built(entries: int, policy: Policy) -> ThreadBuilder:
    """The agent loop of test_bench_context.thread_of, compacting under ``policy``."""
    rng = random.Random(entries)
    short = _sentences(rng, 64, 12)
    lines = _sentences(rng, 256, 8)
    outputs = ["\n".join(rng.sample(lines, size)) for size in (1, 3, 10, 80) for _ in range(8)]
    builder = ThreadBuilder(policy=policy)
    live: list[str] = []
    step = 0
    while len(builder.entries) < entries:
        step += 1
        draw = rng.random()
        if draw < 0.35:
            builder.turn(rng.choice(("user", "assistant")), rng.choice(short))
        elif draw < 0.9:
            builder.tool("bash", rng.choice(short), rng.choice(outputs))
        elif draw < 0.95:
            pin_id = builder.pin("decision", f"{rng.choice(short)} ({step})")
            if pin_id is not None:
                live.append(pin_id)
            if len(live) > 5:
                builder.unpin(live.pop(0))
        else:
            builder.decision(rng.choice(short))
    return builder


def ledger_thread(entries: int, budget: int, folder: Path) -> Thread:
    """A SQLite ledger thread of about ``entries`` entries compacted under ``budget``."""
    if (entries, budget) in _LEDGERS:
        return _LEDGERS[entries, budget]
    built = _built(entries, policy_of(budget))
    ledger = Ledger.open(str(folder / f"scale-{entries}-{budget}.db"), SIGNER)
    thread = ledger.create_thread("bench")
    batch: list[tuple[str, Any, str]] = []
    for entry in built.entries:
        lifecycle = entry.kind in LIFECYCLE_KINDS
        if batch and (len(batch) >= 1000 or (batch[-1][0] in LIFECYCLE_KINDS) != lifecycle):
            thread.append_many(batch)  # lifecycle and context items go in separate batches
            batch = []
        batch.append((entry.kind, dict(entry.body), entry.actor))
    if batch:
        thread.append_many(batch)
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
