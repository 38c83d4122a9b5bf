"""The thread's lifecycle API: read sources, admit and revise evidence, conclude, pin.

The lifecycle wing of :class:`registre.ledger.thread.Thread`::

    thread.read_source([source_ref("r1", "report.pdf", "p. 4", passage=text)])
    result = thread.evidence.upsert([{"text": "Revenue was EUR 4.2m.", "cites": ["r1"]}])
    final = thread.conclude("final", "Revenue grew 10%.", ["ev-1"])
    thread.evidence.revise("ev-1", {"text": "Revenue was EUR 4.3m.", "cites": ["r2"]})
    thread.conclusions.list(stale=True)        # the final is now stale
    thread.conclusions.revise(final.id, {...})  # the repair

Every call that changes something is ONE ledger entry ``{"request": ..., "outcome": ...}``
decided under the thread's write lock and written with its derived rows in one transaction
(:func:`registre.ledger.lifecycle.store.record`). Refusals are recorded too, so the ledger shows
every request and what the rules made of it:

* every request the rules refuse raises a :class:`LifecycleRefusedError` subclass whose
  ``seq`` is the entry that recorded the refusal -- an unregistered reference is refused the
  same way whether ``evidence.upsert`` or ``conclude`` cites it: single requests
  (``conclude``, ``evidence.revise``, ``conclusions.revise``, ``pin``, ``unpin``) with the
  rule's sentence; batches (``read_source``, ``evidence.upsert``), whose items are decided
  one by one, when any item was rejected (:class:`ReadRefusedError`,
  :class:`EvidenceRefusedError`), naming the first and carrying the whole
  :class:`BatchResult` in ``result`` (the accepted items stand);
* ``partial=True`` on a batch returns its :class:`BatchResult` instead, rejected items and
  all, for a caller that handles them itself (an agent loop, the command line, the MCP
  server).

Malformed requests raise LifecycleFormatError (a MalformedError) with nothing written.
"""

from __future__ import annotations

