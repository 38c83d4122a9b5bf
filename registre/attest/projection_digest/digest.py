"""The projection digest and the ``model.call`` check (``specs/context.md`` section 8).

A ``model.call`` entry records ``projection_sha256``: the SHA-256 of the RFC 8785 canonical
bytes of what was sent, in the *shape* the entry names (:data:`SHAPES`): without a
``shape`` field, ``projection.to_json()`` (the registre projection); with
``"shape": "openai.chat"``, ``"openai.responses"`` or ``"anthropic"``, the provider request
data ``projection.as_openai_chat()``, ``as_openai_responses()`` or ``as_anthropic()``
(:func:`shape_json`). lifecycle may not import attest, so the digest is computed here, where
the canonical encoder lives.

:func:`verify_model_call` is what the offline verifier runs for each ``model.call``: rebuild
the projection from the context state at the recorded ``at_seq`` with the recorded budget,
policy and counter, put it in the recorded shape, and require the digest to reproduce. It
raises, never returns a verdict:

1. :class:`~registre.context.errors.UnknownTokenCounterError` -- the verifier has no
   counter of the recorded name;
2. :class:`ModelCallOverBudgetError` -- the rebuilt context does not fit the recorded budget
   (so no such projection could have been sent);
3. :class:`ContextDigestMismatchError` -- the digest does not reproduce: the context behind the
   call was not the one the ledger implies (THREATS row 19).

A call that records ``"recalled"`` (``specs/context.md`` section 4.3) is rebuilt with its
recalled section, read from the entries it names (``entries``): before step 2, each recall
must name an entry of the projected prefix (``RecalledFutureEntryError``) with text, by a
proper byte range of it (``RecalledRangeError``), whose bytes hash to the recorded SHA-256
(``RecalledTextMismatchError``; all three in :mod:`registre.context.recall`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Mapping
from typing import Any, Final

from registre.attest.canonical_json import canonical_bytes
from registre.context import (
    PROVIDER_SHAPES,
    ContextBudgetError,
    ContextState,
    Projection,
    TokenCounter,
    parse_policy,
    project,
    provider_request,
    resolve_counter,
)
from registre.context.model import ContextEntry
from registre.context.recall import recalled_section
from registre.errors import VerificationError
from registre.lifecycle import LifecycleState

__all__ = [
    "REGISTRE_SHAPE",
    "SHAPES",
    "ContextDigestMismatchError",
    "EntryLookup",
    "ModelCallOverBudgetError",
    "block_version",
    "claims_block",
    "claims_recall",
    "projection_digest",
    "rebuild_projection",
    "shape_digest",
    "shape_json",
    "verify_model_call",
]

REGISTRE_SHAPE: Final = "registre"
"""The shape of a ``model.call`` without a ``shape`` field: ``projection.to_json()``."""

SHAPES: Final = (REGISTRE_SHAPE, *PROVIDER_SHAPES)
"""Every shape a model call can be digested in; a ``model.call`` body names a provider
shape in ``shape`` and the registre shape by leaving the field out."""


class ContextDigestMismatchError(VerificationError):
    """A ``model.call`` whose ``projection_sha256`` is not the digest of the projection the
    ledger prefix gives."""


class ModelCallOverBudgetError(VerificationError):
    """A ``model.call`` whose recorded budget the rebuilt context does not fit."""


def projection_digest(projection: Projection) -> str:
    """Hex SHA-256 of ``canonical_bytes(projection.to_json())``: the registre shape's digest."""
    return hashlib.sha256(canonical_bytes(projection.to_json())).hexdigest()


def shape_json(projection: Projection, shape: str = REGISTRE_SHAPE) -> dict[str, Any]:
    """What a model call of ``shape`` sends: ``projection.to_json()`` for ``registre``, the
    provider request data for a provider shape. ValueError for a name not in :data:`SHAPES`."""
    if shape == REGISTRE_SHAPE:
        return projection.to_json()
    return provider_request(projection.messages, shape)


def shape_digest(projection: Projection, shape: str = REGISTRE_SHAPE) -> str:
    """Hex SHA-256 of ``canonical_bytes(shape_json(projection, shape))``; for ``registre``,
    :func:`projection_digest`."""
    return hashlib.sha256(canonical_bytes(shape_json(projection, shape))).hexdigest()


