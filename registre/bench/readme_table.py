"""The README's bench tables, regenerated from a ``registre bench`` run.

``python -m registre.bench.readme_table RESULTS.json [--old OLD.json]`` prints Markdown:

1. a line naming the machine, the date and the command's sizes and budgets;
2. the table of the README's "long investigations and context budgets" section: one row
   per run (the run as ``SIZE @ BUDGET``, the entries it wrote, append rate, projection
   p50 / p99, the naive re-fold at its largest sample, compactions, tokens used,
   compression, pins and active evidence kept);
3. the scale table, one column per budget at the largest size: projection
   p50 / p99 (and in the last third of the history), the naive re-fold over ours, the
   model call p50, verify beside its signature checks alone, peak memory of export and
   verify, and the whole run. With ``--old``, each cell reads ``old → new`` (the old
   document may be ``registre-bench/2``: figures it lacks print as ``-``).

Exits 2 with one line on a file that is not a bench results document.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any

from registre.bench.report import summary_table
from registre.bench.report_cells import run_label

__all__ = ["header_line", "main", "render", "scale_table"]

Run = Mapping[str, Any]


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 1000:
        return f"{value / 1000:.2f} s"
    return f"{value:.3g} ms"


def _s(value: float | None) -> str:
    return "-" if value is None else _ms(value * 1000)


def _budget(value: int) -> str:
    return f"{value // 1000}k" if value % 1000 == 0 else str(value)


def header_line(results: Mapping[str, Any]) -> str:
    """Machine, date, sizes and budgets of the run, as one sentence."""
    machine = results["machine"]
    config = results["config"]
    memory = machine.get("memory_mb")
    ram = f", {memory / 1024:.0f} GB" if memory else ""
    sizes = ",".join(f"{size:g}" for size in config["sizes"])
    budgets = ",".join(_budget(budget) for budget in config["budgets"])
    workers = config.get("jobs", 1)  # absent from registre-bench/4 and earlier documents
    jobs = f" with --jobs {workers} (concurrent runs share the cores)" if workers > 1 else ""
    return (
        f"`registre bench --sizes {sizes} --budgets {budgets}` on {results['created'][:10]}, "
        f"registre {results['registre']}, Python {machine['python']} on {machine['platform']}, "
        f"{machine['cpus']} CPU(s){ram}, {config['database']}; "
        f"{results['seconds']:.0f} s in all{jobs}."
    )


def _last_third(run: Run) -> str:
    parts = run["projection"].get("by_third")
    if not parts:
        return "-"
    last = parts[-1]
    return f"{_ms(last['ours_p50_ms'])} / {_ms(last['ours_p99_ms'])}"


def _naive(run: Run) -> str:
    ratio = run["projection"].get("naive_ratio")
    if ratio is not None:
        if ratio["at_largest"] is None:
            return "not sampled"
        return f"{ratio['at_largest']:.1f}x at {ratio['at']:,}"
    naive = run["projection"]["naive"]["points"]
    ours = run["projection"]["ours"]["points"]
    if not naive or not ours:
        return "-"
    history, naive_s = naive[-1]
    near = min(ours, key=lambda point: abs(point[0] - history))
    return f"{naive_s / near[1]:.1f}x at {history:,}" if near[1] else "-"


def _verify(run: Run) -> str:
    bundle = run["bundle"]
    signatures = bundle.get("signatures_s")
    if signatures is None:
        return _s(bundle["verify_s"])
    ratio = bundle["verify_s"] / signatures if signatures else 0
    return f"{_s(bundle['verify_s'])} ({_s(signatures)} signatures alone, {ratio:.2f}x)"


def _memory(run: Run) -> str:
    steps = run.get("steps")
    if not steps:
        return "-"

    def mb(name: str) -> str:
        value = steps[name]["peak_rss_mb"]
        return "-" if value is None else f"{value:,.0f} MB"

    return f"{mb('export')} / {mb('verify')}"


_ROWS: tuple[tuple[str, Callable[[Run], str]], ...] = (
    (
        "projection p50 / p99",
        lambda r: (
            f"{_ms(r['projection']['ours']['p50_ms'])} / {_ms(r['projection']['ours']['p99_ms'])}"
        ),
    ),
    ("projection p50 / p99, last third of the history", _last_third),
    ("naive re-fold over ours (largest sample; above 1: ours faster)", _naive),
    ("model call p50", lambda r: _ms(r["model_calls"]["p50_ms"])),
    ("verify the exported bundle", _verify),
    ("peak memory: export / verify", _memory),
    ("investigation (wall)", lambda r: f"{r['wall_s']:.0f} s"),
    ("whole run (investigation, steps and checks)", lambda r: f"{r['run_s']:.0f} s"),
)


def _largest(results: Mapping[str, Any]) -> dict[int, Run]:
    chosen: dict[int, Run] = {}
    for run in results["runs"]:
        best = chosen.get(run["budget"])
        if best is None or run["size"] > best["size"]:
            chosen[run["budget"]] = run
    return chosen


def scale_table(results: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> list[str]:
    """The scale table (module docstring): one column per budget, its largest run; with
    ``old``, ``old → new`` in each cell where the old run has the same budget."""
    new_runs = _largest(results)
    old_runs = _largest(old) if old is not None else {}
    budgets = sorted(new_runs)
    header = [
        "",
        *(
            f"{run_label(new_runs[b])} ({new_runs[b]['entries']:,} entries written)"
            for b in budgets
        ),
    ]
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    for label, cell in _ROWS:
        cells = [label]
        for budget in budgets:
            text = _safe(cell, new_runs[budget])
            before = old_runs.get(budget)
            if before is not None:
                text = f"{_safe(cell, before)} → {text}"
            cells.append(text)
        lines.append("| " + " | ".join(cells) + " |")
    return lines


def _safe(cell: Callable[[Run], str], run: Run) -> str:
    try:
        return cell(run)
    except (KeyError, TypeError, ZeroDivisionError):
        return "-"


def render(results: Mapping[str, Any], old: Mapping[str, Any] | None = None) -> str:
    """The three parts of the module docstring, as Markdown."""
    lines = [header_line(results), "", *summary_table(results), "", *scale_table(results, old)]
    if old is not None:
        lines += ["", "Old: " + header_line(old)]
    return "\n".join(lines)


def _load(path: str) -> dict[str, Any]:
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ValueError(f"{path}: cannot be read as JSON ({exc})") from None
    if not isinstance(data, dict) or not str(data.get("schema", "")).startswith("registre-bench/"):
        raise ValueError(f"{path}: not a registre bench results document")
    return data


def main(argv: Sequence[str] | None = None) -> int:
    """The command line of the module docstring."""
    args = list(sys.argv[1:] if argv is None else argv)
    old_path = None
    if "--old" in args:
        at = args.index("--old")
        if at + 1 >= len(args):
            args = []
        else:
            old_path = args[at + 1]
            del args[at : at + 2]
    if len(args) != 1:
        print(
            "usage: python -m registre.bench.readme_table RESULTS.json [--old OLD.json]",
            file=sys.stderr,
        )
        return 2
    try:
        results = _load(args[0])
        old = _load(old_path) if old_path is not None else None
        text = render(results, old)
    except (ValueError, KeyError, TypeError) as exc:
        print(f"registre.bench.readme_table: error: {exc}", file=sys.stderr)
        return 2
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