import builtins
import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from registre.errors import RefusedError
from registre.ledger.core.database import Database
from registre.ledger.core.thread_core import ThreadCore
from registre.ledger.lifecycle.store import current_state, record
from registre.ledger.lifecycle.views import (
    ConclusionRecord,
    EvidenceRecord,
    PinRecord,
    ReferenceRecord,
    TraceNode,
    evidence_history,
    get_conclusion,
    get_evidence,
    list_conclusions,
    list_evidence,
    list_pins,
    list_references,
    trace,
)
from registre.lifecycle import (
    Accepted,
    ComputeRequest,
    ConclusionReviseRequest,
    EvidenceReviseRequest,
    FinalRequest,
    LifecycleFormatError,
    LifecycleState,
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

__all__ = [
    "DEFAULT_ACTOR",
    "BatchRefusedError",
    "BatchResult",
    "ConclusionBook",
    "ConclusionRefusedError",
    "EvidenceBank",
    "EvidenceRefusedError",
    "LifecycleRefusedError",
    "LifecycleThread",
    "PinRefusedError",
    "ReadRefusedError",
    "RevisionRefusedError",
    "StepResult",
    "source_ref",
]

DEFAULT_ACTOR = "agent"


class LifecycleRefusedError(RefusedError):
    """A single lifecycle request the rules refused. The message is the rule's sentence;
    ``reason`` its code; ``kind`` the entry kind; ``seq`` the entry recording the refusal
    (the refusal is on the ledger; nothing else changed)."""

    def __init__(self, kind: str, rejected: Rejected, seq: int) -> None:
        self.kind = kind
        self.reason = rejected.reason
        self.seq = seq
        super().__init__(rejected.message)


class ConclusionRefusedError(LifecycleRefusedError):
    """A ``conclusion.compute`` or ``conclusion.final`` the rules refused."""


class RevisionRefusedError(LifecycleRefusedError):
    """An ``evidence.revise`` or ``conclusion.revise`` the rules refused."""


class PinRefusedError(LifecycleRefusedError):
    """A ``context.pin`` or ``context.unpin`` the rules refused."""


class BatchRefusedError(LifecycleRefusedError):
    """A batch (``source.read`` or ``evidence.upsert``) with at least one item the rules
    rejected. ``result`` is the whole :class:`BatchResult` (the accepted items stand: the
    batch is one entry, recorded); the message names the first rejected item and its rule;
    ``reason`` is that item's."""

    _items = "items"

    def __init__(self, kind: str, result: BatchResult) -> None:
        self.result = result
        (index, first), *others = result.rejected
        super().__init__(kind, first, result.seq)
        total = len(result.outcome.results)
        accepted = f", {', '.join(result.accepted)} accepted" if result.accepted else ""
        tally = f"{len(others) + 1} of {total} rejected; recorded as seq {result.seq}{accepted}"
        self.args = (
            f"{self._items}[{index}] rejected ({first.reason}): "
            f"{first.message.rstrip('.')} ({tally})",
        )
        self.with_hint(
            "the error's result lists every item; pass partial=True to receive the "
            "BatchResult instead of this error"
        )


class ReadRefusedError(BatchRefusedError):
    """A ``read_source`` batch with a rejected reference (e.g. an id registered before with
    another passage)."""

    _items = "refs"


class EvidenceRefusedError(BatchRefusedError):
    """An ``evidence.upsert`` batch with a rejected statement (e.g. citing nothing, or a
    reference no ``read_source`` registered)."""

    _items = "statements"


@dataclass(frozen=True)
class BatchResult:
    """A ``source.read`` or ``evidence.upsert`` recorded as entry ``seq``: one result per item,
    in request order, in ``outcome.results``."""

    seq: int
    outcome: ReadOutcome | UpsertOutcome

    @property
    def accepted(self) -> tuple[str, ...]:
        """The ids (upsert) or references (read) accepted, in request order."""
        return tuple(
            result.ref if isinstance(result, Registered) else result.id
            for result in self.outcome.results
            if not isinstance(result, Rejected)
        )

    @property
    def rejected(self) -> tuple[tuple[int, Rejected], ...]:
        """``(position in the request, rejection)`` of every rejected item."""
        return tuple(
            (index, result)
            for index, result in enumerate(self.outcome.results)
            if isinstance(result, Rejected)
        )

    @property
    def all_accepted(self) -> bool:
        """Whether no item was rejected."""
        return not self.rejected


@dataclass(frozen=True)
class StepResult:
    """An accepted single request recorded as entry ``seq``. ``id`` is the conclusion or pin
    created (compute, final, pin), the pin ended (unpin), or the item revised; for revisions
    ``successor`` is the new version (None: retracted) and ``stale`` the conclusions the change
    left stale."""

    seq: int
    outcome: Accepted | Revised

    @property
    def id(self) -> str:
        return self.outcome.id

    @property
    def successor(self) -> str | None:
        return self.outcome.successor if isinstance(self.outcome, Revised) else None

    @property
    def stale(self) -> tuple[str, ...]:
        return self.outcome.stale if isinstance(self.outcome, Revised) else ()


def source_ref(
    ref: str, source: str, location: str, *, passage: str | None = None, sha256: str | None = None
) -> SourceRef:
    """A reference to ``location`` in ``source``, with the SHA-256 of the ``passage`` text
    (UTF-8) or the given hex ``sha256``; exactly one of the two (LifecycleFormatError)."""
    if (passage is None) == (sha256 is None):
        raise LifecycleFormatError("sha256", "give either the passage text or its SHA-256")
    digest = sha256 if passage is None else hashlib.sha256(passage.encode("utf-8")).hexdigest()
    assert digest is not None
    return SourceRef(ref, source, location, digest)


class EvidenceBank:
    """``thread.evidence``: admit, revise and read the thread's evidence entries."""

    def __init__(self, db: Database, thread: str) -> None:
        self._db = db
        self._thread = thread

    def upsert(
        self,
        statements: Iterable[Statement | Mapping[str, Any]],
        *,
        actor: str = DEFAULT_ACTOR,
        partial: bool = False,
    ) -> BatchResult:
        """Propose ``statements`` (``{"text", "cites": [ref, ...]}``); each is decided on its
        own and the batch is recorded as one entry. EvidenceRefusedError if any was rejected
        (``error.result`` holds every item's outcome; the accepted ones stand), unless
        ``partial``: then the BatchResult is returned, rejections and all."""
        items = tuple(_statement(s, f"statements[{i}]") for i, s in enumerate(statements))
        request = UpsertRequest(items)
        seq, outcome = _record(self._db, self._thread, request, actor)
        assert isinstance(outcome, UpsertOutcome)
        return _batch(request.kind, BatchResult(seq, outcome), partial, EvidenceRefusedError)

    def revise(
        self,
        evidence_id: str,
        replacement: Statement | Mapping[str, Any] | None = None,
        *,
        actor: str = DEFAULT_ACTOR,
    ) -> StepResult:
        """Supersede ``evidence_id`` by ``replacement``, or retract it when None.
        RevisionRefusedError if refused (e.g. inactive evidence, a replacement citing an
        unregistered reference): nothing changes but the recorded refusal."""
        statement = None if replacement is None else _statement(replacement, "replacement")
        request = EvidenceReviseRequest(evidence_id, statement)
        return _single(self._db, self._thread, request, actor, RevisionRefusedError)

    def list(self, status: str | None = None) -> builtins.list[EvidenceRecord]:
        """Every entry, or those with ``status`` (active, superseded, retracted), by id."""
        return list_evidence(self._db.engine, self._thread, status)

    def get(self, evidence_id: str) -> EvidenceRecord:
        """Entry ``evidence_id`` (UnknownItemError if the thread has none)."""
        return get_evidence(self._db.engine, self._thread, evidence_id)

    def history(self, evidence_id: str) -> builtins.list[EvidenceRecord]:
        """The revision chain through ``evidence_id``, oldest first."""
        return evidence_history(self._db.engine, self._thread, evidence_id)


class ConclusionBook:
    """``thread.conclusions``: revise and read the thread's conclusions."""

    def __init__(self, db: Database, thread: str) -> None:
        self._db = db
        self._thread = thread

    def revise(
        self,
        conclusion_id: str,
        replacement: Statement | Mapping[str, Any] | None = None,
        *,
        actor: str = DEFAULT_ACTOR,
    ) -> StepResult:
        """A new version of ``conclusion_id`` (same kind) citing ``replacement["cites"]``, or
        its retraction when None. RevisionRefusedError if refused."""
        statement = None if replacement is None else _statement(replacement, "replacement")
        request = ConclusionReviseRequest(conclusion_id, statement)
        return _single(self._db, self._thread, request, actor, RevisionRefusedError)

    def list(
        self, *, stale: bool | None = None, status: str | None = None
    ) -> builtins.list[ConclusionRecord]:
        """Every conclusion version by id, filtered on ``stale`` / ``status`` if given."""
        return list_conclusions(self._db.engine, self._thread, stale=stale, status=status)

    def get(self, conclusion_id: str) -> ConclusionRecord:
        """Conclusion version ``conclusion_id`` (UnknownItemError if none)."""
        return get_conclusion(self._db.engine, self._thread, conclusion_id)


class LifecycleThread(ThreadCore):
    """The thread core with the lifecycle wing: sources, evidence, conclusions and pins
    (module docstring). :class:`registre.ledger.thread.Thread` is this and the context wing."""

    @property
    def evidence(self) -> EvidenceBank:
        """The thread's evidence bank."""
        return EvidenceBank(self._db, self.id)

    @property
    def conclusions(self) -> ConclusionBook:
        """The thread's conclusions."""
        return ConclusionBook(self._db, self.id)

    def read_source(
        self,
        refs: Iterable[SourceRef | Mapping[str, str]],
        *,
        actor: str = DEFAULT_ACTOR,
        partial: bool = False,
    ) -> BatchResult:
        """Register passage references (``source.read``); each is decided on its own (a
        reference id already registered with other fields is rejected) and the batch is
        recorded as one entry. ReadRefusedError if any was rejected, unless ``partial``
        (as :meth:`EvidenceBank.upsert`)."""
        items = tuple(_reference(ref, f"refs[{i}]") for i, ref in enumerate(refs))
        request = ReadRequest(items)
        seq, outcome = _record(self._db, self.id, request, actor)
        assert isinstance(outcome, ReadOutcome)
        return _batch(request.kind, BatchResult(seq, outcome), partial, ReadRefusedError)

    def conclude(
        self, kind: str, statement: str, evidence: Iterable[str], *, actor: str = DEFAULT_ACTOR
    ) -> StepResult:
        """Record a ``compute`` or ``final`` conclusion citing ``evidence`` (evidence ids; a
        final may also cite computes). ConclusionRefusedError if refused."""
        cites = tuple(evidence)
        request: Request
        if kind == "compute":
            request = ComputeRequest(statement, cites)
        elif kind == "final":
            request = FinalRequest(statement, cites)
        else:
            raise LifecycleFormatError("kind", f"expected compute or final, got {kind!r:.80}")
        return _single(self._db, self.id, request, actor, ConclusionRefusedError)

    def pin(self, kind: str, text: str, seq: int, *, actor: str = DEFAULT_ACTOR) -> StepResult:
        """Pin ``text`` (taken from entry ``seq``, which must be earlier) as a ``definition``,
        ``decision``, ``task_parameter`` or ``open_question``. PinRefusedError if refused."""
        request = PinRequest(kind, text, seq)  # type: ignore[arg-type]  # the codec checks it
        return _single(self._db, self.id, request, actor, PinRefusedError)

    def unpin(self, pin_id: str, reason: str, *, actor: str = DEFAULT_ACTOR) -> StepResult:
        """Stop carrying pin ``pin_id``, saying why. PinRefusedError if refused."""
        return _single(self._db, self.id, UnpinRequest(pin_id, reason), actor, PinRefusedError)

    def references(self) -> list[ReferenceRecord]:
        """Every registered source reference, in registration order."""
        return list_references(self._db.engine, self.id)

    def pins(self, *, live: bool | None = None) -> list[PinRecord]:
        """Every pin (or only live / only unpinned ones), in pin order."""
        return list_pins(self._db.engine, self.id, live=live)

    def trace(self, conclusion_id: str) -> TraceNode:
        """The tree from ``conclusion_id`` to the source reads behind it."""
        return trace(self._db.engine, self.id, conclusion_id)

    def lifecycle_state(self) -> LifecycleState:
        """A copy of the lifecycle state at the head (O(size of the state))."""
        return current_state(self._db, self.id)


def _record(db: Database, thread: str, request: Request, actor: str) -> tuple[int, Any]:
    entry, event = record(db, thread, request, actor)
    return entry.seq, event.outcome


def _batch(
    kind: str, result: BatchResult, partial: bool, refused: type[BatchRefusedError]
) -> BatchResult:
    """``result``, or ``refused`` if an item was rejected and the caller did not ask for a
    ``partial`` result."""
    if result.rejected and not partial:
        raise refused(kind, result)
    return result


def _single(
    db: Database,
    thread: str,
    request: Request,
    actor: str,
    refused: type[LifecycleRefusedError],
) -> StepResult:
    seq, outcome = _record(db, thread, request, actor)
    if isinstance(outcome, Rejected):
        raise refused(request.kind, outcome, seq)
    assert isinstance(outcome, (Accepted, Revised))
    return StepResult(seq, outcome)


def _statement(value: Statement | Mapping[str, Any], path: str) -> Statement:
    if isinstance(value, Statement):
        return value
    if not isinstance(value, Mapping) or set(value) != {"text", "cites"}:
        raise LifecycleFormatError(path, 'expected a Statement or {"text": ..., "cites": [...]}')
    cites = value["cites"]
    if not isinstance(cites, (list, tuple)):
        raise LifecycleFormatError(f"{path}.cites", "expected a list of ids")
    return Statement(value["text"], tuple(cites))


def _reference(value: SourceRef | Mapping[str, str], path: str) -> SourceRef:
    if isinstance(value, SourceRef):
        return value
    fields = ("ref", "source", "location", "sha256")
    if not isinstance(value, Mapping) or set(value) != set(fields):
        raise LifecycleFormatError(
            path, 'expected a SourceRef or {"ref", "source", "location", "sha256"}'
        )
    return SourceRef(*(value[name] for name in fields))
