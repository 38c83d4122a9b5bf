"""Steps 6 and 7 of bundle verification: what the entries mean, replayed and resolved.

Step 6, semantics, over the entries of :data:`attest.verify_entries.SEMANTIC_KINDS` in seq
order:

6.1 lifecycle (full bundles): every ``source.read``, ``evidence.*``, ``conclusion.*``,
    ``context.pin`` and ``context.unpin`` event is re-decided by ``lifecycle.apply`` from the
    empty state, and its recorded outcome must be the one the rules give
    (:class:`LifecycleReplayError`). A partial bundle cannot be replayed: the ids and
    decisions depend on entries it does not disclose; the report says so;
6.2 a pin's ``seq`` names an earlier entry (:class:`PinSourceError`);
6.3 a compaction folds a range that ends before the compaction itself
    (:class:`CompactionRangeError`); that its summary pointers lie inside the range is the
    body schema's rule, checked in step 3.1;
6.4 a compaction's ``pin_set_sha256`` is the digest of the pins live at that point
    (:class:`PinSetDigestError`) -- through the hook :attr:`SemanticHooks.pin_set_sha256`;
6.5 a model call's ``at_seq`` is before the call (:class:`ModelCallPrefixError`);
6.6 a model call's ``projection_sha256`` is reproduced from the ledger prefix up to ``at_seq``
    (:class:`ProjectionDigestError`) -- through the hook :attr:`SemanticHooks.projection_sha256`.

The digest reproductions (6.4, 6.6) belong to the working-context module (issue 5), which
does not exist yet; until a caller passes the hooks these checks are reported as not checked,
never as passed. They need the whole prefix, so they run on full bundles only.

Step 7, claims: every accepted conclusion in the bundle resolves down to source passages --
conclusion -> the evidence and computes it cites -> the references that evidence cites -> the
``source.read`` entry that registered each -- all present in the bundle and earlier than what
cites them (:class:`UnresolvedClaimError`), and nothing it cites was retracted or superseded
by an entry of the bundle before it (:class:`ClaimCitesInactiveError`). The chain is built
from the recorded outcomes, so it is checked for partial bundles too.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from attest.errors import VerificationError
from attest.verify_entries import EntryRecord
from lifecycle import (
    Accepted,
    ComputeRequest,
    ConclusionReviseRequest,
    Event,
    EvidenceReviseRequest,
    FinalRequest,
    LifecycleState,
    PinRequest,
    ReadOutcome,
    ReadRequest,
    Registered,
    ReplayMismatchError,
    Revised,
    UpsertOutcome,
    UpsertRequest,
    apply,
    parse_body,
)

__all__ = [
    "ClaimCitesInactiveError",
    "ClaimsChecked",
    "CompactionRangeError",
    "LifecycleReplayError",
    "ModelCall",
    "ModelCallPrefixError",
    "PinSetDigestError",
    "PinSourceError",
    "ProjectionDigestError",
    "SemanticHooks",
    "SemanticsChecked",
    "SemanticsProgress",
    "UnresolvedClaimError",
    "check_claims",
    "check_semantics",
]


class LifecycleReplayError(ReplayMismatchError):
    """A lifecycle entry whose recorded outcome is not what the rules decide on replay."""


class PinSourceError(VerificationError):
    """A pin whose ``seq`` does not name an entry before the pin."""


class CompactionRangeError(VerificationError):
    """A compaction whose folded range does not end before the compaction entry."""


class PinSetDigestError(VerificationError):
    """A compaction whose pin-set digest is not that of the pins live at that point."""


class ModelCallPrefixError(VerificationError):
    """A model call whose ``at_seq`` is not before the call."""


class ProjectionDigestError(VerificationError):
    """A model call whose projection digest does not reproduce from the ledger prefix."""


class UnresolvedClaimError(VerificationError):
    """A conclusion whose chain does not reach registered source passages inside the bundle."""


class ClaimCitesInactiveError(VerificationError):
    """A conclusion citing evidence or a compute retracted or superseded before it."""


@dataclass(frozen=True)
class ModelCall:
    """What the projection hook gets: the call's seq and body, and the leaves ``0..at_seq``."""

    seq: int
    body: Mapping[str, Any]
    prefix: Sequence[bytes]


@dataclass(frozen=True)
class SemanticHooks:
    """Digest reproductions supplied by the working-context module (issue 5).

    ``pin_set_sha256(state)`` returns the hex digest a compaction records for the live pins
    of ``state`` (read it, do not keep it). ``projection_sha256(call)`` returns the hex digest
    of the projection a model call was sent. ``None``: the check is reported as not checked.
    """

    pin_set_sha256: Callable[[LifecycleState], str] | None = None
    projection_sha256: Callable[[ModelCall], str] | None = None


@dataclass
class SemanticsProgress:
    """The seq being checked, for the report of a failure."""

    seq: int | None = None


