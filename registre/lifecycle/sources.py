"""Sources: ``source.read`` registers passage references.

Rules (each reference decided on its own, in request order, against the references
registered so far including earlier ones in the same request):

1. a reference whose id is not registered is registered;
2. a reference identical to the registered one (same source, location and digest) is
   accepted and changes nothing (re-reading a passage is normal);
3. otherwise it is rejected with ``reference_conflict``: a reference id names one passage
   forever, so evidence citing it keeps meaning what it meant.

References are never removed, so anything that cited a registered reference keeps resolving.
"""

from __future__ import annotations

from registre.lifecycle.model import ReadOutcome, ReadRequest, Registered, Rejected, SourceRef
from registre.lifecycle.reasons import reject
from registre.lifecycle.state import Tables

__all__ = ["commit_read", "decide_read"]


def decide_read(tables: Tables, request: ReadRequest) -> ReadOutcome:
    """The outcome of ``request``; reads ``tables`` only. Cost O(len(request.refs))."""
    pending: dict[str, SourceRef] = {}
    results: list[Registered | Rejected] = []
    for ref in request.refs:
        known = pending.get(ref.ref) or tables.references.get(ref.ref)
        if known is None:
            pending[ref.ref] = ref
            results.append(Registered(ref.ref))
        elif known == ref:
            results.append(Registered(ref.ref))
        else:
            results.append(reject("reference_conflict", ref=ref.ref))
    return ReadOutcome(tuple(results))


def commit_read(tables: Tables, request: ReadRequest, outcome: ReadOutcome) -> None:
    """Register the references ``outcome`` accepted (an outcome ``decide_read`` gave)."""
    for ref, result in zip(request.refs, outcome.results, strict=True):
        if isinstance(result, Registered):
            tables.references.setdefault(ref.ref, ref)
