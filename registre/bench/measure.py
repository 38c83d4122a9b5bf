"""What the harness measures while an investigation runs, step by step.

A :class:`RunRecorder` is the ``on_step`` callback of one run (one thread, one budget). At
each model call it reads the entries written since the previous one back from the ledger in
one read (``Thread.context_entries``: parsed, signatures not re-checked; the rest at the end,
:meth:`RunRecorder.flush`) into the :class:`~registre.bench.baselines.TruncationBaseline`,
and records:

* every step's wall time by kind, and every compaction's; at every model call the time of
  ``thread.compact`` when it found nothing to do (a *compaction check*), and the call's
  total (compact, then ``thread.model_call``);
* at every model call: the tokens of the context sent, and the tokens of the whole history
  (what replaying it verbatim would take);
* at **quality points** (a geometric grid of history lengths): the latency of
  ``thread.project`` at the head; which live pins the context carries word for word, for
  registre and for the truncation baseline at the same budget; how much of the active
  evidence each context shows the model (:mod:`registre.bench.evidence_view`: ids named,
  ids named with their statements) and, the older figure, how much of it has its admitting
  entry in view (an entry the manifest does not mark ``folded``; for truncation, an entry
  inside the kept window);
* at **naive points** (a sparser geometric grid): the naive projection's latency, and
  whether it equals registre's (and its ratio to registre's projection at the same call);
* at **even points** (evenly spaced history lengths): the latency of ``thread.project`` at
  the head again, so that every third of a long history holds a third of the samples;
* at **every model call**, the working-context quality (:mod:`registre.bench.quality`) of
  registre's context and of the three context baselines built from the same entries with
  the same counter at the same budget (silent truncation, observation masking, a rolling
  summary; :mod:`registre.bench.baselines`): which of the facts the next step needs each
  context carries, tokens, stable prefix; at quality points also their summary lines'
  pointer spans and count-only lines. Registre's live summary lines are tracked from the
  compaction entries read back (the fold's rule: a fold replaces the live summaries inside
  its range).

Reading back and the quality checks are harness work, outside every timed figure; their
time is kept by part (:data:`HARNESS_PARTS`). Every grid has a fixed number of points, so
the harness's work per run is linear in the history (reading each entry back once) plus a
bounded number of samples, each costing at most the context's size, or for a naive re-fold
the history's. A **lean** recorder (``lean=True``) keeps no transcript and skips the
working-context tallies and the pin and evidence checks: O(1) memory per entry beyond the
per-call latencies.
"""

from __future__ import annotations

import random
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from registre.bench.baselines import (
    ObservationMaskingBaseline,
    RollingSummaryBaseline,
    TruncationBaseline,
    naive_projection,
)
from registre.bench.evidence_view import evidence_in_view
from registre.bench.facts import Fact
from registre.bench.quality import METHODS, ContextView, Line, MethodTally
from registre.bench.steps import Step, StepOutcome
from registre.context import Policy, Projection, TokenCounter

if TYPE_CHECKING:
    from registre.ledger import Ledger, Thread

__all__ = [
    "HARNESS_PARTS",
    "PinCheck",
    "QualitySample",
    "RunRecorder",
    "even_points",
    "sample_points",
]


HARNESS_PARTS = (
    "read_back_s",
    "working_context_s",
    "samples_s",
    "naive_s",
    "checkpoints_s",
)
"""Where the harness's time goes inside a run (``harness_parts``): reading the steps'
entries back (signatures checked) into the transcript; the working-context tallies of the
four methods at every model call; the samples after a call (projections, pins, evidence,
naive re-folds; ``naive_s`` is the re-folds alone, a part of ``samples_s``); the periodic
checkpoints."""


def sample_points(total: int, count: int, start: int = 50) -> list[int]:
    """About ``count`` history lengths from ``start`` to ``total``, geometrically spaced
    (so small and large histories are both measured), increasing, without repeats."""
    if count < 1 or total <= start:
        return [total]
    ratio = (total / start) ** (1 / max(1, count - 1))
    points = sorted({int(start * ratio**k) for k in range(count)} | {total})
    return [p for p in points if p <= total]


def even_points(total: int, count: int, start: int = 50) -> list[int]:
    """About ``count`` history lengths from ``start`` to ``total``, evenly spaced (so every
    third of the history gets a third of them), increasing, without repeats."""
    if count < 1 or total <= start:
        return [total]
    step = (total - start) / max(1, count - 1)
    return sorted({min(total, int(start + step * k)) for k in range(count)} | {total})


