"""Ledger throughput beside its ceilings, measured in the same run.

Groups (ours and the ceiling side by side):

- ``ledger append single (sqlite)``: one signed append per transaction (``Thread.append``)
  beside one raw ``sqlite3`` INSERT per ``BEGIN IMMEDIATE`` transaction at the same
  durability (WAL, ``synchronous=FULL``). Goal: append >= 70% of the raw insert rate.
- ``ledger append batch x100 (sqlite)``: ``append_many`` of 100 entries in one transaction
  beside 100 raw Ed25519 signatures of a message of the same size. Goal: >= 50% of the raw
  signing rate.
- The same two groups on PostgreSQL when REGISTRE_TEST_PG is set (raw ceiling: a psycopg
  INSERT + COMMIT per transaction).
- ``ledger inclusion proof n=N``: ``Thread.prove_inclusion`` of a random leaf, reading
  stored subtree hashes through the store. Goal: the cost at n=1e6 at most 3x the cost at
  n=1e3. Trees up to 1e5 entries are built through ``append_many`` (real signed entries);
  larger ones are bulk-loaded into the same tables (synthetic leaves, the subtree rows
  ``CompactRange`` gives), because signing a million entries takes minutes and proving
  reads only the subtree and entry tables.

Bodies are ~150-byte turns, so a leaf is ~500 bytes: a typical agent turn.
"""

from __future__ import annotations

import itertools
import os
import random
import sqlite3
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from registre.attest.notes import Signer
from registre.attest.tree import CompactRange, leaf_hash
from registre.ledger.ledger import Ledger
from registre.ledger.store.schema import tables
from registre.ledger.thread import Thread
from tests.benchmarks.conftest import bench_sizes

SIGNER = Signer.from_seed("registre.bench/log", bytes(range(32)))
TEXT = "Reconcile the Q3 impairment figures against the ledger extract; segment retail. " * 2
BATCH = 100
BUILT_THROUGH_APPENDS = 100_000
PG_ENV = "REGISTRE_TEST_PG"
SIZES = bench_sizes()


def _item(i: int) -> tuple[str, dict[str, str], str]:
    return ("turn", {"role": "user", "text": f"{i} {TEXT}"}, "agent")


def _engines() -> list[Any]:
    params: list[Any] = ["sqlite"]
    if os.environ.get(PG_ENV):
        params.append(pytest.param("postgresql", marks=pytest.mark.postgres))
    return params


@pytest.fixture(params=_engines())
def engine_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'bench.db'}"
        return
    import uuid

    import psycopg
    from sqlalchemy.engine import make_url

    base = os.environ[PG_ENV]
    admin = make_url(base).set(drivername="postgresql").render_as_string(hide_password=False)
    schema = f"registre_bench_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(admin, autocommit=True) as conn:
        conn.execute(f'CREATE SCHEMA "{schema}"')
    url = make_url(base).update_query_dict({"options": f"-csearch_path={schema}"})
    try:
        yield url.render_as_string(hide_password=False)
    finally:
        with psycopg.connect(admin, autocommit=True) as conn:
            conn.execute(f'DROP SCHEMA "{schema}" CASCADE')


@pytest.fixture
def bench_thread(engine_url: str) -> Iterator[Thread]:
    with Ledger.open(engine_url, SIGNER) as ledger:
        yield ledger.create_thread("bench")


def _dialect(url: str) -> str:
    return "sqlite" if url.startswith("sqlite") else "postgresql"


# --- single appends beside one raw insert per transaction --------------------------------


def test_append_single(benchmark: Any, engine_url: str, bench_thread: Thread) -> None:
    benchmark.group = f"ledger append single ({_dialect(engine_url)})"
    counter = itertools.count()
    entry = benchmark(lambda: bench_thread.append(*_item(next(counter))))
    assert entry.seq == bench_thread.head().size - 1


