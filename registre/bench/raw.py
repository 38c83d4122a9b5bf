"""Appends beside their raw floors, measured once per ``registre bench`` invocation.

The issue's append goals are ratios against what the machine can do without registre, so
both sides are measured in the same run, in alternating rounds, on the same disk
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

Raw transactions, single appends and concurrent appends are measured in rounds of
:data:`ROUND` entries each, their order turned by one every round (:func:`_durable_rounds`);
raw signing and batched appends in alternating rounds (:func:`_sign_beside_batches`:
:data:`BATCH` signatures, then one batch, or the other way round every other round).
``batch_vs_sign_cpu`` is the batched appends' ratio to raw signing in this process's CPU time
(``time.process_time``) over the same rounds. Why interleaved, with the figures measured one
side after the other: ``docs/design/2026-12-02-raw-floors-in-alternating-rounds.md``.
"""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

from registre.attest.notes import Signer
from registre.ledger import Ledger
from registre.ledger.thread import Thread

__all__ = [
    "BATCH",
    "BODY_BYTES",
    "ROUND",
    "WRITERS",
    "measure_appends",
    "raw_sqlite_transactions",
]

WRITERS: Final = 4
BATCH: Final = 100
ROUND: Final = 40
"""Entries per round of the durable measures (raw transactions, single and concurrent
appends: :data:`WRITERS` writers of ``ROUND / WRITERS`` each)."""
BODY_BYTES: Final = 400
"""Text of every turn appended (and of every raw row): a short assistant turn."""


def _text() -> str:
    words = "the stage two exposure of the segment rose between june and september "
    return (words * (BODY_BYTES // len(words) + 1))[:BODY_BYTES]


class _RawTransactions:
    """Durable one-row transactions on a fresh SQLite file (WAL, ``synchronous=FULL``), in
    as many calls of :meth:`run` as the caller likes; :meth:`close` removes the file."""

    def __init__(self, path: Path) -> None:
        self._path = path
        self._remove()
        self._body = _text().encode("utf-8")
        self._seq = 0
        self._connection = sqlite3.connect(path, isolation_level=None)
        self._connection.execute("PRAGMA journal_mode=WAL")
        self._connection.execute("PRAGMA synchronous=FULL")
        self._connection.execute("CREATE TABLE raw (seq INTEGER PRIMARY KEY, body BLOB NOT NULL)")

    def run(self, count: int) -> None:
        """``count`` transactions: ``BEGIN IMMEDIATE``, one ``INSERT``, ``COMMIT``."""
        execute = self._connection.execute
        for _ in range(count):
            execute("BEGIN IMMEDIATE")
            execute("INSERT INTO raw (seq, body) VALUES (?, ?)", (self._seq, self._body))
            execute("COMMIT")
            self._seq += 1

    def close(self) -> None:
        self._connection.close()
        self._remove()

    def _remove(self) -> None:
        for stale in (self._path, *(Path(f"{self._path}{end}") for end in ("-wal", "-shm"))):
            stale.unlink(missing_ok=True)


def raw_sqlite_transactions(path: Path, count: int) -> float:
    """Durable one-row transactions per second on a fresh SQLite file at ``path`` (WAL,
    ``synchronous=FULL``); the file is removed afterwards."""
    raw = _RawTransactions(path)
    try:
        start = time.perf_counter()
        raw.run(count)
        seconds = time.perf_counter() - start
    finally:
        raw.close()
    return count / seconds


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


class _Writers:
    """:data:`WRITERS` writer threads of this process, each with its own
    :class:`~registre.ledger.Ledger` on ``url`` and its own thread, started anew for every
    :meth:`run`; :meth:`close` closes the ledgers."""

    def __init__(self, url: str, signer: Signer, thread_ids: list[str]) -> None:
        self._ledgers = [Ledger.open(url, signer) for _ in thread_ids]
        self._threads = [
            ledger.thread(thread_id)
            for ledger, thread_id in zip(self._ledgers, thread_ids, strict=True)
        ]

    def run(self, each: int) -> None:
        """Every writer appends ``each`` turns, all at once; returns when all are durable and
        raises the first error a writer met."""
        text = _text()
        errors: list[BaseException] = []

        def writer(thread: Thread) -> None:
            try:
                for _ in range(each):
                    thread.append("turn", {"role": "assistant", "text": text}, "assistant")
            except BaseException as error:  # reported by the caller, never swallowed
                errors.append(error)

        workers = [threading.Thread(target=writer, args=(thread,)) for thread in self._threads]
        for worker in workers:
            worker.start()
        for worker in workers:
            worker.join()
        if errors:
            raise errors[0]

    def close(self) -> None:
        for ledger in self._ledgers:
            ledger.close()


def _durable_rounds(
    sides: dict[str, tuple[int, Callable[[], None]]], rounds: int
) -> dict[str, float]:
    """Entries per second of wall time for each side, its ``(entries per round, action)`` run
    once per round over ``rounds`` rounds, the sides' order turned by one every round: a
    moment when the machine or its disk is busy slows every side, not one of them."""
    names = list(sides)
    wall = dict.fromkeys(names, 0.0)
    for round_ in range(rounds):
        shift = round_ % len(names)
        for name in names[shift:] + names[:shift]:
            started = time.perf_counter()
            sides[name][1]()
            wall[name] += time.perf_counter() - started
    return {name: rounds * sides[name][0] / max(wall[name], 1e-9) for name in names}


def measure_appends(
    ledger: Ledger, signer: Signer, url: str, scratch: Path, tag: str, count: int = 400
) -> dict[str, Any]:
    """The append figures of the module docstring on ``ledger`` (at ``url``, signing with
    ``signer``), on new threads named ``bench-raw-*-TAG``; ``scratch`` is a folder for the
    raw SQLite file. ``count`` entries per measure (rounded to whole rounds of
    :data:`ROUND`, or one round of ``count`` when fewer, and to whole batches)."""
    body = {"role": "assistant", "text": _text()}
    sqlite = not url.startswith("postgresql")
    single = ledger.create_thread(f"bench-raw-single-{tag}")
    batched = ledger.create_thread(f"bench-raw-batch-{tag}")
    batches = max(1, count // BATCH)
    per_round = min(ROUND, count)
    rounds = max(1, count // per_round)
    each = max(1, per_round // WRITERS)
    thread_ids = [f"bench-raw-writer{k}-{tag}" for k in range(WRITERS)]
    for thread_id in thread_ids:
        ledger.create_thread(thread_id)

    def singles() -> None:
        for _ in range(per_round):
            single.append("turn", body, "assistant")

    sign, batch_rate, cpu_ratio = _sign_beside_batches(signer, batched, batches)
    writers = _Writers(url, signer, thread_ids)
    raw = _RawTransactions(scratch / "raw-transactions.db") if sqlite else None
    try:
        sides: dict[str, tuple[int, Callable[[], None]]] = {
            "single": (per_round, singles),
            "concurrent": (WRITERS * each, lambda: writers.run(each)),
        }
        if raw is not None:
            sides["raw"] = (per_round, lambda: raw.run(per_round))
        rates = _durable_rounds(sides, rounds)
    finally:
        writers.close()
        if raw is not None:
            raw.close()
    raw_txn = rates.get("raw")
    single_rate, concurrent = rates["single"], rates["concurrent"]
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
