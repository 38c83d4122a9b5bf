"""A tool result answers a call (registre.ledger.core.tool_calls): an orphan is refused,
nothing written; actor names are checked on every append."""

from __future__ import annotations

from typing import Any

import pytest

from registre.attest.entries import ActorNameError
from registre.attest.notes import Signer
from registre.ledger import Ledger, OrphanToolResultError
from registre.ledger.core import tool_calls
from registre.ledger.thread import Thread


def call(call_id: str, **extra: Any) -> tuple[str, dict[str, Any], str]:
    return ("tool.call", {"call_id": call_id, "name": "sql", "arguments": {}, **extra}, "agent")


def result(call_id: str, **extra: Any) -> tuple[str, dict[str, Any], str]:
    return ("tool.result", {"call_id": call_id, "content": "rows", **extra}, "tool:sql")


def test_orphan_tool_result_error_leaves_the_ledger_unchanged(thread: Thread) -> None:
    thread.append("turn", {"role": "user", "text": "Go."}, "user")
    with pytest.raises(OrphanToolResultError) as info:
        thread.append(*result("c9"))
    assert str(info.value) == (
        "the result answers no tool call: no earlier tool.call of thread t1 has call_id 'c9'"
    )
    assert info.value.exit_code == 2 and info.value.hint is not None
    assert info.value.hint.startswith("append the tool.call first")
    assert thread.head().size == 1
    thread.append(*call("c9"))
    assert thread.append(*result("c9")).seq == 2


def test_a_batch_answers_its_own_calls_in_order(thread: Thread) -> None:
    assert len(thread.append_many([call("a"), result("a")])) == 2
    with pytest.raises(OrphanToolResultError, match="item 0 of the batch"):
        thread.append_many([result("b"), call("b")])
    assert thread.head().size == 2


def test_call_ref_must_match_a_call_with_that_ref(thread: Thread) -> None:
    thread.append_many([call("c1"), result("c1"), call("c1", call_ref="c1#2")])
    with pytest.raises(OrphanToolResultError, match="call_ref 'c1#3'"):
        thread.append(*result("c1", call_ref="c1#3"))
    thread.append(*result("c1", call_ref="c1#2"))


def test_another_handle_finds_a_call_far_back(
    thread: Thread, ledger: Ledger, db_url: str, signer: Signer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A fresh handle knows no calls: it reads the thread's calls newest first, page by page,
    and stops at the one it needs; a full read (an orphan) is done once."""
    monkeypatch.setattr(tool_calls, "_PAGE", 4)
    thread.append_many([item for k in range(30) for item in (call(f"c{k}"), result(f"c{k}"))])
    with Ledger.open(db_url, signer, create=False) as other:
        mine = other.thread("t1")
        mine.append(*result("c0"))  # the first call: every page read, newest first
        with pytest.raises(OrphanToolResultError):
            mine.append(*result("nobody"))
        known = mine.database.tool_calls._threads["t1"]
        assert known.scanned_to == 61 and len(known.keys) == 30
        thread.append(*call("late"))  # by the first handle: this one reads only what is new
        mine.append(*result("late"))


def test_actor_name_error_on_append_leaves_the_ledger_unchanged(thread: Thread) -> None:
    with pytest.raises(ActorNameError, match="'bob smith' is not an actor name"):
        thread.append("turn", {"role": "user", "text": "Hello."}, "bob smith")
    with pytest.raises(ActorNameError):
        thread.append_many(
            [("turn", {"role": "user", "text": "Hi."}, "bob"), (*call("x")[:2], "a b")]
        )
    assert thread.head().size == 0
    thread.append("turn", {"role": "user", "text": "Hello."}, "bob.smith")