def test_raw_insert_per_transaction(benchmark: Any, engine_url: str) -> None:
    benchmark.group = f"ledger append single ({_dialect(engine_url)})"
    payload = os.urandom(500)
    counter = itertools.count()
    if _dialect(engine_url) == "sqlite":
        conn = sqlite3.connect(engine_url.removeprefix("sqlite:///"), isolation_level=None)
        conn.execute("PRAGMA journal_mode=WAL")
        conn.execute("PRAGMA synchronous=FULL")
        conn.execute("CREATE TABLE raw (seq INTEGER PRIMARY KEY, leaf BLOB NOT NULL)")

        def insert() -> None:
            conn.execute("BEGIN IMMEDIATE")
            conn.execute("INSERT INTO raw VALUES (?, ?)", (next(counter), payload))
            conn.execute("COMMIT")

        benchmark(insert)
        conn.close()
        return
    import psycopg
    from sqlalchemy.engine import make_url

    url = make_url(engine_url).set(drivername="postgresql")
    with psycopg.connect(url.render_as_string(hide_password=False)) as pg:
        pg.execute("CREATE TABLE raw (seq BIGINT PRIMARY KEY, leaf BYTEA NOT NULL)")
        pg.commit()

        def insert_pg() -> None:
            pg.execute("INSERT INTO raw VALUES (%s, %s)", (next(counter), payload))
            pg.commit()

        benchmark(insert_pg)


# --- batched appends beside raw signing --------------------------------------------------


def test_append_batch(benchmark: Any, engine_url: str, bench_thread: Thread) -> None:
    benchmark.group = f"ledger append batch x{BATCH} ({_dialect(engine_url)})"
    counter = itertools.count()
    entries = benchmark(
        lambda: bench_thread.append_many([_item(next(counter)) for _ in range(BATCH)])
    )
    assert len(entries) == BATCH


def test_raw_ed25519_signatures(benchmark: Any, engine_url: str) -> None:
    benchmark.group = f"ledger append batch x{BATCH} ({_dialect(engine_url)})"
    message = b"registre/entry/v1\n" + b"x" * 430  # an envelope of a ~500-byte leaf
    sign = SIGNER.sign
    benchmark(lambda: [sign(message) for _ in range(BATCH)])


# --- inclusion proofs through the store --------------------------------------------------


def _bulk_load(ledger: Ledger, thread: Thread, n: int) -> None:
    """n synthetic leaves straight into the tables, with the subtrees CompactRange gives."""
    frontier = CompactRange()
    chunk = 50_000
    with ledger.engine.begin() as conn:
        for start in range(0, n, chunk):
            entries, subtrees = [], []
            for seq in range(start, min(n, start + chunk)):
                leaf = b"synthetic leaf %d" % seq
                digest = leaf_hash(leaf)
                entries.append(
                    {
                        "thread": thread.id,
                        "seq": seq,
                        "leaf": leaf,
                        "leaf_hash": digest,
                        "kind": "turn",
                        "time": "",
                    }
                )
                subtrees += [
                    {"thread": thread.id, "level": level, "idx": index, "hash": h}
                    for level, index, h in frontier.append(digest)
                ]
            conn.execute(tables.entry.insert(), entries)
            conn.execute(tables.subtree.insert(), subtrees)
        conn.execute(
            tables.thread.update()
            .where(tables.thread.c.id == thread.id)
            .values(size=n, root=frontier.root(), frontier=b"".join(frontier.hashes()))
        )


@pytest.fixture(scope="module")
def proof_threads(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[int, Thread]]:
    url = f"sqlite:///{tmp_path_factory.mktemp('proofs') / 'proofs.db'}"
    with Ledger.open(url, SIGNER) as ledger:
        threads: dict[int, Thread] = {}
        for n in SIZES:
            thread = ledger.create_thread(f"n{n}")
            if n <= BUILT_THROUGH_APPENDS:
                for start in range(0, n, 1000):
                    thread.append_many([_item(i) for i in range(start, min(n, start + 1000))])
            else:
                _bulk_load(ledger, thread, n)
            threads[n] = thread
        yield threads


@pytest.mark.parametrize("n", SIZES, ids=[f"n={n}" for n in SIZES])
def test_inclusion_proof(benchmark: Any, proof_threads: dict[int, Thread], n: int) -> None:
    benchmark.group = "ledger inclusion proof"
    thread = proof_threads[n]
    rng = random.Random(n)
    queries = itertools.cycle([rng.randrange(n) for _ in range(256)])
    proof = benchmark(lambda: thread.prove_inclusion(next(queries)))
    assert proof.size == n and proof.reads <= 2 * n.bit_length() + 2
