"""Evidence: ``evidence.upsert`` admits statements, ``evidence.revise`` supersedes or retracts.

A statement is admissible when, checked in this order,

1. its text is not blank (``empty_statement``; blank = empty or only the ASCII whitespace
   characters U+0009-U+000D and U+0020, see :func:`is_blank`);
2. it cites at least one reference (``no_citation``);
3. every cited reference is registered (``unregistered_reference``, naming the first one that
   is not).

An upsert decides each statement independently; an accepted one gets the next ``ev-N``. The
outcome of a batch is therefore exactly the outcomes of its statements decided one by one,
where earlier acceptances only move the id counter.

A revision of ``id`` is decided in this order: ``id`` must exist (``unknown_evidence``) and be
active (``inactive_evidence``); then a replacement, if any, must be admissible (same checks as
above, same reasons). An accepted supersession creates the successor ``ev-N`` and links both
ways; a retraction (no replacement) only changes the status. Either way the outcome lists the
active conclusions relying on ``id``, which become stale; conclusions are never edited
otherwise. A rejected revision changes nothing.
"""

from __future__ import annotations

from dataclasses import replace

from registre.lifecycle.model import (
    RETRACTED,
    SUPERSEDED,
    Accepted,
    EvidenceEntry,
    EvidenceReviseRequest,
    Rejected,
    Revised,
    Statement,
    UpsertOutcome,
    UpsertRequest,
)
from registre.lifecycle.reasons import reject
from registre.lifecycle.state import Tables, note

__all__ = [
    "check_statement",
    "commit_evidence_revise",
    "commit_upsert",
    "decide_evidence_revise",
    "decide_upsert",
    "is_blank",
    "mark_stale",
]

_BLANK = "\t\n\x0b\x0c\r "


def is_blank(text: str) -> bool:
    """Whether ``text`` is empty or made only of U+0009-U+000D and U+0020."""
    return not text.strip(_BLANK)


def check_statement(tables: Tables, statement: Statement) -> Rejected | None:
    """The rejection of ``statement`` as evidence, or ``None`` if admissible.
    Cost O(len(statement.cites))."""
    if is_blank(statement.text):
        return reject("empty_statement")
    if not statement.cites:
        return reject("no_citation")
    references = tables.references
    for ref in statement.cites:
        if ref not in references:
            return reject("unregistered_reference", ref=ref)
    return None


def decide_upsert(tables: Tables, request: UpsertRequest) -> UpsertOutcome:
    """One result per statement. Cost O(total citations), independent of history."""
    next_number = tables.next_evidence
    results: list[Accepted | Rejected] = []
    for statement in request.statements:
        rejection = check_statement(tables, statement)
        if rejection is None:
            results.append(Accepted(f"ev-{next_number}"))
            next_number += 1
        else:
            results.append(rejection)
    return UpsertOutcome(tuple(results))


def commit_upsert(tables: Tables, request: UpsertRequest, outcome: UpsertOutcome) -> None:
    """Add the entries ``outcome`` (as ``decide_upsert`` gave it) accepted."""
    for statement, result in zip(request.statements, outcome.results, strict=True):
        if isinstance(result, Accepted):
            tables.evidence[result.id] = EvidenceEntry(
                id=result.id, text=statement.text, cites=statement.cites
            )
            tables.next_evidence += 1
            note(tables, result.id)


def decide_evidence_revise(tables: Tables, request: EvidenceReviseRequest) -> Revised | Rejected:
    """Supersession, retraction or the rejection; cost O(citations + stale conclusions)."""
    target = tables.evidence.get(request.id)
    if target is None:
        return reject("unknown_evidence", id=request.id)
    if target.status != "active":
        return reject("inactive_evidence", id=request.id, status=target.status)
    successor: str | None = None
    if request.replacement is not None:
        rejection = check_statement(tables, request.replacement)
        if rejection is not None:
            return rejection
        successor = f"ev-{tables.next_evidence}"
    return Revised(request.id, successor, tuple(tables.citers.get(request.id, ())))


def commit_evidence_revise(
    tables: Tables, request: EvidenceReviseRequest, outcome: Revised | Rejected
) -> None:
    """Carry out an accepted revision (as ``decide_evidence_revise`` gave it)."""
    if isinstance(outcome, Rejected):
        return
    old = tables.evidence[outcome.id]
    if outcome.successor is None or request.replacement is None:
        tables.evidence[old.id] = replace(old, status=RETRACTED)
    else:
        tables.evidence[old.id] = replace(old, status=SUPERSEDED, successor=outcome.successor)
        tables.evidence[outcome.successor] = EvidenceEntry(
            id=outcome.successor,
            text=request.replacement.text,
            cites=request.replacement.cites,
            predecessor=old.id,
        )
        tables.next_evidence += 1
        note(tables, outcome.successor)
    note(tables, old.id)
    mark_stale(tables, outcome.stale)


def mark_stale(tables: Tables, conclusion_ids: tuple[str, ...]) -> None:
    """Set the stale flag of each listed conclusion (O(len(conclusion_ids)))."""
    conclusions = tables.conclusions
    for conclusion_id in conclusion_ids:
        current = conclusions[conclusion_id]
        if not current.stale:
            conclusions[conclusion_id] = replace(current, stale=True)
            note(tables, conclusion_id)
