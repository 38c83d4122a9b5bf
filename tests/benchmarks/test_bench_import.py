"""Transcript import throughput beside the raw batched append rate, measured in the same run.

Groups, on SQLite (and PostgreSQL when REGISTRE_TEST_PG is set):

- ``import parse``: reading an OpenAI chat JSONL file into checked entries (no database);
- ``import file``: :func:`registre.ledger.exchange.import_run.run_import` of that file into a
  new thread (check the whole file, then append ``batch`` entries per transaction);
- ``append batch``: the same entries, already parsed, through ``Thread.append_many`` in the
  same batches: the ceiling an import can reach.

The file repeats a typical agent step (a user turn, an assistant turn with two parallel calls
reusing their ids, two ~300-byte results): 6 entries per step, about 1.5 KB.
"""

from __future__ import annotations

import itertools
import json
import os
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from registre.attest.notes import Signer
from registre.importers import parse_bytes
from registre.ledger.exchange.import_run import ImportJob, run_import
from registre.ledger.ledger import Ledger
from tests.benchmarks.conftest import bench_sizes

SIGNER = Signer.from_seed("registre.bench/log", bytes(range(32)))
PG_ENV = "REGISTRE_TEST_PG"
STEPS = [max(1, size // 6) for size in bench_sizes("600")]
BATCH = 2000
_counter = itertools.count()


def write_steps(path: Path, steps: int) -> None:
    """An OpenAI chat JSONL file of ``steps`` agent steps (module docstring)."""
    pad = "x" * 300
    with path.open("w") as out:
        for i in range(steps):
            calls = [
                {
                    "index": n,
                    "id": f"call_{n}",
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps({"arg": f"{i}"})},
                }
                for n, name in enumerate(("bash", "read_file"))
            ]
            for message in (
                {"role": "user", "content": f"step {i} {pad}"},
                {
                    "role": "assistant",
                    "content": f"Looking at {i}.",
                    "refusal": None,
                    "tool_calls": calls,
                },
                {"role": "tool", "tool_call_id": "call_1", "content": f"config {i} {pad}"},
                {"role": "tool", "tool_call_id": "call_0", "content": f"log {i} {pad}"},
            ):
                out.write(json.dumps(message) + "\n")


def _engines() -> list[Any]:
    params: list[Any] = ["sqlite"]
    if os.environ.get(PG_ENV):
        params.append(pytest.param("postgresql", marks=pytest.mark.postgres))
    return params


@pytest.fixture(params=_engines())
def engine_url(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str]:
    """A fresh database on each engine (PostgreSQL: a schema of its own, dropped after)."""
    if request.param == "sqlite":
        yield f"sqlite:///{tmp_path / 'bench.db'}"
        return
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


@pytest.mark.parametrize("steps", STEPS)
def test_import_parse(benchmark: Any, tmp_path: Path, steps: int) -> None:
    benchmark.group = f"import parse n={steps * 6}"
    path = tmp_path / "run.jsonl"
    write_steps(path, steps)
    data = path.read_bytes()
    entries = benchmark(parse_bytes, data, "openai")
    assert len(entries) == steps * 6


@pytest.mark.parametrize("steps", STEPS)
def test_import_file_beside_append_batch(
    benchmark: Any, tmp_path: Path, steps: int, engine_url: str
) -> None:
    benchmark.group = f"import file vs append batch n={steps * 6} ({engine_url.split(':')[0]})"
    path = tmp_path / "run.jsonl"
    write_steps(path, steps)
    with Ledger.open(engine_url, SIGNER) as ledger:

        def run() -> None:
            thread = f"import-{next(_counter)}-{os.getpid()}"
            report = run_import(
                ledger, [ImportJob(path, "openai", thread, create=True)], batch=BATCH
            )
            assert report.entries == steps * 6

        benchmark.pedantic(run, rounds=3, iterations=1)


@pytest.mark.parametrize("steps", STEPS)
def test_append_batch_ceiling(benchmark: Any, tmp_path: Path, steps: int, engine_url: str) -> None:
    benchmark.group = f"import file vs append batch n={steps * 6} ({engine_url.split(':')[0]})"
    path = tmp_path / "run.jsonl"
    write_steps(path, steps)
    entries = parse_bytes(path.read_bytes(), "openai")
    with Ledger.open(engine_url, SIGNER) as ledger:

        def run() -> None:
            thread = ledger.create_thread(f"append-{next(_counter)}-{os.getpid()}")
            for start in range(0, len(entries), BATCH):
                thread.append_many(entries[start : start + BATCH])

        benchmark.pedantic(run, rounds=3, iterations=1)
