"""Side-by-side table of a pytest-benchmark JSON file: ours against the baselines.

Benchmarks that belong together share a pytest-benchmark ``group`` (e.g. ``append
n=100000``). Within a group, a test whose name contains ``registre`` is ours; every other
test is a baseline or a ceiling measured in the same run (``pymerkle``, raw Ed25519, raw
inserts, ``json.loads``...). For each group the table gives every test's median and, for each
of ours, its speed relative to the group's first baseline (``> 1`` means ours is faster).

Usage: ``python -m registre.bench.sidebyside FILE.json [--markdown]``. Exits 2 with one line
on a file that is not a pytest-benchmark result.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

__all__ = ["Row", "load_rows", "main", "render"]


@dataclass(frozen=True)
class Row:
    group: str
    name: str
    median_s: float
    ours: bool


def load_rows(path: Path) -> list[Row]:
    """Rows of a pytest-benchmark ``--benchmark-json`` file, in file order.

    Raises ValueError with a one-line reason when the file is not such a result.
    """
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
        benchmarks = data["benchmarks"]
        return [
            Row(
                group=str(b.get("group") or b["name"]),
                name=str(b["name"]),
                median_s=float(b["stats"]["median"]),
                ours="registre" in b["name"],
            )
            for b in benchmarks
        ]
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise ValueError(f"{path}: not a pytest-benchmark JSON result ({exc})") from None


def _human(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("µs", 1e-6)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds / 1e-9:.3g} ns"


def _short(name: str) -> str:
    name = name.removeprefix("test_")
    return name.split("[", 1)[0]


def render(rows: Iterable[Row], *, markdown: bool = True) -> str:
    """The table as text: one line per test, grouped, with ratios against the baseline."""
    groups: dict[str, list[Row]] = {}
    for row in rows:
        groups.setdefault(row.group, []).append(row)
    lines = []
    if markdown:
        lines += ["| group | test | median | vs baseline |", "|---|---|---|---|"]
    for group, members in groups.items():
        baseline = next((r for r in members if not r.ours), None)
        for row in members:
            if row.ours and baseline is not None:
                ratio = f"{baseline.median_s / row.median_s:.2f}x {_short(baseline.name)}"
            elif row.ours:
                ratio = "-"
            else:
                ratio = "baseline"
            cells = [group, _short(row.name), _human(row.median_s), ratio]
            if markdown:
                lines.append("| " + " | ".join(cells) + " |")
            else:
                lines.append("  ".join(f"{cell:<28}" for cell in cells))
    return "\n".join(lines)


def main(argv: Sequence[str] | None = None) -> int:
    args = list(sys.argv[1:] if argv is None else argv)
    markdown = "--markdown" in args
    paths = [a for a in args if not a.startswith("--")]
    if len(paths) != 1:
        print("usage: python -m registre.bench.sidebyside FILE.json [--markdown]", file=sys.stderr)
        return 2
    try:
        rows = load_rows(Path(paths[0]))
    except ValueError as exc:
        print(f"registre.bench.sidebyside: error: {exc}", file=sys.stderr)
        return 2
    print(render(rows, markdown=markdown))
    return 0


if __name__ == "__main__":
    sys.exit(main())