@dataclass
class SemanticsChecked:
    """Result of step 6: the lifecycle events (seq, event) for step 7, and what was checked."""

    events: list[tuple[int, Event]] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    not_checked: list[str] = field(default_factory=list)


def check_semantics(
    records: Sequence[EntryRecord],
    *,
    full: bool,
    leaves: Sequence[bytes],
    hooks: SemanticHooks,
    progress: SemanticsProgress,
) -> SemanticsChecked:
    """Step 6 over ``records`` (seq order). ``leaves`` is the whole thread when ``full``."""
    result = SemanticsChecked()
    state = LifecycleState.empty()
    counts = {"lifecycle": 0, "pins": 0, "compactions": 0, "model calls": 0}
    for record in records:
        progress.seq = record.seq
        body = record.body
        if record.kind == "context.compaction":
            counts["compactions"] += 1
            _check_compaction(record)  # 6.3
            if full and hooks.pin_set_sha256 is not None:  # 6.4
                _check_pin_digest(record, hooks.pin_set_sha256(state))
        elif record.kind == "model.call":
            counts["model calls"] += 1
            _check_model_call(record)  # 6.5
            if full and hooks.projection_sha256 is not None:  # 6.6
                call = ModelCall(record.seq, body, leaves[: body["at_seq"] + 1])
                _check_projection(record, hooks.projection_sha256(call))
        else:
            counts["lifecycle"] += 1
            event = parse_body(record.kind, body)
            if isinstance(event.request, PinRequest):
                counts["pins"] += 1
                _check_pin_source(record.seq, event.request)  # 6.2
            if full:  # 6.1
                state = _replay(state, event, record.seq)
            result.events.append((record.seq, event))
    progress.seq = None
    _describe(result, counts, full, hooks)
    return result


def _replay(state: LifecycleState, event: Event, seq: int) -> LifecycleState:
    try:
        return apply(state, event)
    except ReplayMismatchError as exc:
        raise LifecycleReplayError(f"entry seq {seq} ({event.kind}): {exc}") from exc


def _check_pin_source(seq: int, request: PinRequest) -> None:
    if request.seq >= seq:
        raise PinSourceError(
            f"the pin at seq {seq} says its text comes from entry {request.seq}, which is not "
            "an earlier entry: a pin can only carry what the ledger already holds"
        )


def _check_compaction(record: EntryRecord) -> None:
    folded = record.body["folded"]
    if folded["to"] >= record.seq:
        raise CompactionRangeError(
            f"the compaction at seq {record.seq} folds entries {folded['from']}..{folded['to']}"
            f", which do not all come before it: a compaction can only fold the past"
        )


def _check_pin_digest(record: EntryRecord, expected: str) -> None:
    recorded = record.body["pin_set_sha256"]
    if recorded != expected:
        raise PinSetDigestError(
            f"the compaction at seq {record.seq} records pin-set digest {recorded}, but the "
            f"pins live at that point give {expected}: a pin was dropped or changed"
        )


def _check_model_call(record: EntryRecord) -> None:
    if record.body["at_seq"] >= record.seq:
        raise ModelCallPrefixError(
            f"the model call at seq {record.seq} claims a projection built at seq "
            f"{record.body['at_seq']}, which is not before the call"
        )


def _check_projection(record: EntryRecord, expected: str) -> None:
    recorded = record.body["projection_sha256"]
    if recorded != expected:
        raise ProjectionDigestError(
            f"the model call at seq {record.seq} records projection digest {recorded}, but "
            f"the projection of the ledger up to seq {record.body['at_seq']} gives {expected}"
        )


def _describe(
    result: SemanticsChecked, counts: dict[str, int], full: bool, hooks: SemanticHooks
) -> None:
    checked, not_checked = result.checked, result.not_checked
    if full:
        checked.append(f"{counts['lifecycle']} lifecycle event(s) replayed from the empty state")
    elif counts["lifecycle"]:
        not_checked.append(
            f"lifecycle replay of {counts['lifecycle']} disclosed event(s): a partial bundle "
            "lacks the history their decisions depend on"
        )
    checked.append(f"{counts['pins']} pin(s) point at earlier entries")
    checked.append(f"{counts['compactions']} compaction range(s) end before the compaction")
    checked.append(f"{counts['model calls']} model call(s) built from an earlier prefix")
    for count, hook, what in (
        (counts["compactions"], hooks.pin_set_sha256, "compaction pin-set digest(s)"),
        (counts["model calls"], hooks.projection_sha256, "model-call projection digest(s)"),
    ):
        if not count:
            continue
        if hook is None:
            not_checked.append(
                f"{count} {what}: reproducing them needs the working-context module (issue 5)"
            )
        elif not full:
            not_checked.append(f"{count} {what}: a partial bundle lacks the prefix")
        else:
            checked.append(f"{count} {what} reproduced")


