"""Deciding and recording lifecycle requests on a SQLite ledger costs what the request cites,
not the history behind it.

For each size N of ``bench_sizes()`` (the issue asks for 10^2 and 10^5:
``REGISTRE_BENCH_SIZES=100,100000``; sizes above 10^5 are skipped, their state would not fit
the point), a thread holds N evidence entries (upserts of 1000 statements) and one compute
per 100 entries, built through the thread API. Measured, never asserted:

* ``lifecycle ledger upsert``: ``thread.evidence.upsert`` of 10 statements citing 3
  references each -- lock the head, catch up the cached state, decide, sign, append, write
  10 evidence rows and a transition row, commit (fsync);
* ``lifecycle ledger final``: ``thread.conclude("final", ...)`` citing 10 evidence entries
  and 2 computes, same path;
* ``lifecycle ledger cold start``: the first decision of a fresh ``Ledger`` handle (what a
  CLI process pays) on a thread of N/10 lifecycle entries (single-statement upserts): replay
  every lifecycle entry from the entry table, then decide and record one upsert.

Goal: the warm figures at 10^2 and 10^5 within 2x of each other. Cold start is O(lifecycle
entries) by design (the state comes from the signed entries, never from the caches).
"""

from __future__ import annotations

import hashlib
import itertools
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from registre.attest.notes import Signer
from registre.ledger.ledger import Ledger
from registre.ledger.thread import Thread
from registre.lifecycle import (
    LifecycleState,
    ReadRequest,
    SourceRef,
    Statement,
    UpsertRequest,
    event_to_body,
    step,
)
from tests.benchmarks.conftest import bench_sizes

SIGNER = Signer.from_seed("registre.bench/log", bytes(range(32)))
REFS = tuple(f"r{n}" for n in range(10))
MAX_PRIOR = 100_000
SIZES = [
    pytest.param(
        size,
        marks=pytest.mark.skipif(size > MAX_PRIOR, reason=f"sizes above {MAX_PRIOR} skipped"),
    )
    for size in bench_sizes()
]
_LEDGERS: dict[tuple[str, int], tuple[Path, Ledger]] = {}


def _refs() -> list[SourceRef]:
    return [
        SourceRef(r, "corpus.txt", f"line {i}", hashlib.sha256(r.encode()).hexdigest())
        for i, r in enumerate(REFS)
    ]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Path]:
    yield tmp_path_factory.mktemp("lifecycle-ledger")
    for _path, ledger in _LEDGERS.values():
        ledger.close()
    _LEDGERS.clear()


def evidence_thread(workdir: Path, entries: int) -> Thread:
    """A thread with ``entries`` evidence entries and one compute per 100, built once."""
    key = ("evidence", entries)
    if key not in _LEDGERS:
        path = workdir / f"evidence-{entries}.db"
        ledger = Ledger.open(f"sqlite:///{path}", SIGNER)
        thread = ledger.create_thread("bench")
        thread.read_source(_refs())
        for start in range(0, entries, 1000):
            statements = [
                Statement(f"claim {n}", (REFS[n % 10], REFS[(n + 1) % 10]))
                for n in range(start, min(entries, start + 1000))
            ]
            thread.evidence.upsert(statements)
        for n in range(max(1, entries // 100)):
            cites = dict.fromkeys(f"ev-{(n * 100 + k) % entries + 1}" for k in range(0, 100, 10))
            thread.conclude("compute", f"compute {n}", list(cites))
        _LEDGERS[key] = (path, ledger)
    return _LEDGERS[key][1].thread("bench")


def lifecycle_thread(workdir: Path, count: int) -> Path:
    """A database whose thread holds ``count`` lifecycle entries (a read, then single-statement
    upserts), appended in batches of decided events; built once."""
    key = ("entries", count)
    if key not in _LEDGERS:
        path = workdir / f"entries-{count}.db"
        ledger = Ledger.open(f"sqlite:///{path}", SIGNER)
        thread = ledger.create_thread("bench")
        event, state = step(LifecycleState.empty(), ReadRequest(tuple(_refs())))
        items = [(event.kind, event_to_body(event), "agent")]
        for n in range(count - 1):
            request = UpsertRequest((Statement(f"claim {n}", (REFS[n % 10],)),))
            event, state = step(state, request)
            items.append((event.kind, event_to_body(event), "agent"))
            if len(items) == 500:
                thread.append_many(items)
                items = []
        if items:
            thread.append_many(items)
        _LEDGERS[key] = (path, ledger)
    return _LEDGERS[key][0]


@pytest.mark.parametrize("entries", SIZES)
def test_bench_record_upsert(benchmark: Any, workdir: Path, entries: int) -> None:
    benchmark.group = "lifecycle ledger upsert (sqlite)"
    thread = evidence_thread(workdir, entries)
    counter = itertools.count()

    def upsert() -> Any:
        n = next(counter)
        statements = [Statement(f"new claim {n}.{k}", REFS[k % 8 : k % 8 + 3]) for k in range(10)]
        return thread.evidence.upsert(statements)

    result = benchmark(upsert)
    assert result.all_accepted and len(result.accepted) == 10


@pytest.mark.parametrize("entries", SIZES)
def test_bench_record_final(benchmark: Any, workdir: Path, entries: int) -> None:
    benchmark.group = "lifecycle ledger final (sqlite)"
    thread = evidence_thread(workdir, entries)
    evidence = [f"ev-{entries - 1 - 7 * k}" for k in range(10)]
    computes = [c.id for c in thread.conclusions.list(status="active")[-2:]]
    counter = itertools.count()

    def final() -> Any:
        return thread.conclude("final", f"the answer {next(counter)}", evidence + computes)

    result = benchmark(final)
    assert result.id.startswith("cc-")


@pytest.mark.parametrize("entries", SIZES)
def test_bench_cold_start(benchmark: Any, workdir: Path, entries: int) -> None:
    benchmark.group = "lifecycle ledger cold start (sqlite)"
    count = max(10, entries // 10)
    path = lifecycle_thread(workdir, count)
    counter = itertools.count()

    def first_decision() -> Any:
        with Ledger.open(f"sqlite:///{path}", SIGNER, create=False) as fresh:
            statement = Statement(f"cold claim {next(counter)}", ("r1",))
            return fresh.thread("bench").evidence.upsert([statement])

    result = benchmark.pedantic(first_decision, rounds=5, iterations=1)
    assert result.all_accepted
