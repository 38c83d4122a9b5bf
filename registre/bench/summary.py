"""From a :class:`~registre.bench.measure.RunRecorder` to one run of ``results.json``
(``specs/bench.md``).

Percentiles are nearest-rank (p50 of 1..100 is 50, p99 is 99); latencies are reported in
milliseconds, sizes in entries and tokens. Long series (tokens at every model call) are
thinned to at most :data:`MAX_SERIES` points, evenly by call, keeping the last; the last
:data:`RECENT_CALLS` calls are also kept whole, for a close-up.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Sequence
from itertools import pairwise
from typing import Any

from registre.bench.facts import FACT_KINDS, FactBook
from registre.bench.measure import RunRecorder

__all__ = [
    "HISTORY_BUCKETS",
    "MAX_SERIES",
    "RECENT_CALLS",
    "by_third",
    "naive_ratio",
    "percentile",
    "summarize_run",
]

MAX_SERIES = 1500
RECENT_CALLS = 300
"""Model calls kept unthinned at the end of a run (``context.recent``), for a close-up."""
HISTORY_BUCKETS = (0, 300, 1000, 3000, 10_000, 30_000, 100_000, 300_000, 1_000_000)
"""Lower bounds of the history-length buckets latencies are reported in."""
_APPENDS = ("turn", "tool.call", "tool.result", "decision")


def percentile(values: Iterable[float], rank: float) -> float | None:
    """The nearest-rank ``rank`` percentile (0 < rank <= 100) of ``values``; None if empty."""
    ordered = sorted(values)
    if not ordered:
        return None
    return ordered[max(0, math.ceil(rank / 100 * len(ordered)) - 1)]


def _ms(value: float | None) -> float | None:
    return None if value is None else round(value * 1000, 4)


def _latency(values: Sequence[float]) -> dict[str, Any]:
    return {
        "count": len(values),
        "p50_ms": _ms(percentile(values, 50)),
        "p99_ms": _ms(percentile(values, 99)),
        "max_ms": _ms(max(values) if values else None),
        "total_s": round(sum(values), 6),
    }


def _thin(points: Sequence[Any], limit: int = MAX_SERIES) -> list[Any]:
    if len(points) <= limit:
        return list(points)
    step = len(points) / limit
    chosen = [points[int(k * step)] for k in range(limit - 1)]
    return [*chosen, points[-1]]


def _buckets(recorder: RunRecorder) -> list[dict[str, Any]]:
    rows = []
    bounds = [*HISTORY_BUCKETS, math.inf]
    for low, high in pairwise(bounds):

        def inside(
            points: Sequence[tuple[int, float]], lo: float = low, hi: float = high
        ) -> list[float]:
            return [seconds for history, seconds in points if lo <= history < hi]

        ours = inside(recorder.ours_latency)
        naive = inside(recorder.naive_latency)
        calls = inside(recorder.call_latency)
        if not (ours or naive or calls):
            continue
        rows.append(
            {
                "from": low,
                "to": None if high == math.inf else int(high),
                "ours_samples": len(ours),
                "ours_p50_ms": _ms(percentile(ours, 50)),
                "ours_p99_ms": _ms(percentile(ours, 99)),
                "naive_samples": len(naive),
                "naive_p50_ms": _ms(percentile(naive, 50)),
                "model_calls": len(calls),
                "model_call_p50_ms": _ms(percentile(calls, 50)),
                "model_call_p99_ms": _ms(percentile(calls, 99)),
            }
        )
    return rows


def by_third(
    entries: int,
    ours: Sequence[tuple[int, float]],
    calls: Sequence[tuple[int, float]],
    totals: Sequence[tuple[int, float]] = (),
    parts: int = 3,
) -> list[dict[str, Any]]:
    """Projection, model-call and whole-call (compact, then model call: ``totals``) latency
    by ``parts`` equal slices of the run's history (``entries`` long; a sample at history
    ``h`` falls in slice ``h * parts // entries``): flat rows mean the cost does not grow
    with the history."""
    rows = []
    span = max(1, entries)
    for part in range(parts):
        low, high = part * span // parts, (part + 1) * span // parts

        def inside(points: Sequence[tuple[int, float]], part: int = part) -> list[float]:
            return [s for h, s in points if min(parts - 1, h * parts // span) == part]

        mine, called, whole = inside(ours), inside(calls), inside(totals)
        rows.append(
            {
                "part": part + 1,
                "from": low,
                "to": high,
                "ours_samples": len(mine),
                "ours_p50_ms": _ms(percentile(mine, 50)),
                "ours_p99_ms": _ms(percentile(mine, 99)),
                "model_calls": len(called),
                "model_call_p50_ms": _ms(percentile(called, 50)),
                "model_call_p99_ms": _ms(percentile(called, 99)),
                "call_total_p50_ms": _ms(percentile(whole, 50)),
                "call_total_p99_ms": _ms(percentile(whole, 99)),
            }
        )
    return rows


def naive_ratio(pairs: Sequence[tuple[int, float, float]]) -> dict[str, Any]:
    """The naive re-fold over registre's projection at the same history (each naive sample
    follows a projection at the same call): at the largest sample, and the smallest ratio
    over the samples of at least 1,000 entries of history."""
    ratios = [(h, naive / ours) for h, ours, naive in pairs if ours > 0]
    large = [ratio for h, ratio in ratios if h >= 1000]
    last = ratios[-1] if ratios else None
    return {
        "samples": len(ratios),
        "at": None if last is None else last[0],
        "at_largest": None if last is None else round(last[1], 3),
        "min_from_1000": round(min(large), 3) if large else None,
    }


def _pins(recorder: RunRecorder) -> dict[str, Any]:
    by_kind: dict[str, Counter[str]] = {}
    for sample in recorder.quality:
        for pin in sample.pins:
            tally = by_kind.setdefault(pin.kind, Counter())
            tally["checks"] += 1
            tally["ours_kept"] += pin.ours
            tally["truncation_kept"] += pin.truncation
    checks = sum(t["checks"] for t in by_kind.values())
    last = recorder.quality[-1] if recorder.quality else None
    return {
        "samples": len(recorder.quality),
        "checks": checks,
        "ours_kept": sum(t["ours_kept"] for t in by_kind.values()),
        "truncation_kept": sum(t["truncation_kept"] for t in by_kind.values()),
        "by_kind": {kind: dict(tally) for kind, tally in sorted(by_kind.items())},
        "series": [
            [s.at, len(s.pins), sum(p.ours for p in s.pins), sum(p.truncation for p in s.pins)]
            for s in recorder.quality
        ],
        "lost_at_end": {
            "at": None if last is None else last.at,
            "ours": [_pin(p) for p in last.pins if not p.ours] if last else [],
            "truncation": [_pin(p) for p in last.pins if not p.truncation] if last else [],
        },
    }


def _pin(pin: Any) -> dict[str, str]:
    return {"id": pin.id, "kind": pin.kind, "text": pin.text}


def _evidence(recorder: RunRecorder) -> dict[str, Any]:
    samples = [s for s in recorder.quality if s.evidence_active]
    last = recorder.quality[-1] if recorder.quality else None
    active = sum(s.evidence_active for s in samples)

    def share(field: str) -> float | None:
        return _share(sum(getattr(s, field) for s in samples), active)

    def at_end(field: str) -> int:
        return 0 if last is None else int(getattr(last, field))

    return {
        "samples": len(samples),
        "named_share": share("evidence_ours_named"),
        "stated_share": share("evidence_ours_stated"),
        "truncation_named_share": share("evidence_truncation_named"),
        "truncation_stated_share": share("evidence_truncation_stated"),
        "ours_share": share("evidence_ours"),
        "truncation_share": share("evidence_truncation"),
        "active_at_end": at_end("evidence_active"),
        "named_at_end": at_end("evidence_ours_named"),
        "stated_at_end": at_end("evidence_ours_stated"),
        "ours_at_end": at_end("evidence_ours"),
        "truncation_at_end": at_end("evidence_truncation"),
        "series": [
            [
                s.at,
                s.evidence_active,
                s.evidence_ours,
                s.evidence_truncation,
                s.evidence_ours_named,
                s.evidence_ours_stated,
                s.evidence_truncation_named,
                s.evidence_truncation_stated,
            ]
            for s in recorder.quality
        ],
    }


def _share(part: int, whole: int) -> float | None:
    return None if whole == 0 else round(part / whole, 6)


def _context(recorder: RunRecorder, budget: int) -> dict[str, Any]:
    calls = recorder.calls
    uses = [tokens / budget for _seq, tokens, _history in calls]
    final = recorder.last_projection
    statuses: Counter[str] = Counter()
    if final is not None:
        for run in final.manifest.runs:
            statuses[run.status] += run.last - run.first + 1
    last = calls[-1] if calls else (0, 0, 0)
    return {
        "budget": budget,
        "high_water": recorder.policy.high_water_tokens,
        "final_tokens": last[1],
        "final_history_tokens": last[2],
        "compression_ratio": None if not last[1] else round(last[2] / last[1], 3),
        "mean_use": None if not uses else round(sum(uses) / len(uses), 4),
        "max_use": None if not uses else round(max(uses), 4),
        "final_status": dict(sorted(statuses.items())),
        "series": _thin([list(call) for call in calls]),
        "recent": [list(call) for call in calls[-RECENT_CALLS:]],
    }


def _working_context(recorder: RunRecorder, facts: FactBook) -> dict[str, Any]:
    planted = Counter(fact.kind for fact in facts.facts)
    ages = recorder.fact_ages
    methods = recorder.working_context_methods()
    return {
        "facts": {
            "planted": len(facts.facts),
            "by_kind": {kind: planted[kind] for kind in FACT_KINDS},
            "needs": len(ages),
            "calls_with_needs": recorder.calls_with_needs,
            "age_p50": percentile(ages, 50),
            "age_p95": percentile(ages, 95),
        },
        "methods": {
            name: tally.to_json(summary_lines=name in ("registre", "rolling_summary"))
            for name, tally in methods.items()
        },
    }


def summarize_run(
    recorder: RunRecorder, *, size: int, budget: int, origin: str, extra: dict[str, Any]
) -> dict[str, Any]:
    """The run's entry of ``results.json``: the recorder's measurements, plus ``extra`` (wall
    time, storyline tallies, pointers, stale conclusions at the end, bundle, merkle, and the
    investigation's planted ``facts``, a :class:`~registre.bench.facts.FactBook`; ``lean``
    and the measured ``steps``). A lean run has no ``pins``, ``evidence``,
    ``working_context`` or ``merkle`` (``registre.bench.run.LEAN_ABOVE``)."""
    seconds = recorder.step_seconds
    ledger_seconds = (
        sum(sum(values) for values in seconds.values())
        + sum(recorder.compaction_seconds)
        + sum(recorder.compact_checks)
    )
    plain = [value for kind in _APPENDS for value in seconds.get(kind, [])]
    storyline = extra["storyline"]
    compactions = recorder.compactions
    ours = [s for _h, s in recorder.ours_latency]
    naive = [s for _h, s in recorder.naive_latency]
    quality: dict[str, Any] = {}
    if not extra["lean"]:
        quality = {
            "pins": _pins(recorder),
            "evidence": _evidence(recorder),
            "working_context": _working_context(recorder, extra["facts"]),
            "merkle": extra["merkle"],
        }
    run = {
        "size": size,
        "budget": budget,
        "policy": recorder.policy.to_json(),
        "thread": origin,
        "entries": recorder.size,
        "kinds": dict(sorted(recorder.kinds.items())),
        "phases": dict(sorted(recorder.phases.items())),
        "storyline": storyline,
        "lean": extra["lean"],
        "wall_s": round(extra["wall_s"], 3),
        "run_s": round(extra["run_s"], 3),
        "harness_s": round(recorder.harness_seconds, 3),
        "harness": {
            **{name: round(value, 3) for name, value in recorder.harness_parts.items()},
            **extra["harness"],
        },
        "steps": extra["steps"],
        "append": {
            "entries": recorder.size,
            "ledger_s": round(ledger_seconds, 6),
            "per_second": round(recorder.size / ledger_seconds, 2) if ledger_seconds else None,
            "plain_per_second": round(len(plain) / sum(plain), 2) if plain else None,
            "steps": {kind: _latency(values) for kind, values in sorted(seconds.items())},
            "checkpoints": _latency(recorder.checkpoint_seconds),
        },
        "projection": {
            "ours": {**_latency(ours), "points": [[h, s] for h, s in recorder.ours_latency]},
            "naive": {**_latency(naive), "points": [[h, s] for h, s in recorder.naive_latency]},
            "naive_equal": recorder.naive_equal,
            "naive_ratio": naive_ratio(recorder.naive_pairs),
            "by_history": _buckets(recorder),
            "by_third": by_third(
                recorder.size, recorder.ours_latency, recorder.call_latency, recorder.call_totals
            ),
        },
        "model_calls": {
            **_latency([s for _h, s in recorder.call_latency]),
            "points": [[h, s] for h, s in _thin(recorder.call_latency)],
            "with_compact": _latency([s for _h, s in recorder.call_totals]),
            "refused": storyline["refused_calls"],
            "refusals": dict(sorted(recorder.refusals.items())),
        },
        "compaction": {
            **_latency(recorder.compaction_seconds),
            "checks": _latency(recorder.compact_checks),
            "folds": sum(1 for c in compactions if c["folded"] is not None),
            "refolds": sum(1 for c in compactions if c["refold"]),
            "stub_only": sum(1 for c in compactions if c["folded"] is None),
            "stubbed": sum(c["stubbed"] for c in compactions),
            "seqs": [c["seq"] for c in compactions],
        },
        "context": _context(recorder, budget),
        "conclusions": {
            "computed": storyline["hypotheses"],
            "revisions": storyline["hypothesis_revisions"],
            "stale_events": storyline["stale_events"],
            "repaired": storyline["repaired"],
            "abandoned": storyline["abandoned"],
            "refused_finals": storyline["refused_finals"],
            "finals": storyline["finals"],
            "stale_at_end": extra["stale_at_end"],
        },
        "pointers": extra["pointers"],
        "bundle": extra["bundle"],
    }
    run.update(quality)
    return run
