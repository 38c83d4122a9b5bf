"""How entries read in a projection and what a summary may quote (specs/context.md 3)."""

from __future__ import annotations

import pytest

from registre.context import Message, SummaryLine, default_counter, entry_text
from registre.context.render import (
    MESSAGE_OVERHEAD_TOKENS,
    message_tokens,
    pin_message,
    stub_message,
    summary_message,
    tail_message,
    unpin_message,
)
from registre.lifecycle.errors import LifecycleFormatError
from registre.lifecycle.model import PinnedItem

READ = {
    "request": {"refs": [{"ref": "r1", "source": "a.py", "location": "l. 3", "sha256": "ab" * 32}]},
    "outcome": {"results": [{"accepted": True, "ref": "r1"}]},
}


@pytest.mark.parametrize(
    ("kind", "body", "message"),
    [
        ("turn", {"role": "user", "text": "Hi?"}, Message("user", "Hi?")),
        (
            "tool.call",
            {"call_id": "c1", "name": "bash", "arguments": {"z": 1, "a": "x"}},
            Message("assistant", '{"a":"x","z":1}', "bash", "c1"),
        ),
        (
            "tool.call",
            {"call_id": "c7", "name": "f", "arguments_json": '{"ratio":0.25}'},
            Message("assistant", '{"ratio":0.25}', "f", "c7"),
        ),
        (
            "tool.result",
            {"call_id": "c1", "content": "ok", "name": "bash"},
            Message("tool", "ok", "bash", "c1"),
        ),
        (
            "tool.result",
            {"call_id": "c1", "content": "boom", "is_error": True},
            Message("tool", "[error] boom", None, "c1"),
        ),
        ("decision", {"text": "Use IFRS 9."}, Message("system", "[decision] Use IFRS 9.")),
        (
            "source.read",
            READ,
            Message(
                "system",
                '[source.read] {"outcome":{"results":[{"accepted":true,"ref":"r1"}]},'
                '"request":{"refs":[{"location":"l. 3","ref":"r1","sha256":"'
                + "ab" * 32
                + '","source":"a.py"}]}}',
            ),
        ),
    ],
)
def test_tail_message_of_each_content_kind(kind: str, body: dict, message: Message) -> None:
    assert tail_message(kind, body) == message


@pytest.mark.parametrize(
    "kind", ["context.pin", "context.unpin", "context.compaction", "model.call"]
)
def test_control_kinds_have_no_tail_message(kind: str) -> None:
    assert tail_message(kind, {}) is None


def test_entry_text_is_the_entrys_own_words() -> None:
    assert entry_text("tool.result", {"call_id": "c", "content": "x\ny"}) == "x\ny"
    pin = {"request": {"kind": "decision", "text": "Keep tests.", "seq": 0}, "outcome": {}}
    assert entry_text("context.pin", pin) == "Keep tests."
    compaction = {"summary": [{"text": "a"}, {"text": "b"}]}
    assert entry_text("context.compaction", compaction) == "a\nb"
    assert entry_text("model.call", {}) == ""


def test_unreadable_body_fail() -> None:
    with pytest.raises(LifecycleFormatError, match=r"body\.text"):
        entry_text("turn", {"role": "user"})
    with pytest.raises(LifecycleFormatError, match="kind"):
        entry_text("turn.extra", {})


def test_pin_unpin_stub_and_summary_messages() -> None:
    pin = PinnedItem("pin-2", "task_parameter", "Budget is 5 days.", 4)
    assert pin_message(pin) == Message("system", "[pinned task_parameter pin-2] Budget is 5 days.")
    assert unpin_message("pin-2", "done") == Message("system", "[unpinned pin-2] done")
    stub = stub_message(9, {"call_id": "c1", "content": "é" * 10, "name": "bash"})
    assert stub == Message("tool", "[output elided: 20 bytes; ledger entry 9]", "bash", "c1")
    lines = (
        SummaryLine("findings", "Parser “fails”.", ((2, 5),)),
        SummaryLine("open_threads", "Why?", ((7, 7), (9, 9))),
    )
    assert summary_message(12, 2, 9, lines).content == (
        "[summary of ledger entries 2-9, compaction 12]\n"
        "- findings: Parser “fails”. (seq 2-5)\n"
        "- open_threads: Why? (seq 7, 9)"
    )


def test_message_tokens_count_content_name_and_call_id() -> None:
    counter = default_counter()
    message = Message("tool", "ok", "bash", "c1")
    expected = MESSAGE_OVERHEAD_TOKENS + sum(map(counter.count, ("ok", "bash", "c1")))
    assert message_tokens(message, counter) == expected
