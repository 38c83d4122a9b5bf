"""The projection digest and the ``model.call`` check (``specs/context.md`` section 8).

A ``model.call`` entry records ``projection_sha256``: the SHA-256 of the RFC 8785 canonical
bytes of ``projection.to_json()`` for the projection sent to the model. lifecycle may not
import attest, so the digest is computed here, where the canonical encoder lives.

:func:`verify_model_call` is what the offline verifier runs for each ``model.call``: rebuild
the projection from the context state at the recorded ``at_seq`` with the recorded budget,
policy and counter, and require the digest to reproduce. It raises, never returns a verdict:

1. :class:`~registre.lifecycle.context.errors.UnknownTokenCounterError` -- the verifier has no
   counter of the recorded name;
2. :class:`ModelCallOverBudgetError` -- the rebuilt context does not fit the recorded budget
   (so no such projection could have been sent);
3. :class:`ContextDigestMismatchError` -- the digest does not reproduce: the context behind the
   call was not the one the ledger implies (THREATS row 19).
"""

from __future__ import annotations

import hashlib
from collections.abc import Mapping

from registre.attest.canonical import canonical_bytes
from registre.attest.errors import VerificationError
from registre.lifecycle.context import (
    ContextBudgetError,
    ContextState,
    Projection,
    TokenCounter,
    parse_policy,
    project,
    resolve_counter,
)

__all__ = [
    "ContextDigestMismatchError",
    "ModelCallOverBudgetError",
    "projection_digest",
    "verify_model_call",
]


class ContextDigestMismatchError(VerificationError):
    """A ``model.call`` whose ``projection_sha256`` is not the digest of the projection the
    ledger prefix gives."""


class ModelCallOverBudgetError(VerificationError):
    """A ``model.call`` whose recorded budget the rebuilt context does not fit."""


def projection_digest(projection: Projection) -> str:
    """Hex SHA-256 of ``canonical_bytes(projection.to_json())``."""
    return hashlib.sha256(canonical_bytes(projection.to_json())).hexdigest()


def verify_model_call(
    body: Mapping[str, object],
    state: ContextState,
    counter_registry: Mapping[str, TokenCounter],
) -> None:
    """Check a schema-valid ``model.call`` body against ``state``, the context fold of the
    thread's entries ``0..at_seq`` (module docstring for the steps and errors).

    Raises ValueError if ``state`` is not at ``body["at_seq"]`` (the caller's mistake, not the
    ledger's).
    """
    at_seq = body["at_seq"]
    if state.at != at_seq:
        raise ValueError(f"verify the model call against the state at {at_seq}, not {state.at}")
    counter = resolve_counter(str(body["token_counter"]), counter_registry)
    policy = parse_policy(body["policy"], "body.policy")
    budget = body["budget_tokens"]
    if type(budget) is not int:
        raise ValueError("body.budget_tokens: validate the body (attest.bodies) first")
    try:
        projection = project(state, budget, policy, counter)
    except ContextBudgetError as error:
        raise ModelCallOverBudgetError(
            f"model call at prefix {at_seq}: the context the ledger implies does not fit the "
            f"recorded budget of {budget} tokens ({error})"
        ) from None
    digest = projection_digest(projection)
    if digest != body["projection_sha256"]:
        raise ContextDigestMismatchError(
            f"model call at prefix {at_seq} records projection_sha256 "
            f"{body['projection_sha256']}, but the projection the ledger implies (budget "
            f"{budget}, counter {counter.name}) has digest {digest}: the context sent was not "
            "the one the ledger implies"
        )
