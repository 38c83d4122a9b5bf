"""Thread.model_call(shape=...) and Thread.replay_request: a model call records the digest of
the provider request it sends, and the ledger rebuilds that request. Both engines."""

from __future__ import annotations

import hashlib
from typing import Any

import pytest

from registre.attest.canonical_json import canonical_bytes
from registre.attest.notes import Signer
from registre.attest.projection_digest import (
    REGISTRE_SHAPE,
    SHAPES,
    ContextDigestMismatchError,
    projection_digest,
    shape_digest,
)
from registre.context import Projection
from registre.ledger.context.store import ContextEntryRefusedError
from registre.ledger.ledger import Ledger
from registre.ledger.thread import Thread
from registre.ledger.verify.database import verify_database
from registre.ledger.verify.errors import ModelCallDigestError
from registre.lifecycle import LifecycleFormatError
from tests.ledger.context_helpers import MODEL, SMALL, forge, opened, step

SENT = {
    "registre": Projection.to_json,
    "openai.chat": Projection.as_openai_chat,
    "openai.responses": Projection.as_openai_responses,
    "anthropic": Projection.as_anthropic,
}


def sha256(data: dict[str, Any]) -> str:
    return hashlib.sha256(canonical_bytes(data)).hexdigest()


def test_model_call_records_the_digest_of_the_shape_sent(ledger: Ledger, thread: Thread) -> None:
    opened(thread)
    calls: dict[int, tuple[str, Projection]] = {}
    for number in range(12):
        step(thread, number)
        shape = SHAPES[number % len(SHAPES)]
        projection, entry = thread.model_call(MODEL, 600, SMALL, shape=shape)
        sent = SENT[shape](projection)  # what the caller sends: **sent next to the model
        assert entry.body["projection_sha256"] == sha256(sent)
        assert entry.body.get("shape", REGISTRE_SHAPE) == shape
        assert ("shape" in entry.body) == (shape != REGISTRE_SHAPE)
        calls[entry.seq] = (shape, projection)
    verify_database(ledger, thread=thread.id)
    for seq, (shape, projection) in calls.items():
        assert thread.replay_context(seq) == projection
        assert thread.replay_request(seq) == SENT[shape](projection)


def test_default_model_call_is_unchanged(thread: Thread) -> None:
    opened(thread)
    step(thread, 0)
    projection, entry = thread.model_call(MODEL, 600, SMALL)
    assert "shape" not in entry.body
    assert entry.body["projection_sha256"] == projection_digest(projection)
    assert thread.replay_request(entry.seq) == projection.to_json()


def test_an_unknown_shape_is_refused_before_anything_is_written(thread: Thread) -> None:
    opened(thread)
    for number in range(12):  # a compaction is due: it must not be written either
        step(thread, number)
    size = thread.head().size
    for wrong in ("openai", "Anthropic", ""):
        with pytest.raises(LifecycleFormatError, match="shape"):
            thread.model_call(MODEL, 600, SMALL, shape=wrong)
    assert thread.head().size == size


def shaped_body(thread: Thread, shape: str) -> dict[str, Any]:
    projection = thread.project(budget=600, policy=SMALL)
    return {
        "model": MODEL,
        "projection_sha256": shape_digest(projection, shape),
        "at_seq": projection.at,
        "budget_tokens": 600,
        "policy": SMALL.to_json(),
        "token_counter": "registre.default/1",
        "shape": shape,
    }


def test_raw_shaped_model_call_must_reproduce(thread: Thread) -> None:
    opened(thread)
    step(thread, 0)
    size = thread.head().size
    body = shaped_body(thread, "anthropic")
    forged = body | {"projection_sha256": shaped_body(thread, "openai.chat")["projection_sha256"]}
    with pytest.raises(ContextEntryRefusedError) as refused:
        thread.append("model.call", forged, "registre")
    assert isinstance(refused.value.__cause__, ContextDigestMismatchError)
    assert thread.head().size == size
    assert thread.append("model.call", body, "registre").seq == size


def test_model_call_shape_digest_forged_fail(
    ledger: Ledger, thread: Thread, signer: Signer
) -> None:
    """A signed model call naming the Anthropic shape with the digest of the Chat
    Completions request: ``verify --db`` and the replay refuse it."""
    opened(thread)
    for number in range(4):
        step(thread, number)
    body = shaped_body(thread, "anthropic")
    body["projection_sha256"] = shaped_body(thread, "openai.chat")["projection_sha256"]
    seq = forge(ledger.engine, signer, thread.id, "model.call", body)
    step(thread, 4)
    with pytest.raises(ModelCallDigestError) as failure:
        verify_database(ledger)
    assert failure.value.seq == seq
    assert isinstance(failure.value.__cause__, ContextDigestMismatchError)
    with pytest.raises(ContextDigestMismatchError):
        thread.replay_request(seq)
    with pytest.raises(ContextDigestMismatchError):
        thread.replay_context(seq)
