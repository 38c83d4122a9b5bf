"""Properties of the working context on the ledger (Hypothesis, both engines).

Random threads of thread API calls -- turns of random lengths, tool calls with results of
random sizes (some errors), pins (some refused: blank text) and unpins (some of unknown or
already unpinned pins), explicit compactions and model calls under a random small policy --
then, after every call and at the end:

* a model call's projection fits its budget, or the call raises ContextBudgetError and
  writes nothing for the call;
* every live pin's text is in every projection, verbatim;
* the manifest gives every entry ``0..at`` exactly one status (its runs partition the prefix);
* every summarized entry lies inside the folded range of the compaction whose line stands for
  it;
* every recorded ``model.call`` digest reproduces (``replay_context``);
* compactions never change an earlier entry: the root of every earlier prefix is the root
  recorded when that prefix was the head;
* every recorded compaction makes the context smaller (``tokens_after < tokens_before``);
* the projection at any earlier ``at`` is the one computed then, and ``verify --db`` accepts
  the thread.

Each example gets a new thread in the same database.
"""

from __future__ import annotations

import contextlib
import itertools
from typing import Any

from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from registre.context import ContextBudgetError, Policy, Projection
from registre.ledger.ledger import Ledger
from registre.ledger.lifecycle.api import PinRefusedError
from registre.ledger.thread import Thread
from registre.ledger.verify.database import verify_database
from tests.context.strategies import WORDS
from tests.examples_budget import examples

_THREADS = itertools.count()
MODEL = "test/model-1"
PIN_KINDS = ("definition", "decision", "task_parameter", "open_question")

policies = st.builds(
    Policy,
    budget_tokens=st.integers(250, 700),
    high_water_permille=st.integers(600, 1000),
    low_water_permille=st.integers(200, 600),
    keep_recent_turns=st.integers(0, 3),
    bulky_tool_output_tokens=st.integers(20, 200),
    summary_share_permille=st.integers(300, 500),
)
words = st.lists(st.sampled_from(WORDS), min_size=1, max_size=30).map(" ".join)
turn = st.tuples(st.just("turn"), st.sampled_from(("user", "assistant")), words)
tool = st.tuples(st.just("tool"), st.integers(1, 40) | st.integers(60, 200), st.booleans())
actions = st.one_of(  # content drawn more often than the rest
    turn,
    turn,
    tool,
    tool,
    st.tuples(st.just("pin"), st.sampled_from(PIN_KINDS), words | st.just("  ")),
    st.tuples(st.just("unpin"), st.integers(1, 6), words),
    st.tuples(st.just("compact")),
)
steps = st.tuples(actions, st.sampled_from((None, None, ("call", True), ("call", False))))
"""An action, then (half the time) a model call, compacting first or not."""


def act(
    thread: Thread, policy: Policy, action: tuple[Any, ...], calls: dict[int, Projection]
) -> None:
    """Carry out ``action`` on ``thread``; model calls go into ``calls`` by seq."""
    name = action[0]
    size = thread.head().size
    if name == "turn":
        thread.append("turn", {"role": action[1], "text": action[2]}, action[1])
    elif name == "tool":
        call_id = f"call-{size}"
        output = "\n".join(
            f"{WORDS[i % len(WORDS)]} {WORDS[(i * 7) % len(WORDS)]} line {i}: no match"
            for i in range(action[1])
        )
        result: dict[str, Any] = {"call_id": call_id, "content": output, "name": "grep"}
        if action[2]:
            result["is_error"] = True
        thread.append_many(
            [
                ("tool.call", {"call_id": call_id, "name": "grep", "arguments": {"q": size}}, "a"),
                ("tool.result", result, "tool:grep"),
            ]
        )
    elif name == "pin":
        with contextlib.suppress(PinRefusedError):
            thread.pin(action[1], action[2], max(0, size - 1))
    elif name == "unpin":
        with contextlib.suppress(PinRefusedError):
            thread.unpin(f"pin-{action[1]}", action[2])
    elif name == "compact":
        try:
            thread.compact(policy=policy)
        except ContextBudgetError:
            assert thread.head().size == size
    else:
        try:
            projection, entry = thread.model_call(
                MODEL, policy.budget_tokens, policy, compact=action[1]
            )
        except ContextBudgetError as error:
            compacting = "compacting first" if action[1] else "without compacting"
            event(f"a model call over budget, {compacting}: {type(error).__name__}")
            assert thread.head().size >= size  # a compaction may have been recorded
            return
        assert projection.tokens <= policy.budget_tokens
        assert entry.body["at_seq"] == entry.seq - 1 == projection.at
        calls[entry.seq] = projection
        check_projection(thread, projection)


def check_projection(thread: Thread, projection: Projection) -> None:
    """Pins verbatim, one status per entry, summary pointers inside their compactions."""
    contents = [message.content for message in projection.messages]
    for pin in thread.context_state(projection.at).live_pins():
        assert any(
            content.endswith(f"[pinned {pin.kind} {pin.id}] {pin.text}") for content in contents
        )
    runs = projection.manifest.runs
    assert runs[0].first == 0 and runs[-1].last == projection.at
    for before, after in itertools.pairwise(runs):
        assert after.first == before.last + 1
    for run in runs:
        if run.status == "summarized":
            assert run.compaction is not None
            folded = thread.entry(run.compaction).body["folded"]
            assert folded["from"] <= run.first <= run.last <= folded["to"]


# Each example is up to ~40 committed transactions plus a verify: 20 examples per engine in
# make test, the profile's count under deep.
@settings(
    max_examples=examples(20),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(policy=policies, script=st.lists(steps, min_size=10, max_size=40))
def test_random_threads_keep_the_context_rules(
    ledger: Ledger, policy: Policy, script: list[tuple[Any, ...]]
) -> None:
    thread = ledger.create_thread(f"c{next(_THREADS)}")
    thread.append("turn", {"role": "user", "text": "Why does the import fail?"}, "user")
    roots = {1: thread.head().root}
    then: dict[int, Projection] = {}
    calls: dict[int, Projection] = {}
    for action, then_call in script:
        act(thread, policy, action, calls)
        if then_call is not None:
            act(thread, policy, then_call, calls)
        head = thread.head()
        roots[head.size] = head.root
        with contextlib.suppress(ContextBudgetError):
            then[head.size - 1] = thread.project(budget=policy.budget_tokens, policy=policy)
    for seq, projection in calls.items():
        assert thread.replay_context(seq) == projection
    for at, projection in then.items():
        assert thread.project(at=at, budget=policy.budget_tokens, policy=policy) == projection
    for size, root in roots.items():
        assert thread.prove_consistency(size).old_root == root
    verify_database(ledger, thread=thread.id)
    for entry in thread.entries():  # a compaction must pay for itself
        if entry.kind == "context.compaction":
            assert entry.body["tokens_after"] < entry.body["tokens_before"]
    kinds = [entry.kind for entry in thread.entries()]
    event(f"compactions: {min(kinds.count('context.compaction'), 3)}+")
    event(f"model calls: {min(len(calls), 3)}+")
