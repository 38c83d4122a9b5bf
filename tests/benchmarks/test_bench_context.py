"""Projection latency at a fixed budget: from the folded state, beside re-folding the history.

For each size N of ``bench_sizes()`` a thread of N entries is built once, as an agent loop
would write it: turns, tool call/result pairs (outputs of 1 to 80 lines), a few pins that
come and go, decisions, and a ``context.compaction`` recorded whenever one falls due under
the policy below (8000-token budget), planned and summarized by the defaults. Measured,
never asserted, in group ``projection n=N``:

* ``registre``: ``project(state, ...)`` from the context state the ledger keeps up to date
  on append (token counts cached in it, as they are in the ledger's);
* ``naive refold``: ``project(ContextState.replay(entries), ...)``, re-folding the whole
  history for every projection.

The goals (issue 5): the registre figure grows at most 2x from 10^3 to 10^5 entries, and is
at least 50x faster than the naive one at 10^5.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from registre.context import ContextState, Policy, Projection, default_counter, project
from tests.benchmarks.conftest import bench_sizes
from tests.context.strategies import WORDS
from tests.context.threads import ThreadBuilder

POLICY = Policy(budget_tokens=8000, keep_recent_turns=6, bulky_tool_output_tokens=400)
COUNTER = default_counter()
_BUILT: dict[int, ThreadBuilder] = {}


def _sentences(rng: random.Random, count: int, words: int) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(words)) for _ in range(count)]


def thread_of(entries: int) -> ThreadBuilder:
    """A thread of about ``entries`` entries (compactions included), built once per size."""
    if entries not in _BUILT:
        _BUILT[entries] = agent_loop(entries)
    return _BUILT[entries]


def agent_loop(entries: int, policy: Policy = POLICY) -> ThreadBuilder:
    """The agent loop of the module docstring, about ``entries`` entries, compacting when due
    under ``policy``; the same entries for the same size, whatever the policy lets fold."""
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


def ours(builder: ThreadBuilder) -> Projection:
    return project(builder.state, POLICY.budget_tokens, POLICY, COUNTER)


def naive(builder: ThreadBuilder) -> Projection:
    return project(ContextState.replay(builder.entries), POLICY.budget_tokens, POLICY, COUNTER)


@pytest.mark.parametrize("entries", bench_sizes())
def test_bench_projection_registre(benchmark: Any, entries: int) -> None:
    benchmark.group = f"projection n={entries}"
    builder = thread_of(entries)
    projection = benchmark(ours, builder)
    assert projection.tokens <= POLICY.budget_tokens
    assert projection.manifest.runs[-1].last == builder.state.at


@pytest.mark.parametrize("entries", bench_sizes())
def test_bench_projection_naive_refold(benchmark: Any, entries: int) -> None:
    benchmark.group = f"projection n={entries}"
    builder = thread_of(entries)
    rounds = max(1, min(20, 200_000 // entries))
    projection = benchmark.pedantic(naive, args=(builder,), rounds=rounds, iterations=1)
    assert projection == ours(builder)
