"""Writing a real-data suite's results: ``results-SUITE.json`` and ``report-SUITE.md``."""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from registre.bench.real.report import render_real_report

__all__ = ["parse_budgets", "write_real_outputs"]

_SUFFIX = {"k": 1000, "m": 1_000_000}


def parse_budgets(text: str) -> tuple[int, ...]:
    """``"4k,8k,16k"`` as ``(4000, 8000, 16000)`` (k = 1000, m = 10^6). ValueError for a
    part that is not a positive whole number of tokens."""
    budgets: list[int] = []
    for part in (p.strip().lower() for p in text.split(",")):
        if not part:
            continue
        scale = _SUFFIX.get(part[-1], 1)
        number = part[:-1] if part[-1] in _SUFFIX else part
        try:
            value = float(number) * scale
        except ValueError:
            raise ValueError(f"not a budget in tokens: {part!r} (e.g. 4k, 8000)") from None
        if value != int(value) or not 1 <= value <= 10_000_000:
            raise ValueError(f"budgets are whole numbers of tokens, 1..10m: {part!r}")
        budgets.append(int(value))
    if not budgets:
        raise ValueError("give at least one budget (e.g. 4k,8k,16k)")
    return tuple(budgets)


def write_real_outputs(results: Mapping[str, Any], out: Path) -> dict[str, Path]:
    """Write the results and their report into ``out`` (created); their paths by name.
    Each file is written to a temporary name and renamed."""
    out.mkdir(parents=True, exist_ok=True)
    suite = results["suite"]
    paths = {"results": out / f"results-{suite}.json", "report": out / f"report-{suite}.md"}
    texts = {
        "results": json.dumps(results, indent=1, ensure_ascii=False) + "\n",
        "report": render_real_report(results),
    }
    for name, path in paths.items():
        partial = path.with_name(path.name + ".partial")
        partial.write_text(texts[name], encoding="utf-8")
        os.replace(partial, path)
    return paths
