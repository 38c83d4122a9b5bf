"""``report.md``: the results of ``registre bench`` as tables people can read.

:func:`render_report` turns a results document (``specs/bench.md``) into Markdown: first
"Which budget?" (fact recall and tokens against the budget per method, and the
recommendation computed from the run: :mod:`registre.bench.budget_report`), then the summary
and cost tables, projection latency against history length, the context-quality table, the
working-context quality of registre beside three baselines (with its goals and where
registre loses), the pins the truncation baseline loses, the Merkle tree beside pymerkle,
the investigation's mix, and how each figure was measured. Every table names a run as
:func:`~registre.bench.report_cells.run_label` does (``1,000 @ 8k``), with the entries it
wrote in a column of their own. :data:`METRICS` names every metric the report must show (the
tests check that each appears).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path
from typing import Any

from registre.bench.budget_report import METHOD_NAMES, which_budget_section
from registre.bench.evidence_report import evidence_cell, evidence_table
from registre.bench.facts import FACT_KINDS
from registre.bench.quality import METHODS
from registre.bench.report_cells import (
    cell_ms,
    cell_pct,
    cell_s,
    cell_share,
    cell_size,
    cell_verify,
    run_label,
    table,
)
from registre.bench.report_method import method_text
from registre.bench.scale_report import scale_sections

__all__ = ["METRICS", "render_report", "summary_table", "working_context_table"]

METRICS = (
    "Which budget?",
    "append throughput",
    "model call latency",
    "projection latency p50 / p99",
    "naive projection",
    "compactions",
    "compaction latency",
    "bundle size",
    "export time",
    "verify time",
    "tokens used against budget",
    "compression ratio",
    "pin survival",
    "pointer resolvability",
    "active evidence in view",
    "admitting entry in view",
    "conclusions left stale",
    "repaired",
    "truncation baseline",
    "pymerkle",
    "fact recall",
    "pointer specificity",
    "count-only lines",
    "stable prefix",
    "observation masking",
    "rolling summary",
)


def _full(results: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    """The runs that measured quality (not lean)."""
    return [run for run in results["runs"] if "working_context" in run]


def _naive_ratio(run: Mapping[str, Any]) -> str:
    naive = run["projection"]["naive"]["points"]
    ratio = run["projection"].get("naive_ratio")
    if not naive or ratio is None or ratio["at_largest"] is None:
        return "not sampled" if run.get("lean") else "-"
    history, naive_s = naive[-1]
    return f"{cell_s(naive_s)} at {history:,} ({ratio['at_largest']:.1f}x ours)"


def summary_table(results: Mapping[str, Any]) -> list[str]:
    """The headline table (one row per run): what the README shows."""
    rows = []
    for run in results["runs"]:
        pins = run.get("pins", {"checks": 0, "ours_kept": 0, "truncation_kept": 0})
        context = run["context"]
        rows.append(
            [
                run_label(run),
                f"{run['entries']:,}",
                f"{run['append']['per_second']:,.0f}/s" if run["append"]["per_second"] else "-",
                f"{cell_ms(run['projection']['ours']['p50_ms'])} / "
                f"{cell_ms(run['projection']['ours']['p99_ms'])}",
                _naive_ratio(run),
                str(run["compaction"]["count"]),
                f"{cell_share(context['mean_use'])} / {cell_share(context['max_use'])}",
                f"{context['compression_ratio']}x" if context["compression_ratio"] else "-",
                f"{cell_pct(pins['ours_kept'], pins['checks'])} / "
                f"{cell_pct(pins['truncation_kept'], pins['checks'])}",
                evidence_cell(run),
            ]
        )
    header = [
        "run",
        "entries written",
        "append throughput",
        "projection latency p50 / p99",
        "naive projection (largest sample)",
        "compactions",
        "tokens used against budget (mean / max)",
        "compression ratio",
        "pin survival (ours / truncation baseline)",
        "active evidence in view: id named / with its statement",
    ]
    return table(header, rows)


def _cost(results: Mapping[str, Any]) -> list[str]:
    rows = []
    for run in results["runs"]:
        compaction = run["compaction"]
        bundle = run["bundle"]
        calls = run["model_calls"]
        rows.append(
            [
                run_label(run),
                f"{run['entries']:,}",
                f"{run['append']['per_second']:,.0f}/s",
                f"{run['append']['plain_per_second']:,.0f}/s",
                f"{cell_ms(calls['p50_ms'])} / {cell_ms(calls['p99_ms'])}",
                f"{compaction['count']} ({_count(compaction['folds'], 'fold')}, "
                f"{_count(compaction['refolds'], 'refold')}, {compaction['stub_only']} "
                "stub-only)",
                f"{cell_ms(compaction['p50_ms'])} / {cell_ms(compaction['p99_ms'])}",
                cell_size(bundle["bytes"]),
                cell_s(bundle["export_s"]),
                cell_verify(bundle),
                f"{run['wall_s']:.0f} s",
            ]
        )
    header = [
        "run",
        "entries written",
        "append throughput (all steps)",
        "plain appends",
        "model call latency p50 / p99",
        "compactions",
        "compaction latency p50 / p99",
        "bundle size",
        "export time",
        "verify time",
        "run time",
    ]
    return table(header, rows)


def _latency_by_history(results: Mapping[str, Any]) -> list[str]:
    rows = []
    for run in results["runs"]:
        for bucket in run["projection"]["by_history"]:
            upper = "+" if bucket["to"] is None else f"-{bucket['to']:,}"
            rows.append(
                [
                    run_label(run),
                    f"{bucket['from']:,}{upper}",
                    f"{cell_ms(bucket['ours_p50_ms'])} / {cell_ms(bucket['ours_p99_ms'])} "
                    f"(n={bucket['ours_samples']})",
                    f"{cell_ms(bucket['naive_p50_ms'])} (n={bucket['naive_samples']})",
                    f"{cell_ms(bucket['model_call_p50_ms'])} / "
                    f"{cell_ms(bucket['model_call_p99_ms'])} "
                    f"(n={bucket['model_calls']})",
                ]
            )
    header = [
        "run",
        "history (entries)",
        "projection latency p50 / p99",
        "naive projection p50",
        "model call latency p50 / p99",
    ]
    return table(header, rows)


def _quality(results: Mapping[str, Any]) -> list[str]:
    rows = []
    for run in results["runs"]:
        pointers = run["pointers"]
        conclusions = run["conclusions"]
        rows.append(
            [
                run_label(run),
                f"{run['entries']:,}",
                f"{run['context']['final_tokens']:,} of {run['budget']:,} "
                f"(history {run['context']['final_history_tokens']:,})",
                f"{pointers['resolved']}/{pointers['checked']} "
                f"({cell_pct(pointers['resolved'], pointers['checked'])}; "
                f"{pointers['spans']} spans)",
                f"{conclusions['stale_events']} / {conclusions['repaired']} / "
                f"{conclusions['stale_at_end']}",
                f"{conclusions['refused_finals']} refused, {conclusions['finals']} recorded",
                _refused(run["model_calls"]),
            ]
        )
    header = [
        "run",
        "entries written",
        "context at the last call (tokens)",
        "pointer resolvability",
        "conclusions left stale / repaired / stale at end",
        "finals",
        "model calls refused (context cannot fit)",
    ]
    return table(header, rows)


def _recall(figures: Mapping[str, Any]) -> str:
    recall = figures["fact_recall"]
    if not recall["needs"]:
        return "-"
    share = cell_pct(recall["recalled"], recall["needs"])
    return f"{share} ({recall['recalled']}/{recall['needs']})"


def _span(pointers: Mapping[str, Any]) -> str:
    if pointers["span_p50"] is None:
        return "-"
    return f"{pointers['span_p50']:,} / {pointers['span_p95']:,}"


def working_context_table(results: Mapping[str, Any]) -> list[str]:
    """One row per (run, method): registre and the three baselines at the same budget."""
    rows = []
    for run in _full(results):
        methods = run["working_context"]["methods"]
        for name in METHODS:
            figures = methods[name]
            recall = figures["fact_recall"]
            count_only = figures["count_only"]
            prefix = figures["stable_prefix"]
            compactions = figures["compactions"]
            summary_lines = figures["pointers"]["span_p50"] is not None
            rows.append(
                [
                    run_label(run),
                    METHOD_NAMES[name],
                    _recall(figures),
                    cell_pct(recall["summarized"], recall["needs"]) if recall["needs"] else "-",
                    _span(figures["pointers"]),
                    cell_share(count_only["share"]) if summary_lines else "-",
                    f"{figures['refused']['calls']} of "
                    f"{figures['calls'] + figures['refused']['calls']}",
                    f"{compactions['not_reducing']} of {compactions['count']}"
                    if compactions["count"]
                    else "-",
                    f"{cell_share(prefix['declared_share'])} / "
                    f"{cell_share(prefix['identical_share'])}",
                    cell_share(prefix["reused_share"]),
                    f"{cell_share(figures['tokens']['mean_use'])} / "
                    f"{cell_share(figures['tokens']['max_use'])}",
                ]
            )
    header = [
        "run",
        "method",
        "fact recall",
        "of which through a summary line",
        "pointer specificity: entries per span, median / p95",
        "count-only lines",
        "model calls refused",
        "compactions that did not reduce tokens",
        "stable prefix: declared share / byte-identical at consecutive calls",
        "prefix reusable from the previous call",
        "tokens used against budget (mean / max)",
    ]
    return table(header, rows)


def _recall_by_kind(results: Mapping[str, Any]) -> list[str]:
    rows = []
    for run in _full(results):
        for name in METHODS:
            by_kind = run["working_context"]["methods"][name]["fact_recall"]["by_kind"]
            cells = []
            for kind in FACT_KINDS:
                tally = by_kind.get(kind)
                cells.append(
                    "-"
                    if not tally
                    else f"{cell_pct(tally['recalled'], tally['needs'])} (n={tally['needs']})"
                )
            rows.append([run_label(run), METHOD_NAMES[name]])
            rows[-1] += cells
    return table(["run", "method", *FACT_KINDS], rows)


def _recall_goal(budget: int) -> float:
    return 0.90 if budget <= 8192 else 0.98


def _goals(results: Mapping[str, Any]) -> list[str]:
    """Registre's goals against its figures: printed, never asserted."""
    rows = []
    for run in _full(results):
        methods = run["working_context"]["methods"]
        ours = methods["registre"]
        share = ours["fact_recall"]["share"]
        goal = _recall_goal(run["budget"])
        best = max(
            (methods[name]["fact_recall"]["share"] or 0.0 for name in METHODS[1:]), default=0.0
        )
        median = ours["pointers"]["span_p50"]
        refused = ours["refused"]["pins_fit"]
        growing = ours["compactions"]["not_reducing"]

        def verdict(met: bool, detail: str) -> str:
            return ("met" if met else "**missed**") + f" ({detail})"

        rows.append(
            [
                run_label(run),
                verdict(
                    share is not None and share >= goal, f"{cell_share(share)}; goal ≥ {goal:.0%}"
                ),
                verdict(share is not None and share > best, f"best baseline {cell_share(best)}"),
                verdict(median is not None and median <= 3, f"median {median}"),
                verdict(refused == 0, f"{refused} refused"),
                verdict(growing == 0, f"{growing} of {ours['compactions']['count']}"),
            ]
        )
    header = [
        "run",
        "fact recall ≥ 90% at 8k, ≥ 98% at 32k and above",
        "fact recall above every baseline",
        "median span ≤ 3 entries",
        "0 refused calls where pins fit",
        "0 compactions that grew or kept the size",
    ]
    return table(header, rows)


