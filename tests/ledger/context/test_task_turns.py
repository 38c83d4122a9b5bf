"""The task turns ``Thread.compact`` hands to ``task_pins_due``: just the first system and
user turns, remembered once the thread's first TASK_PIN_SCAN entries are written."""

from __future__ import annotations

from types import SimpleNamespace

from hypothesis import given
from hypothesis import strategies as st

from registre.context import ContextEntry, ContextState, Policy, default_counter
from registre.context.task_pin import TASK_PIN_SCAN, task_pins_due
from registre.ledger.context.task_turns import first_task_turns, task_turns
from registre.ledger.ledger import Ledger
from registre.ledger.store.engine import read_transaction

_KINDS = st.sampled_from(["turn", "turn", "turn", "tool.call", "decision"])
_ROLES = st.sampled_from(["system", "user", "assistant", None])
_TEXTS = st.one_of(st.sampled_from(["", " ", "find the cause", "be brief"]), st.integers())


@st.composite
def entries(draw: st.DrawFn) -> list[ContextEntry]:
    found = []
    for seq in range(draw(st.integers(0, 12))):
        body: dict[str, object] = {}
        role, text = draw(_ROLES), draw(_TEXTS)
        if role is not None:
            body["role"] = role
        body["text"] = text if isinstance(text, str) else f"task {text}"
        if draw(st.booleans()) and isinstance(text, int):
            body["text"] = text  # not a string: never a task turn
        found.append(ContextEntry(seq, draw(_KINDS), "agent", body))
    return found


@given(entries(), st.integers(-1, 14))
def test_the_task_turns_decide_as_all_the_entries_do(
    found: list[ContextEntry], folded_to: int
) -> None:
    plan = SimpleNamespace(folded=(0, folded_to), policy=Policy(budget_tokens=100_000))
    state, counter = ContextState(), default_counter()
    every = task_pins_due(found, state, plan, counter)  # type: ignore[arg-type]
    turns = first_task_turns(found)
    assert len(turns) <= 2 and [e.seq for e in turns] == sorted(e.seq for e in turns)
    assert task_pins_due(turns, state, plan, counter) == every  # type: ignore[arg-type]


def test_task_turns_are_read_then_remembered(ledger: Ledger) -> None:
    thread = ledger.create_thread("tasks")
    thread.append("turn", {"role": "assistant", "text": "hello"}, "agent")
    thread.append("turn", {"role": "user", "text": "find the cause"}, "user")
    for index in range(TASK_PIN_SCAN):
        thread.append("turn", {"role": "system", "text": f"rule {index}"}, "agent")
    engine = ledger.engine
    with read_transaction(engine) as conn:
        young = task_turns(conn, thread.id, 5)
        first = task_turns(conn, thread.id, TASK_PIN_SCAN)
        again = task_turns(conn, thread.id, TASK_PIN_SCAN)
    assert [(e.seq, e.body["text"]) for e in young] == [(1, "find the cause"), (2, "rule 0")]
    assert [e.seq for e in first] == [e.seq for e in again] == [1, 2]
