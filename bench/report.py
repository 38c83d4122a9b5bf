"""``report.md``: the results of ``registre bench`` as tables people can read.

:func:`render_report` turns a results document (``specs/bench.md``) into Markdown: the cost
table, projection latency against history length, the context-quality table, the pins the
truncation baseline loses, the Merkle tree beside pymerkle, the investigation's mix, and how
each figure was measured. :data:`METRICS` names every metric the report must show (the tests
check that each appears).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

__all__ = ["METRICS", "render_report", "summary_table"]

METRICS = (
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
    "active evidence referenced",
    "conclusions left stale",
    "repaired",
    "truncation baseline",
    "pymerkle",
)


def _ms(value: float | None) -> str:
    if value is None:
        return "-"
    if value >= 1000:
        return f"{value / 1000:.2f} s"
    return f"{value:.3g} ms" if value >= 1 else f"{value * 1000:.3g} µs"


def _s(value: float | None) -> str:
    return "-" if value is None else _ms(value * 1000)


def _pct(part: float, whole: float) -> str:
    return "-" if not whole else f"{100 * part / whole:.1f}%"


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _size(value: int) -> str:
    return f"{value / 1e6:.1f} MB" if value >= 1e6 else f"{value / 1e3:.0f} kB"


def _budget(value: int) -> str:
    return f"{value // 1000}k" if value % 1000 == 0 else str(value)


def _table(header: Sequence[str], rows: Sequence[Sequence[str]]) -> list[str]:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _naive_ratio(run: Mapping[str, Any]) -> str:
    naive = run["projection"]["naive"]["points"]
    ours = run["projection"]["ours"]["points"]
    if not naive or not ours:
        return "-"
    history, naive_s = naive[-1]
    near = min(ours, key=lambda point: abs(point[0] - history))
    ratio = naive_s / near[1] if near[1] else 0
    return f"{_s(naive_s)} at {history} ({ratio:.0f}x ours)"


def summary_table(results: Mapping[str, Any]) -> list[str]:
    """The headline table (one row per run): what the README shows."""
    rows = []
    for run in results["runs"]:
        pins = run["pins"]
        evidence = run["evidence"]
        context = run["context"]
        rows.append(
            [
                f"{run['entries']:,}",
                _budget(run["budget"]),
                f"{run['append']['per_second']:,.0f}/s" if run["append"]["per_second"] else "-",
                f"{_ms(run['projection']['ours']['p50_ms'])} / "
                f"{_ms(run['projection']['ours']['p99_ms'])}",
                _naive_ratio(run),
                str(run["compaction"]["count"]),
                f"{_share(context['mean_use'])} / {_share(context['max_use'])}",
                f"{context['compression_ratio']}x" if context["compression_ratio"] else "-",
                f"{_pct(pins['ours_kept'], pins['checks'])} / "
                f"{_pct(pins['truncation_kept'], pins['checks'])}",
                f"{_share(evidence['ours_share'])} / {_share(evidence['truncation_share'])}",
            ]
        )
    header = [
        "entries",
        "budget",
        "append throughput",
        "projection latency p50 / p99",
        "naive projection (largest sample)",
        "compactions",
        "tokens used against budget (mean / max)",
        "compression ratio",
        "pin survival (ours / truncation baseline)",
        "active evidence referenced (ours / truncation)",
    ]
    return _table(header, rows)


def _cost(results: Mapping[str, Any]) -> list[str]:
    rows = []
    for run in results["runs"]:
        compaction = run["compaction"]
        bundle = run["bundle"]
        calls = run["model_calls"]
        rows.append(
            [
                f"{run['entries']:,}",
                _budget(run["budget"]),
                f"{run['append']['per_second']:,.0f}/s",
                f"{run['append']['plain_per_second']:,.0f}/s",
                f"{_ms(calls['p50_ms'])} / {_ms(calls['p99_ms'])}",
                f"{compaction['count']} ({compaction['folds']} folds, {compaction['refolds']} "
                f"refolds, {compaction['stub_only']} stub-only)",
                f"{_ms(compaction['p50_ms'])} / {_ms(compaction['p99_ms'])}",
                _size(bundle["bytes"]),
                _s(bundle["export_s"]),
                _s(bundle["verify_s"]) + ("" if bundle["verified"] else " (FAILED)"),
                f"{run['wall_s']:.0f} s",
            ]
        )
    header = [
        "entries",
        "budget",
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
    return _table(header, rows)


def _latency_by_history(results: Mapping[str, Any]) -> list[str]:
    rows = []
    for run in results["runs"]:
        for bucket in run["projection"]["by_history"]:
            upper = "+" if bucket["to"] is None else f"-{bucket['to']:,}"
            rows.append(
                [
                    f"{run['size']:,} @ {_budget(run['budget'])}",
                    f"{bucket['from']:,}{upper}",
                    f"{_ms(bucket['ours_p50_ms'])} / {_ms(bucket['ours_p99_ms'])} "
                    f"(n={bucket['ours_samples']})",
                    f"{_ms(bucket['naive_p50_ms'])} (n={bucket['naive_samples']})",
                    f"{_ms(bucket['model_call_p50_ms'])} / {_ms(bucket['model_call_p99_ms'])} "
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
    return _table(header, rows)


def _quality(results: Mapping[str, Any]) -> list[str]:
    rows = []
    for run in results["runs"]:
        pointers = run["pointers"]
        conclusions = run["conclusions"]
        rows.append(
            [
                f"{run['entries']:,}",
                _budget(run["budget"]),
                f"{run['context']['final_tokens']:,} of {run['budget']:,} "
                f"(history {run['context']['final_history_tokens']:,})",
                f"{pointers['resolved']}/{pointers['checked']} "
                f"({_pct(pointers['resolved'], pointers['checked'])}; {pointers['spans']} spans)",
                f"{conclusions['stale_events']} / {conclusions['repaired']} / "
                f"{conclusions['stale_at_end']}",
                f"{conclusions['refused_finals']} refused, {conclusions['finals']} recorded",
                _refused(run["model_calls"]),
            ]
        )
    header = [
        "entries",
        "budget",
        "context at the last call (tokens)",
        "pointer resolvability",
        "conclusions left stale / repaired / stale at end",
        "finals",
        "model calls refused (context cannot fit)",
    ]
    return _table(header, rows)


def _refused(calls: Mapping[str, Any]) -> str:
    return f"{calls['refused']} of {calls['count'] + calls['refused']}"


def _pins(results: Mapping[str, Any]) -> list[str]:
    lines: list[str] = []
    rows = []
    for run in results["runs"]:
        for kind, tally in run["pins"]["by_kind"].items():
            rows.append(
                [
                    f"{run['size']:,} @ {_budget(run['budget'])}",
                    kind,
                    str(tally["checks"]),
                    _pct(tally["ours_kept"], tally["checks"]),
                    _pct(tally["truncation_kept"], tally["checks"]),
                ]
            )
    lines += _table(
        ["run", "pin kind", "checks", "pin survival (ours)", "pin survival (truncation)"], rows
    )
    last = results["runs"][-1] if results["runs"] else None
    if last is not None:
        lost = last["pins"]["lost_at_end"]
        lines += [
            "",
            f"At the last sample of the {last['size']:,}-entry run at "
            f"{_budget(last['budget'])} (entry {lost['at']}), the truncation baseline had "
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
    for run in results["runs"]:
        merkle = run["merkle"]
        ours, theirs = merkle["ours"], merkle.get("theirs")

        def pair(name: str, ours: Mapping[str, Any] = ours, theirs: Any = theirs) -> str:
            if theirs is None:
                return f"{_s(ours[name])} / not installed"
            ratio = theirs[name] / ours[name] if ours[name] else 0
            return f"{_s(ours[name])} / {_s(theirs[name])} ({ratio:.1f}x)"

        rows.append(
            [
                f"{merkle['leaves']:,}",
                _budget(run["budget"]),
                pair("build_s"),
                pair("inclusion_s"),
                pair("consistency_s"),
                _s(ours["stored_inclusion_s"]),
            ]
        )
    version = results["runs"][0]["merkle"]["pymerkle"] if results["runs"] else "-"
    header = [
        "leaves",
        "budget",
        "build the tree (ours / pymerkle)",
        "inclusion proof",
        "consistency proof",
        "inclusion proof from the ledger store",
    ]
    note = f"pymerkle: {version}. Ratio = pymerkle's time over ours (above 1: ours faster)."
    return [note, "", *_table(header, rows)]


def _mix(results: Mapping[str, Any]) -> list[str]:
    kinds = sorted({kind for run in results["runs"] for kind in run["kinds"]})
    rows = [
        [kind] + [_pct(run["kinds"].get(kind, 0), run["entries"]) for run in results["runs"]]
        for kind in kinds
    ]
    header = ["kind"] + [f"{r['size']:,} @ {_budget(r['budget'])}" for r in results["runs"]]
    return _table(header, rows)


_METHOD = """\
How each figure is measured. Every run records one investigation (`registre.bench.investigation`) on
its own thread through the real API; for one seed and size every budget sees the same
investigation, and only compactions and model calls differ.

