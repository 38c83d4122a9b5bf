"""The scale sections of ``report.md``: what each step of a run costs in time and
peak memory, projection latency by third of the history and by budget, the verifier beside
its signature checks alone, and appends beside their raw floors.

Every table reads a ``registre-bench/4`` or later document (``specs/bench.md``); none asserts
anything. :func:`scale_sections` returns the Markdown lines, section headings included.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from registre.bench.report_cells import (
    cell_mb,
    cell_ms,
    cell_ratio,
    cell_s,
    cell_share,
    cell_verify,
    run_label,
    table,
)

__all__ = [
    "STEP_NAMES",
    "appends_table",
    "flat_table",
    "scale_sections",
    "steps_table",
    "verify_table",
]

STEP_NAMES: Final = ("append", "project", "checkpoint", "prove", "export", "verify")
"""The measured steps of every run, in the order they run."""

_HOW: Final = {
    "vmhwm": "in-process, the kernel's high-water mark (VmHWM) reset before the step",
    "sampled": "in-process, RSS sampled every 10 ms",
    "subprocess": "a child process of its own, its ru_maxrss (interpreter and imports included)",
    "unavailable": "not measurable on this platform",
}


def steps_table(results: Mapping[str, Any]) -> list[str]:
    """One row per run: each step's wall time and peak resident memory."""
    rows = []
    for run in results["runs"]:
        steps = run["steps"]
        cells = [run_label(run)]
        for name in STEP_NAMES:
            step = steps[name]
            count = step.get("count")
            time = cell_s(step["seconds"])
            if name == "project":
                time += f" (median of {count})"
            elif name == "prove" and count:
                time += f" ({count} proofs)"
            cells.append(f"{time} / {cell_mb(step['peak_rss_mb'])}")
        cells.append(f"{run['wall_s']:.0f} s")
        rows.append(cells)
    header = ["run", *(f"{name}: time / peak memory" for name in STEP_NAMES), "investigation"]
    lines = table(header, rows)
    hows = sorted({run["steps"][n]["how"] for run in results["runs"] for n in STEP_NAMES})
    lines += ["", "Peak memory is resident memory (RSS), measured per step:"]
    lines += [f"- `{how}`: {_HOW.get(how, how)}" for how in hows]
    lines += [
        "- *append* is the whole investigation (appends, model calls, compactions, and the "
        "harness's read-back and projection samples); *project* the projection at the head; "
        "*checkpoint* the final signed checkpoint; *prove* inclusion and consistency proofs "
        "to the head at seeded positions; *export* the signed bundle; *verify* it offline "
        "with only the verifier key. An in-process peak includes what the harness itself "
        "holds (its start is in results.json, `start_rss_mb`)."
    ]
    return lines


def flat_table(results: Mapping[str, Any]) -> list[str]:
    """Per budget, one row per size: projection and model-call p50 / p99 in each third of
    the history, and the naive re-fold over ours at the largest naive sample."""
    rows = []
    runs = sorted(results["runs"], key=lambda run: (run["budget"], run["size"]))
    for run in runs:
        projection = run["projection"]
        cells = [run_label(run), f"{run['entries']:,}"]
        for part in projection["by_third"]:
            cells.append(
                f"{cell_ms(part['ours_p50_ms'])} / {cell_ms(part['ours_p99_ms'])} "
                f"(n={part['ours_samples']})"
            )
        for part in projection["by_third"]:
            cells.append(
                f"{cell_ms(part['model_call_p50_ms'])} / {cell_ms(part['model_call_p99_ms'])} "
                f"({cell_ms(part['call_total_p50_ms'])} / {cell_ms(part['call_total_p99_ms'])})"
            )
        checks = run["compaction"]["checks"]
        cells.append(
            f"{cell_ms(checks['p50_ms'])} / {cell_ms(checks['p99_ms'])} (n={checks['count']})"
        )
        naive = projection["naive_ratio"]
        if naive["at"] is None:
            cells.append("not sampled" if run.get("lean") else "-")
        else:
            floor = naive["min_from_1000"]
            cells.append(
                f"{cell_ratio(naive['at_largest'], 1)} at {naive['at']:,}"
                + ("" if floor is None else f" (≥ {cell_ratio(floor, 1)} from 1,000)")
            )
        rows.append(cells)
    header = [
        "run",
        "entries written",
        "projection p50 / p99, first third",
        "second third",
        "last third",
        "model call p50 / p99 (with its compact first), first third",
        "second third",
        "last third",
        "compaction check (nothing to fold) p50 / p99",
        "naive re-fold over ours",
    ]
    return table(header, rows)


