"""Stateful property test of the whole lifecycle machine.

Random reads, upserts (valid, invalid, mixed), revisions (supersede and retract; of active,
inactive and unknown ids; valid and invalid replacements), computes, finals, conclusion
revisions, pins and unpins. After every step the invariants of specs/lifecycle.md are checked
against brute-force recomputations that do not use the machine's own indexes.
"""

from __future__ import annotations

import json

import hypothesis
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, rule

from registre.lifecycle import (
    Accepted,
    ComputeRequest,
    Conclusion,
    ConclusionReviseRequest,
    Event,
    EvidenceReviseRequest,
    FinalRequest,
    LifecycleState,
    Outcome,
    PinRequest,
    ReadOutcome,
    ReadRequest,
    Rejected,
    Request,
    Revised,
    SourceRef,
    Statement,
    UnpinRequest,
    UpsertOutcome,
    UpsertRequest,
    apply,
    decide,
    event_to_body,
    normalize_request,
    outcome_to_json,
    parse_body,
    parse_outcome,
    parse_request,
    replay,
    request_to_json,
)
from registre.lifecycle.model import PIN_KINDS
from tests.lifecycle.builders import digest

REF_IDS = ("r1", "r2", "r3", "r4")
UNREGISTERED = "r-never-read"
texts = st.sampled_from(["", " \t", "revenue grew 4%", "the plant opened in 1998", "é ✓", "x"])
source_refs = st.builds(
    SourceRef,
    ref=st.sampled_from(REF_IDS),
    source=st.sampled_from(["report.pdf", "minutes.txt"]),
    location=st.sampled_from(["p. 1", "p. 2"]),
    sha256=st.sampled_from([digest("a"), digest("b")]),
)
ALLOWED_MOVES = {
    ("active", "active"),
    ("active", "superseded"),
    ("active", "retracted"),
    ("superseded", "superseded"),
    ("retracted", "retracted"),
    ("live", "live"),
    ("live", "unpinned"),
    ("unpinned", "unpinned"),
}


def relies_on_brute(state: LifecycleState, conclusion: Conclusion) -> set[str]:
    """What a conclusion relies on, recomputed from its citations alone."""
    found = set()
    for cited in conclusion.cites:
        if cited.startswith("ev-"):
            found.add(cited)
        else:
            cited_conclusion = state.conclusion(cited)
            assert cited_conclusion is not None
            found.update(cited_conclusion.cites)
    return found


def citing_brute(state: LifecycleState, changed: str) -> tuple[str, ...]:
    """Active conclusions that cite ``changed`` (directly, or through a cited compute)."""
    return tuple(
        c.id
        for c in state.iter_conclusions()
        if c.status == "active" and (changed in c.cites or changed in relies_on_brute(state, c))
    )


def statuses(state: LifecycleState) -> dict[str, str]:
    found: dict[str, str] = {}
    for entry in state.iter_evidence():
        found[entry.id] = entry.status
    for conclusion in state.iter_conclusions():
        found[conclusion.id] = conclusion.status
    for pin in state.iter_pins():
        found[pin.id] = pin.status
    return found


def created_ids(outcome: Outcome, request: Request) -> list[str]:
    """Ids the outcome creates (never an unpin's or a revision target's)."""
    if isinstance(outcome, UpsertOutcome):
        return [r.id for r in outcome.results if isinstance(r, Accepted)]
    if isinstance(outcome, Revised):
        return [] if outcome.successor is None else [outcome.successor]
    if isinstance(outcome, Accepted) and not isinstance(request, UnpinRequest):
        return [outcome.id]
    return []


def fully_rejected(outcome: Outcome) -> bool:
    if isinstance(outcome, (ReadOutcome, UpsertOutcome)):
        return all(isinstance(r, Rejected) for r in outcome.results)
    return isinstance(outcome, Rejected)


class LifecycleMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.state = LifecycleState.empty()
        self.events: list[Event] = []
        self.issued: set[str] = set()
        self.seen_statuses: dict[str, str] = {}

    # --- the one path every rule takes -----------------------------------------------------

    def run(self, request: Request) -> tuple[LifecycleState, Outcome]:
        before = self.state.copy()
        next_ids = self.state.next_ids
        outcome = decide(self.state, request)
        assert self.state == before, "decide changed the state"
        event = Event(normalize_request(request), outcome)
        self.check_json_round_trip(event)
        self.state = apply(self.state, event)
        self.events.append(event)

        new_ids = created_ids(outcome, request)
        for new_id in new_ids:
            assert new_id not in self.issued, f"id {new_id} reused"
            self.issued.add(new_id)
        counters = {nid.split("-")[0]: int(nid.split("-")[1]) for nid in next_ids}
        for new_id in new_ids:  # ids come from the counters, in order, without gaps
            prefix = new_id.split("-")[0]
            assert new_id == f"{prefix}-{counters[prefix]}"
            counters[prefix] += 1
        assert self.state.next_ids == tuple(f"{p}-{n}" for p, n in counters.items())
        hypothesis.event(f"{request.kind}: {self.describe(outcome)}")
        if fully_rejected(outcome):
            assert self.state == before, "a rejected step changed the state"
            assert self.state.next_ids == next_ids
        return before, outcome

    @staticmethod
    def describe(outcome: Outcome) -> str:
        if isinstance(outcome, (ReadOutcome, UpsertOutcome)):
            accepted = sum(not isinstance(r, Rejected) for r in outcome.results)
            return f"{accepted}/{len(outcome.results)} accepted"
        return outcome.reason if isinstance(outcome, Rejected) else "accepted"

    def check_json_round_trip(self, event: Event) -> None:
        body = json.loads(json.dumps(event_to_body(event)))
        assert parse_body(event.kind, body) == event
        assert parse_request(event.kind, request_to_json(event.request)) == event.request
        assert parse_outcome(event.request, outcome_to_json(event.outcome)) == event.outcome

    # --- rules ---------------------------------------------------------------------------

    @initialize(opening=st.booleans())
    def open_investigation(self, opening: bool) -> None:
        """Half the runs start with two passages read, cited by two entries and a compute, so
        that revisions and finals meet conclusions early; the other half start empty."""
        if opening:
            self.run(ReadRequest((SourceRef("r1", "report.pdf", "p. 1", digest("a")),)))
            self.run(UpsertRequest((Statement("x", ("r1",)), Statement("y", ("r1",)))))
            self.run(ComputeRequest("x and y", ("ev-1", "ev-2")))

    @rule(refs=st.lists(source_refs, min_size=1, max_size=3))
    def read(self, refs: list[SourceRef]) -> None:
        _, outcome = self.run(ReadRequest(tuple(refs)))
        assert isinstance(outcome, ReadOutcome)
        for source_ref, result in zip(refs, outcome.results, strict=True):
            registered = self.state.reference(source_ref.ref)
            if isinstance(result, Rejected):
                assert result.reason == "reference_conflict"
                assert registered is not None and registered != source_ref
            else:
                assert registered == source_ref

    @rule(data=st.data(), count=st.integers(1, 4))
    def upsert(self, data: st.DataObject, count: int) -> None:
        statements = [self.draw_evidence_statement(data) for _ in range(count)]
        before, outcome = self.run(UpsertRequest(tuple(statements)))
        assert isinstance(outcome, UpsertOutcome)
        # The batch outcome is the outcomes of its statements decided one by one.
        fork = before.copy()
        for statement, result in zip(statements, outcome.results, strict=True):
            single = UpsertRequest((statement,))
            alone = decide(fork, single)
            assert isinstance(alone, UpsertOutcome)
            assert alone.results == (result,)
            fork = apply(fork, Event(single, alone))
            admissible = (
                statement.text.strip("\t\n\x0b\x0c\r ") != ""
                and statement.cites
                and all(before.reference(r) is not None for r in statement.cites)
            )
            assert isinstance(result, Accepted) == bool(admissible)
        assert fork == self.state

    @rule(data=st.data(), retract=st.booleans())
    def revise_evidence(self, data: st.DataObject, retract: bool) -> None:
        active = [e.id for e in self.state.iter_evidence() if e.status == "active"]
        known = [entry.id for entry in self.state.iter_evidence()]
        target = data.draw(st.sampled_from([*active, *active, *known, "ev-999999"]), label="id")
        replacement = None if retract else self.draw_evidence_statement(data)
        request = EvidenceReviseRequest(target, replacement)
        before, outcome = self.run(request)
        entry = before.evidence(target)
        if entry is None:
            assert isinstance(outcome, Rejected) and outcome.reason == "unknown_evidence"
            return
        if entry.status != "active":
            assert isinstance(outcome, Rejected) and outcome.reason == "inactive_evidence"
            return
        if isinstance(outcome, Rejected):
            assert not retract
            return
        self.check_transition(before, target, outcome)
        after = self.state.evidence(target)
        assert after is not None
        if retract:
            assert after.status == "retracted" and outcome.successor is None
        else:
            assert after.status == "superseded" and after.successor == outcome.successor

    @rule(data=st.data(), text=texts, final=st.booleans())
    def conclude(self, data: st.DataObject, text: str, final: bool) -> None:
        cites = self.draw_conclusion_cites(data)
        request = FinalRequest(text, cites) if final else ComputeRequest(text, cites)
        before, outcome = self.run(request)
        if isinstance(outcome, Accepted):
            self.check_citable(before, "final" if final else "compute", cites)

    @rule(data=st.data(), text=texts, retract=st.booleans())
    def revise_conclusion(self, data: st.DataObject, text: str, retract: bool) -> None:
        active = [c.id for c in self.state.iter_conclusions() if c.status == "active"]
        known = [c.id for c in self.state.iter_conclusions()]
        target = data.draw(st.sampled_from([*active, *active, *known, "cc-999999"]), label="id")
        cites = self.draw_conclusion_cites(data)
        request = ConclusionReviseRequest(target, None if retract else Statement(text, cites))
        before, outcome = self.run(request)
        conclusion = before.conclusion(target)
        if conclusion is None:
            assert isinstance(outcome, Rejected) and outcome.reason == "unknown_conclusion"
            return
        if conclusion.status != "active":
            assert isinstance(outcome, Rejected) and outcome.reason == "inactive_conclusion"
            return
        if isinstance(outcome, Rejected):
            assert not retract
            return
        self.check_transition(before, target, outcome)
        if outcome.successor is not None:
            self.check_citable(before, conclusion.kind, cites)
            successor = self.state.conclusion(outcome.successor)
            assert successor is not None
            assert successor.kind == conclusion.kind and not successor.stale
            assert successor.predecessor == target

    @rule(kind=st.sampled_from(PIN_KINDS), text=texts, seq=st.integers(0, 50))
    def pin(self, kind: str, text: str, seq: int) -> None:
        self.run(PinRequest(kind, text, seq))  # type: ignore[arg-type]

    @rule(data=st.data(), reason=st.sampled_from(["", "superseded by the user", " "]))
    def unpin(self, data: st.DataObject, reason: str) -> None:
        known = [pin.id for pin in self.state.iter_pins()]
        target = data.draw(st.sampled_from([*known, "pin-999999"]), label="target")
        before, outcome = self.run(UnpinRequest(target, reason))
        was = before.pin(target)
        if was is None:
            assert isinstance(outcome, Rejected) and outcome.reason == "unknown_pin"
        elif was.status != "live":
            assert isinstance(outcome, Rejected) and outcome.reason == "inactive_pin"

    # --- helpers for the rules -------------------------------------------------------------

    def draw_evidence_statement(self, data: st.DataObject) -> Statement:
        """Mostly admissible statements, with blank texts, no citations and unregistered
        references mixed in."""
        registered = [r.ref for r in self.state.iter_references()]
        pool = [*registered, *registered, *registered, *REF_IDS, UNREGISTERED]
        cites = data.draw(st.lists(st.sampled_from(pool), unique=True, max_size=3), label="cites")
        return Statement(data.draw(texts, label="text"), tuple(cites))

    def draw_conclusion_cites(self, data: st.DataObject) -> tuple[str, ...]:
        """Mostly active evidence and fresh computes, with every kind of bad citation mixed in."""
        good = [e.id for e in self.state.iter_evidence() if e.status == "active"]
        good += [
            c.id
            for c in self.state.iter_conclusions()
            if c.kind == "compute" and c.status == "active" and not c.stale
        ]
        pool = [*good, *good, *good, "ev-999999", "cc-999999"]
        pool += [e.id for e in self.state.iter_evidence()]
        pool += [c.id for c in self.state.iter_conclusions()]
        return tuple(data.draw(st.lists(st.sampled_from(pool), unique=True, max_size=3)))

    def check_citable(self, before: LifecycleState, kind: str, cites: tuple[str, ...]) -> None:
        """An accepted conclusion cites only active evidence resolving to registered
        references, and (finals only) active, fresh computes."""
        assert cites
        for cited in cites:
            if cited.startswith("ev-"):
                entry = before.evidence(cited)
                assert entry is not None and entry.status == "active"
                assert all(before.reference(r) is not None for r in entry.cites)
            else:
                assert kind == "final"
                compute = before.conclusion(cited)
                assert compute is not None and compute.kind == "compute"
                assert compute.status == "active" and not compute.stale
                for evidence_id in compute.cites:
                    entry = before.evidence(evidence_id)
                    assert entry is not None and entry.status == "active"

    def check_transition(self, before: LifecycleState, changed: str, outcome: Outcome) -> None:
        """The outcome lists exactly the active conclusions citing ``changed``; those, and
        only those, are now stale (besides the ones that already were)."""
        assert isinstance(outcome, Revised)
        assert outcome.stale == citing_brute(before, changed)
        hypothesis.event(f"transition leaving {min(len(outcome.stale), 2)}+ conclusions stale")
        for conclusion in before.iter_conclusions():
            now = self.state.conclusion(conclusion.id)
            assert now is not None
            if conclusion.id in outcome.stale:
                assert now.stale
            else:
                assert now.stale == conclusion.stale
            assert now.text == conclusion.text and now.cites == conclusion.cites

    # --- invariants ----------------------------------------------------------------------

    @invariant()
    def statuses_only_move_forward(self) -> None:
        current = statuses(self.state)
        for item_id, status in current.items():
            previous = self.seen_statuses.get(item_id)
            if previous is None:
                assert status in ("active", "live"), f"{item_id} born {status}"
            else:
                assert (previous, status) in ALLOWED_MOVES, f"{item_id}: {previous}->{status}"
        assert set(self.seen_statuses) <= set(current), "an id disappeared"
        assert set(current) == self.issued
        self.seen_statuses = current

    @invariant()
    def successor_chains_are_sound(self) -> None:
        rows = [*self.state.iter_evidence(), *self.state.iter_conclusions()]
        successors_of: dict[str, list[str]] = {}
        for row in rows:
            if row.status == "superseded":
                assert row.successor is not None
                successor = self.state.evidence(row.successor) or self.state.conclusion(
                    row.successor
                )
                assert successor is not None and successor.predecessor == row.id
                successors_of.setdefault(row.id, []).append(row.successor)
            else:
                assert row.successor is None
            if row.predecessor is not None:
                successors_of.setdefault(row.predecessor, [])
        for row in rows:
            assert len(successors_of.get(row.id, [])) <= 1
            seen = {row.id}
            cursor = row.successor
            while cursor is not None:
                assert cursor not in seen, f"cycle through {cursor}"
                seen.add(cursor)
                nxt = self.state.evidence(cursor) or self.state.conclusion(cursor)
                assert nxt is not None
                cursor = nxt.successor

    @invariant()
    def active_conclusions_rely_on_what_they_cite(self) -> None:
        for conclusion in self.state.iter_conclusions():
            assert set(conclusion.relies_on) == relies_on_brute(self.state, conclusion)
            if conclusion.status == "active" and not conclusion.stale:
                for evidence_id in conclusion.relies_on:
                    entry = self.state.evidence(evidence_id)
                    assert entry is not None and entry.status == "active"
        for cited in [*self.issued, "ev-999999"]:
            if not cited.startswith("pin-"):
                assert self.state.citers(cited) == citing_brute(self.state, cited)

    @invariant()
    def replay_rebuilds_the_state(self) -> None:
        assert replay(self.events) == self.state


TestLifecycleMachine = LifecycleMachine.TestCase
