"""Conclusions: ``conclusion.compute``, ``conclusion.final`` and ``conclusion.revise``.

A *compute* is an intermediate result citing evidence ids; a *final* is an answer citing
evidence ids and/or compute ids. A conclusion is accepted when, checked in this order,

1. its text is not blank (``empty_statement``);
2. it cites something (``no_citation``);
3. each citation, in request order, is
   * an evidence id that exists (``unknown_evidence``) and is active (``inactive_evidence``);
     the evidence was admitted citing registered references, and references are never
     removed, so an active entry always resolves to registered passages; or
   * (finals only) a conclusion id that exists (``unknown_conclusion``), is a compute
     (``not_citable``; a compute cites no conclusions at all), is active
     (``inactive_conclusion``) and is not stale (``stale_citation``).

An accepted conclusion gets the next ``cc-N``. It *relies on* its evidence citations plus the
evidence of the computes it cites; every change to evidence it relies on (and, for a final,
every revision of a compute it cites) lists it as stale in that change's outcome. The stale
flag is the only thing such a change touches.

``conclusion.revise`` is the repair: the target must exist (``unknown_conclusion``) and be
active (``inactive_conclusion``), stale or not. A replacement is checked as a new conclusion
of the target's kind (a compute stays a compute, a final a final) and becomes the next
version, linked both ways, never stale when created; no replacement retracts the target.
Either way the outcome lists the active finals citing the target, which become stale.
Finals can be revised like computes: a corrected answer is a new version linked to the one it
replaces, so the record shows which answer superseded which.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from registre.lifecycle.evidence import is_blank, mark_stale
from registre.lifecycle.model import (
    RETRACTED,
    SUPERSEDED,
    Accepted,
    ComputeRequest,
    Conclusion,
    ConclusionReviseRequest,
    FinalRequest,
    Rejected,
    Revised,
    Statement,
)
from registre.lifecycle.reasons import reject
from registre.lifecycle.state import Tables, note

__all__ = [
    "check_conclusion",
    "commit_conclusion",
    "commit_conclusion_revise",
    "decide_conclusion",
    "decide_conclusion_revise",
]

ConclusionKind = Literal["compute", "final"]


def check_conclusion(
    tables: Tables, kind: ConclusionKind, statement: Statement
) -> Rejected | tuple[str, ...]:
    """The rejection of ``statement`` as a conclusion of ``kind``, or what it relies on.

    Cost O(citations + citations of the cited computes), independent of history.
    """
    if is_blank(statement.text):
        return reject("empty_statement")
    if not statement.cites:
        return reject("no_citation")
    relies_on: dict[str, None] = {}
    for cited in statement.cites:
        if cited.startswith("ev-"):
            entry = tables.evidence.get(cited)
            if entry is None:
                return reject("unknown_evidence", id=cited)
            if entry.status != "active":
                return reject("inactive_evidence", id=cited, status=entry.status)
            relies_on[cited] = None
            continue
        conclusion = tables.conclusions.get(cited)
        if conclusion is None:
            return reject("unknown_conclusion", id=cited)
        if kind == "compute" or conclusion.kind == "final":
            return reject("not_citable", id=cited, cited_kind=conclusion.kind, citing_kind=kind)
        if conclusion.status != "active":
            return reject("inactive_conclusion", id=cited, status=conclusion.status)
        if conclusion.stale:
            return reject("stale_citation", id=cited)
        for evidence_id in conclusion.relies_on:
            relies_on[evidence_id] = None
    return tuple(relies_on)


def decide_conclusion(
    tables: Tables, request: ComputeRequest | FinalRequest
) -> Accepted | Rejected:
    """Acceptance with the new ``cc-N``, or the rejection."""
    kind: ConclusionKind = "compute" if isinstance(request, ComputeRequest) else "final"
    checked = check_conclusion(tables, kind, Statement(request.text, request.cites))
    if isinstance(checked, Rejected):
        return checked
    return Accepted(f"cc-{tables.next_conclusion}")


def commit_conclusion(
    tables: Tables, request: ComputeRequest | FinalRequest, outcome: Accepted | Rejected
) -> None:
    """Record an accepted conclusion (as ``decide_conclusion`` gave it)."""
    if isinstance(outcome, Rejected):
        return
    kind: ConclusionKind = "compute" if isinstance(request, ComputeRequest) else "final"
    _add(tables, outcome.id, kind, Statement(request.text, request.cites), predecessor=None)


def decide_conclusion_revise(
    tables: Tables, request: ConclusionReviseRequest
) -> Revised | Rejected:
    """New version, retraction, or the rejection; cost O(citations + stale finals)."""
    target = tables.conclusions.get(request.id)
    if target is None:
        return reject("unknown_conclusion", id=request.id)
    if target.status != "active":
        return reject("inactive_conclusion", id=request.id, status=target.status)
    successor: str | None = None
    if request.replacement is not None:
        checked = check_conclusion(tables, target.kind, request.replacement)
        if isinstance(checked, Rejected):
            return checked
        successor = f"cc-{tables.next_conclusion}"
    return Revised(request.id, successor, tuple(tables.citers.get(request.id, ())))


def commit_conclusion_revise(
    tables: Tables, request: ConclusionReviseRequest, outcome: Revised | Rejected
) -> None:
    """Carry out an accepted revision (as ``decide_conclusion_revise`` gave it)."""
    if isinstance(outcome, Rejected):
        return
    old = tables.conclusions[outcome.id]
    _unindex(tables, old)
    if outcome.successor is None or request.replacement is None:
        tables.conclusions[old.id] = replace(old, status=RETRACTED)
    else:
        tables.conclusions[old.id] = replace(old, status=SUPERSEDED, successor=outcome.successor)
        _add(tables, outcome.successor, old.kind, request.replacement, predecessor=old.id)
    mark_stale(tables, outcome.stale)


def _add(
    tables: Tables,
    conclusion_id: str,
    kind: ConclusionKind,
    statement: Statement,
    predecessor: str | None,
) -> None:
    checked = check_conclusion(tables, kind, statement)
    if isinstance(checked, Rejected):  # pragma: no cover - apply verified the outcome first
        raise AssertionError(f"commit of a rejected conclusion: {checked.reason}")
    conclusion = Conclusion(
        id=conclusion_id,
        kind=kind,
        text=statement.text,
        cites=statement.cites,
        relies_on=checked,
        predecessor=predecessor,
    )
    tables.conclusions[conclusion_id] = conclusion
    tables.next_conclusion += 1
    keys = _index_keys(conclusion)
    for key in keys:
        tables.citers.setdefault(key, {})[conclusion_id] = None
    note(tables, conclusion_id, *conclusion.relies_on)


def _unindex(tables: Tables, conclusion: Conclusion) -> None:
    """Drop ``conclusion`` from the citers index (it leaves the active set)."""
    for key in _index_keys(conclusion):
        citing = tables.citers[key]
        del citing[conclusion.id]
        if not citing:
            del tables.citers[key]
    note(tables, conclusion.id, *conclusion.relies_on)


def _index_keys(conclusion: Conclusion) -> tuple[str, ...]:
    """Evidence it relies on, then the computes it cites: the changes that make it stale."""
    computes = tuple(cited for cited in conclusion.cites if cited.startswith("cc-"))
    return conclusion.relies_on + computes
