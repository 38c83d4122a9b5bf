"""Old beside new: the README's tables from two runs of the same real-data suite.

``python -m registre.bench.real.compare OLD/results-SUITE.json NEW/results-SUITE.json``
prints one markdown table per suite: per budget, registre's figure ``old → new`` beside each
baseline's (from the new run; the baselines do not depend on registre), for the suite's
headline scores. Pure JSON in, text out: it runs in any checkout.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Final

__all__ = ["render_comparison"]

_HEADLINES: Final = {
    "locomo": (("evidence", "evidence turns"), ("answer", "answer words"), ("fill", "fill")),
    "transcripts": (("probes", "probes"), ("policy", "policy sentences"), ("fill", "fill")),
}
_BASELINES: Final = {"truncation": "truncation", "masking": "masking", "bm25": "BM25"}


def _pct(value: object) -> str:
    return "–" if not isinstance(value, int | float) else f"{100 * value:.1f}%"


def _rows(results: Mapping[str, Any]) -> dict[tuple[int, str], Mapping[str, Any]]:
    key = "group" if results["suite"] == "locomo" else "kind"
    return {(row["budget"], row["method"]): row for row in results["rows"] if row[key] == "all"}


def _data(items: Sequence[Mapping[str, Any]]) -> list[tuple[object, ...]]:
    fields = ("sample_id", "name", "turns", "entries", "questions", "calls")
    return [tuple(item.get(name) for name in fields) for item in items]


def render_comparison(old: Mapping[str, Any], new: Mapping[str, Any]) -> str:
    """The table (module docstring). ValueError if the two runs are of different suites or
    on different data (conversations and questions, or transcripts and their calls)."""
    if old["suite"] != new["suite"]:
        raise ValueError(f"cannot compare a {old['suite']} run with a {new['suite']} run")
    data = "conversations" if new["suite"] == "locomo" else "transcripts"
    if _data(old[data]) != _data(new[data]):
        raise ValueError(f"the two runs are on different {data}: compare runs on the same data")
    headlines = _HEADLINES[new["suite"]]
    before, after = _rows(old), _rows(new)
    baselines = [name for name in _BASELINES if name in new["methods"]]
    head = ["budget"]
    for _score, title in headlines:
        names = " / ".join(_BASELINES[name] for name in baselines)
        head.append(f"{title}: registre old → new / {names}")
    head.append("refused: registre old → new")
    lines = ["| " + " | ".join(head) + " |", "|" + "---|" * len(head)]
    for budget in sorted({budget for budget, _method in after}):
        cells = [f"{budget:,}"]
        was = before.get((budget, "registre"), {})
        now = after.get((budget, "registre"), {})
        for score, _title in headlines:
            parts = [f"{_pct(was.get(score))} → {_pct(now.get(score))}"]
            parts += [_pct(after.get((budget, name), {}).get(score)) for name in baselines]
            cells.append(" / ".join(parts))
        cells.append(f"{was.get('refused', '–')} → {now.get('refused', '–')}")
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    """Print the comparison of the two results files named; 2 on bad usage."""
    args = list(sys.argv[1:] if argv is None else argv)
    if len(args) != 2:
        print("usage: python -m registre.bench.real.compare OLD.json NEW.json", file=sys.stderr)
        return 2
    old, new = (json.loads(Path(arg).read_text(encoding="utf-8")) for arg in args)
    try:
        print(render_comparison(old, new), end="")
    except ValueError as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
