"""Steps 6 and 7 of bundle verification: what the entries mean, replayed and resolved.

Step 6, semantics, over the entries of
:data:`registre.attest.verify.entries_checked.SEMANTIC_KINDS` in seq
order:

6.1 lifecycle (full bundles, and partial bundles that proved in step 4.6 that they disclose
    every lifecycle entry of their tree): every ``source.read``, ``evidence.*``,
    ``conclusion.*``, ``context.pin`` and ``context.unpin`` event is re-decided by
    ``registre.lifecycle.apply`` from the empty state, and its recorded outcome must be the one
    the rules give (:class:`LifecycleReplayError`). Any other partial bundle cannot be
    replayed: the ids and decisions depend on entries it does not disclose; the report says so;
6.2 a pin's ``seq`` names an earlier entry (:class:`PinSourceError`);
6.3 a compaction folds (and stubs) only entries before it (:class:`CompactionFoldsFutureError`);
    that its summary pointers lie inside the folded range is the body schema's rule,
    checked in step 3.1;
6.4 when the lifecycle was replayed: a compaction's ``pin_set_sha256`` is
    :func:`registre.lifecycle.pin_set_sha256` of the pins live at that point of the replay,
    so every live pin was carried verbatim
    (:class:`PinSetDigestError`);
6.5 full bundles: the rest of a compaction's rules against the working-context fold
    (``specs/context.md``: fold boundaries, tool calls kept with their results, recent turns,
    summary share, quotes, token counts) -- the hook :attr:`SemanticHooks.compaction`;
6.6 a model call's ``at_seq`` is before the call (:class:`ModelCallPrefixError`);
6.7 full bundles: a model call's ``projection_sha256`` is reproduced from the ledger prefix up
    to ``at_seq`` -- the hook :attr:`SemanticHooks.model_call`.

The hooks (6.5, 6.7) replay the working context (issue 5); :mod:`registre.attest.verify.context`
fills them, and the verifier uses it unless told otherwise. A caller may pass other hooks,
or none: then the report lists those checks as not checked, never as passed.

Step 7, claims: every accepted conclusion in the bundle resolves down to source passages --
conclusion -> the evidence and computes it cites -> the references that evidence cites -> the
``source.read`` entry that registered each -- all present in the bundle and earlier than what
cites them (:class:`UnresolvedClaimError`), and nothing it cites was retracted or superseded
by an entry of the bundle before it (:class:`ClaimCitesInactiveError`). The chain is built
from the recorded outcomes, so it is checked for partial bundles too. 7.2: when the lifecycle
was replayed, :func:`status_at_head` names every disclosed conclusion and cited id that is
stale, superseded or retracted at the checkpoint.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import islice
from typing import Any

from registre.attest.entries import LeafView
from registre.attest.verify._claim_table import Admitted as _Admitted
from registre.attest.verify._claim_table import AdmittedTable
from registre.attest.verify._entry_records import EntryRecord
from registre.attest.verify.report import plural
from registre.errors import VerificationError
from registre.lifecycle import (
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
    pin_set_sha256,
)

__all__ = [
    "ClaimCitesInactiveError",
    "ClaimIndex",
    "ClaimsChecked",
    "Compaction",
    "CompactionFoldsFutureError",
    "IdStatus",
    "LifecycleReplayError",
    "ModelCall",
    "ModelCallPrefixError",
    "PinSetDigestError",
    "PinSourceError",
    "SemanticHooks",
    "SemanticsChecked",
    "SemanticsProgress",
    "UnresolvedClaimError",
    "check_claims",
    "check_semantics",
    "status_at_head",
]


class LifecycleReplayError(ReplayMismatchError):
    """A lifecycle entry whose recorded outcome is not what the rules decide on replay."""


class PinSourceError(VerificationError):
    """A pin whose ``seq`` does not name an entry before the pin."""


class CompactionFoldsFutureError(VerificationError):
    """A compaction whose folded range does not end before the compaction entry."""


class PinSetDigestError(VerificationError):
    """A compaction whose pin-set digest is not that of the pins live at that point."""


class ModelCallPrefixError(VerificationError):
    """A model call whose ``at_seq`` is not before the call."""


class UnresolvedClaimError(VerificationError):
    """A conclusion whose chain does not reach registered source passages inside the bundle."""


class ClaimCitesInactiveError(VerificationError):
    """A conclusion citing evidence or a compute retracted or superseded before it."""


@dataclass(frozen=True)
class ModelCall:
    """What the model-call hook gets: the call's seq and body, the leaves ``0..at_seq``
    (verified bytes, in seq order) and the lifecycle state after them when the replay has it
    (no lifecycle entry lies between ``at_seq`` and the call; else ``None``, and a hook that
    needs it replays ``prefix``). Read it, do not keep it."""

    seq: int
    body: Mapping[str, Any]
    prefix: Sequence[bytes]
    lifecycle: LifecycleState | None = None


@dataclass(frozen=True)
class Compaction:
    """What the compaction hook gets: the compaction's seq, actor and body, the leaves before
    it (verified bytes, ``0..seq-1``) and the lifecycle state there (read it, do not keep it)."""

    seq: int
    actor: str
    body: Mapping[str, Any]
    prefix: Sequence[bytes]
    lifecycle: LifecycleState


@dataclass(frozen=True)
class SemanticHooks:
    """Checks that replay the working context (issue 5); ``None``: not checked, and the report
    says so. Each returns if the entry keeps the rules of ``specs/context.md`` and raises a
    :class:`~registre.errors.VerificationError` (or MalformedError) otherwise.

    ``compaction(point)``: the compaction against the context fold of ``point.prefix``.
    ``model_call(call)``: the recorded projection digest reproduces from ``call.prefix``.
    """

    compaction: Callable[[Compaction], None] | None = None
    model_call: Callable[[ModelCall], None] | None = None


@dataclass
class SemanticsProgress:
    """The seq being checked, for the report of a failure."""

    seq: int | None = None


@dataclass
class SemanticsChecked:
    """Result of step 6: what step 7 needs of the lifecycle events, and what was checked.

    ``claims`` indexes every lifecycle event (what step 7 reads of them: :class:`ClaimIndex`);
    ``events`` holds the events themselves, (seq, event), unless :func:`check_semantics` was
    told not to keep them (a parsed event costs a few hundred bytes to a few KB; the index
    only the ids, seqs and citations)."""

    events: list[tuple[int, Event]] = field(default_factory=list)
    checked: list[str] = field(default_factory=list)
    not_checked: list[str] = field(default_factory=list)
    state: LifecycleState | None = None
    """The lifecycle state after every event of the tree (set when it was replayed)."""
    claims: ClaimIndex = field(default_factory=lambda: ClaimIndex())


def check_semantics(
    records: Sequence[EntryRecord],
    *,
    full: bool,
    leaves: Sequence[bytes],
    hooks: SemanticHooks,
    progress: SemanticsProgress,
    lifecycle_complete: bool | None = None,
    keep_events: bool = True,
) -> SemanticsChecked:
    """Step 6 over ``records`` (seq order). ``leaves`` is the whole thread when ``full``.
    ``lifecycle_complete`` (default: ``full``): the records hold every lifecycle entry of the
    tree, so 6.1 and 6.4 run; ``result.state`` is then the lifecycle at the tree's head.
    ``result.claims`` indexes the lifecycle events for step 7; ``keep_events`` False leaves
    ``result.events`` empty (the events are dropped once indexed)."""
    replay = full if lifecycle_complete is None else lifecycle_complete or full
    result = SemanticsChecked()
    state = LifecycleState.empty()
    counts = {"lifecycle": 0, "pins": 0, "compactions": 0, "model calls": 0}
    last_lifecycle = -1
    for record in records:
        progress.seq = record.seq
        body = record.body
        if record.kind == "context.compaction":
            counts["compactions"] += 1
            _check_compaction_range(record)  # 6.3
            if replay:
                _check_pin_digest(record, pin_set_sha256(state))  # 6.4
            if full and hooks.compaction is not None:  # 6.5
                prefix = _Prefix(leaves, record.seq)
                hooks.compaction(Compaction(record.seq, record.actor, body, prefix, state))
        elif record.kind == "model.call":
            counts["model calls"] += 1
            _check_model_call(record)  # 6.6
            if full and hooks.model_call is not None:  # 6.7
                at_seq = body["at_seq"]
                lifecycle = state if last_lifecycle <= at_seq else None
                prefix = _Prefix(leaves, at_seq + 1)
                hooks.model_call(ModelCall(record.seq, body, prefix, lifecycle))
        else:
            counts["lifecycle"] += 1
            event = parse_body(record.kind, body)
            if isinstance(event.request, PinRequest):
                counts["pins"] += 1
                _check_pin_source(record.seq, event.request)  # 6.2
            if replay:  # 6.1
                state = _replay(state, event, record.seq)
                last_lifecycle = record.seq
            result.claims.add(record.seq, event)
            if keep_events:
                result.events.append((record.seq, event))
    progress.seq = None
    _describe(result, counts, full, replay, hooks)
    if replay:
        result.state = state
    return result


class _Prefix(LeafView):
    """The first ``size`` of ``leaves``, without copying them (a hook reads a prefix per
    compaction and per model call: slicing would copy O(thread) each time)."""

    __slots__ = ("_leaves", "_size")

    def __init__(self, leaves: Sequence[bytes], size: int) -> None:
        self._leaves = leaves
        self._size = min(size, len(leaves))

    def __len__(self) -> int:
        return self._size

    def __iter__(self) -> Iterator[bytes]:
        return islice(self._leaves, self._size)

    def _leaf(self, index: int) -> bytes:
        return self._leaves[index]


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


def _check_compaction_range(record: EntryRecord) -> None:
    folded = record.body.get("folded")
    if folded is not None and folded["to"] >= record.seq:
        raise CompactionFoldsFutureError(
            f"the compaction at seq {record.seq} folds entries {folded['from']}..{folded['to']}"
            f", which do not all come before it: a compaction can only fold the past"
        )
    for seq in record.body.get("stubbed", ()):
        if seq >= record.seq:
            raise CompactionFoldsFutureError(
                f"the compaction at seq {record.seq} stubs entry {seq}, which does not come "
                "before it: a compaction can only stub the past"
            )
    for seq, _head, _tail in record.body.get("elided", ()):
        if seq >= record.seq:
            raise CompactionFoldsFutureError(
                f"the compaction at seq {record.seq} elides entry {seq}, which does not come "
                "before it: a compaction can only elide the past"
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


def _describe(
    result: SemanticsChecked,
    counts: dict[str, int],
    full: bool,
    replay: bool,
    hooks: SemanticHooks,
) -> None:
    checked, not_checked = result.checked, result.not_checked
    compactions, calls = counts["compactions"], counts["model calls"]
    if replay:
        checked.append(
            f"{plural(counts['lifecycle'], 'lifecycle event')} replayed from the empty state"
        )
    elif counts["lifecycle"]:
        not_checked.append(
            f"lifecycle replay of {plural(counts['lifecycle'], 'disclosed event')}: a partial "
            "bundle lacks the history their decisions depend on"
        )
    checked.append(f"{plural(counts['pins'], 'pin')} point at earlier entries")
    checked.append(f"{plural(compactions, 'compaction')} fold and stub only earlier entries")
    if compactions and replay:
        checked.append(
            f"{plural(compactions, 'compaction pin-set digest')} = the live pins replayed"
        )
    elif compactions:
        not_checked.append(
            f"{plural(compactions, 'compaction pin-set digest')}: needs the full history"
        )
    checked.append(f"{plural(calls, 'model call')} built from an earlier prefix")
    for count, hook, what, done in (
        (
            compactions,
            hooks.compaction,
            "compaction",
            "checked against the working-context rules",
        ),
        (calls, hooks.model_call, "model-call projection digest", "reproduced"),
    ):
        if not count:
            continue
        counted = plural(count, what)
        if not full:
            not_checked.append(f"{counted} {done}: a partial bundle lacks the prefix")
        elif hook is None:
            not_checked.append(f"{counted} {done}: needs the working-context replay")
        else:
            checked.append(f"{counted} {done}")


# --- step 7 ----------------------------------------------------------------------------


@dataclass
class ClaimsChecked:
    """Result of step 7: how many conclusions resolved, down to how many passages."""

    conclusions: int = 0
    finals: int = 0
    passages: int = 0
    source_reads: int = 0


@dataclass
class ClaimIndex:
    """What step 7 reads of the lifecycle events, added in seq order (:meth:`add`): the seq
    registering each source reference, the admission (seq, citations) of each evidence and
    conclusion id, the final conclusions and the seq that ended each revised id. Built from
    the recorded outcomes; the same whether built while step 6 replays or afterwards
    (:meth:`of`). ``evidence`` is packed by id number (:class:`AdmittedTable`)."""

    references: dict[str, int] = field(default_factory=dict)
    evidence: AdmittedTable = field(default_factory=lambda: AdmittedTable("ev"))
    conclusions: dict[str, _Admitted] = field(default_factory=dict)
    finals: set[str] = field(default_factory=set)
    inactive: dict[str, int] = field(default_factory=dict)

    @classmethod
    def of(cls, events: Iterable[tuple[int, Event]]) -> ClaimIndex:
        """The index of ``events`` (seq order)."""
        index = cls()
        for seq, event in events:
            index.add(seq, event)
        return index

    def add(self, seq: int, event: Event) -> None:
        """Take in the lifecycle event at ``seq`` (after every earlier one)."""
        request, outcome = event.request, event.outcome
        if isinstance(request, ReadRequest) and isinstance(outcome, ReadOutcome):
            for ref, result in zip(request.refs, outcome.results, strict=True):
                if isinstance(result, Registered):
                    self.references.setdefault(ref.ref, seq)
        elif isinstance(request, UpsertRequest) and isinstance(outcome, UpsertOutcome):
            for statement, item in zip(request.statements, outcome.results, strict=True):
                if isinstance(item, Accepted):
                    self.evidence[item.id] = _Admitted(seq, statement.cites)
        elif isinstance(request, ComputeRequest | FinalRequest) and isinstance(outcome, Accepted):
            self.conclusions[outcome.id] = _Admitted(seq, request.cites)
            if isinstance(request, FinalRequest):
                self.finals.add(outcome.id)
        elif isinstance(request, EvidenceReviseRequest | ConclusionReviseRequest) and (
            isinstance(outcome, Revised)
        ):
            self.inactive.setdefault(request.id, seq)
            if outcome.successor is not None and request.replacement is not None:
                admitted = _Admitted(seq, request.replacement.cites)
                if isinstance(request, EvidenceReviseRequest):
                    self.evidence[outcome.successor] = admitted
                else:
                    self.conclusions[outcome.successor] = admitted
                if request.id in self.finals:
                    self.finals.add(outcome.successor)


@dataclass(frozen=True)
class IdStatus:
    """An id a disclosed conclusion cites (or a disclosed conclusion) that is not active and
    fresh at the checkpoint: ``status`` is ``"stale"`` (it relies on evidence or a compute
    that changed since), ``"superseded"`` (by ``successor``) or ``"retracted"``; ``final``
    when it is a version of a final conclusion."""

    id: str
    status: str
    final: bool = False
    successor: str | None = None

    def describe(self) -> str:
        what = "final " if self.final else ""
        if self.status == "superseded":
            return f"{what}{self.id} superseded by {self.successor}"
        return f"{what}{self.id} {self.status}"


def status_at_head(
    events: Sequence[tuple[int, Event]] | ClaimIndex, state: LifecycleState
) -> list[IdStatus]:
    """Step 7.2: every conclusion the bundle discloses, and every id they cite, that is not
    active and fresh in ``state`` (the lifecycle replayed up to the checkpoint), by id.
    ``events``: the lifecycle events (seq order) or their :class:`ClaimIndex`."""
    index = _index(events)
    named: set[str] = set(index.conclusions)
    for admitted in index.conclusions.values():
        named.update(admitted.cites)
    found: list[IdStatus] = []
    for item in sorted(named, key=_id_key):
        final = item in index.finals
        if item.startswith("ev-"):
            evidence = state.evidence(item)
            if evidence is not None and evidence.status != "active":
                found.append(IdStatus(item, evidence.status, final, evidence.successor))
            continue
        conclusion = state.conclusion(item)
        if conclusion is None:
            continue
        if conclusion.status != "active":
            found.append(IdStatus(item, conclusion.status, final, conclusion.successor))
        elif conclusion.stale:
            found.append(IdStatus(item, "stale", final))
    return found


def _id_key(item: str) -> tuple[str, int]:
    prefix, _, number = item.partition("-")
    return prefix, int(number) if number.isdigit() else -1


def check_claims(
    events: Sequence[tuple[int, Event]] | ClaimIndex, progress: SemanticsProgress
) -> ClaimsChecked:
    """Step 7 over the lifecycle ``events`` (seq order) of the bundle, or their
    :class:`ClaimIndex`."""
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


def _index(events: Sequence[tuple[int, Event]] | ClaimIndex) -> ClaimIndex:
    return events if isinstance(events, ClaimIndex) else ClaimIndex.of(events)


def _resolve_conclusion(
    index: ClaimIndex,
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


def _cited(
    table: Mapping[str, _Admitted], cited: str, citing: str, seq: int, what: str
) -> _Admitted:
    found = table.get(cited)
    if found is None or found.seq >= seq:
        raise UnresolvedClaimError(
            f"conclusion {citing} (seq {seq}) cites {cited}, whose {what} is not in the bundle "
            f"before it: the chain to the source passages cannot be followed"
        )
    return found


def _check_active(index: ClaimIndex, cited: str, citing: str, seq: int) -> None:
    ended = index.inactive.get(cited)
    if ended is not None and ended < seq:
        raise ClaimCitesInactiveError(
            f"conclusion {citing} (seq {seq}) cites {cited}, which the entry at seq {ended} "
            "retracted or superseded: inactive evidence can never be cited again"
        )
