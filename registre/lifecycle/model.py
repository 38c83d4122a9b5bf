"""Immutable values of the lifecycle: records held in the state, requests, outcomes, events.

Every class here is a frozen dataclass whose collections are tuples, so values compare by
content, hash, and can be shared freely between states. Identifiers are strings:

* source references: chosen by the reader (``"r1"``, ``"doc-7#p3"``);
* evidence entries ``ev-N``, conclusions ``cc-N``, pins ``pin-N``: assigned by the rules from
  counters that only grow, starting at 1, so they are deterministic under replay and never
  reused.

A request says what the agent proposes; its outcome says what the rules decided; an
:class:`Event` pairs the two and is what a ledger entry body records.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar, Final, Literal

__all__ = [
    "ACTIVE",
    "CONCLUSION_KINDS",
    "LIVE",
    "PIN_KINDS",
    "RETRACTED",
    "SUPERSEDED",
    "UNPINNED",
    "Accepted",
    "ComputeRequest",
    "Conclusion",
    "ConclusionReviseRequest",
    "EntryStatus",
    "Event",
    "EvidenceEntry",
    "EvidenceReviseRequest",
    "FinalRequest",
    "Outcome",
    "PinKind",
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
]

EntryStatus = Literal["active", "superseded", "retracted"]
PinKind = Literal["definition", "decision", "task_parameter", "open_question"]
ACTIVE: Final = "active"
SUPERSEDED: Final = "superseded"
RETRACTED: Final = "retracted"

LIVE: Final = "live"
UNPINNED: Final = "unpinned"

CONCLUSION_KINDS: Final = ("compute", "final")
PIN_KINDS: Final = ("definition", "decision", "task_parameter", "open_question")


# --- records held in the state -------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class SourceRef:
    """A passage read from a source: ``ref`` is the id statements cite, ``sha256`` is the hex
    SHA-256 of the passage text. Once registered a reference is never removed or changed."""

    ref: str
    source: str
    location: str
    sha256: str


@dataclass(frozen=True, slots=True)
class Statement:
    """Proposed text and what it cites (reference ids for evidence, evidence and conclusion ids
    for conclusions). Used in upserts and as a revision's replacement."""

    text: str
    cites: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class EvidenceEntry:
    """An admitted statement. ``successor`` is set exactly when ``status`` is superseded;
    ``predecessor`` is the entry this one superseded, if any."""

    id: str
    text: str
    cites: tuple[str, ...]
    status: EntryStatus = ACTIVE
    successor: str | None = None
    predecessor: str | None = None


@dataclass(frozen=True, slots=True)
class Conclusion:
    """An accepted compute or final conclusion (one version of it).

    ``cites`` is what the request declared; ``relies_on`` is the evidence it depends on: its
    own evidence citations plus, for a final, the evidence of the computes it cites (in first
    appearance order). ``stale`` is set when evidence it relies on (or a compute it cites)
    changed after it was accepted; a revision is the repair.
    """

    id: str
    kind: Literal["compute", "final"]
    text: str
    cites: tuple[str, ...]
    relies_on: tuple[str, ...]
    status: EntryStatus = ACTIVE
    stale: bool = False
    successor: str | None = None
    predecessor: str | None = None


@dataclass(frozen=True, slots=True)
class PinnedItem:
    """A pinned essential carried word for word through every compaction. ``seq`` is the
    ledger entry the text comes from; ``unpin_reason`` is set once it is unpinned."""

    id: str
    kind: PinKind
    text: str
    seq: int
    status: Literal["live", "unpinned"] = LIVE
    unpin_reason: str | None = None


# --- requests ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class ReadRequest:
    """``source.read``: register each reference (decided one by one, in order)."""

    kind: ClassVar[str] = "source.read"
    refs: tuple[SourceRef, ...]


@dataclass(frozen=True, slots=True)
class UpsertRequest:
    """``evidence.upsert``: admit each statement independently; the batch may be partly accepted."""

    kind: ClassVar[str] = "evidence.upsert"
    statements: tuple[Statement, ...]


@dataclass(frozen=True, slots=True)
class EvidenceReviseRequest:
    """``evidence.revise``: supersede ``id`` with ``replacement``, or retract it when ``None``."""

    kind: ClassVar[str] = "evidence.revise"
    id: str
    replacement: Statement | None


@dataclass(frozen=True, slots=True)
class ComputeRequest:
    """``conclusion.compute``: an intermediate conclusion citing evidence ids only."""

    kind: ClassVar[str] = "conclusion.compute"
    text: str
    cites: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class FinalRequest:
    """``conclusion.final``: a final answer citing evidence ids and/or compute ids."""

    kind: ClassVar[str] = "conclusion.final"
    text: str
    cites: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ConclusionReviseRequest:
    """``conclusion.revise``: a new version of conclusion ``id`` (same kind), or its retraction
    when ``replacement`` is ``None``."""

    kind: ClassVar[str] = "conclusion.revise"
    id: str
    replacement: Statement | None


@dataclass(frozen=True, slots=True)
class PinRequest:
    """``context.pin``: pin ``text`` (out of ledger entry ``seq``) as an essential of ``kind``."""

    kind: ClassVar[str] = "context.pin"
    pin_kind: PinKind
    text: str
    seq: int


@dataclass(frozen=True, slots=True)
class UnpinRequest:
    """``context.unpin``: stop carrying pin ``id``, saying why."""

    kind: ClassVar[str] = "context.unpin"
    id: str
    reason: str


Request = (
    ReadRequest
    | UpsertRequest
    | EvidenceReviseRequest
    | ComputeRequest
    | FinalRequest
    | ConclusionReviseRequest
    | PinRequest
    | UnpinRequest
)


# --- outcomes ------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Rejected:
    """A refusal: ``reason`` is a code from :data:`registre.lifecycle.reasons.REASONS`, ``message``
    the sentence its template gives. Nothing changes when a request (or batch item) is rejected."""

    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class Accepted:
    """Acceptance naming the id the request created (upsert item, compute, final, pin) or, for
    an unpin, the pin it ended."""

    id: str


@dataclass(frozen=True, slots=True)
class Registered:
    """A source reference now registered (or already registered identically)."""

    ref: str


@dataclass(frozen=True, slots=True)
class Revised:
    """An accepted revision: ``id`` is now superseded by ``successor`` (or retracted when
    ``successor`` is ``None``); ``stale`` lists the active conclusions the change leaves stale,
    in the order they were accepted."""

    id: str
    successor: str | None
    stale: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class ReadOutcome:
    """One result per reference of the request, in request order."""

    results: tuple[Registered | Rejected, ...]


@dataclass(frozen=True, slots=True)
class UpsertOutcome:
    """One result per statement of the request, in request order."""

    results: tuple[Accepted | Rejected, ...]


Outcome = ReadOutcome | UpsertOutcome | Accepted | Revised | Rejected


@dataclass(frozen=True, slots=True)
class Event:
    """A request and the outcome recorded for it: the body of one lifecycle ledger entry."""

    request: Request
    outcome: Outcome

    @property
    def kind(self) -> str:
        """The ledger entry kind (``evidence.upsert``, ...), taken from the request."""
        return self.request.kind
