"""The automatic task pin (``specs/context.md`` section 5.1): the system prompt and the first
user turn are pinned, whole, before the first compaction that folds them; once only, never
against a caller's unpin, never when the caller opts out; verifiers replay the pin like any
other. Both engines."""

from __future__ import annotations

from registre.ledger.ledger import Ledger
from registre.ledger.thread import Thread
from registre.ledger.verify.database import verify_database
from tests.ledger.context_helpers import MODEL, SMALL, step

SYSTEM = "You are a careful engineer. Never modify the tests; explain every change you make."
TASK = "Why does astroid 2.9.1 fail on packages without __init__.py? Find the spec lookup."


def started(thread: Thread, steps: int = 12) -> Thread:
    thread.append_many(
        [
            ("turn", {"role": "system", "text": SYSTEM}, "operator"),
            ("turn", {"role": "user", "text": TASK}, "alice"),
        ]
    )
    for number in range(steps):
        step(thread, number)
    return thread


def test_task_is_pinned_whole_before_it_is_folded(ledger: Ledger, thread: Thread) -> None:
    started(thread)
    entry = thread.compact(policy=SMALL)
    assert entry is not None and entry.body["folded"]["from"] == 0
    pins = thread.pins(live=True)
    assert [(pin.kind, pin.text, pin.source_seq) for pin in pins] == [
        ("task_parameter", SYSTEM, 0),
        ("task_parameter", TASK, 1),
    ]
    assert [pin.seq for pin in pins] == [entry.seq - 2, entry.seq - 1]
    messages = thread.project(budget=600, policy=SMALL).messages
    assert messages[0].content == f"[pinned task_parameter {pins[0].id}] {SYSTEM}"
    assert messages[1].content == f"[pinned task_parameter {pins[1].id}] {TASK}"
    summary = messages[2].content
    assert summary.startswith("[summary of ledger entries 0-") and "task: " not in summary
    verify_database(ledger, thread=thread.id)


def test_task_is_pinned_once_across_compactions(ledger: Ledger, thread: Thread) -> None:
    started(thread, 4)
    for number in range(4, 30):
        step(thread, number)
        thread.model_call(MODEL, SMALL.budget_tokens, SMALL)
    assert [pin.source_seq for pin in thread.pins()] == [0, 1]
    verify_database(ledger, thread=thread.id)


def test_unpinned_task_is_not_pinned_again(thread: Thread) -> None:
    started(thread)
    thread.compact(policy=SMALL)
    first, _second = thread.pins(live=True)
    thread.unpin(first.id, "the system prompt is sent by the platform")
    for number in range(12, 30):
        step(thread, number)
        thread.compact(policy=SMALL)
    assert [pin.source_seq for pin in thread.pins(live=True)] == [1]
    assert len(thread.pins()) == 2


def test_opting_out_leaves_the_task_to_the_summary(thread: Thread) -> None:
    started(thread)
    entry = thread.compact(policy=SMALL, task_pin=False)
    assert entry is not None and thread.pins() == []
    texts = [line["text"] for line in entry.body["summary"]]
    assert any(text.startswith("task: ") for text in texts)
    _projection, call = thread.model_call(MODEL, SMALL.budget_tokens, SMALL, task_pin=False)
    assert thread.pins() == [] and call.kind == "model.call"


def test_task_too_big_for_an_eighth_of_the_budget_is_not_pinned(thread: Thread) -> None:
    thread.append("turn", {"role": "user", "text": "Explain the failure. " * 40}, "alice")
    for number in range(12):
        step(thread, number)
    assert thread.compact(policy=SMALL) is not None
    assert thread.pins() == []


NEXT_TASK = "Customer 2: move reservation ZFA04Y to the 14th; the payment is credit_card_9879898."


def test_pin_follows_the_current_task_unpinned_with_a_signed_reason(
    ledger: Ledger, thread: Thread
) -> None:
    """Tasks one after another (the system prompt sent again, then a new user): at the next
    compaction the first task's user pin is unpinned, signed, and the new task's is pinned;
    the system prompt, the same text, stays pinned once."""
    started(thread)
    thread.compact(policy=SMALL)
    old_system, old_task = thread.pins(live=True)
    restart = thread.append_many(
        [
            ("turn", {"role": "system", "text": SYSTEM}, "operator"),
            ("turn", {"role": "user", "text": NEXT_TASK}, "bob"),
        ]
    )
    for number in range(12, 30):
        step(thread, number)
        thread.compact(policy=SMALL)
    live = thread.pins(live=True)
    assert [(pin.text, pin.source_seq) for pin in live] == [
        (SYSTEM, 0),
        (NEXT_TASK, restart[1].seq),
    ]
    unpinned = next(pin for pin in thread.pins() if pin.id == old_task.id)
    assert not unpinned.live
    assert unpinned.unpin_reason == f"a new task started at entry {restart[0].seq}"
    assert thread.entry(unpinned.changed_seq or 0).actor == "registre"
    assert old_system.live and old_system.id == live[0].id
    messages = thread.project(budget=600, policy=SMALL).messages
    assert NEXT_TASK in messages[1].content and TASK not in repr(messages)
    verify_database(ledger, thread=thread.id)


def test_callers_task_parameter_pins_are_never_unpinned(ledger: Ledger, thread: Thread) -> None:
    started(thread, 4)
    thread.pin("task_parameter", TASK, 1)
    thread.append_many(
        [
            ("turn", {"role": "system", "text": SYSTEM}, "operator"),
            ("turn", {"role": "user", "text": NEXT_TASK}, "bob"),
        ]
    )
    for number in range(4, 30):
        step(thread, number)
        thread.compact(policy=SMALL)
    assert any(pin.text == TASK and pin.live for pin in thread.pins())
    verify_database(ledger, thread=thread.id)