- **append throughput**: entries written over the wall time of the API calls that wrote them
  (all steps, compactions included); *plain appends*: turns, tool calls and results and
  decisions only. One transaction per step, SQLite with `synchronous=FULL`.
- **model call latency**: `thread.model_call` (fold the context from the stored snapshot,
  project, sign and append the `model.call`), after `thread.compact` (timed separately as
  **compaction latency**, planning and summarizing included).
- **projection latency p50 / p99**: `thread.project` at the head, at a geometric grid of
  history lengths (so short and long histories are both sampled).
- **naive projection**: the same projection computed by re-reading every entry of the thread
  and folding from entry 0 (`registre.bench.baselines.naive_projection`). It costs O(history) per
  call, so it is sampled at a sparser geometric grid rather than run at every call; each
  sample is compared with registre's projection (they must be equal).
- **tokens used against budget**: the tokens of the context sent at each model call over the
  budget; **compression ratio**: the tokens of the whole history rendered verbatim over the
  tokens of the context at the last call.
- **pin survival**: at each quality sample, each live pin counts as kept when its text
  appears word for word in the context; the **truncation baseline** renders the whole thread
  verbatim and silently keeps the last `budget` tokens, as an agent loop without registre
  does.
- **active evidence referenced**: active evidence whose admitting entry the manifest does not
  mark `folded` (verbatim, pinned, summarized or stubbed); for truncation, inside the window.
