"""Recall on the ledger: the full-text index kept with the entries, the recalled section of a
model call, its record, and the verifiers' checks (``specs/context.md`` section 4.2,
``specs/storage.md`` section 2.3). Both engines."""

from __future__ import annotations

import hashlib
import random
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
from registre.ledger.store.search import rebuild_search, search, search_ranked
from registre.ledger.thread import Thread
from registre.ledger.verify.database import verify_database
from registre.ledger.verify.errors import ModelCallDigestError
from tests.ledger.context_helpers import MODEL, forge
from tests.ledger.helpers import turn

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


def ranked(thread: Thread, terms: tuple[str, ...]) -> list[tuple[int, float]]:
    with read_transaction(thread.database.engine) as conn:
        return search_ranked(conn, thread.id, terms, thread.head().size, 100)


def test_a_threads_ranking_does_not_depend_on_other_threads(ledger: Ledger) -> None:
    """The same thread ranks its entries the same alone and beside a thread that makes its
    words common in the file (FTS5's own bm25 would count that thread's entries too)."""
    one = ledger.create_thread("one")
    one.append_many([turn(f"filler number {i}") for i in range(12)])
    one.append_many([turn("an apple"), turn("a banana"), turn("a banana split")])
    query = ("apple", "banana")
    alone = ranked(one, query)
    assert sorted(seq for seq, _ in alone) == [12, 13, 14]
    if ledger.engine.dialect.name == "sqlite":  # bm25: apple is the rarer word, here
        assert [seq for seq, _ in alone] == [12, 13, 14]
    two = ledger.create_thread("two")
    two.append_many([turn(f"apple {i}") for i in range(40)])
    assert ranked(one, query) == alone
    rebuilt = ledger.create_thread("zero")  # a thread numbered before them after a rebuild
    rebuilt.append_many([turn("apple pie, apple tart") for _ in range(5)])
    with write_transaction(ledger.engine) as conn:
        rebuild_search(conn)
    assert ranked(one, query) == alone


def corpus(seed: int, count: int) -> list[str]:
    """Texts of words ``k0`` .. ``k39``, word k in about one text in k + 2, and forms of
    ``connect`` (one index term), of lengths from 1 to 300 tokens, and two long ones (their
    lengths are varints of 3 and 2 bytes in FTS5's ``docsize``)."""
    rng = random.Random(seed)
    texts = []
    for _ in range(count):
        words = [f"k{k}" for k in range(40) if rng.random() < 1 / (k + 2)]
        words += [form for form in ("connect", "connected", "connecting") if rng.random() < 0.1]
        words += ["filler"] * rng.randrange(0, 300)
        rng.shuffle(words)
        texts.append(" ".join(words) or "filler")
    texts[3] = "k5 " + "filler " * 20_000
    texts[7] = "k5 k5 k9 connects " + "filler " * 200
    return texts


def native_bm25(conn: Any, words: tuple[str, ...], stop: int) -> list[tuple[int, float]]:
    """FTS5's own ranking of the only thread of a file, the words ordered as a search keeps
    them (rarest first, ties in the order given)."""
    counts = {
        word: conn.exec_driver_sql(
            "SELECT count(*) FROM entry_search WHERE entry_search MATCH ? AND rowid < ?",
            (f'"{word}"', (1 << 40) + stop),
        ).scalar()
        for word in words
    }
    match = " OR ".join(f'"{word}"' for word in sorted(words, key=lambda word: counts[word]))
    rows = conn.exec_driver_sql(
        "SELECT rowid, bm25(entry_search) FROM entry_search WHERE entry_search MATCH ? "
        "AND rowid < ? ORDER BY rank, rowid DESC",
        (match, (1 << 40) + stop),
    ).all()
    return [(rowid - (1 << 40), score) for rowid, score in rows]


def test_the_rank_is_fts5s_bm25_of_the_thread_alone(tmp_path: Path, signer: Signer) -> None:
    """SQLite: the scores are exactly those FTS5's bm25 gives in a file holding only the
    thread, while the thread shares its file with others (stemmed words, a word asked for
    twice under two forms, long entries)."""
    texts = corpus(7, 300)
    queries = [
        tuple(f"k{k}" for k in (9, 5, 20, 14, 3, 33, 27, 11, 38)),
        ("connected", "k12", "connect", "k30"),
    ]
    with Ledger.open(f"sqlite:///{tmp_path / 'alone.db'}", signer) as alone:
        alone.create_thread("one").append_many([turn(text) for text in texts])
        with read_transaction(alone.engine) as conn:
            native = [native_bm25(conn, query, 250) for query in queries]
    with Ledger.open(f"sqlite:///{tmp_path / 'shared.db'}", signer) as shared:
        other = shared.create_thread("other")
        one = shared.create_thread("one")
        other.append_many([turn(text) for text in corpus(8, 200)])
        for start in range(0, len(texts), 100):
            one.append_many([turn(text) for text in texts[start : start + 100]])
            other.append_many([turn(text) for text in corpus(start, 50)])
        with read_transaction(shared.engine) as conn:
            found = [search_ranked(conn, "one", query, 250, 1000) for query in queries]
    assert all(len(ranking) > 20 for ranking in native)
    assert found == native


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


def test_recall_keeps_the_room_for_the_reply(thread: Thread) -> None:
    """The section takes what the other messages leave of the window, never the output
    reserve: the whole context stays within budget - output_reserve_tokens."""
    chat(thread, 40)
    thread.append("turn", {"role": "user", "text": f"Which card was {RARE}?"}, "alice")
    projection, call = thread.model_call(MODEL, POLICY.budget_tokens, POLICY)
    assert "recalled" in call.body and projection.recalled is not None
    assert projection.tokens <= POLICY.window_tokens() < POLICY.budget_tokens


def test_recall_asks_for_as_many_candidates_as_its_options_allow(thread: Thread) -> None:
    chat(thread, 40)
    thread.append("turn", {"role": "user", "text": f"Which card was {RARE}?"}, "alice")
    options = RecallOptions(limit=16)
    projection, call = thread.model_call(MODEL, POLICY.budget_tokens, POLICY, recall=options)
    assert projection.recalled is not None and len(call.body["recalled"]) <= 16


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
