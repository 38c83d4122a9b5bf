"""The PNG plots of a ``registre bench`` run (matplotlib, the ``bench`` extra, Agg backend).

* ``budget.png`` -- "Which budget?": for each size that measured quality, fact recall and
  the mean context tokens per model call against the budget, one line per method, the
  recommended budget marked (:mod:`registre.bench.budget_report`); absent when every run is
  lean;
* ``latency.png`` -- projection latency against history length, one colour per budget
  (log-log): registre's samples of every size with their median per log bin, and the naive
  re-fold's samples of the largest size;
* ``tokens.png`` -- the largest size, one row per budget: tokens of the context at every
  model call against the budget and the high-water mark, with the history's own size (what
  replaying it verbatim would take) on the right axis; beside it a close-up of the last fifth
  of the model calls (at most 300), with each compaction marked;
* ``pins.png`` -- the largest size that measured quality (not lean): live pins, and how many
  of them registre's context and the truncation baseline carry word for word, along the
  thread (absent when every run is lean);
* ``flat.png`` -- projection and model-call latency (p50, p99 dashed) in each tenth of the
  history, one line per run, one colour per budget: flat lines mean the cost does not grow
  with the history, lines on top of each other that it does not grow with the budget.

Axes are written as people read them: log axes in plain numbers (``0.5``, ``2``, ``1,000``,
never ``4×10⁻¹``), counts in whole numbers, token axes with thousands separators and runs
named as in the report (``1,000 @ 8k``).

matplotlib is imported only when plotting, so the harness itself does not need it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from registre.bench.budget_report import METHOD_NAMES, budget_choices, mean_tokens
from registre.bench.quality import METHODS
from registre.bench.report_cells import cell_budget, run_label

__all__ = ["plain_number", "tenths", "write_plots"]

_MAX_TICKS = 150  # more compactions than this would merge into a bar: the close-up shows them
_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e", "#8c564b")


def write_plots(results: Mapping[str, Any], out: Path) -> dict[str, Path]:
    """Write the plots into ``out``; return ``{"latency": path, ...}``."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    runs = results["runs"]
    if not runs:
        return {}
    budgets = sorted({run["budget"] for run in runs})
    colour = {budget: _COLOURS[i % len(_COLOURS)] for i, budget in enumerate(budgets)}
    largest = max(run["size"] for run in runs)
    last_runs = [run for run in runs if run["size"] == largest]
    paths: dict[str, Path] = {}
    if budget_choices(results):
        paths["budget"] = out / "budget.png"
        _budget(plt, results, paths["budget"])
    paths.update(
        {
            "latency": out / "latency.png",
            "flat": out / "flat.png",
            "tokens": out / "tokens.png",
        }
    )
    _latency(plt, runs, budgets, colour, paths["latency"])
    _flat(plt, runs, colour, paths["flat"])
    _tokens(plt, last_runs, colour, paths["tokens"])
    full = [run for run in runs if "pins" in run]
    if full:
        widest = max(run["size"] for run in full)
        paths["pins"] = out / "pins.png"
        _pins(plt, [run for run in full if run["size"] == widest], colour, paths["pins"])
    return paths


_TENTHS = 10
_SIZE_MARKERS = ("o", "s", "^", "D", "v", "P")
_METHOD_STYLES: dict[str, dict[str, Any]] = {
    "registre": {"color": "#1f77b4", "marker": "o", "linewidth": 2.2},
    "truncation": {"color": "#7f7f7f", "marker": "x", "linestyle": "--"},
    "observation_masking": {"color": "#ff7f0e", "marker": "s", "linestyle": "--"},
    "rolling_summary": {"color": "#9467bd", "marker": "^", "linestyle": "--"},
}


def plain_number(value: float) -> str:
    """A tick label as people write numbers: ``0.3``, ``2``, ``1,000``, ``8k`` is not
    guessed (budgets are labelled by the caller)."""
    if value >= 1000:
        return f"{value:,.0f}"
    return f"{value:g}"