def _better(theirs: float | None, ours: float | None) -> bool:
    """Whether ``theirs`` beats ``ours`` at the precision the report prints (0.1 %)."""
    return theirs is not None and ours is not None and round(theirs, 3) > round(ours, 3)


def _losses(results: Mapping[str, Any]) -> list[str]:
    """Where a baseline does better than registre, figure by figure."""
    lines = []
    for run in _full(results):
        methods = run["working_context"]["methods"]
        ours = methods["registre"]
        where = run_label(run)
        for name in METHODS[1:]:
            theirs = methods[name]
            label = METHOD_NAMES[name]
            mine = ours["fact_recall"]["share"]
            other = theirs["fact_recall"]["share"]
            if _better(other, mine):
                lines.append(
                    f"- {where}: {label} recalls more needed facts ({cell_share(other)} against "
                    f"{cell_share(mine)})."
                )
            mine = ours["stable_prefix"]["reused_share"]
            other = theirs["stable_prefix"]["reused_share"]
            if _better(other, mine):
                lines.append(
                    f"- {where}: {label} leaves more of the previous call's prefix reusable "
                    f"({cell_share(other)} against {cell_share(mine)})."
                )
        if ours["refused"]["calls"]:
            lines.append(
                f"- {where}: registre refused {ours['refused']['calls']} model calls; the "
                "baselines send something at every call (cut silently)."
            )
        if ours["compactions"]["not_reducing"]:
            lines.append(
                f"- {where}: {ours['compactions']['not_reducing']} of registre's "
                f"{ours['compactions']['count']} compactions did not reduce the context's tokens."
            )
    return lines or ["- nowhere in these runs."]


