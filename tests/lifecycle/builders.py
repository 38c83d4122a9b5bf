"""Small builders shared by the lifecycle tests: digests, references and a state built by
running requests through ``step`` (so every state in the tests is one a ledger could hold)."""

from __future__ import annotations

import hashlib

from registre.lifecycle import (
    Event,
    LifecycleState,
    ReadRequest,
    Request,
    SourceRef,
    Statement,
    UpsertRequest,
    step,
)


def digest(text: str) -> str:
    """Hex SHA-256 of ``text`` as UTF-8 (the digest a reader records for a passage)."""
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def ref(ref_id: str, source: str = "report.pdf", location: str = "p. 1") -> SourceRef:
    """A reference whose digest is that of a passage derived from its fields."""
    return SourceRef(ref_id, source, location, digest(f"{source}|{location}|{ref_id}"))


def run(state: LifecycleState, *requests: Request) -> tuple[LifecycleState, list[Event]]:
    """Decide and apply ``requests`` in order; returns the new state and the events."""
    events = []
    for request in requests:
        event, state = step(state, request)
        events.append(event)
    return state, events


def with_evidence(*refs: str, statements: int = 1) -> LifecycleState:
    """A state with ``refs`` registered and ``statements`` evidence entries (``ev-1``...),
    each citing every ref."""
    state, _ = run(LifecycleState.empty(), ReadRequest(tuple(ref(r) for r in refs)))
    if statements:
        claims = tuple(Statement(f"claim {n}", tuple(refs)) for n in range(statements))
        state, _ = run(state, UpsertRequest(claims))
    return state