- **pointer resolvability**: both ends of every summary pointer span (or a seeded sample)
  expanded with `thread.expand` (entry plus verified inclusion proof).
- **conclusions left stale / repaired**: hypotheses flagged stale by an evidence change, and
  revised afterwards; *stale at end* counts active conclusions still stale after the final.
- **bundle size, export time, verify time**: `registre.ledger.exchange.export.export_thread` to a
  zip, then `registre.attest.verifier.verify_bundle` with only the operator's verifier key (steps
  1-7, the working context replayed).
- **pymerkle**: the thread's own leaves in both trees, in memory; proofs at the same seeded
  indices; both roots checked against the signed head.
"""


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
        f"{config['token_counter']} · seed {config['seed']} · {results['seconds']:.0f} s in all",
        "",
        "## Summary",
        "",
        *summary_table(results),
        "",
        "## Cost",
        "",
        *_cost(results),
        "",
        "## Projection latency against history length",
        "",
        *_latency_by_history(results),
        "",
        "## Context quality",
        "",
        *_quality(results),
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
        *[f"![{name}]({path.name})" for name, path in plots.items()],
        "",
        "## Method",
        "",
        _METHOD,
    ]
    refusals = {
        f"{run['size']:,} @ {_budget(run['budget'])}": run["model_calls"]["refusals"]
        for run in results["runs"]
        if run["model_calls"]["refusals"]
    }
    if refusals:
        lines += ["## Refusals (never a silent cut)", ""]
        for run_name, reasons in refusals.items():
            lines += [f"- {run_name}: " + ", ".join(f"{k} x{v}" for k, v in reasons.items())]
        lines.append("")
    return "\n".join(lines)
