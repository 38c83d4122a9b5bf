"""``report.md``'s active-evidence table: what each context shows the model of the active
evidence (:mod:`registre.bench.evidence_view`), beside the older figure of admitting
entries in view. Reads ``registre-bench/4`` runs; a run without the ``evidence`` figures
(lean, or an older document) prints ``-``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

__all__ = ["evidence_cell", "evidence_table"]


def _share(value: float | None) -> str:
    return "-" if value is None else f"{100 * value:.1f}%"


def _budget(value: int) -> str:
    return f"{value // 1000}k" if value % 1000 == 0 else str(value)


def evidence_cell(run: Mapping[str, Any]) -> str:
    """The summary table's cell: registre's ids named / named with their statement, then
    the truncation baseline's, over every quality sample."""
    evidence = run.get("evidence") or {}
    return (
        f"{_share(evidence.get('named_share'))} / {_share(evidence.get('stated_share'))} "
        f"(truncation {_share(evidence.get('truncation_named_share'))} / "
        f"{_share(evidence.get('truncation_stated_share'))})"
    )


def evidence_table(results: Mapping[str, Any]) -> list[str]:
    """One row per run with evidence figures: active evidence in view (id named; id and
    statement), ours and truncation's, over the quality samples and at the last one, and
    the admitting entry in view (the manifest's status; the figure before
    ``registre-bench/4``)."""
    rows = []
    for run in results["runs"]:
        evidence = run.get("evidence")
        if not evidence or "named_share" not in evidence:
            continue
        rows.append(
            "| "
            + " | ".join(
                [
                    f"{run['entries']:,} @ {_budget(run['budget'])}",
                    str(evidence["samples"]),
                    _share(evidence["named_share"]),
                    _share(evidence["stated_share"]),
                    f"{evidence['named_at_end']} / {evidence['stated_at_end']} of "
                    f"{evidence['active_at_end']}",
                    f"{_share(evidence['truncation_named_share'])} / "
                    f"{_share(evidence['truncation_stated_share'])}",
                    f"{_share(evidence['ours_share'])} / {_share(evidence['truncation_share'])}",
                ]
            )
            + " |"
        )
    header = [
        "run",
        "samples",
        "active evidence in view: id named",
        "id and statement",
        "at the last sample: named / stated of active",
        "truncation: named / stated",
        "admitting entry in view (ours / truncation)",
    ]
    return [
        "| " + " | ".join(header) + " |",
        "|" + "---|" * len(header),
        *rows,
    ]
