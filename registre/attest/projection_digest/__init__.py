"""The digests of working-context projections that ``model.call`` entries record
(``specs/context.md``): the digest of a projection or provider request (:mod:`.digest`) and
the verifier's streaming rebuild of each projection (:mod:`.stream`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from registre._lazy import lazy_face

if TYPE_CHECKING:
    from registre.attest.projection_digest.digest import (
        REGISTRE_SHAPE,
        SHAPES,
        ContextDigestMismatchError,
        EntryLookup,
        ModelCallOverBudgetError,
        block_version,
        claims_block,
        claims_recall,
        projection_digest,
        rebuild_projection,
        shape_digest,
        shape_json,
        verify_model_call,
    )
    from registre.attest.projection_digest.stream import (
        ModelCallChecker,
        call_digest,
        flat_json,
        message_bytes,
        run_bytes,
    )

__all__ = [
    "REGISTRE_SHAPE",
    "SHAPES",
    "ContextDigestMismatchError",
    "EntryLookup",
    "ModelCallChecker",
    "ModelCallOverBudgetError",
    "block_version",
    "call_digest",
    "claims_block",
    "claims_recall",
    "flat_json",
    "message_bytes",
    "projection_digest",
    "rebuild_projection",
    "run_bytes",
    "shape_digest",
    "shape_json",
    "verify_model_call",
]

__getattr__, __dir__ = lazy_face(
    __name__,
    {
        "digest": (
            "ContextDigestMismatchError",
            "EntryLookup",
            "ModelCallOverBudgetError",
            "REGISTRE_SHAPE",
            "SHAPES",
            "block_version",
            "claims_block",
            "claims_recall",
            "projection_digest",
            "rebuild_projection",
            "shape_digest",
            "shape_json",
            "verify_model_call",
        ),
        "stream": (
            "ModelCallChecker",
            "call_digest",
            "flat_json",
            "message_bytes",
            "run_bytes",
        ),
    },
)