@dataclass(frozen=True)
class PinCheck:
    """One live pin at a quality point, and whether each context carried its text."""

    id: str
    kind: str
    text: str
    ours: bool
    truncation: bool


@dataclass(frozen=True)
class QualitySample:
    """Quality at a model call: entries ``0..at``; the pins checked; the active evidence, and
    for each context how many of its entries have their admitting entry in view
    (``evidence_ours``, ``evidence_truncation``), their id named (``*_named``) and their id
    and statement shown (``*_stated``; :mod:`registre.bench.evidence_view`); the
    truncation window's first entry."""

    at: int
    pins: tuple[PinCheck, ...]
    evidence_active: int
    evidence_ours: int
    evidence_truncation: int
    truncation_first_seq: int
    evidence_ours_named: int = 0
    evidence_ours_stated: int = 0
    evidence_truncation_named: int = 0
    evidence_truncation_stated: int = 0


@dataclass
class RunRecorder:
    """The ``on_step`` callback of one run; see the module docstring."""

    ledger: Ledger
    thread: Thread
    policy: Policy
    counter: TokenCounter
    quality_points: Sequence[int]
    naive_points: Sequence[int]
    checkpoint_every: int = 0
    projection_points: Sequence[int] = ()
    lean: bool = False
    step_seconds: dict[str, list[float]] = field(default_factory=dict)
    compaction_seconds: list[float] = field(default_factory=list)
    compactions: list[dict[str, Any]] = field(default_factory=list)
    calls: list[tuple[int, int, int]] = field(default_factory=list)
    refusals: Counter[str] = field(default_factory=Counter)
    ours_latency: list[tuple[int, float]] = field(default_factory=list)
    naive_latency: list[tuple[int, float]] = field(default_factory=list)
    naive_pairs: list[tuple[int, float, float]] = field(default_factory=list)
    naive_equal: int = 0
    call_latency: list[tuple[int, float]] = field(default_factory=list)
    call_totals: list[tuple[int, float]] = field(default_factory=list)
    compact_checks: list[float] = field(default_factory=list)
    quality: list[QualitySample] = field(default_factory=list)
    kinds: Counter[str] = field(default_factory=Counter)
    phases: Counter[str] = field(default_factory=Counter)
    pointers: list[tuple[int, int]] = field(default_factory=list)
    pointer_spans: int = 0
    pointer_capacity: int = 0
    checkpoint_seconds: list[float] = field(default_factory=list)
    last_projection: Projection | None = None
    harness_seconds: float = 0.0
    harness_parts: dict[str, float] = field(
        default_factory=lambda: dict.fromkeys(HARNESS_PARTS, 0.0)
    )
    methods: dict[str, MethodTally] = field(default_factory=dict)
    fact_ages: list[int] = field(default_factory=list)
    calls_with_needs: int = 0

    def __post_init__(self) -> None:
        self.truncation = TruncationBaseline(self.counter, keep=not self.lean)
        self.masking = ObservationMaskingBaseline(self.truncation)
        self.rolling = RollingSummaryBaseline(self.truncation, self.policy)
        self.methods = {name: MethodTally() for name in METHODS}
        self._live: list[tuple[int, int, tuple[Line, ...]]] = []  # live summaries
        self._live_lines: tuple[Line, ...] = ()
        self._next_quality = 0
        self._next_naive = 0
        self._next_even = 0
        self._reservoir = random.Random(0)
        self._next_checkpoint = self.checkpoint_every
        self._pending: list[tuple[int, str]] = []  # (stop, phase) of steps not read back yet
        self._head = 0  # the thread's size after the last step recorded

    @property
    def size(self) -> int:
        """Entries read back so far: the thread's head after the last step (reading back
        what the steps since the last model call wrote first, :meth:`flush`)."""
        self.flush()
        return self.truncation.size

    def flush(self) -> None:
        """Read back the entries of the steps recorded since the last model call, in one
        read (a model call step reads them back with its own, before the tallies that use
        them; reading them step by step costs a read transaction per step). Timed as
        ``read_back_s``."""
        if not self._pending:
            return
        began = time.perf_counter()
        self._read_back(self._pending)
        self._pending = []
        self.harness_parts["read_back_s"] += time.perf_counter() - began

    def on_step(self, step: Step, outcome: StepOutcome) -> None:
        """Record ``outcome`` of ``step`` (see the module docstring)."""
        self.step_seconds.setdefault(step.kind, []).append(outcome.seconds)
        if outcome.compaction_seconds is not None:
            self.compaction_seconds.append(outcome.compaction_seconds)
        elif outcome.compact_seconds is not None:
            self.compact_checks.append(outcome.compact_seconds)
        if outcome.refused is not None:
            self.refusals[f"{step.kind}: {outcome.refused}"] += 1
        began = time.perf_counter()
        if outcome.seqs:
            self._head = outcome.seqs[-1] + 1
            self._pending.append((self._head, step.phase))
        if step.kind == "model.call" and self._pending:
            self._read_back(self._pending)
            self._pending = []
        read = time.perf_counter()
        if step.kind == "model.call" and not self.lean:
            self._working_context(step.needs, outcome)
        tallied = time.perf_counter()
        if outcome.projection is not None:
            self.call_latency.append((self.size, outcome.seconds))
            self.call_totals.append((self.size, outcome.seconds + (outcome.compact_seconds or 0)))
            self._after_call(outcome.projection)
        sampled = time.perf_counter()
        if self.checkpoint_every and self._head >= self._next_checkpoint:
            self.thread.checkpoint()
            self.checkpoint_seconds.append(time.perf_counter() - sampled)
            self._next_checkpoint += self.checkpoint_every
        ended = time.perf_counter()
        parts = self.harness_parts
        parts["read_back_s"] += read - began
        parts["working_context_s"] += tallied - read
        parts["samples_s"] += sampled - tallied
        parts["checkpoints_s"] += ended - sampled
        self.harness_seconds += ended - began

    def _read_back(self, pending: Sequence[tuple[int, str]]) -> None:
        """Read back the entries up to the last ``(stop, phase)`` of ``pending`` in one read;
        each counts in the phase of the step that wrote it (the first whose stop is past it)."""
        # parsed, signatures not re-checked: harness work (thread.entries checks each one)
        steps = iter(pending)
        stop, phase = next(steps)
        for entry in self.thread.context_entries(self.truncation.size, pending[-1][0]):
            while entry.seq >= stop:
                stop, phase = next(steps)
            self.truncation.add(entry)
            self.kinds[entry.kind] += 1
            self.phases[phase] += 1
            if entry.kind == "context.compaction":
                self._compaction(entry.seq, entry.body)

    def _compaction(self, seq: int, body: Mapping[str, Any]) -> None:
        folded = body.get("folded")
        lines = body["summary"]
        for line in lines:
            for first, last in line["pointers"]:
                self._keep_pointer((int(first), int(last)))
        if folded is not None:
            first, last = folded["from"], folded["to"]
            live = [s for s in self._live if s[1] < first or s[0] > last]
            live.append(
                (
                    first,
                    last,
                    tuple(
                        (str(line["text"]), tuple((int(a), int(b)) for a, b in line["pointers"]))
                        for line in lines
                    ),
                )
            )
            self._live = sorted(live, key=lambda summary: summary[0])
            self._live_lines = tuple(line for summary in self._live for line in summary[2])
        # A refold folds live summaries again: its range starts before the fold boundary.
        refold = folded is not None and folded["from"] <= self._last_folded_to()
        self.compactions.append(
            {
                "seq": seq,
                "folded": None if folded is None else [folded["from"], folded["to"]],
                "stubbed": len(body.get("stubbed", [])),
                "lines": len(lines),
                "tokens_before": body["tokens_before"],
                "tokens_after": body["tokens_after"],
                "refold": refold,
            }
        )

    def _keep_pointer(self, span: tuple[int, int]) -> None:
        """Every summary pointer span is counted (:attr:`pointer_spans`); :attr:`pointers`
        keeps them all, or with ``pointer_capacity`` a seeded uniform sample of that many
        (reservoir sampling: memory bounded however long the run)."""
        self.pointer_spans += 1
        if not self.pointer_capacity or len(self.pointers) < self.pointer_capacity:
            self.pointers.append(span)
            return
        slot = self._reservoir.randrange(self.pointer_spans)
        if slot < self.pointer_capacity:
            self.pointers[slot] = span

    def _working_context(self, needs: tuple[Fact, ...], outcome: StepOutcome) -> None:
        """Tally every method's context at this model call (module docstring)."""
        budget = self.policy.budget_tokens
        sent = outcome.projection
        position = self.size - (1 if sent is not None else 0)  # the call's seq
        if needs:
            self.calls_with_needs += 1
            self.fact_ages.extend(position - fact.seq for fact in needs)
        sample = (
            sent is not None
            and self._next_quality < len(self.quality_points)
            and self.size >= self.quality_points[self._next_quality]
        )
        ours = self.methods["registre"]
        if sent is None:
            ours.refuse(needs, pins_fit=outcome.refused != "PinsOverBudgetError")
        else:
            view = ContextView.of(
                sent.messages,
                sent.message_tokens,
                sent.manifest.stable_prefix_messages,
                self._live_lines,
            )
            ours.observe(view, needs, budget, sample=sample)
        baselines = (
            ("truncation", self.truncation.view(budget)),
            ("observation_masking", self.masking.view(budget)),
            ("rolling_summary", self.rolling.view(budget)),
        )
        for name, baseline in baselines:
            self.methods[name].observe(baseline, needs, budget, sample=sample)

    def working_context_methods(self) -> dict[str, MethodTally]:
        """The tallies, with the compactions each method made (registre's from the
        ``context.compaction`` entries; the rolling summary's its own)."""
        ours = self.methods["registre"]
        ours.compactions = len(self.compactions)
        ours.not_reducing = sum(
            1 for c in self.compactions if c["tokens_after"] >= c["tokens_before"]
        )
        rolling = self.methods["rolling_summary"]
        rolling.compactions = len(self.rolling.compactions)
        rolling.not_reducing = sum(
            1 for before, after in self.rolling.compactions if after >= before
        )
        return self.methods

    def _last_folded_to(self) -> int:
        for compaction in reversed(self.compactions):
            if compaction["folded"] is not None:
                return int(compaction["folded"][1])
        return -1

    def _after_call(self, projection: Projection) -> None:
        self.last_projection = projection
        self.calls.append((projection.at + 1, projection.tokens, self.truncation.history_tokens))
        history = self.size
        projected = False
        if _due(self.quality_points, self._next_quality, history):
            self._sample_quality(projection)
            self._next_quality = _advance(self.quality_points, self._next_quality, history)
            projected = True
        if _due(self.naive_points, self._next_naive, history):
            self._sample_naive()
            self._next_naive = _advance(self.naive_points, self._next_naive, history)
            projected = True
        if _due(self.projection_points, self._next_even, history):
            if not projected:
                self._project()
            self._next_even = _advance(self.projection_points, self._next_even, history)

    def _project(self) -> Projection:
        start = time.perf_counter()
        projection = self.thread.project(
            budget=self.policy.budget_tokens, policy=self.policy, counter=self.counter
        )
        self.ours_latency.append((self.size, time.perf_counter() - start))
        return projection

    def _sample_quality(self, sent: Projection) -> None:
        self._project()
        if self.lean:  # a lean run samples projection latency only
            return
        budget = self.policy.budget_tokens
        window = self.truncation.window(budget)
        ours_text = "\x00".join(message.content for message in sent.messages)
        kept_text = "\x00".join(message.content for message in self.truncation.kept(budget))
        pins = tuple(
            PinCheck(pin.id, pin.kind, pin.text, pin.text in ours_text, pin.text in kept_text)
            for pin in self.thread.pins(live=True)
        )
        active = self.thread.evidence.list("active")
        ours = sum(1 for e in active if sent.manifest.status_of(e.seq).status != "folded")
        kept = sum(1 for e in active if e.seq >= window.first_seq)
        statements = [(e.id, e.text) for e in active]
        ours_view = evidence_in_view(statements, ours_text)
        kept_view = evidence_in_view(statements, kept_text)
        self.quality.append(
            QualitySample(
                sent.at,
                pins,
                len(active),
                ours,
                kept,
                window.first_seq,
                ours_view.named,
                ours_view.stated,
                kept_view.named,
                kept_view.stated,
            )
        )

    def _sample_naive(self) -> None:
        ours = self._project()
        start = time.perf_counter()
        naive = naive_projection(
            self.ledger,
            self.thread.id,
            ours.at,
            self.policy.budget_tokens,
            self.policy,
            self.counter,
        )
        naive_s = time.perf_counter() - start
        self.harness_parts["naive_s"] += naive_s
        self.naive_latency.append((self.size, naive_s))
        self.naive_pairs.append((self.size, self.ours_latency[-1][1], naive_s))
        if naive.to_json() == ours.to_json():
            self.naive_equal += 1


def _due(points: Sequence[int], index: int, history: int) -> bool:
    return index < len(points) and history >= points[index]


def _advance(points: Sequence[int], index: int, history: int) -> int:
    while index < len(points) and points[index] <= history:
        index += 1
    return index