# --- step 7 ----------------------------------------------------------------------------


@dataclass(frozen=True)
class _Admitted:
    seq: int
    cites: tuple[str, ...]


@dataclass
class ClaimsChecked:
    """Result of step 7: how many conclusions resolved, down to how many passages."""

    conclusions: int = 0
    finals: int = 0
    passages: int = 0
    source_reads: int = 0


@dataclass
class _Index:
    references: dict[str, int] = field(default_factory=dict)
    evidence: dict[str, _Admitted] = field(default_factory=dict)
    conclusions: dict[str, _Admitted] = field(default_factory=dict)
    finals: set[str] = field(default_factory=set)
    inactive: dict[str, int] = field(default_factory=dict)


def check_claims(events: Sequence[tuple[int, Event]], progress: SemanticsProgress) -> ClaimsChecked:
    """Step 7 over the lifecycle ``events`` (seq order) of the bundle."""
    index = _index(events)
    passages: set[str] = set()
    resolved: set[str] = set()
    for conclusion_id, admitted in index.conclusions.items():
        progress.seq = admitted.seq
        _resolve_conclusion(index, conclusion_id, admitted, passages, resolved)
    progress.seq = None
    return ClaimsChecked(
        conclusions=len(index.conclusions),
        finals=len(index.finals),
        passages=len(passages),
        source_reads=len({seq for ref, seq in index.references.items() if ref in passages}),
    )


def _index(events: Sequence[tuple[int, Event]]) -> _Index:
    index = _Index()
    for seq, event in events:
        request, outcome = event.request, event.outcome
        if isinstance(request, ReadRequest) and isinstance(outcome, ReadOutcome):
            for ref, result in zip(request.refs, outcome.results, strict=True):
                if isinstance(result, Registered):
                    index.references.setdefault(ref.ref, seq)
        elif isinstance(request, UpsertRequest) and isinstance(outcome, UpsertOutcome):
            for statement, item in zip(request.statements, outcome.results, strict=True):
                if isinstance(item, Accepted):
                    index.evidence[item.id] = _Admitted(seq, statement.cites)
        elif isinstance(request, ComputeRequest | FinalRequest) and isinstance(outcome, Accepted):
            index.conclusions[outcome.id] = _Admitted(seq, request.cites)
            if isinstance(request, FinalRequest):
                index.finals.add(outcome.id)
        elif isinstance(request, EvidenceReviseRequest | ConclusionReviseRequest) and (
            isinstance(outcome, Revised)
        ):
            index.inactive.setdefault(request.id, seq)
            if outcome.successor is not None and request.replacement is not None:
                table = (
                    index.evidence
                    if isinstance(request, EvidenceReviseRequest)
                    else index.conclusions
                )
                table[outcome.successor] = _Admitted(seq, request.replacement.cites)
                if request.id in index.finals:
                    index.finals.add(outcome.successor)
    return index


def _resolve_conclusion(
    index: _Index,
    conclusion_id: str,
    admitted: _Admitted,
    passages: set[str],
    resolved: set[str],
) -> None:
    if conclusion_id in resolved:
        return
    for cited in admitted.cites:
        if cited.startswith("ev-"):
            evidence = _cited(index.evidence, cited, conclusion_id, admitted.seq, "admission")
            _check_active(index, cited, conclusion_id, admitted.seq)
            for ref in evidence.cites:
                registered = index.references.get(ref)
                if registered is None or registered >= evidence.seq:
                    raise UnresolvedClaimError(
                        f"conclusion {conclusion_id} (seq {admitted.seq}) rests on {cited}, "
                        f"which cites source reference {ref!r}; no source.read before seq "
                        f"{evidence.seq} in the bundle registers that passage"
                    )
                passages.add(ref)
        else:
            compute = _cited(index.conclusions, cited, conclusion_id, admitted.seq, "acceptance")
            _check_active(index, cited, conclusion_id, admitted.seq)
            _resolve_conclusion(index, cited, compute, passages, resolved)
    resolved.add(conclusion_id)


def _cited(table: dict[str, _Admitted], cited: str, citing: str, seq: int, what: str) -> _Admitted:
    found = table.get(cited)
    if found is None or found.seq >= seq:
        raise UnresolvedClaimError(
            f"conclusion {citing} (seq {seq}) cites {cited}, whose {what} is not in the bundle "
            f"before it: the chain to the source passages cannot be followed"
        )
    return found


def _check_active(index: _Index, cited: str, citing: str, seq: int) -> None:
    ended = index.inactive.get(cited)
    if ended is not None and ended < seq:
        raise ClaimCitesInactiveError(
            f"conclusion {citing} (seq {seq}) cites {cited}, which the entry at seq {ended} "
            "retracted or superseded: inactive evidence can never be cited again"
        )