def _count(number: int, noun: str) -> str:
    """``1 fold``, ``2 folds``."""
    return f"{number:,} {noun}{'' if number == 1 else 's'}"


def _refused(calls: Mapping[str, Any]) -> str:
    return f"{calls['refused']} of {calls['count'] + calls['refused']}"


def _pins(results: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    rows = []
    for run in _full(results):
        for kind, tally in run["pins"]["by_kind"].items():
            rows.append(
                [
                    run_label(run),
                    kind,
                    str(tally["checks"]),
                    cell_pct(tally["ours_kept"], tally["checks"]),
                    cell_pct(tally["truncation_kept"], tally["checks"]),
                ]
            )
    lines += table(
        ["run", "pin kind", "checks", "pin survival (ours)", "pin survival (truncation)"], rows
    )
    full = _full(results)
    last = full[-1] if full else None
    if last is not None:
        lost = last["pins"]["lost_at_end"]
        lines += [
            "",
            f"At the last sample of the run {run_label(last)} (entry {lost['at']:,}), the "
            "truncation baseline had "
            f"silently lost {len(lost['truncation'])} live pins; registre had lost "
            f"{len(lost['ours'])}:",
            "",
        ]
        lines += [f"- `{p['id']}` {p['kind']}: {p['text']}" for p in lost["truncation"][:12]]
        if len(lost["truncation"]) > 12:
            lines.append(f"- ... and {len(lost['truncation']) - 12} more")
    return lines


def _merkle(results: Mapping[str, Any]) -> list[str]:
    rows = []
    for run in _full(results):
        merkle = run["merkle"]
        ours, theirs = merkle["ours"], merkle.get("theirs")

        def pair(name: str, ours: Mapping[str, Any] = ours, theirs: Any = theirs) -> str:
            if theirs is None:
                return f"{cell_s(ours[name])} / not installed"
            ratio = theirs[name] / ours[name] if ours[name] else 0
            return f"{cell_s(ours[name])} / {cell_s(theirs[name])} ({ratio:.1f}x)"

        rows.append(
            [
                run_label(run),
                f"{merkle['leaves']:,}",
                pair("build_s"),
                pair("inclusion_s"),
                pair("consistency_s"),
                cell_s(ours["stored_inclusion_s"]),
            ]
        )
    full = _full(results)
    version = full[0]["merkle"]["pymerkle"] if full else "-"
    header = [
        "run",
        "leaves",
        "build the tree (ours / pymerkle)",
        "inclusion proof",
        "consistency proof",
        "inclusion proof from the ledger store",
    ]
    note = f"pymerkle: {version}. Ratio = pymerkle's time over ours (above 1: ours faster)."
    return [note, "", *table(header, rows)]


def _mix(results: Mapping[str, Any]) -> list[str]:
    kinds = sorted({kind for run in results["runs"] for kind in run["kinds"]})
    rows = [
        [kind] + [cell_pct(run["kinds"].get(kind, 0), run["entries"]) for run in results["runs"]]
        for kind in kinds
    ]
    header = ["kind"] + [run_label(r) for r in results["runs"]]
    return table(header, rows)


def render_report(results: Mapping[str, Any], plots: Mapping[str, Path]) -> str:
    """The Markdown report of ``results``; ``plots`` maps plot names to PNG paths (linked
    relative to the report's folder)."""
    config = results["config"]
    machine = results["machine"]
    lines = [
        "# registre bench",
        "",
        f"{results['created']} · registre {results['registre']} · Python {machine['python']} "
        f"on {machine['cpus']} CPU(s) · {config['database']} · summarizer "
        f"{config['summarizer']['name']}/{config['summarizer']['version']} · counter "
        f"{config['token_counter']} · seed {config['seed']} · jobs={config.get('jobs', 1)} · "
        f"{results['seconds']:.0f} s in all",
        "",
        *which_budget_section(results, plots["budget"].name if "budget" in plots else None),
        "## Summary",
        "",
        *summary_table(results),
        "",
        "## Cost",
        "",
        *_cost(results),
        "",
        *scale_sections(results),
        "## Projection latency against history length",
        "",
        *_latency_by_history(results),
        "",
        "## Context quality",
        "",
        *_quality(results),
        "",
        "## Working-context quality",
        "",
        "Registre beside three baselines built from the same ledger entries, with the same "
        "token counter, at the same budget and the same model calls: silent truncation, "
        "observation masking and a single rolling summary (see the method).",
        "",
        *working_context_table(results),
        "",
        "Fact recall by kind of fact:",
        "",
        *_recall_by_kind(results),
        "",
        "Registre's goals, printed next to its figures and never asserted:",
        "",
        *_goals(results),
        "",
        "Where registre loses to a baseline:",
        "",
        *_losses(results),
        "",
        "## Active evidence in view",
        "",
        "What the model can cite: the active evidence ids its context names, and those it "
        "names with their statement (the lifecycle block, pins, summary lines and verbatim "
        "entries alike), beside the admitting entries the manifest keeps in view.",
        "",
        *evidence_table(results),
        "",
        "## Pins the truncation baseline loses",
        "",
        *_pins(results),
        "",
        "## The Merkle tree beside pymerkle",
        "",
        *_merkle(results),
        "",
        "## The investigations: share of each entry kind",
        "",
        *_mix(results),
        "",
        "## Plots",
        "",
        *[f"![{name}]({path.name})" for name, path in plots.items() if name != "budget"],
        "",
        "## Method",
        "",
        method_text(config.get("jobs", 1)),
    ]
    refusals = {
        run_label(run): run["model_calls"]["refusals"]
        for run in results["runs"]
        if run["model_calls"]["refusals"]
    }
    if refusals:
        lines += ["## Refusals (never a silent cut)", ""]
        for run_name, reasons in refusals.items():
            lines += [f"- {run_name}: " + ", ".join(f"{k} x{v}" for k, v in reasons.items())]
        lines.append("")
    return "\n".join(lines)
