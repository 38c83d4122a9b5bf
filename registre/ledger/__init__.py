"""registre.ledger: persistence and the thread API on top of attest and lifecycle.

``Ledger.open(url, signer)`` opens a SQLite file or a PostgreSQL URL; ``ledger.thread(id)``
gives a :class:`Thread` that appends signed entries, records lifecycle decisions, projects
and compacts the working context, checkpoints and proves. ``export_thread`` and
``export_claim`` write audit bundles; ``verify_database`` rechecks a whole database. These
names, and the results and refusals the thread API returns and raises, are the public API
that the floors above (``registre.bench``, the command line, adapters) use; so are the
operations the command line offers beside the thread API (import, transcripts, backup,
rebuild, witnessing, proof text) and the database settings it takes (``database_url``,
``lock_policy``). The face is lazy: a name's module, and the database stack, load when the
name is first used.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from registre._lazy import lazy_face

if TYPE_CHECKING:
    from registre.ledger.context.store import (
        rebuild_context,
    )
    from registre.ledger.context.views import (
        ContextDiff,
        DiffRun,
        context_diff,
    )
    from registre.ledger.core.thread_core import (
        StoredCheckpoint,
        ThreadConsistencyProof,
        ThreadInclusionProof,
        TreeHead,
    )
    from registre.ledger.core.tool_calls import (
        OrphanToolResultError,
    )
    from registre.ledger.errors import (
        LedgerNotFoundError,
    )
    from registre.ledger.exchange.export import (
        ExportResult,
        export_claim,
        export_thread,
    )
    from registre.ledger.exchange.import_run import (
        ImportJob,
        ImportReport,
        run_import,
    )
    from registre.ledger.exchange.proof_text import (
        format_consistency_proof,
        format_inclusion_proof,
    )
    from registre.ledger.exchange.transcript import (
        LOG_WIDTH,
        entry_line,
        render_transcript,
    )
    from registre.ledger.exchange.writeback import (
        WRITEBACK_FORMATS,
        write_chunks,
    )
    from registre.ledger.ledger import (
        Ledger,
    )
    from registre.ledger.lifecycle.api import (
        BatchRefusedError,
        BatchResult,
        ConclusionRefusedError,
        EvidenceRefusedError,
        LifecycleRefusedError,
        PinRefusedError,
        ReadRefusedError,
        RevisionRefusedError,
        StepResult,
        source_ref,
    )
    from registre.ledger.lifecycle.store import (
        rebuild,
    )
    from registre.ledger.lifecycle.views import (
        ConclusionRecord,
        EvidenceRecord,
        TraceNode,
        trace_to_json,
    )
    from registre.ledger.store.backup import (
        backup_sqlite,
    )
    from registre.ledger.store.engine import (
        LOCK_TIMEOUT_S,
        database_url,
        lock_policy,
    )
    from registre.ledger.store.faults import (
        database_fault,
    )
    from registre.ledger.store.lifecycle_fold import (
        check_pin_source,
    )
    from registre.ledger.thread import (
        Thread,
    )
    from registre.ledger.verify.database import (
        verify_database,
    )
    from registre.ledger.verify.reanchor import (
        reanchor,
    )
    from registre.ledger.verify.thread import (
        ThreadReport,
    )
    from registre.ledger.verify.witnesses import (
        WitnessCheck,
        check_witnesses,
    )
    from registre.ledger.witnessing import (
        witness_checkpoint,
    )

__all__ = [
    "LOCK_TIMEOUT_S",
    "LOG_WIDTH",
    "WRITEBACK_FORMATS",
    "BatchRefusedError",
    "BatchResult",
    "ConclusionRecord",
    "ConclusionRefusedError",
    "ContextDiff",
    "DiffRun",
    "EvidenceRecord",
    "EvidenceRefusedError",
    "ExportResult",
    "ImportJob",
    "ImportReport",
    "Ledger",
    "LedgerNotFoundError",
    "LifecycleRefusedError",
    "OrphanToolResultError",
    "PinRefusedError",
    "ReadRefusedError",
    "RevisionRefusedError",
    "StepResult",
    "StoredCheckpoint",
    "Thread",
    "ThreadConsistencyProof",
    "ThreadInclusionProof",
    "ThreadReport",
    "TraceNode",
    "TreeHead",
    "WitnessCheck",
    "backup_sqlite",
    "check_pin_source",
    "check_witnesses",
    "context_diff",
    "database_fault",
    "database_url",
    "entry_line",
    "export_claim",
    "export_thread",
    "format_consistency_proof",
    "format_inclusion_proof",
    "lock_policy",
    "reanchor",
    "rebuild",
    "rebuild_context",
    "render_transcript",
    "run_import",
    "source_ref",
    "trace_to_json",
    "verify_database",
    "witness_checkpoint",
    "write_chunks",
]

__getattr__, __dir__ = lazy_face(
    __name__,
    {
        "context.store": ("rebuild_context",),
        "context.views": (
            "ContextDiff",
            "DiffRun",
            "context_diff",
        ),
        "core.tool_calls": ("OrphanToolResultError",),
        "core.thread_core": (
            "StoredCheckpoint",
            "ThreadConsistencyProof",
            "ThreadInclusionProof",
            "TreeHead",
        ),
        "errors": ("LedgerNotFoundError",),
        "exchange.export": (
            "ExportResult",
            "export_claim",
            "export_thread",
        ),
        "exchange.import_run": (
            "ImportJob",
            "ImportReport",
            "run_import",
        ),
        "exchange.proof_text": (
            "format_consistency_proof",
            "format_inclusion_proof",
        ),
        "exchange.transcript": ("LOG_WIDTH", "entry_line", "render_transcript"),
        "exchange.writeback": (
            "WRITEBACK_FORMATS",
            "write_chunks",
        ),
        "ledger": ("Ledger",),
        "lifecycle.api": (
            "BatchRefusedError",
            "BatchResult",
            "ConclusionRefusedError",
            "EvidenceRefusedError",
            "LifecycleRefusedError",
            "PinRefusedError",
            "ReadRefusedError",
            "RevisionRefusedError",
            "StepResult",
            "source_ref",
        ),
        "lifecycle.store": ("rebuild",),
        "lifecycle.views": (
            "ConclusionRecord",
            "EvidenceRecord",
            "TraceNode",
            "trace_to_json",
        ),
        "store.backup": ("backup_sqlite",),
        "store.engine": (
            "LOCK_TIMEOUT_S",
            "database_url",
            "lock_policy",
        ),
        "store.faults": ("database_fault",),
        "store.lifecycle_fold": ("check_pin_source",),
        "thread": ("Thread",),
        "verify.database": ("verify_database",),
        "verify.reanchor": ("reanchor",),
        "verify.thread": ("ThreadReport",),
        "verify.witnesses": ("WitnessCheck", "check_witnesses"),
        "witnessing": ("witness_checkpoint",),
    },
)
