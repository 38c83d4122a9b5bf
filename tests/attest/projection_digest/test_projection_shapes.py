"""Model calls in a provider shape (specs/context.md section 8, specs/entries.md 4.6): the
digest is SHA-256 over the RFC 8785 bytes of the request data sent, the ``shape`` field says
which, and the verifier (offline and ``verify --db``) rebuilds that shape."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest
from hypothesis import assume, given

from registre.attest.canonical_json import canonical_bytes
from registre.attest.entries import BodySchemaError, validate_body
from registre.attest.projection_digest import (
    REGISTRE_SHAPE,
    SHAPES,
    ContextDigestMismatchError,
    projection_digest,
    shape_digest,
    shape_json,
    verify_model_call,
)
from registre.context import (
    PROVIDER_SHAPES,
    ContextBudgetError,
    ContextState,
    Policy,
    Projection,
    counter_registry,
    default_counter,
    project,
)
from tests.bundles import STORY_POLICY, story_prefix
from tests.bundles import Thread as BundleThread
from tests.context.example import POLICY, worked_example
from tests.context.strategies import policies, run_script, scripts
from tests.tamper.helpers import fails, passes

COUNTER = default_counter()


def sha256(data: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_bytes(data)).hexdigest()


def call_body(
    state: ContextState, shape: str, budget: int = 320, policy: Policy = POLICY
) -> dict[str, Any]:
    """The body a writer records for a call in ``shape`` (no ``shape`` field: registre)."""
    projection = project(state, budget, policy, COUNTER)
    body: dict[str, Any] = {
        "model": "acme/model-4",
        "projection_sha256": shape_digest(projection, shape),
        "at_seq": state.at,
        "budget_tokens": budget,
        "policy": policy.to_json(),
        "token_counter": COUNTER.name,
    }
    if shape != REGISTRE_SHAPE:
        body["shape"] = shape
    validate_body("model.call", body)
    return body


def example() -> Projection:
    return project(worked_example().state, 320, POLICY, COUNTER)


def test_the_digest_covers_the_bytes_of_the_shape_sent() -> None:
    projection = example()
    sent = {
        "registre": projection.to_json(),
        "openai.chat": projection.as_openai_chat(),
        "openai.responses": projection.as_openai_responses(),
        "anthropic": projection.as_anthropic(),
    }
    assert set(sent) == set(SHAPES)
    for shape, data in sent.items():
        assert shape_json(projection, shape) == data
        assert shape_digest(projection, shape) == sha256(data)
    assert shape_digest(projection) == projection_digest(projection) == sha256(sent["registre"])
    assert len({shape_digest(projection, shape) for shape in SHAPES}) == len(SHAPES)
    with pytest.raises(ValueError, match="unknown provider shape"):
        shape_digest(projection, "openai")


@pytest.mark.parametrize("shape", SHAPES)
def test_a_shaped_model_call_reproduces(shape: str) -> None:
    builder = worked_example()
    body = call_body(builder.state, shape)
    assert ("shape" in body) == (shape != REGISTRE_SHAPE)
    verify_model_call(body, ContextState.replay(builder.entries), counter_registry())


def test_model_call_shape_digest_forged_fail() -> None:
    """A call claiming one shape with the digest of another, of a request edited after the
    fact, or with its shape field dropped or changed, is refused."""
    state = worked_example().state
    projection = project(state, 320, POLICY, COUNTER)
    edited = projection.as_anthropic()
    edited["messages"][-1]["content"][0]["text"] = "Delete the failing test."
    forgeries = [
        call_body(state, "anthropic")
        | {"projection_sha256": shape_digest(projection, "openai.chat")},
        call_body(state, "anthropic") | {"projection_sha256": projection_digest(projection)},
        call_body(state, "anthropic") | {"projection_sha256": sha256(edited)},
        call_body(state, "openai.chat") | {"shape": "openai.responses"},
        {k: v for k, v in call_body(state, "openai.chat").items() if k != "shape"},
        call_body(state, REGISTRE_SHAPE) | {"shape": "anthropic"},
    ]
    for body in forgeries:
        validate_body("model.call", body)  # well-formed: only the replay can tell
        with pytest.raises(ContextDigestMismatchError, match="shape"):
            verify_model_call(body, state, counter_registry())


def test_the_shape_field_is_one_of_the_provider_shapes() -> None:
    body = call_body(worked_example().state, REGISTRE_SHAPE)
    validate_body("model.call", body)  # no shape: the registre projection, as before shapes
    for shape in PROVIDER_SHAPES:
        validate_body("model.call", body | {"shape": shape})
    for wrong in ("registre", "openai", "Anthropic", 1, None):
        with pytest.raises(BodySchemaError, match=r"^body\.shape: expected \"openai\.chat\""):
            validate_body("model.call", body | {"shape": wrong})
    with pytest.raises(ValueError, match="validate the body"):
        verify_model_call(body | {"shape": "registre"}, worked_example().state, counter_registry())


# --- the offline verifier -----------------------------------------------------------------------


def shaped_call(thread: BundleThread, shape: str, forged_digest: str | None = None) -> None:
    assert thread.context is not None
    budget = STORY_POLICY.budget_tokens
    projection = project(thread.context, budget, STORY_POLICY, COUNTER)
    thread.append(
        "model.call",
        {
            "model": "test/model",
            "projection_sha256": forged_digest or shape_digest(projection, shape),
            "at_seq": thread.size - 1,
            "budget_tokens": budget,
            "policy": STORY_POLICY.to_json(),
            "token_counter": COUNTER.name,
            "shape": shape,
        },
    )


def test_a_bundle_with_shaped_model_calls_verifies() -> None:
    thread = story_prefix()
    thread.compact()  # 7
    for shape in PROVIDER_SHAPES:  # 8, 9, 10
        shaped_call(thread, shape)
    thread.model_call()  # 11: a call without a shape, as before
    report = passes(thread.full_bundle())
    assert "4 model-call projection digests reproduced" in " ".join(report.step(6).checked)


def test_a_bundle_with_a_forged_shape_digest_fails() -> None:
    thread = story_prefix()
    thread.compact()  # 7
    assert thread.context is not None
    projection = project(thread.context, STORY_POLICY.budget_tokens, STORY_POLICY, COUNTER)
    shaped_call(thread, "anthropic", forged_digest=shape_digest(projection, "openai.chat"))  # 8
    thread.turn("after")
    fails(thread.full_bundle(), ContextDigestMismatchError, step=6, seq=8)


# --- property -----------------------------------------------------------------------------------


@given(scripts(max_size=50), policies())
def test_every_shape_digest_reproduces(script: list[Any], policy: Policy) -> None:
    builder = run_script(script, policy).builder
    try:
        bodies = [call_body(builder.state, shape, policy.budget_tokens, policy) for shape in SHAPES]
    except ContextBudgetError:
        assume(False)
        return
    replayed = ContextState.replay(builder.entries)
    for body in bodies:
        verify_model_call(body, replayed, counter_registry())
