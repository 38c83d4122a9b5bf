"""Deciding an upsert and a final costs what the request cites, not the history behind it.

For each size N from ``bench_sizes()`` (the issue asks for 10^2 and 10^5;
``REGISTRE_BENCH_SIZES=100,100000``) a state holds N evidence entries and N/100 computes,
built through ``step`` as a thread would build it. Measured, never asserted:

* ``registre.lifecycle.decide_upsert``: a batch of 10 statements citing 3 references each;
* ``registre.lifecycle.decide_final``: a final citing 10 evidence entries and 2 computes;
* ``registre.lifecycle.apply_supersede``: applying (re-deciding, comparing, committing) a
  supersession of evidence; rounds chain on one state (each supersedes the previous successor),
  since apply retires its input.

The goal is that the figures at 10^2 and 10^5 stay within 2x of each other.
"""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from registre.lifecycle import (
    ComputeRequest,
    Event,
    EvidenceReviseRequest,
    FinalRequest,
    LifecycleState,
    ReadRequest,
    SourceRef,
    Statement,
    UpsertRequest,
    apply,
    decide,
    step,
)
from tests.benchmarks.conftest import bench_sizes

REFS = tuple(f"r{n}" for n in range(10))
_STATES: dict[int, LifecycleState] = {}


def state_with(entries: int) -> LifecycleState:
    """N evidence entries (batches of 1000) and one compute per 100 entries, built once."""
    if entries in _STATES:
        return _STATES[entries]
    refs = tuple(
        SourceRef(r, "corpus.txt", f"line {i}", hashlib.sha256(r.encode()).hexdigest())
        for i, r in enumerate(REFS)
    )
    _, state = step(LifecycleState.empty(), ReadRequest(refs))
    for start in range(0, entries, 1000):
        batch = tuple(
            Statement(f"claim {n}", (REFS[n % 10], REFS[(n + 1) % 10]))
            for n in range(start, min(entries, start + 1000))
        )
        _, state = step(state, UpsertRequest(batch))
    for n in range(max(1, entries // 100)):
        cites = tuple(f"ev-{(n * 100 + k) % entries + 1}" for k in range(0, 100, 10))
        _, state = step(state, ComputeRequest(f"compute {n}", tuple(dict.fromkeys(cites))))
    _STATES[entries] = state
    return state


@pytest.mark.parametrize("entries", bench_sizes())
def test_bench_decide_upsert(benchmark: Any, entries: int) -> None:
    benchmark.group = "lifecycle.decide_upsert"
    state = state_with(entries)
    request = UpsertRequest(
        tuple(Statement(f"new claim {n}", REFS[n % 8 : n % 8 + 3]) for n in range(10))
    )
    outcome = benchmark(decide, state, request)
    assert sum(1 for _ in outcome.results) == 10


@pytest.mark.parametrize("entries", bench_sizes())
def test_bench_decide_final(benchmark: Any, entries: int) -> None:
    benchmark.group = "lifecycle.decide_final"
    state = state_with(entries)
    evidence = tuple(f"ev-{entries - 1 - 7 * k}" for k in range(10))
    computes = tuple(c.id for c in list(state.iter_conclusions())[-2:])
    outcome = benchmark(decide, state, FinalRequest("the answer", evidence + computes))
    assert getattr(outcome, "id", "").startswith("cc-"), outcome


@pytest.mark.parametrize("entries", bench_sizes())
def test_bench_apply_supersede(benchmark: Any, entries: int) -> None:
    benchmark.group = "lifecycle.apply_supersede"
    # Take the cached state over (apply retires it) instead of copying it: a fresh copy of a
    # large dict is sized tight, so its first insertion would time a resize, not apply.
    live = {"state": state_with(entries), "target": 1}
    del _STATES[entries]

    def next_event() -> tuple[tuple[LifecycleState, Event], dict[str, Any]]:
        # Untimed: decide the next supersession (each round supersedes the previous successor).
        request = EvidenceReviseRequest(f"ev-{live['target']}", Statement("restated", ("r0",)))
        return (live["state"], Event(request, decide(live["state"], request))), {}

    def supersede(state: LifecycleState, event: Event) -> LifecycleState:
        live["state"] = after = apply(state, event)
        live["target"] = int(after.next_ids[0].split("-")[1]) - 1
        return after

    benchmark.pedantic(supersede, setup=next_event, rounds=200, iterations=1)
    first = live["state"].evidence("ev-1")  # type: ignore[union-attr]
    assert first is not None and first.status == "superseded"
