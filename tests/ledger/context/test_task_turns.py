"""``task_turns``: the current task's turns, the scan remembered per thread and fed only
the turns written since."""

from __future__ import annotations

from registre.context.task_pin import TASK_PIN_SCAN
from registre.ledger.context.task_turns import task_turns
from registre.ledger.ledger import Ledger
from registre.ledger.store.engine import read_transaction


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
    thread.append("turn", {"role": "user", "text": "the next customer"}, "user")
    size = thread.head().size
    with read_transaction(engine) as conn:
        later = task_turns(conn, thread.id, size)
        earlier = task_turns(conn, thread.id, 5)  # an earlier head: read again
    assert [(e.seq, e.body["text"]) for e in later] == [
        (size - 2, f"rule {TASK_PIN_SCAN - 1}"),
        (size - 1, "the next customer"),
    ]
    assert [e.seq for e in earlier] == [1, 2]
