"""Exporting a ledger thread as an audit bundle, and verifying what was exported.

For each size n from ``bench_sizes()`` (up to 100,000: building a larger thread through
signed appends takes over a minute), on a SQLite ledger whose thread is a source read, an
upsert and a compute, then turns of ~500-byte leaves, then a final citing the compute (and a
signed checkpoint at the head):

* group ``export n=N``:

  - ``raw_read_and_zip`` -- the ceiling: the same leaves read with one ``sqlite3`` query and
    zipped (``deterministic_zip``) with a SHA-256 over them, nothing checked;
  - ``registre_export_full`` -- ``export_thread``: leaves streamed 1,000 rows per read
    transaction, tree recomputed and checked against the checkpoint, manifest, zip, written
    to a temporary file, fsynced and renamed;
  - ``registre_export_claim`` -- ``export_claim`` of the final (its chain: 4 entries), with
    inclusion and consistency proofs read from the stored subtrees;

* group ``verify exported n=N``: ``verify_bundle`` of the full export's file, 1 and 2
  processes.

``extra_info`` records the bundle's bytes, its entries per second and, for the full export,
the peak of Python allocations while exporting (tracemalloc, measured once outside the timed
rounds): the writer of ``registre.attest.bundles.reader`` builds the zip in memory, so the peak
grows with
n."""

from __future__ import annotations

import functools
import hashlib
import sqlite3
import tracemalloc
from pathlib import Path
from typing import Any

import pytest

from registre.attest.bundles import deterministic_zip
from registre.attest.notes import Signer
from registre.attest.verify import TrustPolicy, verify_bundle
from registre.ledger.exchange.export import export_claim, export_thread
from registre.ledger.ledger import Ledger
from registre.ledger.lifecycle.api import source_ref
from tests.benchmarks.conftest import bench_sizes

SIGNER = Signer.from_seed("registre.bench/log", bytes(range(32)))
TEXT = "Reconcile the Q3 impairment figures against the ledger extract; segment retail. " * 2
LARGEST = 100_000
BATCH = 1000
SIZES = bench_sizes()
size_params = pytest.mark.parametrize("n", SIZES, ids=[f"n={n}" for n in SIZES])


@pytest.fixture(scope="module")
def folder(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bench-export")


@functools.cache
def ledger_file(folder: Path, n: int) -> Path:
    """A SQLite ledger in ``folder`` holding thread t1 of ``n`` entries, checkpointed at the
    head (built once per size)."""
    if n > LARGEST:
        pytest.skip(f"building a thread of {n} signed entries takes over a minute")
    path = folder / f"ledger-{n}.db"
    with Ledger.open(str(path), SIGNER) as ledger:
        thread = ledger.create_thread("t1")
        thread.read_source([source_ref("r1", "report.pdf", "p. 4", passage="EUR 4.2m")])
        thread.evidence.upsert([{"text": "Impairment is EUR 4.2m.", "cites": ["r1"]}])
        thread.conclude("compute", "Coverage is 12 per mille.", ["ev-1"])
        turns = max(0, n - 4)
        for start in range(0, turns, BATCH):
            thread.append_many(
                [
                    ("turn", {"role": "user", "text": f"{i} {TEXT}"}, "agent")
                    for i in range(start, min(turns, start + BATCH))
                ]
            )
        thread.conclude("final", "Q3 impairment reconciles.", ["cc-1"])
        thread.checkpoint()
    return path


@functools.cache
def exported(folder: Path, n: int) -> Path:
    target = folder / f"export-{n}.zip"
    with Ledger.open(str(ledger_file(folder, n)), create=False) as ledger:
        export_thread(ledger, "t1", target, overwrite=True)
    return target


def rounds(n: int) -> int:
    return 3 if n <= 10_000 else 1


@size_params
def test_raw_read_and_zip(benchmark: Any, folder: Path, n: int) -> None:
    benchmark.group = f"export n={n}"
    path = ledger_file(folder, n)

    def read_and_zip() -> int:
        with sqlite3.connect(path) as conn:
            rows = conn.execute("SELECT leaf FROM entry WHERE thread = 't1' ORDER BY seq")
            entries = b"".join(bytes(row[0]) + b"\n" for row in rows)
        hashlib.sha256(entries).digest()
        return len(deterministic_zip({"entries.jsonl": entries}))

    size = benchmark.pedantic(read_and_zip, rounds=rounds(n), iterations=1)
    record(benchmark, n, size)


@size_params
def test_registre_export_full(benchmark: Any, folder: Path, n: int) -> None:
    benchmark.group = f"export n={n}"
    target = folder / f"full-{n}.zip"
    with Ledger.open(str(ledger_file(folder, n)), create=False) as ledger:

        def export() -> int:
            return export_thread(ledger, "t1", target, overwrite=True).bytes

        size = benchmark.pedantic(export, rounds=rounds(n), iterations=1)
        tracemalloc.start()
        try:
            export()
            peak = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    benchmark.extra_info["peak_python_mb"] = round(peak / 1e6, 1)
    record(benchmark, n, size)


@size_params
def test_registre_export_claim(benchmark: Any, folder: Path, n: int) -> None:
    benchmark.group = f"export n={n}"
    target = folder / f"claim-{n}.zip"
    with Ledger.open(str(ledger_file(folder, n)), create=False) as ledger:
        final = ledger.thread("t1").conclusions.list(status="active")[-1].id

        def export() -> int:
            result = export_claim(ledger, "t1", final, target, overwrite=True)
            assert result.entries == 4
            return result.bytes

        size = benchmark.pedantic(export, rounds=rounds(n), iterations=1)
    benchmark.extra_info["bundle_bytes"] = size


@size_params
@pytest.mark.parametrize("jobs", [1, 2])
def test_registre_verify_exported(benchmark: Any, folder: Path, n: int, jobs: int) -> None:
    benchmark.group = f"verify exported n={n}"
    path, trust = exported(folder, n), TrustPolicy(SIGNER.verifier())
    report = benchmark.pedantic(
        lambda: verify_bundle(path, trust, jobs=jobs), rounds=rounds(n), iterations=1
    )
    assert report.verified and report.entries == n
    benchmark.extra_info["jobs"] = jobs
    record(benchmark, n, path.stat().st_size)


def record(benchmark: Any, n: int, size: int) -> None:
    """The bundle's bytes, and entries/s at the median (absent with --benchmark-disable)."""
    benchmark.extra_info["bundle_bytes"] = size
    if benchmark.stats is not None:
        benchmark.extra_info["entries_per_s"] = round(n / benchmark.stats.stats.median)
