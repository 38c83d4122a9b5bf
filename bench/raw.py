"""Appends beside their raw floors, measured once per ``registre bench`` invocation.

The issue's append goals are ratios against what the machine can do without registre, so
both sides are measured in the same run, one after the other, on the same disk
(:func:`measure_appends`):

* **raw durable one-row transactions** -- SQLite (the stdlib module) in WAL mode with
  ``synchronous=FULL``, as the ledger opens it: ``BEGIN IMMEDIATE``, one ``INSERT`` of a
  body of the same size, ``COMMIT``, ``count`` times, on a fresh file;
* **raw Ed25519 signing** -- ``Signer.sign`` of ``count`` messages of the same size;
* **single appends** -- ``thread.append`` of a ``turn``, ``count`` times, one writer: each a
  durable transaction of its own;
* **concurrent single appends** -- :data:`WRITERS` threads of this process, each with its
  own :class:`~registre.ledger.Ledger` on the same database and its own thread, appending
  ``count / WRITERS`` turns each at the same time; entries per second of wall time;
* **batched appends** -- ``thread.append_many`` of :data:`BATCH` turns per call.

Ratios: single (and concurrent) appends over raw transactions; batched appends over raw
signing. Only SQLite databases get the raw-transaction floor; on PostgreSQL it is null.

Raw signing and batched appends are measured in alternating rounds (:func:`_sign_beside_batches`:
:data:`BATCH` signatures, then one batch, or the other way round every other round), so a
moment when the machine is busy with something else slows both sides, not one: measured
one after the other, 400 signatures take about 25 ms and four batches about 100 ms, and a
shared machine changed their ratio from one run to the next by a factor of four. Besides the
wall-time ratio, ``batch_vs_sign_cpu`` is the ratio of the two sides' CPU time (this
process's, ``time.process_time``) over the same rounds: the part of the cost that is work,
not waiting for the disk's flush or for a core.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from registre.attest.keys import Signer
from registre.ledger import Ledger
from registre.ledger.thread import Thread

__all__ = ["BATCH", "BODY_BYTES", "WRITERS", "measure_appends", "raw_sqlite_transactions"]

WRITERS: Final = 4
BATCH: Final = 100
BODY_BYTES: Final = 400
"""Text of every turn appended (and of every raw row): a short assistant turn."""


def _text() -> str:
    words = "the stage two exposure of the segment rose between june and september "
    return (words * (BODY_BYTES // len(words) + 1))[:BODY_BYTES]


def raw_sqlite_transactions(path: Path, count: int) -> float:
    """Durable one-row transactions per second on a fresh SQLite file at ``path`` (WAL,
    ``synchronous=FULL``); the file is removed afterwards."""
    for stale in (path, *(Path(f"{path}{end}") for end in ("-wal", "-shm"))):
        stale.unlink(missing_ok=True)
    body = _text().encode("utf-8")
    connection = sqlite3.connect(path, isolation_level=None)
    try:
        connection.execute("PRAGMA journal_mode=WAL")
        connection.execute("PRAGMA synchronous=FULL")
        connection.execute("CREATE TABLE raw (seq INTEGER PRIMARY KEY, body BLOB NOT NULL)")
        start = time.perf_counter()
        for seq in range(count):
            connection.execute("BEGIN IMMEDIATE")
            connection.execute("INSERT INTO raw (seq, body) VALUES (?, ?)", (seq, body))
            connection.execute("COMMIT")
        seconds = time.perf_counter() - start
    finally:
        connection.close()
    for stale in (path, *(Path(f"{path}{end}") for end in ("-wal", "-shm"))):
        stale.unlink(missing_ok=True)
    return count / seconds


def _rate(count: int, action: Callable[[], None]) -> float:
    start = time.perf_counter()
    action()
    return count / (time.perf_counter() - start)


def _sign_beside_batches(
    signer: Signer, thread: Thread, batches: int
) -> tuple[float, float, float]:
    """``(raw signatures per second, batched entries per second, CPU-time ratio)``:
    ``batches`` rounds, each :data:`BATCH` ``Signer.sign`` calls on messages of
    :data:`BODY_BYTES` and one ``append_many`` of :data:`BATCH` turns on ``thread``, the
    signing first in even rounds and last in odd ones (module docstring). The CPU-time ratio
    is the signing's CPU time over the batches' (both summed over the rounds)."""
    text = _text()
    items = [("turn", {"role": "assistant", "text": text}, "assistant")] * BATCH
    messages = [f"{index:08d} {text}".encode() for index in range(BATCH)]
    sign = signer.sign
    wall = {"sign": 0.0, "batch": 0.0}
    cpu = {"sign": 0.0, "batch": 0.0}
    for round_ in range(batches):
        for side in ("sign", "batch") if round_ % 2 == 0 else ("batch", "sign"):
            started_cpu, started = time.process_time(), time.perf_counter()
            if side == "sign":
                for message in messages:
                    sign(message)
            else:
                thread.append_many(items)
            wall[side] += time.perf_counter() - started
            cpu[side] += time.process_time() - started_cpu
    entries = batches * BATCH
    return entries / wall["sign"], entries / wall["batch"], cpu["sign"] / max(cpu["batch"], 1e-9)


def _concurrent(url: str, signer: Signer, thread_ids: list[str], each: int) -> float:
    """Entries per second of wall time, ``len(thread_ids)`` writers at once."""
    text = _text()
    ledgers = [Ledger.open(url, signer) for _ in thread_ids]
    errors: list[BaseException] = []
    barrier = threading.Barrier(len(thread_ids) + 1)

    def writer(ledger: Ledger, thread_id: str) -> None:
        thread = ledger.thread(thread_id)
        barrier.wait()
        try:
            for _ in range(each):
                thread.append("turn", {"role": "assistant", "text": text}, "assistant")
        except BaseException as error:  # reported by the caller, never swallowed
            errors.append(error)

    workers = [
        threading.Thread(target=writer, args=(ledger, thread_id))
        for ledger, thread_id in zip(ledgers, thread_ids, strict=True)
    ]
    try:
        for worker in workers:
            worker.start()
        barrier.wait()
        start = time.perf_counter()
        for worker in workers:
            worker.join()
        seconds = time.perf_counter() - start
    finally:
        for ledger in ledgers:
            ledger.close()
    if errors:
        raise errors[0]
    return len(thread_ids) * each / seconds


def measure_appends(
    ledger: Ledger, signer: Signer, url: str, scratch: Path, tag: str, count: int = 400
) -> dict[str, Any]:
    """The append figures of the module docstring on ``ledger`` (at ``url``, signing with
    ``signer``), on new threads named ``bench-raw-*-TAG``; ``scratch`` is a folder for the
    raw SQLite file. ``count`` entries per measure (rounded to whole batches)."""
    text = _text()
    body = {"role": "assistant", "text": text}
    sqlite = not url.startswith("postgresql")
    raw_txn = raw_sqlite_transactions(scratch / "raw-transactions.db", count) if sqlite else None
    single = ledger.create_thread(f"bench-raw-single-{tag}")
    batched = ledger.create_thread(f"bench-raw-batch-{tag}")
    batches = max(1, count // BATCH)

    def singles() -> None:
        for _ in range(count):
            single.append("turn", body, "assistant")

    sign, batch_rate, cpu_ratio = _sign_beside_batches(signer, batched, batches)
    single_rate = _rate(count, singles)
    thread_ids = [f"bench-raw-writer{k}-{tag}" for k in range(WRITERS)]
    for thread_id in thread_ids:
        ledger.create_thread(thread_id)
    concurrent = _concurrent(url, signer, thread_ids, max(1, count // WRITERS))
    return {
        "count": count,
        "body_bytes": BODY_BYTES,
        "raw_sqlite_txn_per_second": None if raw_txn is None else round(raw_txn, 1),
        "raw_sign_per_second": round(sign, 1),
        "single_per_second": round(single_rate, 1),
        "concurrent_writers": WRITERS,
        "concurrent_per_second": round(concurrent, 1),
        "batch_size": BATCH,
        "batch_per_second": round(batch_rate, 1),
        "single_vs_raw": None if raw_txn is None else round(single_rate / raw_txn, 4),
        "concurrent_vs_raw": None if raw_txn is None else round(concurrent / raw_txn, 4),
        "batch_vs_sign": round(batch_rate / sign, 4),
        "batch_vs_sign_cpu": round(cpu_ratio, 4),
    }
