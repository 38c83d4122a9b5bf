"""Long signed threads with the working context in use: turns, tool calls (some bulky), pins,
lifecycle events, a ``model.call`` (with the lifecycle block) after every round and a
compaction whenever one is due -- what the verifier's step 6 spends its time on.

The model calls' digests come from
:class:`registre.attest.projection_digest.stream.ModelCallChecker`
(fast enough to build 10,000-entry threads at large budgets);
tests/attest/projection_digest/test_projection_stream.py
holds that digest against the full rebuild, and ``reference=True`` builds with the rebuild.
"""

from __future__ import annotations

import random
from typing import Any

from registre.attest.projection_digest import ModelCallChecker, projection_digest
from registre.context import (
    DEFAULT_COUNTER_NAME,
    LIFECYCLE_BLOCK_VERSION,
    Policy,
    context_tokens,
    counter_registry,
    default_counter,
    project,
)
from registre.lifecycle import PinRequest, ReadRequest, Statement, UpsertRequest
from tests.bundles import Thread, ref

WORDS = [
    "ledger",
    "impairment",
    "stage",
    "reconcile",
    "figure",
    "quarter",
    "provision",
    "exposure",
    "default",
    "model",
    "variance",
    "audit",
    "sample",
    "loan",
    "portfolio",
    "coverage",
    "ratio",
    "threshold",
    "review",
    "note",
]


def context_policy(budget: int) -> Policy:
    """The bench's shape of policy at ``budget`` tokens."""
    return Policy(
        budget_tokens=budget,
        bulky_tool_output_tokens=max(200, budget // 16),
        keep_recent_turns=4,
    )


def long_thread(
    n: int,
    budget: int,
    *,
    seed: int = 0,
    lifecycle_block: bool = True,
    reference: bool = False,
    forge_call: int | None = None,
) -> Thread:
    """A thread of about ``n`` entries (module docstring) at ``budget`` tokens; with
    ``forge_call`` = k, the k-th model call (from 1) records a wrong digest (signed all the
    same: a writer holding the key lying about the context it sent)."""
    rng = random.Random(seed)
    policy = context_policy(budget)
    thread = Thread()
    checker = ModelCallChecker(counter_registry(()))
    counter = default_counter()
    sources = 0
    rounds = 0

    def words(count: int) -> str:
        return " ".join(rng.choice(WORDS) for _ in range(count))

    while thread.size < n:
        rounds += 1
        thread.turn(words(rng.randint(5, 40)))
        if rounds % 7 == 1:
            sources += 1
            name = f"s{sources}"
            thread.decide(ReadRequest((ref(name),)))
            thread.decide(UpsertRequest((Statement(words(rng.randint(6, 30)), (name,)),)))
        if rounds % 23 == 5:
            thread.decide(PinRequest("definition", words(8), thread.size - 1))
        call_id = f"call-{rounds}"
        thread.append(
            "tool.call",
            {"call_id": call_id, "name": "grep", "arguments": {"cmd": words(3)}},
            actor="assistant",
        )
        size = rng.choice((10, 30, 80)) if rng.random() > 0.1 else policy.bulky_tool_output_tokens
        thread.append(
            "tool.result",
            {"call_id": call_id, "name": "grep", "content": words(size)},
            actor="tool:grep",
        )
        thread.turn(words(rng.randint(5, 30)), role="assistant")
        assert thread.context is not None
        if context_tokens(thread.context, counter) > policy.high_water_tokens:
            thread.compact(policy)
        forged = rounds == forge_call
        _model_call(thread, policy, checker, lifecycle_block, reference, forged)
    return thread


def _model_call(
    thread: Thread,
    policy: Policy,
    checker: ModelCallChecker,
    lifecycle_block: bool,
    reference: bool,
    forged: bool,
) -> None:
    assert thread.context is not None
    body: dict[str, Any] = {
        "model": "test/model",
        "at_seq": thread.size - 1,
        "budget_tokens": policy.budget_tokens,
        "policy": policy.to_json(),
        "token_counter": DEFAULT_COUNTER_NAME,
    }
    if lifecycle_block:
        body["lifecycle_block"] = LIFECYCLE_BLOCK_VERSION
    lifecycle = thread.state if lifecycle_block else None
    digest = None if reference else checker.digest(body, thread.context, lifecycle)
    if digest is None:
        counter = default_counter()
        projection = project(thread.context, policy.budget_tokens, policy, counter, lifecycle)
        digest = projection_digest(projection)
    if forged:
        digest = format(int(digest, 16) ^ 1, "064x")
    body["projection_sha256"] = digest
    thread.append("model.call", body)
