"""Counting a context's tokens with a real BPE vocabulary, with and without the count cache.

For each budget (8k, 32k, 128k) a thread is built once as an agent loop writes it (turns,
tool calls with outputs of 1 to 80 lines, decisions), compacted under that budget by the
defaults, and projected. Measured, never asserted, in group ``count budget=B``:

* ``uncached``: every text of the projection's messages counted by ``BpeCounter(cache_texts=0)``
  (``bpe-openai.o200k_base/1``), what each model call would pay without the cache;
* ``cached``: the same texts through the default ``BpeCounter`` once its cache is warm (the
  texts were counted before), what a model call pays for the texts it shares with the last.

And in group ``replay and project budget=B``: ``project(ContextState.replay(entries), ...)``
with either counter: a state rebuilt from the ledger has no per-entry counts, so without the
cache every text of the tail is counted again. The goal (issue 12, item 7): with the cache,
a large budget costs no more per call than a small one.
"""

from __future__ import annotations

import random
from typing import Any

import pytest

from registre.context import (
    BpeCounter,
    ContextState,
    Policy,
    Projection,
    TokenCounter,
    project,
)
from tests.context.strategies import WORDS
from tests.context.threads import ThreadBuilder

pytest.importorskip("bpe_openai")

BUDGETS = (8_000, 32_000, 128_000)
UNCACHED = BpeCounter("o200k_base", cache_texts=0)
CACHED = BpeCounter("o200k_base")
_BUILT: dict[int, tuple[ThreadBuilder, Policy, list[str]]] = {}


def _sentences(rng: random.Random, count: int, words: int) -> list[str]:
    return [" ".join(rng.choice(WORDS) for _ in range(words)) for _ in range(count)]


def built(budget: int) -> tuple[ThreadBuilder, Policy, list[str]]:
    """A thread compacted under ``budget`` with a few compactions behind it, its policy, and
    the texts of its projection's messages (contents, tool names, call ids)."""
    if budget in _BUILT:
        return _BUILT[budget]
    policy = Policy(budget_tokens=budget, keep_recent_turns=6, bulky_tool_output_tokens=400)
    rng = random.Random(budget)
    short = _sentences(rng, 64, 12)
    lines = _sentences(rng, 256, 8)
    outputs = ["\n".join(rng.sample(lines, size)) for size in (1, 3, 10, 80) for _ in range(8)]
    builder = ThreadBuilder(policy=policy)
    while len(builder.compactions) < 3:
        draw = rng.random()
        if draw < 0.35:
            builder.turn(rng.choice(("user", "assistant")), rng.choice(short))
        elif draw < 0.95:
            builder.tool("bash", rng.choice(short), rng.choice(outputs))
        else:
            builder.decision(rng.choice(short))
    # The budget is the default counter's; the BPE projection is given room to spare.
    projection = project(builder.state, 2 * budget, policy, UNCACHED)
    texts = [
        text
        for message in projection.messages
        for text in (message.content, message.name, message.call_id)
        if text is not None
    ]
    _BUILT[budget] = (builder, policy, texts)
    return _BUILT[budget]


def count_all(counter: TokenCounter, texts: list[str]) -> int:
    return sum(counter.count(text) for text in texts)


def replay_and_project(counter: TokenCounter, builder: ThreadBuilder, policy: Policy) -> Projection:
    return project(ContextState.replay(builder.entries), 2 * policy.budget_tokens, policy, counter)


@pytest.mark.parametrize("budget", BUDGETS)
def test_bench_count_uncached(benchmark: Any, budget: int) -> None:
    benchmark.group = f"count budget={budget}"
    _builder, _policy, texts = built(budget)
    benchmark.extra_info["texts"] = len(texts)
    benchmark.extra_info["tokens"] = total = benchmark(count_all, UNCACHED, texts)
    assert total == count_all(CACHED, texts)


@pytest.mark.parametrize("budget", BUDGETS)
def test_bench_count_cached(benchmark: Any, budget: int) -> None:
    benchmark.group = f"count budget={budget}"
    _builder, _policy, texts = built(budget)
    expected = count_all(CACHED, texts)  # warms the cache
    benchmark.extra_info["texts"] = len(texts)
    benchmark.extra_info["tokens"] = total = benchmark(count_all, CACHED, texts)
    assert total == expected == count_all(UNCACHED, texts)


@pytest.mark.parametrize("cached", [False, True], ids=["uncached", "cached"])
@pytest.mark.parametrize("budget", BUDGETS)
def test_bench_replay_and_project(benchmark: Any, budget: int, cached: bool) -> None:
    benchmark.group = f"replay and project budget={budget}"
    builder, policy, _texts = built(budget)
    counter = CACHED if cached else UNCACHED
    # The reference counts every text afresh: a cache that served a wrong or stale count (or
    # a projection that kept another thread's state) would change what is projected.
    expected = replay_and_project(UNCACHED, builder, policy)
    assert expected.messages and expected.tokens <= 2 * budget
    warm = replay_and_project(counter, builder, policy)  # warms the cache
    assert warm == expected
    rounds = 5 if budget >= 32_000 else 20
    projection = benchmark.pedantic(
        replay_and_project, args=(counter, builder, policy), rounds=rounds, iterations=1
    )
    assert projection == expected
