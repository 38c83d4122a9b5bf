"""Group commit on SQLite beside its ceilings, measured in the same run (issue 17, item 4).

Every round of the ``group commit single (sqlite)`` group writes :data:`OPS` rows, so the
medians compare directly (the table's ratio is ours against the raw rate):

- ``raw_durable_one_row_transactions``: :data:`OPS` raw ``sqlite3`` transactions of one
  ~500-byte row each (``BEGIN IMMEDIATE`` / INSERT / COMMIT, WAL, ``synchronous=FULL``): the
  ceiling of a writer that commits each row durably alone;
- ``registre_append_single_alone``: :data:`OPS` ``Thread.append`` calls, one writer;
- ``registre_append_4_threads``: 4 threads of one process, each appending :data:`OPS` / 4
  entries singly to its own thread (group commit shares their fsyncs);
- ``registre_append_4_processes``: the same from 4 processes (one writer at a time across
  processes: SQLite's lock, no shared queue).

Goal: 4 concurrent writers >= 70% of the raw rate. The ``group commit batch x100 (sqlite)``
group puts ``append_many`` of 100 entries beside the 100 Ed25519 signatures alone; goal
>= 50% of the raw signing rate.
"""

from __future__ import annotations

import itertools
import multiprocessing
import os
import sqlite3
import threading
from collections.abc import Iterator
from multiprocessing.connection import Connection as Pipe
from pathlib import Path
from typing import Any

import pytest

from registre.attest.notes import Signer
from registre.ledger.ledger import Ledger
from registre.ledger.thread import Thread

SIGNER = Signer.from_seed("registre.bench/log", bytes(range(32)))
TEXT = "Reconcile the Q3 impairment figures against the ledger extract; segment retail. " * 2
WRITERS = 4
OPS = 40
BATCH = 100
SINGLE = "group commit single (sqlite)"
BATCHED = f"group commit batch x{BATCH} (sqlite)"


def _item(i: int) -> tuple[str, dict[str, str], str]:
    return ("turn", {"role": "user", "text": f"{i} {TEXT}"}, "agent")


@pytest.fixture
def db_path(tmp_path: Path) -> Path:
    return tmp_path / "bench.db"


@pytest.fixture
def ledger(db_path: Path) -> Iterator[Ledger]:
    with Ledger.open(f"sqlite:///{db_path}", SIGNER) as opened:
        yield opened


def test_raw_durable_one_row_transactions(benchmark: Any, tmp_path: Path) -> None:
    benchmark.group = SINGLE
    conn = sqlite3.connect(tmp_path / "raw.db", isolation_level=None)
    conn.execute("PRAGMA journal_mode=WAL")
    conn.execute("PRAGMA synchronous=FULL")
    conn.execute("CREATE TABLE raw (seq INTEGER PRIMARY KEY, leaf BLOB NOT NULL)")
    payload = os.urandom(500)
    counter = itertools.count()

    def transactions() -> None:
        for _ in range(OPS):
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO raw VALUES (?, ?)", (next(counter), payload))
            conn.execute("COMMIT")

    benchmark(transactions)
    conn.close()


def test_registre_append_single_alone(benchmark: Any, ledger: Ledger) -> None:
    benchmark.group = SINGLE
    thread = ledger.create_thread("alone")
    counter = itertools.count()

    def appends() -> None:
        for _ in range(OPS):
            thread.append(*_item(next(counter)))

    benchmark(appends)
    assert thread.head().size == next(counter)


def test_registre_append_4_threads(benchmark: Any, ledger: Ledger) -> None:
    benchmark.group = SINGLE
    threads = [ledger.create_thread(f"w{k}") for k in range(WRITERS)]
    counter = itertools.count()

    def writer(thread: Thread, start: threading.Barrier) -> None:
        start.wait()
        for _ in range(OPS // WRITERS):
            thread.append(*_item(next(counter)))

    def round_of_writers() -> None:
        start = threading.Barrier(WRITERS)
        workers = [threading.Thread(target=writer, args=(t, start)) for t in threads]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()

    benchmark(round_of_writers)
    assert sum(t.head().size for t in threads) == next(counter)


def _process_writer(db_path: str, thread_id: str, pipe: Pipe) -> None:
    with Ledger.open(f"sqlite:///{db_path}", SIGNER) as ledger:
        thread = ledger.thread(thread_id)
        counter = itertools.count()
        pipe.send("ready")
        while pipe.recv() == "go":
            for _ in range(OPS // WRITERS):
                thread.append(*_item(next(counter)))
            pipe.send("done")


def test_registre_append_4_processes(benchmark: Any, ledger: Ledger, db_path: Path) -> None:
    benchmark.group = SINGLE
    ids = [ledger.create_thread(f"p{k}").id for k in range(WRITERS)]
    # fork where there is one (the children start with registre imported); each opens its own
    # ledger and leaves through os._exit, never touching the parent's connections
    methods = multiprocessing.get_all_start_methods()
    context = multiprocessing.get_context("fork" if "fork" in methods else "spawn")
    pipes, workers = [], []
    for thread_id in ids:
        ours, theirs = context.Pipe()
        worker = context.Process(target=_process_writer, args=(str(db_path), thread_id, theirs))
        worker.start()
        pipes.append(ours)
        workers.append(worker)
    try:
        for pipe in pipes:
            assert pipe.recv() == "ready"

        def round_of_processes() -> None:
            for pipe in pipes:
                pipe.send("go")
            for pipe in pipes:
                assert pipe.recv() == "done"

        benchmark(round_of_processes)
    finally:
        for pipe in pipes:
            pipe.send("stop")
        for worker in workers:
            worker.join(timeout=30)
    sizes = [ledger.thread(thread_id).head().size for thread_id in ids]
    assert len(set(sizes)) == 1 and sizes[0] % (OPS // WRITERS) == 0


def test_raw_100_signatures(benchmark: Any) -> None:
    benchmark.group = BATCHED
    message = b"registre/entry/v1\n" + b"x" * 430  # the envelope of a ~500-byte leaf
    sign = SIGNER.sign
    benchmark(lambda: [sign(message) for _ in range(BATCH)])


def test_registre_append_many_100(benchmark: Any, ledger: Ledger) -> None:
    benchmark.group = BATCHED
    thread = ledger.create_thread("batch")
    counter = itertools.count()
    entries = benchmark(lambda: thread.append_many([_item(next(counter)) for _ in range(BATCH)]))
    assert len(entries) == BATCH
