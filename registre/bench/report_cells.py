"""The cells and tables of ``report.md``: how a figure of a results document is written.

Shared by :mod:`registre.bench.report` and :mod:`registre.bench.scale_report`, so that a
duration, a budget or a share reads the same in every table. ``None`` (not measured) is
written ``-`` throughout.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

__all__ = [
    "cell_budget",
    "cell_mb",
    "cell_ms",
    "cell_pct",
    "cell_ratio",
    "cell_s",
    "cell_share",
    "cell_size",
    "cell_verify",
    "run_label",
    "table",
]


def cell_ms(value: float | None) -> str:
    """Milliseconds, as seconds from 1,000 and as microseconds below 1."""
    if value is None:
        return "-"
    if value >= 1000:
        return f"{value / 1000:.2f} s"
    return f"{value:.3g} ms" if value >= 1 else f"{value * 1000:.3g} µs"


def cell_s(value: float | None) -> str:
    """Seconds, written as :func:`cell_ms` writes them."""
    return "-" if value is None else cell_ms(value * 1000)


def cell_mb(value: float | None) -> str:
    """Megabytes, whole."""
    return "-" if value is None else f"{value:,.0f} MB"


def cell_size(value: int) -> str:
    """Bytes, in MB from 1 MB, else in kB."""
    return f"{value / 1e6:.1f} MB" if value >= 1e6 else f"{value / 1e3:.0f} kB"


def cell_verify(bundle: Mapping[str, Any]) -> str:
    """A run's bundle verification: its time, and ``(FAILED)`` when it did not verify."""
    return cell_s(bundle["verify_s"]) + ("" if bundle["verified"] else " (FAILED)")


def cell_budget(value: int) -> str:
    """A token budget: ``8k`` for 8000."""
    return f"{value // 1000}k" if value % 1000 == 0 else str(value)


def cell_ratio(value: float | None, digits: int = 2) -> str:
    """A ratio: ``1.25x``."""
    return "-" if value is None else f"{value:.{digits}f}x"


def cell_share(value: float | None, digits: int = 1) -> str:
    """A share of 1 as a percentage."""
    return "-" if value is None else f"{100 * value:.{digits}f}%"


def cell_pct(part: float, whole: float) -> str:
    """``part`` of ``whole`` as a percentage (``-`` for nothing out of nothing)."""
    return "-" if not whole else f"{100 * part / whole:.1f}%"


def run_label(run: Mapping[str, Any]) -> str:
    """A run as every table and plot names it: its planned size and budget (``1,000 @ 8k``,
    ``1,000,000 @ 8k (lean)``). The entries it wrote (a few more: compactions and model
    calls come on top) are a column of their own where they matter."""
    lean = " (lean)" if run.get("lean") else ""
    return f"{run['size']:,} @ {cell_budget(run['budget'])}{lean}"


def table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    """A Markdown table: the header row, the rule, a row per row."""
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines
