"""bench: synthetic investigations on a real ledger, measured, and their reports.

``registre bench`` runs :func:`run_bench` with a :class:`BenchConfig` and writes its results
(:func:`write_outputs`: ``results.json`` following :data:`SCHEMA`, ``report.md``, the plots);
:func:`record_investigation` records one investigation (:class:`InvestigationConfig`) on a
thread without measuring it. The real-data suites are :mod:`registre.bench.real`. The face is
lazy: a name's module, and the ledger it drives, load when the name is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from registre._lazy import lazy_face

if TYPE_CHECKING:
    from registre.bench.agent import MIN_ENTRIES, InvestigationConfig, InvestigationStats
    from registre.bench.generate import investigation_steps, policy_for, record_investigation
    from registre.bench.parallel import BatchedProgress, BenchWorkerError
    from registre.bench.report import render_report
    from registre.bench.run import (
        BenchConfig,
        UnknownSummarizerError,
        parse_quantity,
        resolve_summarizer,
        results_document,
        run_bench,
        run_investigation,
        write_outputs,
    )
    from registre.bench.schema import SCHEMA, ResultsSchemaError, check_results

__all__ = [
    "MIN_ENTRIES",
    "SCHEMA",
    "BatchedProgress",
    "BenchConfig",
    "BenchWorkerError",
    "InvestigationConfig",
    "InvestigationStats",
    "ResultsSchemaError",
    "UnknownSummarizerError",
    "check_results",
    "investigation_steps",
    "parse_quantity",
    "policy_for",
    "record_investigation",
    "render_report",
    "resolve_summarizer",
    "results_document",
    "run_bench",
    "run_investigation",
    "write_outputs",
]

__getattr__, __dir__ = lazy_face(
    __name__,
    {
        "agent": ("MIN_ENTRIES", "InvestigationConfig", "InvestigationStats"),
        "generate": ("investigation_steps", "policy_for", "record_investigation"),
        "parallel": ("BatchedProgress", "BenchWorkerError"),
        "report": ("render_report",),
        "run": (
            "BenchConfig",
            "UnknownSummarizerError",
            "parse_quantity",
            "resolve_summarizer",
            "results_document",
            "run_bench",
            "run_investigation",
            "write_outputs",
        ),
        "schema": ("SCHEMA", "ResultsSchemaError", "check_results"),
    },
)
