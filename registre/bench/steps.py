"""Steps: one agent-platform action on a real :class:`registre.ledger.thread.Thread`, timed.

A :class:`Step` is built with everything it will write already decided (bodies, texts,
ids), so running it does ledger work only: :meth:`Step.run` calls the thread API once (a model
call step: ``thread.compact`` then ``thread.model_call``), measures the wall time of those
calls, and returns a :class:`StepOutcome`. The investigation that built the step reads the
outcome back (accepted ids, stale conclusions, the seq written) before it builds the next.

Refusals the API reports as part of normal operation are outcomes, not failures: a context
that cannot fit its budget (:class:`registre.context.ContextBudgetError`: the call is not
recorded), a summary the controller refuses (the compaction is not recorded), a lifecycle
request the rules refuse (recorded on the ledger as a refusal). Anything else raises.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from registre.attest.entries import Entry
from registre.bench.facts import Fact
from registre.context import (
    ContextBudgetError,
    Policy,
    Projection,
    Summarizer,
    SummaryRefusedError,
    TokenCounter,
)
from registre.ledger import BatchResult, LifecycleRefusedError, StepResult
from registre.lifecycle import SourceRef

if TYPE_CHECKING:
    from registre.ledger import Thread

__all__ = [
    "STEP_KINDS",
    "Step",
    "StepOutcome",
    "append_step",
    "conclude_step",
    "conclusion_revise_step",
    "evidence_revise_step",
    "model_call_step",
    "pin_step",
    "read_step",
    "unpin_step",
    "upsert_step",
]

STEP_KINDS = (
    "turn",
    "tool.call",
    "tool.result",
    "decision",
    "source.read",
    "evidence.upsert",
    "evidence.revise",
    "conclusion.compute",
    "conclusion.final",
    "conclusion.revise",
    "context.pin",
    "context.unpin",
    "model.call",
)
"""What a step does, named after the entry kind it writes (a model call step may write a
``context.compaction`` before its ``model.call``)."""


@dataclass(frozen=True)
class StepOutcome:
    """What running a step did.

    ``seqs``: the entries written, in order (a compaction first, for a model call step that
    compacted); ``seconds``: wall time of the API calls, compaction excluded;
    ``compaction``/``compaction_seconds``: the ``context.compaction`` entry written and the
    time ``thread.compact`` took (its planning and summarizing included), or None;
    ``compact_seconds``: for a model call step, the time ``thread.compact`` took whether it
    compacted or found nothing to do (None if it was refused);
    ``projection``: the context a model call was sent; ``result``: the API's return value
    (an :class:`~registre.attest.entries.entry.Entry`,
    :class:`~registre.ledger.lifecycle.api.BatchResult`
    or :class:`~registre.ledger.lifecycle.api.StepResult`); ``refused``: the refusal's class name,
    if the API refused (``refusal`` its message).
    """

    seqs: tuple[int, ...]
    seconds: float
    compaction: Entry | None = None
    compaction_seconds: float | None = None
    projection: Projection | None = None
    result: Entry | BatchResult | StepResult | None = None
    refused: str | None = None
    refusal: str | None = None
    compact_seconds: float | None = None


@dataclass
class Step:
    """One action: ``kind`` (one of :data:`STEP_KINDS`), the ``phase`` of the investigation
    it belongs to, and how many entries it ``plans`` to write (compactions excluded). A model
    call step also says which planted facts (:mod:`registre.bench.facts`) the step after it
    ``needs``: what the context sent must carry."""

    kind: str
    phase: str
    plans: int
    action: Callable[[Thread], StepOutcome] = field(repr=False)
    outcome: StepOutcome | None = None
    needs: tuple[Fact, ...] = ()

    def run(self, thread: Thread) -> StepOutcome:
        """Do the action on ``thread`` once; the outcome is also kept in :attr:`outcome`.
        Raises RuntimeError if the step already ran."""
        if self.outcome is not None:
            raise RuntimeError(f"this {self.kind} step already ran")
        self.outcome = self.action(thread)
        return self.outcome


def append_step(kind: str, phase: str, body: Mapping[str, Any], actor: str) -> Step:
    """``thread.append(kind, body, actor)``: a turn, tool call, tool result or decision."""

    def action(thread: Thread) -> StepOutcome:
        start = time.perf_counter()
        entry = thread.append(kind, dict(body), actor)
        return StepOutcome((entry.seq,), time.perf_counter() - start, result=entry)

    return Step(kind, phase, 1, action)


def read_step(phase: str, refs: Sequence[SourceRef]) -> Step:
    """``thread.read_source(refs)``."""
    return _lifecycle("source.read", phase, lambda thread: thread.read_source(refs, partial=True))


def upsert_step(phase: str, statements: Sequence[Mapping[str, Any]]) -> Step:
    """``thread.evidence.upsert(statements)`` (a batch: some items may be rejected)."""
    return _lifecycle(
        "evidence.upsert", phase, lambda thread: thread.evidence.upsert(statements, partial=True)
    )


def evidence_revise_step(
    phase: str, evidence_id: str, replacement: Mapping[str, Any] | None
) -> Step:
    """``thread.evidence.revise(evidence_id, replacement)``: supersede, or retract if None."""
    return _lifecycle(
        "evidence.revise",
        phase,
        lambda thread: thread.evidence.revise(evidence_id, replacement),
    )


def conclude_step(phase: str, kind: str, text: str, cites: Sequence[str]) -> Step:
    """``thread.conclude(kind, text, cites)`` with kind ``compute`` or ``final``."""
    return _lifecycle(
        f"conclusion.{kind}", phase, lambda thread: thread.conclude(kind, text, cites)
    )


def conclusion_revise_step(
    phase: str, conclusion_id: str, replacement: Mapping[str, Any] | None
) -> Step:
    """``thread.conclusions.revise(conclusion_id, replacement)``."""
    return _lifecycle(
        "conclusion.revise",
        phase,
        lambda thread: thread.conclusions.revise(conclusion_id, replacement),
    )


def pin_step(phase: str, pin_kind: str, text: str, seq: int) -> Step:
    """``thread.pin(pin_kind, text, seq)``."""
    return _lifecycle("context.pin", phase, lambda thread: thread.pin(pin_kind, text, seq))


def unpin_step(phase: str, pin_id: str, reason: str) -> Step:
    """``thread.unpin(pin_id, reason)``."""
    return _lifecycle("context.unpin", phase, lambda thread: thread.unpin(pin_id, reason))


def model_call_step(
    phase: str,
    model: str,
    policy: Policy,
    counter: TokenCounter,
    summarizer: Summarizer,
    needs: tuple[Fact, ...] = (),
) -> Step:
    """Compact as the policy says (``thread.compact``), then ``thread.model_call`` at the
    policy's budget without compacting again. A context that cannot fit, or a refused
    summary, is an outcome (``refused``); the call is then not recorded. ``needs``: the
    facts the next step depends on (:attr:`Step.needs`)."""

    def action(thread: Thread) -> StepOutcome:
        start = time.perf_counter()
        size = thread.head().size
        try:
            compaction = thread.compact(policy=policy, summarizer=summarizer, counter=counter)
        except (ContextBudgetError, SummaryRefusedError) as refusal:
            return _refused(
                tuple(range(size, thread.head().size)), time.perf_counter() - start, refusal
            )
        compacted = time.perf_counter()
        # the automatic task pins written before the compaction, then the compaction
        seqs: tuple[int, ...] = () if compaction is None else tuple(range(size, compaction.seq + 1))
        compact_seconds = compacted - start
        compaction_seconds = compact_seconds if compaction is not None else None
        try:
            projection, call = thread.model_call(
                model, policy.budget_tokens, policy, counter, compact=False
            )
        except ContextBudgetError as refusal:
            failed = _refused(seqs, time.perf_counter() - compacted, refusal)
            return StepOutcome(
                failed.seqs,
                failed.seconds,
                compaction,
                compaction_seconds,
                refused=failed.refused,
                refusal=failed.refusal,
                compact_seconds=compact_seconds,
            )
        return StepOutcome(
            (*seqs, call.seq),
            time.perf_counter() - compacted,
            compaction,
            compaction_seconds,
            projection,
            call,
            compact_seconds=compact_seconds,
        )

    return Step("model.call", phase, 1, action, needs=needs)


def _lifecycle(kind: str, phase: str, call: Callable[[Thread], BatchResult | StepResult]) -> Step:
    def action(thread: Thread) -> StepOutcome:
        start = time.perf_counter()
        try:
            result = call(thread)
        except LifecycleRefusedError as refusal:
            return _refused((refusal.seq,), time.perf_counter() - start, refusal)
        return StepOutcome((result.seq,), time.perf_counter() - start, result=result)

    return Step(kind, phase, 1, action)


def _refused(seqs: tuple[int, ...], seconds: float, refusal: Exception) -> StepOutcome:
    return StepOutcome(seqs, seconds, refused=type(refusal).__name__, refusal=str(refusal))
