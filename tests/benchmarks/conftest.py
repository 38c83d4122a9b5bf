"""Benchmark sizes come from REGISTRE_BENCH_SIZES (comma separated), so `make bench` measures
the issue's sizes while `make test` runs every benchmark once at a small size."""

from __future__ import annotations

import os


def bench_sizes(default: str = "1000") -> list[int]:
    raw = os.environ.get("REGISTRE_BENCH_SIZES", default)
    return [int(float(part)) for part in raw.split(",") if part.strip()]
