"""The lifecycle machine: ``decide(state, request) -> outcome`` and ``apply(state, event)``.

* :func:`decide` validates the request (raising
  :class:`~registre.lifecycle.errors.LifecycleFormatError` if it is malformed) and returns what the
  rules decide. It never changes the state. Refusals are data: a :class:`Rejected` outcome
  (or rejected batch items), never an exception.
* :func:`apply` re-decides the event's request against the state and requires the recorded
  outcome to equal that decision, raising :class:`~registre.lifecycle.errors.ReplayMismatchError`
  otherwise (this is how a verifier detects a forged or altered lifecycle history); only then
  does it carry out the changes. It costs O(what the request touches), not O(history): the
  returned state takes over the tables and the given state is retired (see
  :mod:`registre.lifecycle.state`). A mismatch or malformed event leaves the given state untouched
  and usable.
* :func:`replay` folds events from the empty state; equal event sequences give equal states.

Typical use by the entry layer: ``outcome = decide(state, request)``; append the entry with
body ``event_to_body(Event(request, outcome))``; then ``state = apply(state, event)``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any, Final

from registre.lifecycle.codec import normalize_request, outcome_to_json
from registre.lifecycle.conclusions import (
    commit_conclusion,
    commit_conclusion_revise,
    decide_conclusion,
    decide_conclusion_revise,
)
from registre.lifecycle.errors import ReplayMismatchError
from registre.lifecycle.evidence import (
    commit_evidence_revise,
    commit_upsert,
    decide_evidence_revise,
    decide_upsert,
)
from registre.lifecycle.model import (
    ComputeRequest,
    ConclusionReviseRequest,
    Event,
    EvidenceReviseRequest,
    FinalRequest,
    Outcome,
    PinRequest,
    ReadOutcome,
    ReadRequest,
    Registered,
    Request,
    UnpinRequest,
    UpsertOutcome,
    UpsertRequest,
)
from registre.lifecycle.pins import commit_pin, commit_unpin, decide_pin, decide_unpin
from registre.lifecycle.sources import commit_read, decide_read
from registre.lifecycle.state import LifecycleState, Tables

__all__ = ["apply", "decide", "replay", "step"]

# Each rule: (decide, commit). A commit is only ever given the outcome its decide returned
# for the same tables and request, which is what lets it trust ids and stale lists.
_Rule = tuple[Callable[[Tables, Any], Any], Callable[[Tables, Any, Any], None]]
_RULES: Final[dict[type, _Rule]] = {
    ReadRequest: (decide_read, commit_read),
    UpsertRequest: (decide_upsert, commit_upsert),
    EvidenceReviseRequest: (decide_evidence_revise, commit_evidence_revise),
    ComputeRequest: (decide_conclusion, commit_conclusion),
    FinalRequest: (decide_conclusion, commit_conclusion),
    ConclusionReviseRequest: (decide_conclusion_revise, commit_conclusion_revise),
    PinRequest: (decide_pin, commit_pin),
    UnpinRequest: (decide_unpin, commit_unpin),
}


def decide(state: LifecycleState, request: Request) -> Outcome:
    """What the rules decide for ``request`` in ``state``; ``state`` is not changed.

    Cost: O(size of the request + what it cites), independent of the history.
    Raises LifecycleFormatError for a malformed request and StateRetiredError for a
    retired state.
    """
    normalized = normalize_request(request)
    decide_rule, _ = _RULES[type(normalized)]
    outcome: Outcome = decide_rule(state.tables(), normalized)
    return outcome


def apply(state: LifecycleState, event: Event) -> LifecycleState:
    """The state after ``event``; ``state`` is retired and must not be used again.

    Raises ReplayMismatchError if ``event.outcome`` is not exactly what :func:`decide` gives
    for ``event.request`` in ``state`` (``state`` then stays usable and unchanged).
    """
    request = normalize_request(event.request)
    decide_rule, commit_rule = _RULES[type(request)]
    tables = state.tables()
    expected: Outcome = decide_rule(tables, request)
    if expected != event.outcome:
        raise ReplayMismatchError(_mismatch(request, event.outcome, expected))
    state.retire()
    # The recorded outcome, equal to the decided one: its ids (read by the codec, interned)
    # are the strings the caller's other indexes of the event hold, so the tables share them.
    commit_rule(tables, request, event.outcome)
    return LifecycleState(tables)


def step(state: LifecycleState, request: Request) -> tuple[Event, LifecycleState]:
    """Decide ``request`` and apply the resulting event: ``(event, new state)``; ``state`` is
    retired. For callers that decide and record in one go (the ledger decides, appends, then
    applies, so that a failed append leaves its state usable)."""
    event = Event(normalize_request(request), decide(state, request))
    return event, apply(state, event)


def replay(events: Iterable[Event]) -> LifecycleState:
    """The state after ``events`` from the empty state.

    Raises ReplayMismatchError (with ``index``, the 0-based position of the event) at the
    first event whose recorded outcome the rules do not give.
    """
    state = LifecycleState.empty()
    for index, event in enumerate(events):
        try:
            state = apply(state, event)
        except ReplayMismatchError as error:
            raise ReplayMismatchError(str(error), index=index) from None
    return state


def _mismatch(request: Request, recorded: Outcome, expected: Outcome) -> str:
    """Say where the recorded outcome departs from the rules' decision."""
    recorded_json = _json_or_repr(recorded)
    expected_json = _json_or_repr(expected)
    where = "outcome"
    if isinstance(recorded, (ReadOutcome, UpsertOutcome)) and isinstance(expected, type(recorded)):
        for index, (got, want) in enumerate(zip(recorded.results, expected.results, strict=False)):
            if got != want:
                where = f"outcome.results[{index}]"
                recorded_json, expected_json = _json_or_repr(got), _json_or_repr(want)
                break
    return (
        f"the recorded {where} of this {request.kind} is {recorded_json} but the rules give "
        f"{expected_json} for its request in the replayed state; the lifecycle history was "
        "altered or written under different rules"
    )


def _json_or_repr(outcome: Outcome | Registered) -> str:
    try:
        return repr(outcome_to_json(outcome))
    except ValueError:
        return repr(outcome)
