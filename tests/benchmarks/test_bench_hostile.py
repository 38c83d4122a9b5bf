"""What a hostile bundle costs the verifier, beside a genuine bundle of the same size (issue 13:
refused or verified within 2x the time and memory of a genuine bundle).

For each size n from ``bench_sizes()``, group ``hostile n=N`` holds

* ``genuine``: ``verify_bundle`` on a full bundle of n entries;
* ``lines_at_ratio_limit``: a bundle of the same byte size whose ``entries.jsonl`` inflates
  as far as the compression-ratio limit allows, in lines of 450 bytes (the most memory the
  reader may be made to hold);

and group ``hostile attacks`` the attacks of ``tests/tamper/hostile.py`` at the sizes the tests
use. ``extra_info`` records the bundle's bytes and the peak of Python allocations
(``tracemalloc``) during one verification. Full-size attacks (2 x 2 GiB, 10^6 zip64 records)
are measured one process each with ``python -m tests.tamper.hostile DIR`` and
``/usr/bin/time -v`` (``specs/bundle.md`` 5.1).
"""

from __future__ import annotations

import functools
import os
import tracemalloc
import zlib
from collections.abc import Callable
from typing import Any

import pytest

from registre.attest.bundles import ENTRIES_MEMBER
from registre.attest.verify import verify_bundle
from registre.errors import RegistreError
from tests.benchmarks.conftest import bench_sizes
from tests.bundles import build_thread, policy, rezip
from tests.tamper import hostile

SIZES = [n for n in bench_sizes() if n <= 20_000]
TEXT = "Reconcile the Q3 impairment figures against the ledger extract; segment retail. " * 2


@functools.cache
def genuine(n: int) -> bytes:
    thread = build_thread(10)
    while thread.size < n:
        thread.turn(f"{thread.size} {TEXT}")
    return thread.full_bundle()


@functools.cache
def lines_at_ratio_limit(size: int) -> bytes:
    """About ``size`` bytes of zip inflating to ~11.6 times that, in 450-byte lines."""
    line = lambda: os.urandom(24).hex().encode() + b"a" * 400 + b"\n"  # noqa: E731
    sample = b"".join(line() for _ in range(2000))
    ratio = len(sample) / len(zlib.compress(sample, 6))
    body = b"".join(line() for _ in range(int(size * min(ratio, 11.6) / len(sample) * 2000)))
    return rezip(hostile.genuine(), {ENTRIES_MEMBER: body})


def measure(benchmark: Any, data: bytes) -> None:
    def attempt() -> str:
        try:
            verify_bundle(data, policy())
        except RegistreError as error:
            return type(error).__name__
        return "verified"

    tracemalloc.start()
    outcome = attempt()
    peak = tracemalloc.get_traced_memory()[1]
    tracemalloc.stop()
    benchmark.extra_info.update(bytes=len(data), outcome=outcome, peak_python_bytes=peak)
    benchmark.pedantic(attempt, rounds=1, iterations=1)


@pytest.mark.parametrize("n", SIZES, ids=[f"n={n}" for n in SIZES])
@pytest.mark.parametrize("kind", ["genuine", "lines_at_ratio_limit"])
def test_hostile_beside_genuine(benchmark: Any, n: int, kind: str) -> None:
    benchmark.group = f"hostile n={n}"
    data = genuine(n) if kind == "genuine" else lines_at_ratio_limit(len(genuine(n)))
    measure(benchmark, data)


ATTACKS: dict[str, Callable[[], bytes]] = {
    "hidden_entry": hostile.hidden_entry,
    "zip64_locator_2e63": hostile.zip64_locator_far,
    "zip64_offset_2e64": hostile.zip64_record_offset_max,
    "zip64_disagreeing_1000": lambda: hostile.zip64_disagreeing(1000),
    "inflating_2x64MiB": lambda: hostile.inflating_members(64 << 20),
    "huge_leaf_5M": hostile.huge_leaf,
}


@pytest.mark.parametrize("attack", sorted(ATTACKS))
def test_hostile_attacks(benchmark: Any, attack: str) -> None:
    benchmark.group = "hostile attacks"
    measure(benchmark, ATTACKS[attack]())
