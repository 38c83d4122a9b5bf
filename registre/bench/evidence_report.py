"""``report.md``'s active-evidence table: what each context shows the model of the active
evidence (:mod:`registre.bench.evidence_view`), beside the older figure of admitting
entries in view. Reads ``registre-bench/4`` and later runs; a run without the ``evidence`` figures
(lean, or an older document) prints ``-``."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from registre.bench.report_cells import cell_share, run_label

__all__ = ["evidence_cell", "evidence_table"]


def evidence_cell(run: Mapping[str, Any]) -> str:
    """The summary table's cell: registre's ids named / named with their statement, then
    the truncation baseline's, over every quality sample."""
    evidence = run.get("evidence") or {}
    return (
        f"{cell_share(evidence.get('named_share'))} / {cell_share(evidence.get('stated_share'))} "
        f"(truncation {cell_share(evidence.get('truncation_named_share'))} / "
        f"{cell_share(evidence.get('truncation_stated_share'))})"
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
                    run_label(run),
                    str(evidence["samples"]),
                    cell_share(evidence["named_share"]),
                    cell_share(evidence["stated_share"]),
                    f"{evidence['named_at_end']} / {evidence['stated_at_end']} of "
                    f"{evidence['active_at_end']}",
                    f"{cell_share(evidence['truncation_named_share'])} / "
                    f"{cell_share(evidence['truncation_stated_share'])}",
                    f"{cell_share(evidence['ours_share'])} / "
                    f"{cell_share(evidence['truncation_share'])}",
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