def verify_table(results: Mapping[str, Any]) -> list[str]:
    """One row per run: the verifier beside the Ed25519 checks of the same bundle alone."""
    rows = []
    for run in results["runs"]:
        bundle = run["bundle"]
        signatures = bundle["signatures_s"]
        ratio = bundle["verify_s"] / signatures if signatures else None
        rows.append(
            [
                run_label(run),
                f"{bundle['entries']:,}",
                str(bundle["verify_jobs"]),
                cell_verify(bundle),
                cell_s(signatures),
                cell_ratio(ratio),
                cell_mb(run["steps"]["verify"]["peak_rss_mb"]),
            ]
        )
    header = [
        "run",
        "entries written",
        "jobs",
        "verify the bundle",
        "Ed25519 checks of its entries alone",
        "verify / signatures",
        "verify peak memory",
    ]
    return table(header, rows)


def appends_table(results: Mapping[str, Any]) -> list[str]:
    """Appends beside the raw floors measured in the same run (``appends``)."""
    appends = results.get("appends")
    if not appends:
        return ["Not measured in this run."]
    raw = appends["raw_sqlite_txn_per_second"]
    rows = [
        [
            "single append (one writer)",
            f"{appends['single_per_second']:,.0f} /s",
            "raw durable one-row SQLite transaction",
            "-" if raw is None else f"{raw:,.0f} /s",
            cell_share(appends["single_vs_raw"], 0),
        ],
        [
            f"single appends, {appends['concurrent_writers']} concurrent writers",
            f"{appends['concurrent_per_second']:,.0f} /s",
            "raw durable one-row SQLite transaction",
            "-" if raw is None else f"{raw:,.0f} /s",
            cell_share(appends["concurrent_vs_raw"], 0),
        ],
        [
            f"batched append ({appends['batch_size']} per call)",
            f"{appends['batch_per_second']:,.0f} entries/s",
            "raw Ed25519 signing",
            f"{appends['raw_sign_per_second']:,.0f} /s",
            cell_share(appends["batch_vs_sign"], 0),
        ],
    ]
    note = (
        f"{appends['count']} entries per measure, turns of {appends['body_bytes']} bytes of "
        "text; the raw rows are measured in the same run on the same disk (WAL, "
        "`synchronous=FULL`)."
    )
    cpu = appends.get("batch_vs_sign_cpu")
    if cpu is not None:
        note += (
            " Raw signing and batches alternate round by round; in CPU time the batched "
            f"appends ran at {cell_share(cpu, 0)} of the raw signing rate."
        )
    return [note, "", *table(["ours", "rate", "floor", "rate", "ours / floor"], rows)]


def scale_sections(results: Mapping[str, Any]) -> list[str]:
    """The scale sections of the report (module docstring), headings included."""
    lean = [run for run in results["runs"] if run.get("lean")]
    lines = [
        "## Steps: time and peak memory",
        "",
        *steps_table(results),
        "",
    ]
    if lean:
        above = results["config"]["lean_above"]
        lines += [
            f"Runs marked *lean* (more than {above:,} entries) ran every step above for real "
            "but skipped the working-context quality tallies, the context baselines, the "
            "naive re-folds and the pymerkle comparison: those hold the whole history in the "
            "harness's memory.",
            "",
        ]
    lines += [
        "## Projection latency by third of the history, per budget",
        "",
        "Flat rows (along the history) and flat columns (across budgets) are the goal. "
        "Projection is sampled at evenly spaced and geometric history lengths; the model "
        "call at every call, alone and (in brackets) with the `thread.compact` before it; "
        "a compaction check is a `thread.compact` that found nothing to fold.",
        "",
        *flat_table(results),
        "",
        "## Verify beside its signature checks alone",
        "",
        "Same run, same bundle, one process each: the verifier (every step, the working "
        "context replayed) and the Ed25519 verification of every entry alone.",
        "",
        *verify_table(results),
        "",
        "## Appends beside raw durable transactions",
        "",
        *appends_table(results),
        "",
    ]
    return lines
