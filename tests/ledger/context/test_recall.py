"""Recall on the ledger: the full-text index kept with the entries, the recalled section of a
model call, its record, and the verifiers' checks (``specs/context.md`` section 4.2,
``specs/storage.md`` section 2.3). Both engines."""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

import pytest

from registre.attest.notes import Signer
from registre.attest.projection_digest import projection_digest
from registre.attest.verify import TrustPolicy, verify_bundle
from registre.context import Policy, default_counter, project
from registre.context.recall import (
    RecalledFutureEntryError,
    RecalledRangeError,
    RecalledTextMismatchError,
    RecallOptions,
)
from registre.ledger.context.recall import recall_terms
from registre.ledger.context.store import ContextEntryRefusedError
from registre.ledger.core.append import append_entries
from registre.ledger.exchange.export import export_thread
from registre.ledger.ledger import Ledger
from registre.ledger.store.engine import read_transaction, write_transaction
from registre.ledger.store.search import rebuild_search, search
from registre.ledger.thread import Thread
from registre.ledger.verify.database import verify_database
from registre.ledger.verify.errors import ModelCallDigestError
from tests.ledger.context_helpers import MODEL, forge

POLICY = Policy(budget_tokens=600)
RARE = "credit_card_9879898"


def chat(thread: Thread, rounds: int, *, recall: bool = True) -> list[int]:
    """An opening pair holding the rare identifier, then ``rounds`` rounds of small talk,
    each with a model call before the assistant's answer; the seqs of the calls."""
    thread.append("turn", {"role": "user", "text": "I will book a flight to Lisbon."}, "alice")
    thread.append(
        "turn",
        {"role": "assistant", "text": f"Booked: the payment id is {RARE}, flight HAT170."},
        "agent",
    )
    calls = []
    for number in range(rounds):
        text = f"Question {number}: how is the weather and are hotel rooms free in town?"
        thread.append("turn", {"role": "user", "text": text}, "alice")
        _projection, call = thread.model_call(MODEL, POLICY.budget_tokens, POLICY, recall=recall)
        calls.append(call.seq)
        thread.append("turn", {"role": "assistant", "text": f"Answer {number}: sunny."}, "agent")
    return calls


def ask(thread: Thread, text: str, **options: Any) -> tuple[Any, Any]:
    thread.append("turn", {"role": "user", "text": text}, "alice")
    return thread.model_call(MODEL, POLICY.budget_tokens, POLICY, **options)


def seqs_for(thread: Thread, terms: tuple[str, ...], stop: int | None = None) -> list[int]:
    with read_transaction(thread.database.engine) as conn:
        return search(conn, thread.id, terms, stop or thread.head().size, 10)


# --- the index ------------------------------------------------------------------------------


def test_the_index_finds_an_entry_by_a_rare_word(thread: Thread) -> None:
    chat(thread, 3)
    assert seqs_for(thread, ("9879898",)) == [1]
    assert seqs_for(thread, ("9879898",), stop=1) == []  # only entries before stop
    assert seqs_for(thread, ("nothing", "matches")) == []


def test_the_index_rolls_back_with_the_append(thread: Thread, signer: Signer) -> None:
    thread.append("turn", {"role": "user", "text": "first words"}, "alice")
    with pytest.raises(RuntimeError), write_transaction(thread.database.engine) as conn:
        append_entries(conn, signer, thread.id, [("turn", {"role": "user", "text": RARE}, "a")])
        raise RuntimeError("the transaction fails after the append")
    assert thread.head().size == 1
    assert seqs_for(thread, ("9879898",)) == []
    thread.append("turn", {"role": "user", "text": RARE}, "alice")
    assert seqs_for(thread, ("9879898",)) == [1]


def test_the_index_is_kept_per_thread(ledger: Ledger) -> None:
    one, two = ledger.create_thread("one"), ledger.create_thread("two")
    one.append("turn", {"role": "user", "text": "alpha 4711"}, "alice")
    two.append("turn", {"role": "user", "text": "beta 4711"}, "alice")
    two.append("turn", {"role": "user", "text": "gamma 4711"}, "alice")
    assert seqs_for(one, ("4711",)) == [0]
    assert sorted(seqs_for(two, ("4711",))) == [0, 1]


def test_the_index_rebuilds_from_the_entries(thread: Thread) -> None:
    chat(thread, 2)
    before = seqs_for(thread, ("weather", "9879898"))
    with write_transaction(thread.database.engine) as conn:
        assert rebuild_search(conn) == 6  # the turns; model calls are not indexed
    assert seqs_for(thread, ("weather", "9879898")) == before


# --- recall before a model call -------------------------------------------------------------


