"""The projection digest and the model.call check (specs/context.md section 8)."""

from __future__ import annotations

import hashlib

import pytest

from registre.attest.canonical_json import canonical_bytes
from registre.attest.entries import validate_body
from registre.attest.projection_digest import (
    ContextDigestMismatchError,
    ModelCallOverBudgetError,
    projection_digest,
    verify_model_call,
)
from registre.context import (
    ContextState,
    UnknownTokenCounterError,
    counter_registry,
    default_counter,
    project,
)
from registre.errors import VerificationError
from tests.context.example import POLICY, worked_example

COUNTER = default_counter()


def model_call(state: ContextState, budget: int = 320) -> dict[str, object]:
    projection = project(state, budget, POLICY, COUNTER)
    body: dict[str, object] = {
        "model": "deepseek/deepseek-chat",
        "projection_sha256": projection_digest(projection),
        "at_seq": state.at,
        "budget_tokens": budget,
        "policy": POLICY.to_json(),
        "token_counter": COUNTER.name,
    }
    validate_body("model.call", body)
    return body


def test_digest_is_sha256_of_the_canonical_json() -> None:
    projection = project(worked_example().state, 320, POLICY, COUNTER)
    expected = hashlib.sha256(canonical_bytes(projection.to_json())).hexdigest()
    assert projection_digest(projection) == expected


def test_a_recorded_model_call_reproduces() -> None:
    builder = worked_example()
    body = model_call(builder.state)  # recorded by the writer, from its live state
    replayed = ContextState.replay(builder.entries)  # folded afresh by a verifier
    assert body["at_seq"] == replayed.at == 9
    verify_model_call(body, replayed, counter_registry())
    reproduced = project(replayed, 320, POLICY, COUNTER)
    assert projection_digest(reproduced) == body["projection_sha256"]


def test_model_call_digest_mismatch_fail() -> None:
    state = worked_example().state
    body = model_call(state)
    body["projection_sha256"] = "0" * 64
    with pytest.raises(ContextDigestMismatchError, match="not the one the ledger implies"):
        verify_model_call(body, state, counter_registry())


def test_model_call_hiding_a_later_compaction_fail() -> None:
    builder = worked_example()
    before = ContextState.replay(builder.entries[:9])  # the context before the compaction
    body = model_call(before, budget=400)
    body["at_seq"] = 9  # claim the call saw the compacted thread
    with pytest.raises(ContextDigestMismatchError):
        verify_model_call(body, builder.state, counter_registry())


def test_model_call_with_another_budget_fail() -> None:
    state = worked_example().state
    body = model_call(state) | {"budget_tokens": 321}
    with pytest.raises(ContextDigestMismatchError):
        verify_model_call(body, state, counter_registry())


def test_model_call_over_its_budget_fail() -> None:
    state = worked_example().state
    body = model_call(state) | {"budget_tokens": 100}
    with pytest.raises(ModelCallOverBudgetError, match="does not fit the recorded budget"):
        verify_model_call(body, state, counter_registry())


def test_model_call_with_an_unknown_counter_fail() -> None:
    state = worked_example().state
    body = model_call(state) | {"token_counter": "acme/7"}
    with pytest.raises(UnknownTokenCounterError):
        verify_model_call(body, state, counter_registry())


def test_errors_are_verification_errors() -> None:
    assert issubclass(ContextDigestMismatchError, VerificationError)
    assert issubclass(ModelCallOverBudgetError, VerificationError)


def test_state_at_another_seq_is_the_callers_mistake() -> None:
    state = worked_example().state
    with pytest.raises(ValueError, match="at 8"):
        verify_model_call(model_call(state) | {"at_seq": 8}, state, counter_registry())
