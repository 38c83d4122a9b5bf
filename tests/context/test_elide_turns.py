"""Never refuse while the pins fit (issue 28, item 5): a large user turn or tool-call
argument inside the recent turns is shown head and tail with a pointer, like a large tool
output; the first call of a thread always fits (``specs/context.md`` sections 5 and 7)."""

from __future__ import annotations

import pytest

from registre.attest.entries import validate_body
from registre.context import (
    ContextState,
    PinsOverBudgetError,
    Policy,
    counter_registry,
    parse_compaction,
    project,
    validate_compaction,
)
from registre.context.errors import CompactionElisionError
from tests.context.threads import ThreadBuilder

CODE = "\n".join(
    f"    line {n}: value = compute(alpha_{n}, beta_{n})  # step {n}" for n in range(500)
)


def _verify(builder: ThreadBuilder) -> None:
    """Replay every compaction as a verifier does."""
    state = ContextState()
    for entry in builder.entries:
        if entry.kind == "context.compaction":
            validate_body(entry.kind, entry.body)
            validate_compaction(state, entry, builder.texts, counter_registry())
        state.apply(entry)


def test_a_6k_first_user_turn_at_a_4k_budget_is_elided_not_refused() -> None:
    policy = Policy(budget_tokens=4000)
    builder = ThreadBuilder(policy=policy)
    builder.turn("system", "You are a careful software agent.")
    builder.turn("user", "Fix the failing test in this file:\n" + CODE + "\nThanks.")
    assert len(CODE) // 4 > 6000 // 2  # a few thousand tokens over the budget
    projection = project(builder.state, 4000, policy, builder.counter)
    assert projection.tokens <= policy.window_tokens()
    text = projection.messages[-1].content
    assert projection.messages[-1].role == "user"
    assert text.startswith("[turn elided: ")
    assert "ledger entry 1]" in text.split("\n")[0]
    assert "Fix the failing test in this file:" in text and text.endswith("\nThanks.")
    assert projection.manifest.status_of(1).status == "stubbed"
    _verify(builder)


def test_a_whole_file_in_a_tool_call_argument_is_elided() -> None:
    policy = Policy(budget_tokens=4000)
    builder = ThreadBuilder(policy=policy)
    builder.turn("user", "Write the module.")
    builder.tool("write_file", CODE, "written")
    projection = project(builder.state, 4000, policy, builder.counter)
    assert projection.tokens <= 4000
    call = next(m for m in projection.messages if m.name == "write_file" and m.role == "assistant")
    assert call.content.startswith("[arguments elided: ")
    assert call.call_id == "call-1"
    _verify(builder)


def test_an_elision_must_leave_something_out_fail() -> None:
    policy = Policy(budget_tokens=4000)
    builder = ThreadBuilder(policy=policy)
    builder.turn("user", "Fix this:\n" + CODE)
    entry = builder.entries[-1]
    assert entry.kind == "context.compaction"
    body = dict(entry.body)
    (seq, _head, _tail) = body["elided"][0]
    body["elided"] = [[seq, len(builder.entries[seq].body["text"]), 0]]
    state = ContextState.replay(builder.entries[:-1])
    with pytest.raises(CompactionElisionError):
        state.apply_compaction(
            entry.__class__(entry.seq, entry.kind, entry.actor, body),
            parse_compaction(entry.seq, body),
        )


def test_pins_that_do_not_fit_are_still_refused() -> None:
    policy = Policy(budget_tokens=300)
    builder = ThreadBuilder(policy=policy)
    with pytest.raises(PinsOverBudgetError):
        builder.pin("definition", "word " * 400)
        builder.turn("user", "And now?")
