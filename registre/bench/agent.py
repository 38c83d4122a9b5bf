"""The agent loop of a synthetic investigation: how an agent platform records each action.

:class:`AgentLoop` holds what every investigation shares -- the seeded random stream and its
words (:mod:`registre.bench.textgen`), the tallies (:class:`InvestigationStats`), the live pins --
and the building blocks the storyline (:mod:`registre.bench.investigation`) is made of, each a
generator of :mod:`registre.bench.steps` that reads back the outcome of the step it yielded:

* ``_call()`` -- a model call: compact as the policy says, then ``thread.model_call``;
* ``_say(role, text)`` -- a turn, preceded by a model call when the assistant speaks;
* ``_tool(name)`` -- a model call, a ``tool.call`` and its ``tool.result`` (log-normal size);
* ``_pin(kind, text, seq)`` / ``_unpin(pin, reason)``;
* ``_plant(kind, seq, text, keys, subject)`` -- register a fact the entry ``seq`` states
  (:mod:`registre.bench.facts`); a model call's ``needs`` name the facts the step after it
  depends on.
"""

from __future__ import annotations

import random
from collections.abc import Generator, Iterator
from dataclasses import dataclass, field
from typing import Any

from registre.bench.facts import Fact, FactBook, facts_rng
from registre.bench.steps import (
    Step,
    StepOutcome,
    append_step,
    model_call_step,
    pin_step,
    unpin_step,
)
from registre.bench.textgen import OUTPUT_PROFILES, TextGen, lognormal_bytes
from registre.context import (
    ExtractiveSummarizer,
    Policy,
    Summarizer,
    TokenCounter,
    default_counter,
)
from registre.ledger import StepResult

__all__ = [
    "MIN_ENTRIES",
    "AgentLoop",
    "InvestigationConfig",
    "InvestigationStats",
    "LivePin",
    "StepGen",
]

MIN_ENTRIES = 100
StepGen = Generator[Step, None, StepOutcome]
"""A building block: yields one step, returns its outcome once it ran."""


@dataclass(frozen=True)
class InvestigationConfig:
    """``entries``: how many entries to plan (at least :data:`MIN_ENTRIES`); ``seed``: the
    random stream; ``policy``: the compaction policy and budget of every model call;
    ``summarizer`` (default: the extractive one) and ``counter`` (default:
    ``registre.default/1``) for compactions and projections; ``model``: the name recorded
    in each ``model.call``."""

    entries: int
    seed: int = 0
    policy: Policy = field(default_factory=Policy)
    summarizer: Summarizer | None = None
    counter: TokenCounter | None = None
    model: str = "bench/analyst-1"

    def __post_init__(self) -> None:
        if type(self.entries) is not int or self.entries < MIN_ENTRIES:
            raise ValueError(f"an investigation needs at least {MIN_ENTRIES} entries")


@dataclass
class InvestigationStats:
    """What the storyline did, counted as it ran (the ledger is the authority; these are the
    generator's own tallies, checked against it by the tests)."""

    planned: int = 0
    written: int = 0
    compactions: int = 0
    refused_calls: int = 0
    model_calls: int = 0
    tool_calls: int = 0
    reads: int = 0
    evidence_admitted: int = 0
    evidence_rejected: int = 0
    evidence_superseded: int = 0
    evidence_retracted: int = 0
    hypotheses: int = 0
    hypothesis_revisions: int = 0
    stale_events: int = 0
    repaired: int = 0
    abandoned: int = 0
    refused_finals: int = 0
    finals: int = 0
    committee_detours: int = 0
    decisions: int = 0
    definitions: int = 0
    open_questions: int = 0
    pins: int = 0
    unpins: int = 0
    facts: int = 0
    fact_needs: int = 0


@dataclass(frozen=True)
class LivePin:
    """A pin the agent made and has not unpinned."""

    id: str
    kind: str
    text: str


