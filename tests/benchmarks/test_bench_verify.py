"""Offline bundle verification throughput beside the raw Ed25519 verification rate.

For each size n from ``bench_sizes()`` (up to 100,000: building a larger bundle in memory
takes over a minute), group ``verify n=N`` holds

* ``raw_ed25519_verify``: the n entry signatures checked with ``cryptography`` alone, messages
  prepared in advance -- the ceiling of one core;
* ``registre_verify_jobs1`` / ``registre_verify_jobs2``: ``verify_bundle`` on the full bundle's
  zip bytes with 1 and 2 processes -- every step: the zip read and hashed, the checkpoint,
  every entry opened (canonical bytes, signature, body schema, prev root), the tree, the
  lifecycle replay and the claims.

The issue's goal: entries/s of ``verify_bundle`` at least 70 % of the raw rate times the
number of processes. ``extra_info`` records entries/s; the bundle is a thread of turns after
a short investigation (source reads, evidence, conclusions, a pin, a compaction, a model call).
"""

from __future__ import annotations

import functools
from typing import Any

import pytest

from registre.attest.entries import ENTRY_SIGNATURE_PREFIX
from registre.attest.verify import verify_bundle
from tests.benchmarks.conftest import bench_sizes
from tests.bundles import Thread, build_thread, policy

LARGEST = 100_000
SIZES = bench_sizes()
size_params = pytest.mark.parametrize("n", SIZES, ids=[f"n={n}" for n in SIZES])


@functools.cache
def thread(n: int) -> Thread:
    if n > LARGEST:
        pytest.skip(f"building a bundle of {n} entries in memory takes over a minute")
    return build_thread(n)


@functools.cache
def bundle(n: int) -> bytes:
    return thread(n).full_bundle()


def rounds(n: int) -> int:
    return 3 if n <= 10_000 else 1


@size_params
def test_raw_ed25519_verify(benchmark: Any, n: int) -> None:
    benchmark.group = f"verify n={n}"
    key = thread(n).signer.verifier()._key  # the raw cryptography key: no registre code
    # the signed message is the leaf's envelope: '{"entry":' ENVELOPE ',"sig":"' B64 '"}'
    work = [(e.signature, ENTRY_SIGNATURE_PREFIX + e.leaf[9:-98]) for e in thread(n).entries]

    def verify_all() -> None:
        for signature, message in work:
            key.verify(signature, message)

    benchmark.pedantic(verify_all, rounds=rounds(n), iterations=1)
    record_rate(benchmark, n)


@size_params
@pytest.mark.parametrize("jobs", [1, 2])
def test_registre_verify(benchmark: Any, n: int, jobs: int) -> None:
    benchmark.group = f"verify n={n}"
    data, trust = bundle(n), policy()
    report = benchmark.pedantic(
        lambda: verify_bundle(data, trust, jobs=jobs), rounds=rounds(n), iterations=1
    )
    assert report.verified and report.entries == n
    benchmark.extra_info["jobs"] = jobs
    record_rate(benchmark, n)


def record_rate(benchmark: Any, n: int) -> None:
    """entries/s at the median (absent with --benchmark-disable, which measures nothing)."""
    if benchmark.stats is not None:
        benchmark.extra_info["entries_per_s"] = round(n / benchmark.stats.stats.median)
