"""The audit report: one self-contained HTML file built from a bundle alone, offline.

``registre report BUNDLE.zip --key VKEY -o report.html`` runs the verification ``registre
verify`` runs, then shows the result check by check, the thread as a timeline (compactions
as markers whose summary pointers are links, every folded entry marked with the line that
covers it), each final conclusion with its chain down to the passages read, what the model
was sent at each call (rebuilt and digest-checked) beside what it no longer saw verbatim,
and the context tokens against the budget. A bundle that fails verification gives a report
that says so first and shows none of its content.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from registre._lazy import lazy_face

if TYPE_CHECKING:
    from registre.report.gathering import (
        CallContext,
        Chain,
        ReportData,
        gather,
    )
    from registre.report.html import (
        PAGE_SIZE,
        render_report,
    )

__all__ = [
    "PAGE_SIZE",
    "CallContext",
    "Chain",
    "ReportData",
    "gather",
    "render_report",
]

__getattr__, __dir__ = lazy_face(
    __name__,
    {
        "gathering": (
            "CallContext",
            "Chain",
            "ReportData",
            "gather",
        ),
        "html": (
            "PAGE_SIZE",
            "render_report",
        ),
    },
)
