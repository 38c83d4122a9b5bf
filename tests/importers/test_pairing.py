"""Tool-call pairing as the providers define it (specs/entries.md section 6): a result answers
the most recent unanswered call of its id, in the file or earlier in the thread."""

from __future__ import annotations

import json

import pytest

from registre.context import ContextEntry, ContextState
from registre.importers import Pairing, TranscriptError, parse_bytes


def _jsonl(*messages: object) -> bytes:
    return b"".join(json.dumps(m).encode() + b"\n" for m in messages)


def _ask(*ids: str) -> dict[str, object]:
    calls = [
        {"id": i, "type": "function", "function": {"name": "bash", "arguments": "{}"}} for i in ids
    ]
    return {"role": "assistant", "content": None, "tool_calls": calls}


def _answer(call_id: str, text: str = "ok") -> dict[str, object]:
    return {"role": "tool", "tool_call_id": call_id, "content": text}


def test_reused_id_gets_a_ledger_unique_ref_and_keeps_the_id() -> None:
    entries = parse_bytes(_jsonl(_ask("a"), _answer("a"), _ask("a"), _answer("a"), _ask("a")))
    refs = [(e.kind, e.body["call_id"], e.body.get("call_ref")) for e in entries]
    assert refs == [
        ("tool.call", "a", None),
        ("tool.result", "a", None),
        ("tool.call", "a", "a#2"),
        ("tool.result", "a", "a#2"),
        ("tool.call", "a", "a#3"),
    ]


def test_result_answers_the_most_recent_unanswered_call() -> None:
    entries = parse_bytes(
        _jsonl(_ask("a"), _ask("a"), _answer("a", "second"), _answer("a", "first"))
    )
    results = [
        (e.body.get("call_ref"), e.body["content"]) for e in entries if e.kind == "tool.result"
    ]
    assert results == [("a#2", "second"), (None, "first")]


def test_parallel_calls_keep_their_order_and_answer_in_any_order() -> None:
    entries = parse_bytes(_jsonl(_ask("x", "y", "z"), _answer("z"), _answer("x"), _answer("y")))
    assert [e.body["call_id"] for e in entries] == ["x", "y", "z", "z", "x", "y"]


def test_second_result_for_one_call_fail() -> None:
    with pytest.raises(TranscriptError, match="second result for tool call 'a'") as caught:
        parse_bytes(_jsonl(_ask("a"), _answer("a"), _answer("a")))
    assert caught.value.where == "line 3"


def test_pairing_state_is_rebuilt_from_the_thread() -> None:
    earlier = parse_bytes(_jsonl(_ask("a"), _answer("a"), _ask("a", "b")))
    pairing = Pairing.from_entries((e.kind, e.body) for e in earlier)
    assert sorted(pairing.unanswered()) == ["a", "b"]
    later = parse_bytes(_jsonl(_answer("b"), _answer("a"), _ask("a")), pairing=pairing)
    assert [e.body.get("call_ref") for e in later] == [None, "a#2", "a#3"]


def test_context_pairs_a_reused_id_with_its_own_result() -> None:
    entries = parse_bytes(_jsonl(_ask("a"), _ask("a"), _answer("a"), _answer("a")))
    state = ContextState()
    for seq, entry in enumerate(entries):
        state.apply(ContextEntry(seq, entry.kind, entry.actor, entry.body))
    partners = {item.seq: item.partner for item in state._tail}
    assert partners == {0: 3, 1: 2, 2: 1, 3: 0}