def _plain_log(axis: Any, ticker: Any) -> None:
    """A log axis labelled at 1, 2 and 5 of each decade in plain numbers, no minor labels."""
    axis.set_major_locator(ticker.LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
    axis.set_major_formatter(ticker.FuncFormatter(lambda value, _pos: plain_number(value)))
    axis.set_minor_formatter(ticker.NullFormatter())


def _thousands(axis: Any, ticker: Any) -> None:
    axis.set_major_formatter(ticker.FuncFormatter(lambda value, _pos: f"{value:,.0f}"))


def _budget(plt: Any, results: Mapping[str, Any], path: Path) -> None:
    """budget.png (module docstring)."""
    from matplotlib import ticker

    choices = budget_choices(results)
    figure, panels = plt.subplots(
        len(choices), 2, figsize=(12, 3.9 * len(choices) + 0.8), dpi=120, squeeze=False
    )
    for row, choice in zip(panels, choices, strict=True):
        recall_axis, tokens_axis = row
        budgets = [int(run["budget"]) for run in choice.runs]
        for name in METHODS:
            style = _METHOD_STYLES[name]
            shares = [
                run["working_context"]["methods"][name]["fact_recall"]["share"]
                for run in choice.runs
            ]
            points = [(b, 100 * s) for b, s in zip(budgets, shares, strict=True) if s is not None]
            recall_axis.plot(
                [b for b, _ in points],
                [v for _, v in points],
                markersize=5,
                label=METHOD_NAMES[name],
                **style,
            )
            tokens_axis.plot(
                budgets,
                [mean_tokens(run, name) for run in choice.runs],
                markersize=5,
                label=METHOD_NAMES[name],
                **style,
            )
        tokens_axis.plot(
            budgets, budgets, color="black", linewidth=0.8, linestyle=":", label="the budget"
        )
        if choice.chosen is not None:
            chosen = int(choice.chosen["budget"])
            for axis in row:
                axis.axvline(chosen, color="#2ca02c", linewidth=6, alpha=0.18)
            recall_axis.annotate(
                f"recommended: {cell_budget(chosen)}",
                xy=(chosen, 2),
                xytext=(6, 4),
                textcoords="offset points",
                fontsize=8,
                color="#2ca02c",
            )
        for axis in row:
            axis.set_xscale("log")
            axis.set_xlim(min(budgets) / 1.25, max(budgets) * 1.25)
            axis.set_xticks(budgets)
            axis.set_xticklabels([cell_budget(b) for b in budgets])
            axis.xaxis.set_minor_locator(ticker.NullLocator())
            axis.set_xlabel("budget (tokens)")
            axis.grid(True, alpha=0.3)
        recall_axis.set_ylim(0, 105)
        recall_axis.yaxis.set_major_formatter(ticker.PercentFormatter(decimals=0))
        recall_axis.set_ylabel("fact recall")
        recall_axis.set_title(
            f"{choice.size:,} entries: facts recalled at the model calls that needed them",
            fontsize=9,
            loc="left",
        )
        tokens_axis.set_yscale("log")
        _plain_log(tokens_axis.yaxis, ticker)
        tokens_axis.set_ylabel("context tokens per model call (mean)")
        tokens_axis.set_title(
            f"{choice.size:,} entries: what each call sends", fontsize=9, loc="left"
        )
    panels[0, 0].legend(fontsize=8, loc="lower right")
    panels[0, 1].legend(fontsize=8, loc="upper left")
    figure.suptitle(
        "Which budget? Fact recall and tokens against the budget, per method", fontsize=10
    )
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def tenths(points: list[Any], entries: int) -> list[tuple[float, float, float] | None]:
    """``(centre, p50, p99)`` in seconds of the ``[history, seconds]`` points in each tenth
    of a history of ``entries``, None for an empty tenth (nearest-rank percentiles)."""
    bins: list[list[float]] = [[] for _ in range(_TENTHS)]
    span = max(1, entries)
    for history, seconds in points:
        bins[min(_TENTHS - 1, int(history) * _TENTHS // span)].append(seconds)
    rows: list[tuple[float, float, float] | None] = []
    for index, values in enumerate(bins):
        if not values:
            rows.append(None)
            continue
        values.sort()
        p99 = values[max(0, math.ceil(len(values) * 0.99) - 1)]
        p50 = values[max(0, math.ceil(len(values) * 0.5) - 1)]
        rows.append(((index + 0.5) / _TENTHS, p50, p99))
    return rows


def _flat(plt: Any, runs: list[Any], colour: Any, path: Path) -> None:
    from matplotlib import ticker

    figure, panels = plt.subplots(1, 2, figsize=(12, 4.6), dpi=120, sharey=False)
    sizes = sorted({run["size"] for run in runs})
    marker = {size: _SIZE_MARKERS[i % len(_SIZE_MARKERS)] for i, size in enumerate(sizes)}
    series = (
        (panels[0], "projection (thread.project at the head)", "ours"),
        (panels[1], "model call (thread.model_call)", "calls"),
    )
    for panel, title, what in series:
        for run in runs:
            if what == "ours":
                points = run["projection"]["ours"]["points"]
            else:
                points = run["model_calls"]["points"]
            rows = [row for row in tenths(points, run["entries"]) if row is not None]
            if not rows:
                continue
            style = {"color": colour[run["budget"]], "marker": marker[run["size"]]}
            panel.plot(
                [r[0] for r in rows],
                [r[1] * 1000 for r in rows],
                "-",
                markersize=4,
                label=f"{run_label(run)} (p50)",
                **style,
            )
            panel.plot([r[0] for r in rows], [r[2] * 1000 for r in rows], "--", alpha=0.4, **style)
        panel.set_yscale("log")
        _plain_log(panel.yaxis, ticker)
        panel.set_xlim(0, 1)
        panel.set_xlabel("position in the history (fraction of the run's entries)")
        panel.set_ylabel("latency (ms); dashed: p99")
        panel.set_title(title, fontsize=9, loc="left")
        panel.grid(True, which="both", alpha=0.3)
    panels[0].legend(fontsize=7, loc="upper left")
    figure.suptitle(
        "Latency by tenth of the history, per budget: flat in history, flat in budget is the goal",
        fontsize=10,
    )
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def _latency(plt: Any, runs: list[Any], budgets: list[int], colour: Any, path: Path) -> None:
    from matplotlib import ticker

    figure, axes = plt.subplots(figsize=(8, 5), dpi=120)
    for budget in budgets:
        ours = sorted(
            p for r in runs if r["budget"] == budget for p in r["projection"]["ours"]["points"]
        )
        # The naive samples of the largest run only: its grid spans every smaller one.
        widest = max((r for r in runs if r["budget"] == budget), key=lambda r: r["size"])
        naive = sorted(widest["projection"]["naive"]["points"])
        if ours:
            axes.plot(
                [p[0] for p in ours],
                [p[1] * 1000 for p in ours],
                ".",
                markersize=3,
                alpha=0.35,
                color=colour[budget],
            )
            medians = _binned_medians(ours)
            axes.plot(
                [p[0] for p in medians],
                [p[1] * 1000 for p in medians],
                "-",
                linewidth=2,
                color=colour[budget],
                label=f"registre, budget {cell_budget(budget)} (median; dots: samples)",
            )
        if naive:
            axes.plot(
                [p[0] for p in naive],
                [p[1] * 1000 for p in naive],
                "s--",
                markersize=4,
                linewidth=1,
                color=colour[budget],
                alpha=0.6,
                label=f"naive re-fold, budget {cell_budget(budget)}",
            )
    axes.set_xscale("log")
    axes.set_yscale("log")
    _plain_log(axes.xaxis, ticker)
    _plain_log(axes.yaxis, ticker)
    axes.set_xlabel("history length (entries)")
    axes.set_ylabel("projection latency (ms)")
    axes.set_title("Projecting the working context: registre vs re-folding the whole thread")
    axes.grid(True, which="both", alpha=0.3)
    axes.legend(fontsize=8, loc="upper left")
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)


def _binned_medians(points: list[Any], per_decade: int = 5) -> list[tuple[float, float]]:
    """``(geometric centre, median)`` of the points in each log-spaced bin of history."""
    bins: dict[int, list[Any]] = {}
    for history, seconds in points:
        bins.setdefault(int(math.log10(max(history, 1)) * per_decade), []).append(
            (history, seconds)
        )
    medians = []
    for key in sorted(bins):
        members = bins[key]
        latencies = sorted(seconds for _h, seconds in members)
        centre = math.exp(sum(math.log(max(h, 1)) for h, _s in members) / len(members))
        medians.append((centre, latencies[len(latencies) // 2]))
    return medians


def _tokens(plt: Any, runs: list[Any], colour: Any, path: Path) -> None:
    figure, panels = plt.subplots(
        len(runs),
        2,
        figsize=(12, 2.7 * len(runs) + 0.7),
        dpi=120,
        squeeze=False,
        gridspec_kw={"width_ratios": [3, 2]},
    )
    axes: list[Any] = []
    for row, run in zip(panels, runs, strict=True):
        context = run["context"]
        compactions = run["compaction"]["seqs"]
        whole, recent = row
        axes.extend(_token_panel(whole, run, context["series"], compactions, colour, history=True))
        count = len(compactions)
        plural = "" if count == 1 else "s"
        whole.set_title(
            f"{run_label(run)}: the whole thread ({count:,} compaction{plural})",
            fontsize=9,
            loc="left",
        )
        calls = int(run["model_calls"]["count"])
        close = context["recent"][-_close_up(calls, len(context["recent"])) :]
        first = close[0][0] if close else 0
        _token_panel(recent, run, close, [c for c in compactions if c >= first], colour)
        recent.set_title(
            f"close-up: the last {len(close):,} of {calls:,} model calls"
            + (f" (entries {first:,}-{close[-1][0]:,})" if close else ""),
            fontsize=9,
            loc="left",
        )
    handles: dict[str, Any] = {}
    for axis in axes:
        for handle, label in zip(*axis.get_legend_handles_labels(), strict=True):
            handles.setdefault(label, handle)
    for row in panels:
        row[0].set_ylabel("tokens")
    panels[-1, 0].set_xlabel("ledger entry (seq)")
    panels[-1, 1].set_xlabel("ledger entry (seq)")
    figure.suptitle(
        f"Tokens of the context at each model call against the budget "
        f"({runs[0]['size']:,}-entry investigation)",
        fontsize=10,
    )
    figure.legend(
        list(handles.values()),
        list(handles),
        loc="lower center",
        ncol=len(handles),
        fontsize=8,
        frameon=False,
    )
    figure.tight_layout(rect=(0, 0.04, 1, 1))
    figure.savefig(path)
    plt.close(figure)


def _close_up(calls: int, recent: int) -> int:
    """How many of the last model calls the close-up shows: the last fifth of the run's calls
    (at least 20, at most the ``recent`` the results keep, 300), so that it is a close-up."""
    return max(1, min(recent, max(20, calls // 5)))


def _token_panel(
    panel: Any,
    run: Mapping[str, Any],
    series: list[Any],
    compactions: list[int],
    colour: Any,
    *,
    history: bool = False,
) -> list[Any]:
    """Context tokens per call, the budget and high-water lines, compactions as ticks (only
    when they are few enough to tell apart), and optionally the history on a right axis.
    Returns the axes drawn on, labelled for the figure's one legend."""
    context = run["context"]
    seqs = [point[0] for point in series]
    panel.plot(
        seqs,
        [point[1] for point in series],
        linewidth=0.8,
        color=colour[run["budget"]],
        label="context sent",
    )
    panel.axhline(context["budget"], color="black", linewidth=1, label="budget")
    panel.axhline(
        context["high_water"], color="black", linewidth=0.8, linestyle=":", label="high water"
    )
    if compactions and len(compactions) <= _MAX_TICKS:
        panel.plot(
            compactions,
            [0] * len(compactions),
            "|",
            color="#444444",
            markersize=8,
            label="compaction",
        )
    panel.set_ylim(bottom=-0.05 * context["budget"], top=context["budget"] * 1.1)
    from matplotlib import ticker

    _thousands(panel.yaxis, ticker)
    _thousands(panel.xaxis, ticker)
    panel.grid(True, alpha=0.25)
    if not history:
        return [panel]
    axis = panel.twinx()
    axis.plot(
        seqs,
        [point[2] for point in series],
        linewidth=0.8,
        linestyle="--",
        color="grey",
        label="whole history (right axis)",
    )
    _thousands(axis.yaxis, ticker)
    axis.set_ylabel("history tokens", color="grey", fontsize=8)
    axis.tick_params(axis="y", labelcolor="grey", labelsize=7)
    return [panel, axis]


def _pins(plt: Any, runs: list[Any], colour: Any, path: Path) -> None:
    from matplotlib import ticker

    figure, panels = plt.subplots(
        1, len(runs), figsize=(4 * len(runs) + 1, 3.6), dpi=120, sharey=True, squeeze=False
    )
    for panel, run in zip(panels[0, :], runs, strict=True):
        series = run["pins"]["series"]
        seqs = [point[0] for point in series]
        panel.plot(
            seqs, [p[1] for p in series], color="black", linewidth=5, alpha=0.18, label="live pins"
        )
        panel.plot(
            seqs,
            [p[2] for p in series],
            "o-",
            markersize=3,
            color=colour[run["budget"]],
            linewidth=1.5,
            label="kept by registre",
        )
        panel.plot(
            seqs,
            [p[3] for p in series],
            "x--",
            markersize=4,
            color="#7f7f7f",
            linewidth=1,
            label="kept by truncation",
        )
        panel.set_title(run_label(run), fontsize=9)
        panel.set_xlabel("ledger entry (seq)")
        panel.yaxis.set_major_locator(ticker.MaxNLocator(integer=True))
        _thousands(panel.xaxis, ticker)
        panel.grid(True, alpha=0.3)
    panels[0, 0].set_ylabel("pins carried word for word")
    panels[0, 0].legend(fontsize=8, loc="upper left")
    figure.suptitle("Pin survival: registre vs silent truncation to the budget", fontsize=10)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
