"""Rejection reasons: the machine-readable codes and the sentence each one gives.

The sentences are part of the recorded outcome, and replay compares outcomes exactly, so the
templates below are normative (``specs/lifecycle.md`` reproduces this table and a test keeps
the two equal). Changing a template changes the format: old ledgers would no longer replay.

When several checks fail for one request, the first failing check decides, in the order
each rule lists them (the target id, then the text, then the citations in request order).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Final

from registre.lifecycle.model import Rejected

__all__ = ["REASONS", "reject"]

REASONS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "empty_statement": "The text is empty or only whitespace; write the statement out.",
        "no_citation": (
            "Nothing is cited; evidence must cite at least one source reference and a "
            "conclusion at least one evidence or compute id."
        ),
        "unregistered_reference": (
            "Reference '{ref}' is not registered; record a source.read of the passage before "
            "citing it."
        ),
        "reference_conflict": (
            "Reference '{ref}' is already registered with a different source, location or "
            "digest; register the new passage under a new reference id."
        ),
        "unknown_evidence": (
            "Evidence '{id}' does not exist; use an id an evidence.upsert or evidence.revise "
            "accepted."
        ),
        "inactive_evidence": (
            "Evidence '{id}' is {status} and can no longer be cited or revised; use active "
            "evidence."
        ),
        "unknown_conclusion": (
            "Conclusion '{id}' does not exist; use an id a conclusion.compute, conclusion.final "
            "or conclusion.revise accepted."
        ),
        "inactive_conclusion": (
            "Conclusion '{id}' is {status} and can no longer be cited or revised; use its "
            "latest version."
        ),
        "stale_citation": (
            "Conclusion '{id}' is stale because evidence it relies on changed; revise it "
            "before a final answer cites it."
        ),
        "not_citable": (
            "Conclusion '{id}' is a {cited_kind}, which a {citing_kind} may not cite; a compute "
            "cites evidence only and a final cites evidence and computes."
        ),
        "empty_pin": "The pin text is empty or only whitespace; pin the words to keep.",
        "unknown_pin": "Pin '{id}' does not exist; unpin an id a context.pin accepted.",
        "inactive_pin": "Pin '{id}' is already unpinned.",
        "empty_reason": "The unpin reason is empty; say why the pin is no longer needed.",
    }
)


def reject(reason: str, **fields: str) -> Rejected:
    """The rejection for ``reason`` with its template filled from ``fields``.

    Raises ``KeyError`` for an unknown reason or a missing field: both are bugs in lifecycle,
    never a consequence of input.
    """
    return Rejected(reason=reason, message=REASONS[reason].format(**fields))