def test_recall_finds_an_old_entry_sharing_a_rare_identifier(thread: Thread) -> None:
    chat(thread, 40)
    projection, call = ask(thread, f"Which card was {RARE} again?")
    assert projection.manifest.status_of(1).status != "verbatim"  # folded long ago
    assert call.body["recalled"][0]["seq"] == 1
    section = projection.messages[-1].content
    assert f"[entry 1, assistant] Booked: the payment id is {RARE}, flight HAT170." in section
    assert projection.to_json()["recalled"] == {
        "entries": [1],
        "message": len(projection.messages) - 1,
        "tokens": projection.message_tokens[-1],
    }
    assert projection.tokens <= POLICY.budget_tokens
    assert thread.replay_context(call.seq).to_json() == projection.to_json()
    verify_database(thread.database, thread=thread.id)


def test_recall_false_is_the_call_without_recall(thread: Thread) -> None:
    chat(thread, 40, recall=False)
    question = f"Which card was {RARE} again?"
    projection, call = ask(thread, question, recall=False, lifecycle_block=False)
    assert "recalled" not in call.body
    at = call.body["at_seq"]
    plain = project(thread.context_state(at), POLICY.budget_tokens, POLICY, default_counter())
    assert projection.to_json() == plain.to_json()
    assert call.body["projection_sha256"] == projection_digest(plain)


def test_recall_is_sized_by_its_options(thread: Thread) -> None:
    chat(thread, 40)
    thread.append("turn", {"role": "user", "text": f"Which card was {RARE}?"}, "alice")
    options = RecallOptions(share_permille=10)  # 6 tokens: no room
    _projection, call = thread.model_call(MODEL, POLICY.budget_tokens, POLICY, recall=options)
    assert "recalled" not in call.body


def test_bundle_with_recalls_verifies_offline(
    thread: Thread, ledger: Ledger, signer: Signer, tmp_path: Path
) -> None:
    chat(thread, 40)
    _projection, call = ask(thread, f"Which card was {RARE} again?")
    assert "recalled" in call.body
    thread.checkpoint()
    path = tmp_path / "recall.zip"
    export_thread(ledger, thread.id, path)
    report = verify_bundle(path.read_bytes(), TrustPolicy(signer.verifier(), (), 0))
    assert report.verified, report.render()


# --- forged recalls -------------------------------------------------------------------------


def recalled_call(thread: Thread, recalled: list[dict[str, object]]) -> dict[str, object]:
    """An honest model call's body at the head, with ``recalled`` in place of its own."""
    _projection, call = ask(thread, f"Which card was {RARE} again?")
    body = dict(call.body)
    body["recalled"] = recalled
    body["at_seq"] = call.seq  # project the honest call's own prefix again
    return body


def sha(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


@pytest.mark.parametrize(
    ("recalled", "error"),
    [
        ([{"seq": 1, "sha256": sha("Booked: the payment id is 1111, flight HAT170.")}], "bytes"),
        ([{"seq": 1, "sha256": sha("x"), "bytes": [0, 400]}], "range"),
    ],
)
def test_recalled_text_not_entry_bytes_fail(
    thread: Thread, signer: Signer, recalled: list[dict[str, object]], error: str
) -> None:
    chat(thread, 40)
    body = recalled_call(thread, recalled)
    with pytest.raises(ContextEntryRefusedError) as refused:
        thread.append_many([("model.call", body, "registre")])
    expected = RecalledTextMismatchError if error == "bytes" else RecalledRangeError
    assert isinstance(refused.value.__cause__, expected)
    forge(thread.database.engine, signer, thread.id, "model.call", body)
    with pytest.raises(ModelCallDigestError) as found:
        verify_database(thread.database, thread=thread.id)
    assert isinstance(found.value.__cause__, expected)


def test_recalled_future_entry_fail(thread: Thread, signer: Signer) -> None:
    chat(thread, 40)
    body = recalled_call(thread, [])
    future = thread.head().size - 1  # the honest call, after the at_seq given below
    body["at_seq"] = future - 1
    body["recalled"] = [{"seq": future, "sha256": sha("")}]
    with pytest.raises(ContextEntryRefusedError) as refused:
        thread.append_many([("model.call", body, "registre")])
    assert isinstance(refused.value.__cause__, RecalledFutureEntryError)
    forge(thread.database.engine, signer, thread.id, "model.call", body)
    with pytest.raises(ModelCallDigestError) as found:
        verify_database(thread.database, thread=thread.id)
    assert isinstance(found.value.__cause__, RecalledFutureEntryError)


def test_the_threads_common_words_are_not_asked_for(thread: Thread) -> None:
    chat(thread, 40)
    thread.append("turn", {"role": "user", "text": f"Question: the weather with {RARE}?"}, "alice")
    terms = recall_terms(thread.context_state(), RecallOptions())
    assert "9879898" in terms and "card" in terms
    assert "question" not in terms and "weather" not in terms  # in most recent turns
