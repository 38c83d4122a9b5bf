"""registre.ledger: persistence and the thread API on top of attest and lifecycle.

``Ledger.open(url, signer)`` opens a SQLite file or a PostgreSQL URL; ``ledger.thread(id)``
gives a :class:`Thread` that appends signed entries, records lifecycle decisions, projects
and compacts the working context, checkpoints and proves. ``export_thread`` and
``export_claim`` write audit bundles; ``verify_database`` rechecks a whole database. These
names, and the results and refusals the thread API returns and raises, are the public API
that the floors above (``registre.bench``, the command line, adapters) use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from registre._lazy import lazy_face

if TYPE_CHECKING:
    from registre.ledger.core.thread_core import (
        StoredCheckpoint,
        ThreadConsistencyProof,
        ThreadInclusionProof,
        TreeHead,
    )
    from registre.ledger.exchange.export import (
        ExportResult,
        export_claim,
        export_thread,
    )
    from registre.ledger.ledger import (
        Ledger,
    )
    from registre.ledger.lifecycle.api import (
        BatchResult,
        ConclusionRefusedError,
        LifecycleRefusedError,
        PinRefusedError,
        RevisionRefusedError,
        StepResult,
        source_ref,
    )
    from registre.ledger.thread import (
        Thread,
    )
    from registre.ledger.verify.database import (
        verify_database,
    )
    from registre.ledger.verify.thread import (
        ThreadReport,
    )

__all__ = [
    "BatchResult",
    "ConclusionRefusedError",
    "ExportResult",
    "Ledger",
    "LifecycleRefusedError",
    "PinRefusedError",
    "RevisionRefusedError",
    "StepResult",
    "StoredCheckpoint",
    "Thread",
    "ThreadConsistencyProof",
    "ThreadInclusionProof",
    "ThreadReport",
    "TreeHead",
    "export_claim",
    "export_thread",
    "source_ref",
    "verify_database",
]

__getattr__, __dir__ = lazy_face(
    __name__,
    {
        "core.thread_core": (
            "StoredCheckpoint",
            "ThreadConsistencyProof",
            "ThreadInclusionProof",
            "TreeHead",
        ),
        "exchange.export": (
            "ExportResult",
            "export_claim",
            "export_thread",
        ),
        "ledger": ("Ledger",),
        "lifecycle.api": (
            "BatchResult",
            "ConclusionRefusedError",
            "LifecycleRefusedError",
            "PinRefusedError",
            "RevisionRefusedError",
            "StepResult",
            "source_ref",
        ),
        "thread": ("Thread",),
        "verify.database": ("verify_database",),
        "verify.thread": ("ThreadReport",),
    },
)
