"""The PNG plots of a ``registre bench`` run (matplotlib, the ``bench`` extra, Agg backend).

* ``latency.png`` -- projection latency against history length, one colour per budget
  (log-log): registre's samples of every size with their median per log bin, and the naive
  re-fold's samples of the largest size;
* ``tokens.png`` -- the largest size, one row per budget: tokens of the context at every
  model call against the budget and the high-water mark, with the history's own size (what
  replaying it verbatim would take) on the right axis; beside it a close-up of the last
  model calls with each compaction marked;
* ``pins.png`` -- the largest size that measured quality (not lean): live pins, and how many
  of them registre's context and the truncation baseline carry word for word, along the
  thread (absent when every run is lean);
* ``flat.png`` -- projection and model-call latency (p50, p99 dashed) in each tenth of the
  history, one line per run, one colour per budget: flat lines mean the cost does not grow
  with the history, lines on top of each other that it does not grow with the budget.

matplotlib is imported only when plotting, so the harness itself does not need it.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from pathlib import Path
from typing import Any

__all__ = ["tenths", "write_plots"]

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
    paths = {
        "latency": out / "latency.png",
        "flat": out / "flat.png",
        "tokens": out / "tokens.png",
    }
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
                label=f"{_label(run['budget'])}, {run['entries']:,} entries (p50)",
                **style,
            )
            panel.plot([r[0] for r in rows], [r[2] * 1000 for r in rows], "--", alpha=0.4, **style)
        panel.set_yscale("log")
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


def _label(budget: int) -> str:
    return f"{budget // 1000}k" if budget % 1000 == 0 else str(budget)


def _latency(plt: Any, runs: list[Any], budgets: list[int], colour: Any, path: Path) -> None:
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
                label=f"registre, budget {_label(budget)} (median; dots: samples)",
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
                label=f"naive re-fold, budget {_label(budget)}",
            )
    axes.set_xscale("log")
    axes.set_yscale("log")
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
        whole.set_title(
            f"budget {_label(run['budget'])}: the whole thread ({len(compactions)} compactions)",
            fontsize=9,
            loc="left",
        )
        first = context["recent"][0][0] if context["recent"] else 0
        _token_panel(recent, run, context["recent"], [c for c in compactions if c >= first], colour)
        recent.set_title(
            f"close-up: the last {len(context['recent'])} model calls", fontsize=9, loc="left"
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
        f"({runs[0]['entries']:,}-entry investigation)",
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
    axis.set_ylabel("history tokens", color="grey", fontsize=8)
    axis.tick_params(axis="y", labelcolor="grey", labelsize=7)
    return [panel, axis]


def _pins(plt: Any, runs: list[Any], colour: Any, path: Path) -> None:
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
        panel.set_title(f"budget {_label(run['budget'])}", fontsize=9)
        panel.set_xlabel("ledger entry (seq)")
        panel.grid(True, alpha=0.3)
    panels[0, 0].set_ylabel("pins carried word for word")
    panels[0, 0].legend(fontsize=8, loc="upper left")
    figure.suptitle("Pin survival: registre vs silent truncation to the budget", fontsize=10)
    figure.tight_layout()
    figure.savefig(path)
    plt.close(figure)