class AgentLoop:
    """The state and building blocks of an investigation (module docstring). Subclasses
    write the storyline; every step must run before the next is asked for."""

    def __init__(self, config: InvestigationConfig) -> None:
        self.config = config
        self.stats = InvestigationStats()
        self.policy = config.policy
        self.counter = config.counter or default_counter()
        self.summarizer = config.summarizer or ExtractiveSummarizer()
        self._rng = random.Random(config.seed)
        self._text = TextGen(self._rng)
        self._phase = "kickoff"
        self._calls = 0
        self._pins: list[LivePin] = []
        self._counters: dict[str, int] = {}
        self._facts_rng = facts_rng(config.seed)
        self.facts = FactBook()

    def _do(self, step: Step) -> StepGen:
        """Yield ``step``; once it ran, tally its outcome and return it."""
        yield step
        outcome = step.outcome
        if outcome is None:
            raise RuntimeError("run each step on the thread before asking for the next one")
        self.stats.planned += step.plans
        self.stats.written += len(outcome.seqs)
        if outcome.compaction is not None:
            self.stats.compactions += 1
        return outcome

    def _call(self, needs: tuple[Fact, ...] = ()) -> StepGen:
        """A model call; ``needs``: the facts the step after it depends on."""
        step = model_call_step(
            self._phase, self.config.model, self.policy, self.counter, self.summarizer, needs
        )
        self.stats.fact_needs += len(needs)
        outcome = yield from self._do(step)
        if outcome.refused is not None and outcome.projection is None:
            self.stats.refused_calls += 1
        else:
            self.stats.model_calls += 1
        return outcome

    def _say(
        self, role: str, text: str, actor: str | None = None, needs: tuple[Fact, ...] = ()
    ) -> Generator[Step, None, int]:
        """A turn (a model call first for the assistant's, with ``needs``); returns its seq."""
        if role == "assistant":
            yield from self._call(needs)
        outcome = yield from self._do(
            append_step("turn", self._phase, {"role": role, "text": text}, actor or role)
        )
        return outcome.seqs[-1]

    def _tool(
        self,
        tool: str,
        insert: str | None = None,
        *,
        plant: str | None = None,
        needs: tuple[Fact, ...] = (),
    ) -> Generator[Step, None, tuple[int, str, str]]:
        """A model call (with ``needs``), a tool call and its result; returns ``(result seq,
        content, path)``. ``insert`` (a read only) is a paragraph placed in the passage read;
        ``plant`` a line placed among the output's lines, where the planting's own random
        stream says (the storyline's stream is not used for it)."""
        self._calls += 1
        call_id = f"call-{self._calls:06d}"
        arguments = self._text.query(tool)
        size = lognormal_bytes(self._rng, OUTPUT_PROFILES[tool])
        content = self._text.output(tool, size)
        if insert is not None:
            paragraphs = content.split("\n\n")
            paragraphs.insert(self._rng.randrange(len(paragraphs) + 1), insert)
            content = "\n\n".join(paragraphs)
        if plant is not None:
            lines = content.split("\n")
            lines.insert(self._facts_rng.randrange(1, len(lines) + 1), plant)
            content = "\n".join(lines)
        yield from self._call(needs)
        yield from self._do(
            append_step(
                "tool.call",
                self._phase,
                {"call_id": call_id, "name": tool, "arguments": arguments},
                "assistant",
            )
        )
        result: dict[str, Any] = {"call_id": call_id, "content": content, "name": tool}
        if tool == "python" and self._rng.random() < 0.05:
            result["is_error"] = True
        outcome = yield from self._do(
            append_step("tool.result", self._phase, result, f"tool:{tool}")
        )
        self.stats.tool_calls += 1
        return outcome.seqs[-1], content, str(arguments.get("path", tool))

    def _pin(self, kind: str, text: str, seq: int) -> Iterator[Step]:
        outcome = yield from self._do(pin_step(self._phase, kind, text, seq))
        if outcome.refused is None:
            assert isinstance(outcome.result, StepResult)
            self._pins.append(LivePin(outcome.result.id, kind, text))
            self.stats.pins += 1

    def _unpin(self, pin: LivePin, reason: str) -> Iterator[Step]:
        outcome = yield from self._do(unpin_step(self._phase, pin.id, reason))
        if outcome.refused is None:
            self._pins.remove(pin)
            self.stats.unpins += 1

    def _plant(self, kind: str, seq: int, text: str, keys: tuple[str, ...], subject: str) -> Fact:
        """Register the fact entry ``seq`` states (:class:`registre.bench.facts.FactBook`)."""
        self.stats.facts += 1
        return self.facts.add(kind, seq, text, keys, subject)

    def _next(self, prefix: str) -> str:
        number = self._counters.get(prefix, 0) + 1
        self._counters[prefix] = number
        return f"{prefix}-{number}"
