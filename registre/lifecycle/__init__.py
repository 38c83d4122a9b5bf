"""lifecycle: pure state machines for sources, evidence, conclusions and pins. No I/O."""

from __future__ import annotations

from typing import TYPE_CHECKING

from registre._lazy import lazy_face

if TYPE_CHECKING:
    from registre.lifecycle.codec import (
        KINDS,
        event_to_body,
        normalize_request,
        outcome_to_json,
        parse_body,
        parse_outcome,
        parse_request,
        request_to_json,
    )
    from registre.lifecycle.errors import (
        LifecycleError,
        LifecycleFormatError,
        ReplayMismatchError,
        StateRetiredError,
    )
    from registre.lifecycle.machine import (
        apply,
        decide,
        replay,
        step,
    )
    from registre.lifecycle.model import (
        Accepted,
        ComputeRequest,
        Conclusion,
        ConclusionReviseRequest,
        Event,
        EvidenceEntry,
        EvidenceReviseRequest,
        FinalRequest,
        Outcome,
        PinnedItem,
        PinRequest,
        ReadOutcome,
        ReadRequest,
        Registered,
        Rejected,
        Request,
        Revised,
        SourceRef,
        Statement,
        UnpinRequest,
        UpsertOutcome,
        UpsertRequest,
    )
    from registre.lifecycle.pins import (
        pin_set_items,
        pin_set_sha256,
    )
    from registre.lifecycle.reasons import (
        REASONS,
    )
    from registre.lifecycle.state import (
        LifecycleState,
    )

__all__ = [
    "KINDS",
    "REASONS",
    "Accepted",
    "ComputeRequest",
    "Conclusion",
    "ConclusionReviseRequest",
    "Event",
    "EvidenceEntry",
    "EvidenceReviseRequest",
    "FinalRequest",
    "LifecycleError",
    "LifecycleFormatError",
    "LifecycleState",
    "Outcome",
    "PinRequest",
    "PinnedItem",
    "ReadOutcome",
    "ReadRequest",
    "Registered",
    "Rejected",
    "ReplayMismatchError",
    "Request",
    "Revised",
    "SourceRef",
    "StateRetiredError",
    "Statement",
    "UnpinRequest",
    "UpsertOutcome",
    "UpsertRequest",
    "apply",
    "decide",
    "event_to_body",
    "normalize_request",
    "outcome_to_json",
    "parse_body",
    "parse_outcome",
    "parse_request",
    "pin_set_items",
    "pin_set_sha256",
    "replay",
    "request_to_json",
    "step",
]

__getattr__, __dir__ = lazy_face(
    __name__,
    {
        "codec": (
            "KINDS",
            "event_to_body",
            "normalize_request",
            "outcome_to_json",
            "parse_body",
            "parse_outcome",
            "parse_request",
            "request_to_json",
        ),
        "errors": (
            "LifecycleError",
            "LifecycleFormatError",
            "ReplayMismatchError",
            "StateRetiredError",
        ),
        "machine": (
            "apply",
            "decide",
            "replay",
            "step",
        ),
        "model": (
            "Accepted",
            "ComputeRequest",
            "Conclusion",
            "ConclusionReviseRequest",
            "Event",
            "EvidenceEntry",
            "EvidenceReviseRequest",
            "FinalRequest",
            "Outcome",
            "PinRequest",
            "PinnedItem",
            "ReadOutcome",
            "ReadRequest",
            "Registered",
            "Rejected",
            "Request",
            "Revised",
            "SourceRef",
            "Statement",
            "UnpinRequest",
            "UpsertOutcome",
            "UpsertRequest",
        ),
        "pins": (
            "pin_set_items",
            "pin_set_sha256",
        ),
        "reasons": ("REASONS",),
        "state": ("LifecycleState",),
    },
)
