"""A long synthetic investigation, played step by step on a real thread.

A supervisor asks a bank to explain a rise in Stage 2 commercial real-estate exposures and to
reconcile expected credit losses by segment; an analyst agent answers over weeks. The
storyline, all of it through the real thread API (:mod:`registre.bench.steps`):

* **kickoff** -- the request (a user turn) with its task parameters pinned word for word, a
  first look at the files, a validated definition pinned;
* **analysis** -- query bursts (``sql``, ``python``, ``search_documents``: tool call/result
  pairs with log-normal output sizes, :mod:`registre.bench.textgen`), document reads registered as
  ``source.read`` with the SHA-256 of each passage, evidence admitted in batches (some items
  rejected for citing nothing or an unregistered reference), superseded and retracted,
  hypotheses computed as ``conclusion.compute`` and revised, conclusions left stale by
  evidence changes and repaired (sooner or later, or abandoned), supervisor check-ins and
  decisions (``decision`` entries, pinned; older ones unpinned when superseded), definitions
  read and validated (pinned), open questions pinned and unpinned once answered, and a few
  **committee detours** (a question from the risk committee, pinned, answered by a side
  investigation, unpinned, and the committee's decision pinned);
* **wrap-up** -- a final answer first tried while a hypothesis is stale (the controller
  refuses it, on the record), the stale conclusions repaired, open questions closed, the
  ``conclusion.final`` recorded and the answer given.

**Planted facts** (:mod:`registre.bench.facts`), in entries the storyline writes anyway: a
segment's Stage 2 figure as a line of some ``sql``/``python`` outputs, the segment that does
not reconcile as the first sentence of some findings, a supervisor's standing instruction
opening the scheduled instruction check-ins, and every validated definition. Before the calls
that use them the agent says what it needs: a hypothesis or its revision about a segment,
that segment's current figure and exception and often a definition; a status for the
supervisor, the segment's facts and the instructions about it (and the latest one); a
finding after queries, often a look back at one to three earlier facts, and often the latest
instruction; an answer to an open question, the latest instruction and one earlier fact; the
final conclusion, every current fact.

A model call (``thread.compact`` as the policy says, then ``thread.model_call``) precedes
every action of the agent: each tool call, assistant turn, evidence batch and conclusion.
Those building blocks (model calls, turns, tool pairs, pins) are
:class:`registre.bench.agent.AgentLoop`'s.

**Size.** The investigation plans exactly ``entries`` entries: once less than a few dozen
remain before the wrap-up, only closing checks (a query, or a one-line note) are made, so the
wrap-up ends on the planned size. Compactions come on top (they depend on the budget), and a
model call refused because the context cannot fit is planned but not written. So, for one
seed and size, every budget sees the same investigation: the same turns, tool traffic and
lifecycle requests in the same order (only the sequence numbers they point at shift). How
many of each storyline event happen scales with the size (:func:`storyline_counts`).

**Determinism.** Everything is drawn from one ``random.Random(seed)``; the lifecycle's ids are
deterministic under replay, so the same seed, size and policy give the same entry bodies.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from registre.bench.agent import (
    AgentLoop,
    InvestigationConfig,
    LivePin,
)
from registre.bench.facts import (
    Fact,
    choose,
    definition_keys,
    exception_fact,
    figure_fact,
    instruction_fact,
    unique,
)
from registre.bench.steps import (
    Step,
    append_step,
    conclude_step,
    conclusion_revise_step,
    evidence_revise_step,
    read_step,
    upsert_step,
)
from registre.bench.textgen import SEGMENTS, pick
from registre.ledger import BatchResult, StepResult
from registre.lifecycle import SourceRef

__all__ = ["Investigation", "storyline_counts"]

_MAX_LIVE_DECISIONS = 6
_MAX_LIVE_DEFINITIONS = 8
_CLOSING = 80  # below this room, only closing checks: no episode may overshoot the size
_READ_SIZE = 6  # a read: call, tool call, result, source.read, call, evidence.upsert
_FIGURE_RATE = 0.15  # sql and python outputs of a query burst carrying a segment's figure
_EXCEPTION_RATE = 0.12  # findings after a query burst that state an exception
_DEFINITION_NEED_RATE = 0.35  # hypothesis steps that need a validated definition
_FOLLOW_RATE = 0.5  # findings after a query burst written under the latest instruction
_LOOK_BACK_RATE = 0.8  # findings after a query burst that need one to three earlier facts
_FILLERS = (
    ("queries", 0.44),
    ("read", 0.26),
    ("evidence", 0.1),
    ("revise_hypothesis", 0.06),
    ("repair", 0.06),
    ("check_in", 0.05),
    ("answer", 0.03),
)


def storyline_counts(entries: int) -> dict[str, int]:
    """How many scheduled storyline events an investigation of ``entries`` holds: new
    hypotheses, committee detours, supervisor decisions, validated definitions, open
    questions and supervisor check-ins that give a standing instruction. A dozen hypotheses
    and two detours from 1,000 entries; more as it grows."""
    return {
        "hypothesis": max(2, min(12, entries // 80)) + entries // 4000,
        "committee": max(1 if entries >= 300 else 0, min(2, entries // 500)) + entries // 10000,
        "decision": max(1, min(4, entries // 250)) + entries // 2500,
        "definition": max(1, min(3, entries // 300)) + entries // 5000,
        "question": max(1, min(3, entries // 300)) + entries // 3000,
        "instruction": max(1, min(4, entries // 250)) + entries // 2500,
    }


@dataclass
class _Hypothesis:
    number: int
    current: str
    cites: tuple[str, ...]
    revisions: int = 0
    stale: bool = False


class Investigation(AgentLoop):
    """One investigation. Iterate :meth:`steps` and run each step on the thread before
    asking for the next (the storyline reads each outcome; RuntimeError otherwise)."""

    def __init__(self, config: InvestigationConfig) -> None:
        super().__init__(config)
        self._refs: list[str] = []
        self._active: list[str] = []  # active evidence ids, admission order
        self._hypotheses: list[_Hypothesis] = []

    # --- the storyline -------------------------------------------------------------------

    def steps(self) -> Iterator[Step]:
        """The steps, lazily (see the class docstring)."""
        yield from self._kickoff()
        self._phase = "analysis"
        schedule = self._schedule()
        while (room := self._room()) > 0:
            if room < _CLOSING:
                yield from self._closing_check(room)
            elif schedule and schedule[0][0] <= self.stats.planned:
                _position, event = schedule.pop(0)
                yield from self._scheduled(event)
            else:
                yield from self._filler()
        self._phase = "wrap-up"
        yield from self._wrap_up()

    def _schedule(self) -> list[tuple[int, str]]:
        target = self.config.entries
        events = [
            (int(target * self._rng.uniform(0.05, 0.85)), event)
            for event, count in storyline_counts(target).items()
            for _ in range(count)
        ]
        return sorted(events)

    def _room(self) -> int:
        """Entries left before the wrap-up must start, so that it ends exactly at the
        planned size."""
        return self.config.entries - self.stats.planned - self._wrap_up_size()

    def _wrap_up_size(self) -> int:
        """Entries :meth:`_wrap_up` plans, given the state now: an eager final (call and
        refusal) if a hypothesis is stale, a repair (call and revision) per stale hypothesis,
        an answer (call, turn, unpin) per open question, the final (call and conclusion),
        the answer (call and turn) and the supervisor's receipt; a hypothesis (call and
        conclusion, after a read if no evidence is active) if there is none."""
        stale = sum(1 for h in self._hypotheses if h.stale)
        questions = sum(1 for pin in self._pins if pin.kind == "open_question")
        size = 5 + 2 * stale + 3 * questions + (2 if stale else 0)
        if not self._hypotheses:
            size += 2 + (_READ_SIZE if not self._active else 0)
        return size

    def _closing_check(self, room: int) -> Iterator[Step]:
        """The last checks before the wrap-up: a query (3 entries) or a supervisor's note
        (1 entry), neither of which changes what the wrap-up needs."""
        if room >= 3:
            yield from self._tool(pick(self._rng, (("sql", 0.6), ("python", 0.4))))
        else:
            yield from self._say("user", "Noted; keep going.", "supervisor")

    def _scheduled(self, event: str) -> Iterator[Step]:
        if event == "hypothesis":
            yield from self._new_hypothesis()
        elif event == "committee":
            yield from self._committee()
        elif event == "decision":
            yield from self._decision("supervisor")
        elif event == "definition":
            yield from self._definition()
        elif event == "instruction":
            yield from self._check_in(instruct=True)
        else:
            yield from self._question()

    def _filler(self) -> Iterator[Step]:
        choice = pick(self._rng, _FILLERS)
        if choice == "evidence" and len(self._active) >= 4:
            yield from self._change_evidence()
        elif choice == "revise_hypothesis" and self._hypotheses:
            yield from self._revise_hypothesis()
        elif choice == "repair" and any(h.stale for h in self._hypotheses):
            yield from self._repair(self._rng.choice([h for h in self._hypotheses if h.stale]))
        elif choice == "check_in":
            yield from self._check_in()
        elif choice == "answer" and any(p.kind == "open_question" for p in self._pins):
            yield from self._answer(next(p for p in self._pins if p.kind == "open_question"))
        elif choice == "read" or len(self._active) < 2:
            yield from self._read()
        else:
            yield from self._queries(self._rng.randint(1, 5))

    def _kickoff(self) -> Iterator[Step]:
        rng = self._rng
        number = rng.randrange(100, 999)
        threshold = rng.choice((2, 5, 10, 25))
        deadline = rng.randrange(3, 28)
        parameters = [
            "Reporting date: 30 September 2025.",
            "Scope: commercial real estate, EU borrowers only.",
            f"Materiality threshold: EUR {threshold}m per segment.",
            f"Deadline for the answer: {deadline} November 2025.",
            "Figures must come from the Q3 loan tape, not from management reports.",
        ]
        request = (
            f"Supervisory request SR-2025-{number} from the Joint Supervisory Team: explain the "
            "rise in Stage 2 exposures of the commercial real-estate book between 30 June and "
            "30 September 2025 and reconcile the ECL by segment. " + " ".join(parameters)
        )
        turn = yield from self._say("user", request, "supervisor")
        yield from self._say(
            "assistant",
            "Understood. I will rebuild the Stage 2 movement from the Q3 loan tape segment by "
            "segment, check it against the methodology and the committee minutes, and keep the "
            "task parameters pinned throughout.",
        )
        for parameter in parameters[: 4 if self.config.entries < 200 else 5]:
            yield from self._pin("task_parameter", parameter, turn)
        yield from self._tool("list_files")
        yield from self._definition()

    def _wrap_up(self) -> Iterator[Step]:
        stale = [h for h in self._hypotheses if h.stale]
        if not self._hypotheses:
            yield from self._new_hypothesis(least_evidence=1)
        if stale:
            # An eager final first: the controller refuses it, on the record.
            cites = [stale[0].current, *self._active[-2:]]
            yield from self._call()
            outcome = yield from self._do(
                conclude_step(self._phase, "final", self._answer_text(), cites)
            )
            if outcome.refused is not None:
                self.stats.refused_finals += 1
        for hypothesis in stale:
            yield from self._repair(hypothesis)
        for pin in [p for p in self._pins if p.kind == "open_question"]:
            yield from self._answer(pin)
        fresh = [h.current for h in self._hypotheses if not h.stale]
        yield from self._call(tuple(self.facts.current()))
        final = yield from self._do(
            conclude_step(self._phase, "final", self._answer_text(), [*fresh, *self._active[-3:]])
        )
        if final.refused is None:
            self.stats.finals += 1
        yield from self._say(
            "assistant",
            f"Final answer recorded: {self._answer_text()} It cites {len(fresh)} hypotheses "
            "and the latest evidence; every figure traces back to a registered passage.",
        )
        yield from self._say(
            "user", "Received; we will review the answer with the trace.", "supervisor"
        )

    # --- episodes ------------------------------------------------------------------------

    def _queries(self, rounds: int) -> Iterator[Step]:
        facts = self._facts_rng
        rounds = max(1, min(rounds, self._room() // 3))
        for _ in range(rounds):
            tool = pick(self._rng, (("sql", 0.5), ("python", 0.3), ("search_documents", 0.2)))
            if tool == "search_documents" or facts.random() >= _FIGURE_RATE:
                yield from self._tool(tool)
                continue
            segment = facts.choice(SEGMENTS)
            line, keys = figure_fact(facts, segment)
            result_seq, _content, _path = yield from self._tool(tool, plant=line)
            self._plant("figure", result_seq, line, keys, segment)
        finding = f"Finding: {self._text.finding()}"
        needs: list[Fact] = []
        if facts.random() < _LOOK_BACK_RATE:
            needs = choose(facts, self.facts.current(), facts.randint(1, 3))
        if facts.random() < _FOLLOW_RATE:
            needs += self.facts.instructions[-1:]
        if facts.random() < _EXCEPTION_RATE:
            segment = facts.choice(SEGMENTS)
            text, keys = exception_fact(facts, segment)
            needs += self.facts.about(segment)
            seq = yield from self._say("assistant", text, needs=unique(needs))
            self._plant("exception", seq, text, keys, segment)
        else:
            yield from self._say("assistant", finding, needs=unique(needs))

    def _read(self) -> Iterator[Step]:
        result_seq, content, path = yield from self._tool("read_document")
        paragraphs = [p for p in content.split("\n\n") if p.strip()]
        chosen = self._rng.sample(paragraphs, min(len(paragraphs), self._rng.randint(1, 2)))
        refs = []
        for paragraph in chosen:
            ref = self._next("r")
            refs.append(
                SourceRef(
                    ref,
                    path,
                    f"entry {result_seq}, paragraph {paragraph.split(' ', 1)[0]}",
                    hashlib.sha256(paragraph.encode("utf-8")).hexdigest(),
                )
            )
        outcome = yield from self._do(read_step(self._phase, refs))
        assert isinstance(outcome.result, BatchResult)
        registered = list(outcome.result.accepted)
        self._refs.extend(registered)
        self.stats.reads += 1
        yield from self._upsert(registered)

    def _upsert(self, fresh_refs: list[str]) -> Iterator[Step]:
        rng = self._rng
        statements: list[dict[str, Any]] = []
        for _ in range(rng.randint(1, 3)):
            cites = [rng.choice(fresh_refs or self._refs)]
            if len(self._refs) > 3 and rng.random() < 0.3:
                cites.append(rng.choice(self._refs[:-1]))
            statements.append({"text": self._text.finding(), "cites": sorted(set(cites))})
        if rng.random() < 0.12:
            statements.append({"text": f"Unsourced: {self._text.sentence()}", "cites": []})
        if rng.random() < 0.06:
            statements.append({"text": self._text.finding(), "cites": ["r-unregistered"]})
        yield from self._call()
        outcome = yield from self._do(upsert_step(self._phase, statements))
        assert isinstance(outcome.result, BatchResult)
        self._active.extend(outcome.result.accepted)
        self.stats.evidence_admitted += len(outcome.result.accepted)
        self.stats.evidence_rejected += len(outcome.result.rejected)

    def _change_evidence(self) -> Iterator[Step]:
        rng = self._rng
        # Evidence a hypothesis relies on is what gets re-examined most.
        cited = sorted({e for h in self._hypotheses for e in h.cites if e in self._active})
        target = rng.choice(cited if cited and rng.random() < 0.6 else self._active[:-1])
        replacement = None
        if rng.random() < 0.65:
            replacement = {
                "text": f"Corrected: {self._text.finding()}",
                "cites": [self._refs[-1]],
            }
        yield from self._call()
        outcome = yield from self._do(evidence_revise_step(self._phase, target, replacement))
        if outcome.refused is not None:
            return
        assert isinstance(outcome.result, StepResult)
        self._active.remove(target)
        if outcome.result.successor is not None:
            self._active.append(outcome.result.successor)
            self.stats.evidence_superseded += 1
        else:
            self.stats.evidence_retracted += 1
        stale = set(outcome.result.stale)
        for hypothesis in self._hypotheses:
            if hypothesis.current in stale and not hypothesis.stale:
                hypothesis.stale = True
                self.stats.stale_events += 1
        if stale and rng.random() < 0.5:
            yield from self._repair(next(h for h in self._hypotheses if h.stale))

    def _new_hypothesis(self, least_evidence: int = 2) -> Iterator[Step]:
        while len(self._active) < least_evidence:
            yield from self._read()
        number = len(self._hypotheses) + 1
        segment = self._text.segment()
        text = (
            f"H{number}: the rise in Stage 2 {segment} exposures comes mainly from "
            f"{self._text.cause()}."
        )
        cites = self._cites(2, 4)
        yield from self._call(self._segment_needs(segment))
        outcome = yield from self._do(conclude_step(self._phase, "compute", text, cites))
        assert isinstance(outcome.result, StepResult)
        self._hypotheses.append(_Hypothesis(number, outcome.result.id, tuple(cites)))
        self.stats.hypotheses += 1

    def _revise_hypothesis(self) -> Iterator[Step]:
        hypothesis = self._rng.choice(self._hypotheses)
        yield from self._revise(hypothesis)
        self.stats.hypothesis_revisions += 1

    def _repair(self, hypothesis: _Hypothesis) -> Iterator[Step]:
        if self._rng.random() < 0.15 and len(self._hypotheses) > 2:
            yield from self._call()
            outcome = yield from self._do(
                conclusion_revise_step(self._phase, hypothesis.current, None)
            )
            if outcome.refused is None:
                self._hypotheses.remove(hypothesis)
                self.stats.abandoned += 1
            return
        yield from self._revise(hypothesis)
        self.stats.repaired += 1

    def _revise(self, hypothesis: _Hypothesis) -> Iterator[Step]:
        hypothesis.revisions += 1
        share = self._rng.randrange(20, 95)
        segment = self._text.segment()
        text = (
            f"H{hypothesis.number} (revision {hypothesis.revisions}): "
            f"{share}% of the Stage 2 rise in {segment} is "
            f"explained by {self._text.cause()}."
        )
        cites = self._cites(2, 4)
        yield from self._call(self._segment_needs(segment))
        outcome = yield from self._do(
            conclusion_revise_step(self._phase, hypothesis.current, {"text": text, "cites": cites})
        )
        if outcome.refused is None:
            assert isinstance(outcome.result, StepResult)
            assert outcome.result.successor is not None
            hypothesis.current = outcome.result.successor
            hypothesis.cites = tuple(cites)
            hypothesis.stale = False

    def _check_in(self, instruct: bool = False) -> Iterator[Step]:
        """The supervisor asks about a segment (``instruct``: opening with a standing
        instruction, a planted fact); the agent answers under the instructions in force."""
        facts = self._facts_rng
        segment = self._text.segment()
        question = f"Where do we stand on {segment}? The committee meets soon."
        if instruct:
            number = len(self.facts.instructions) + 1
            instruction, keys = instruction_fact(facts, number, segment)
            seq = yield from self._say("user", f"{instruction} {question}", "supervisor")
            self._plant("instruction", seq, instruction, keys, segment)
        else:
            yield from self._say("user", question, "supervisor")
        instructions = self.facts.instructions
        needs = unique(
            [
                *(f for f in instructions if f.subject == segment),
                *instructions[-1:],
                *self.facts.about(segment),
            ]
        )
        yield from self._say("assistant", f"Status: {self._text.sentences(3)}", needs=needs)

    def _decision(self, actor: str) -> Iterator[Step]:
        number = self._counters.get("D", 0) + 1
        self._counters["D"] = number
        rng = self._rng
        options = (
            f"exclude {self._text.segment()} loans under EUR {rng.randrange(1, 9)}m from the "
            "reconciliation",
            f"use the external valuations for {self._text.segment()} instead of the internal "
            "indexation",
            f"treat the June overlay as expired for {self._text.segment()}",
            "report ECL before and after overlays in separate columns",
            f"accept the {self._text.document()[1]} as the reference for staging rules",
        )
        text = f"Decision {number}: {rng.choice(options)}."
        turn = yield from self._say("user", f"{text} Please proceed on that basis.", actor)
        outcome = yield from self._do(
            append_step("decision", self._phase, {"text": text, "refs": [turn]}, actor)
        )
        self.stats.decisions += 1
        yield from self._pin("decision", text, outcome.seqs[-1])
        live = [pin for pin in self._pins if pin.kind == "decision"]
        if len(live) > _MAX_LIVE_DECISIONS:
            yield from self._unpin(live[0], f"superseded by decision {number}")

    def _definition(self) -> Iterator[Step]:
        number = self._counters.get("DEF", 0) + 1
        self._counters["DEF"] = number
        code = f"DEF-{number:02d}"
        segment = self._text.segment()
        definition = self._rng.choice(
            (
                f"Definition {code}: a significant increase in credit risk is presumed when the "
                f"lifetime PD of a {segment} loan has at least doubled since origination.",
                f"Definition {code}: a {segment} loan is forborne when a concession is granted "
                "to a borrower in financial difficulty and recorded in the forbearance register.",
                f"Definition {code}: the management overlay for {segment} is the post-model "
                "adjustment the risk committee approved, booked per segment.",
                f"Definition {code}: Stage 2 holds {segment} exposures with a significant increase "
                "in credit risk that are not credit-impaired; 30 days past due is a backstop.",
            )
        )
        result_seq, _content, _path = yield from self._tool("read_document", insert=definition)
        self._plant("definition", result_seq, definition, definition_keys(code, definition), code)
        yield from self._say(
            "user", f"{code} is validated; use it exactly as written.", "supervisor"
        )
        yield from self._pin("definition", definition, result_seq)
        self.stats.definitions += 1
        live = [pin for pin in self._pins if pin.kind == "definition"]
        if len(live) > _MAX_LIVE_DEFINITIONS:
            yield from self._unpin(live[0], f"replaced by {code}")

    def _question(self) -> Iterator[Step]:
        number = self._counters.get("Q", 0) + 1
        self._counters["Q"] = number
        question = (
            f"Q{number}: does {self._text.cause()} explain the {self._text.segment()} "
            f"{self._text.metric()} movement?"
        )
        turn = yield from self._say("assistant", f"Open question {question} I will come back.")
        yield from self._pin("open_question", question, turn)
        self.stats.open_questions += 1

    def _answer(self, pin: LivePin) -> Iterator[Step]:
        label = pin.text.split(":", 1)[0]
        facts = self._facts_rng
        needs = unique([*self.facts.instructions[-1:], *choose(facts, self.facts.current(), 1)])
        turn = yield from self._say(
            "assistant", f"Answer to {label}: {self._text.sentences(2)}", needs=needs
        )
        yield from self._unpin(pin, f"{label} answered in entry {turn}")

    def _committee(self) -> Iterator[Step]:
        number = self._counters.get("C", 0) + 1
        self._counters["C"] = number
        question = (
            f"C{number}: why did {self._text.segment()} {self._text.metric()} move while "
            "valuations were stable?"
        )
        chair = self._text.person()
        turn = yield from self._say(
            "user",
            f"The risk committee (chair: {chair}) asks for its next meeting: {question}",
            "committee",
        )
        yield from self._pin("open_question", question, turn)
        self.stats.committee_detours += 1
        self.stats.open_questions += 1
        previous = self._phase
        self._phase = "committee"
        yield from self._say(
            "assistant", f"Pausing the main line to answer the committee's C{number}."
        )
        yield from self._queries(self._rng.randint(3, 8))
        yield from self._read()
        pin = next(p for p in self._pins if p.text == question)
        yield from self._answer(pin)
        yield from self._decision("committee")
        self._phase = previous

    def _segment_needs(self, segment: str) -> tuple[Fact, ...]:
        """What a step about ``segment`` needs: its current figure and exception, and
        sometimes one validated definition."""
        facts = self._facts_rng
        definitions = choose(facts, self.facts.definitions, 1)
        if facts.random() >= _DEFINITION_NEED_RATE:
            definitions = []
        return unique([*self.facts.about(segment), *definitions])

    def _cites(self, low: int, high: int) -> list[str]:
        count = min(len(self._active), self._rng.randint(low, high))
        return sorted(self._rng.sample(self._active, count), key=_id_order)

    def _answer_text(self) -> str:
        return (
            "The Stage 2 rise is explained by the hypotheses still standing, segment by "
            "segment, and the ECL reconciles within the materiality threshold."
        )


def _id_order(identifier: str) -> tuple[str, int]:
    prefix, _, number = identifier.rpartition("-")
    return prefix, int(number)