def claims_block(body: Mapping[str, object]) -> bool:
    """Whether a schema-valid ``model.call`` body says its projection carries the lifecycle
    block (``"lifecycle_block": V``; absent: no block, as in every call recorded before)."""
    return "lifecycle_block" in body


def claims_recall(body: Mapping[str, object]) -> bool:
    """Whether a schema-valid ``model.call`` body records a recalled section."""
    return "recalled" in body


EntryLookup = Callable[[int], ContextEntry] | Mapping[int, ContextEntry]
"""The entry at a seq of the thread (for a call's recalls): a callable or a mapping."""


def block_version(body: Mapping[str, object]) -> int:
    """The lifecycle block version a schema-valid ``model.call`` body claiming the block
    records (1 or 2: each is rebuilt by its own rules)."""
    version = body["lifecycle_block"]
    if type(version) is not int:
        raise ValueError("body.lifecycle_block: validate the body (attest.bodies) first")
    return version


def rebuild_projection(
    body: Mapping[str, object],
    state: ContextState,
    counter_registry: Mapping[str, TokenCounter],
    lifecycle: LifecycleState | None = None,
    entries: EntryLookup | None = None,
) -> Projection:
    """The projection a schema-valid ``model.call`` body describes, from ``state`` (the
    context fold of ``0..at_seq``), for a call claiming the lifecycle block ``lifecycle``
    (the lifecycle state after the same entries), and for a call recording recalls
    ``entries`` (ValueError when one of them is missing). Raises UnknownTokenCounterError,
    ContextBudgetError and the recall errors (module docstring)."""
    counter = resolve_counter(str(body["token_counter"]), counter_registry)
    policy = parse_policy(body["policy"], "body.policy")
    budget = body["budget_tokens"]
    if type(budget) is not int:
        raise ValueError("body.budget_tokens: validate the body (attest.bodies) first")
    recalled = None
    if claims_recall(body):
        if entries is None:
            raise ValueError("this model call recalls entries: give a way to read them")
        recalled = recalled_section(body["recalled"], state.at, entries, counter)
    if not claims_block(body):
        return project(state, budget, policy, counter, recalled=recalled)
    if lifecycle is None:
        raise ValueError(
            "this model call carries the lifecycle block: give the lifecycle state at at_seq"
        )
    return project(
        state, budget, policy, counter, lifecycle, block_version(body), recalled=recalled
    )


def verify_model_call(
    body: Mapping[str, object],
    state: ContextState,
    counter_registry: Mapping[str, TokenCounter],
    lifecycle: LifecycleState | None = None,
    entries: EntryLookup | None = None,
) -> None:
    """Check a schema-valid ``model.call`` body against ``state``, the context fold of the
    thread's entries ``0..at_seq`` (module docstring for the steps and errors), and, when the
    body records ``lifecycle_block``, ``lifecycle``, the lifecycle state after the same
    entries, from which the block is rebuilt (``specs/context.md`` section 4.1); when it
    records ``recalled``, ``entries`` (the thread's entries by seq, section 4.3).

    Raises ValueError if ``state`` is not at ``body["at_seq"]``, or if the call claims the
    block and no ``lifecycle`` is given (the caller's mistake, not the ledger's).
    """
    at_seq = body["at_seq"]
    if state.at != at_seq:
        raise ValueError(f"verify the model call against the state at {at_seq}, not {state.at}")
    shape = body.get("shape", REGISTRE_SHAPE)
    if "shape" in body and shape not in PROVIDER_SHAPES:
        raise ValueError("body.shape: validate the body (attest.bodies) first")
    budget = body["budget_tokens"]
    try:
        projection = rebuild_projection(body, state, counter_registry, lifecycle, entries)
    except ContextBudgetError as error:
        raise ModelCallOverBudgetError(
            f"model call at prefix {at_seq}: the context the ledger implies does not fit the "
            f"recorded budget of {budget} tokens ({error})"
        ) from None
    digest = shape_digest(projection, str(shape))
    if digest != body["projection_sha256"]:
        raise ContextDigestMismatchError(
            f"model call at prefix {at_seq} records projection_sha256 "
            f"{body['projection_sha256']}, but the projection the ledger implies (budget "
            f"{budget}, counter {projection.counter}, shape {shape}"
            f"{', lifecycle block' if claims_block(body) else ''}"
            f"{', recalled section' if claims_recall(body) else ''}) has digest {digest}: the "
            "context sent was not the one the ledger implies"
        )
