"""registre.context.recall: the query's words, the section's layout, and the verifier's
rebuild of a recorded section (``specs/context.md`` section 4.2)."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registre.context import ContextEntry, default_counter
from registre.context.recall import (
    RecalledFutureEntryError,
    RecalledRangeError,
    RecalledTextMismatchError,
    RecallOptions,
    identifier_terms,
    lay_out_recall,
    query_terms,
    recalled_section,
)

COUNTER = default_counter()


def turn(seq: int, text: str, role: str = "user") -> ContextEntry:
    return ContextEntry(seq, "turn", "alice", {"role": role, "text": text})


def result(seq: int, content: str) -> ContextEntry:
    return ContextEntry(seq, "tool.result", "tool:bash", {"call_id": "c1", "content": content})


def test_query_terms_keep_informative_words_once_in_order() -> None:
    terms = query_terms(["What did Caroline say about the Oscar adoption?", "Caroline, 2023"])
    assert terms == ("caroline", "oscar", "adoption", "2023")


def test_query_terms_stop_at_the_limit() -> None:
    assert len(query_terms([" ".join(f"word{n}" for n in range(100))], limit=5)) == 5


def test_identifier_terms_take_ids_paths_and_numbers() -> None:
    text = '{"name": "Sofia", "payment": "credit_card_9879898", "path": "src/app_v2.py", "n": 3}'
    terms = identifier_terms(text)
    assert "9879898" in terms and "credit" in terms and "v2" in terms and "3" in terms
    assert "sofia" not in terms  # a plain word is not an identifier


def test_short_entries_are_recalled_whole_in_ledger_order() -> None:
    entries = [turn(40, "Melanie painted a sunset in 2022."), turn(3, "Caroline adopted Oscar.")]
    section = lay_out_recall(entries, ("oscar", "sunset"), 500, COUNTER)
    assert section is not None
    assert section.seqs == (3, 40)
    lines = section.message.content.split("\n")
    assert lines[0] == "[recalled from the ledger: 2 entries relevant to this call, oldest first]"
    assert lines[1] == "[entry 3, user] Caroline adopted Oscar."
    assert lines[2] == "[entry 40, user] Melanie painted a sunset in 2022."
    assert section.message.role == "system"
    assert section.to_body()[0] == {
        "seq": 3,
        "sha256": hashlib.sha256(b"Caroline adopted Oscar.").hexdigest(),
    }


def test_a_long_entry_is_an_excerpt_around_the_query_words() -> None:
    filler = "lorem ipsum dolor sit amet " * 200
    text = filler + "the payment id is credit_card_9879898 for this booking " + filler
    section = lay_out_recall([result(7, text)], ("9879898",), 400, COUNTER)
    assert section is not None
    (item,) = section.items
    assert not item.whole
    assert "credit_card_9879898" in item.text
    assert text.encode()[item.start : item.end] == item.text.encode()
    assert f"[entry 7, tool result c1, bytes {item.start}-{item.end} of {len(text)}] …" in (
        section.message.content
    )
    assert section.to_body()[0]["bytes"] == [item.start, item.end]


def test_entries_without_text_of_their_own_are_never_recalled() -> None:
    call = ContextEntry(5, "model.call", "registre", {"model": "m"})
    assert lay_out_recall([call], ("m",), 500, COUNTER) is None


def test_no_room_recalls_nothing() -> None:
    assert lay_out_recall([turn(1, "Oscar")], ("oscar",), 10, COUNTER) is None


@given(
    texts=st.lists(st.text(min_size=1, max_size=3000), min_size=1, max_size=12),
    room=st.integers(min_value=0, max_value=3000),
    excerpt=st.integers(min_value=8, max_value=400),
)
def test_the_section_fits_its_room_and_verifies(texts: list[str], room: int, excerpt: int) -> None:
    entries = [turn(seq, text) for seq, text in enumerate(texts)]
    terms = query_terms(texts, 8)
    options = RecallOptions(excerpt_tokens=excerpt)
    section = lay_out_recall(entries, terms, room, COUNTER, options)
    if section is None:
        return
    assert section.tokens <= room
    assert list(section.seqs) == sorted(set(section.seqs))
    rebuilt = recalled_section(section.to_body(), len(texts) - 1, dict(enumerate(entries)), COUNTER)
    assert rebuilt == section


# --- the verifier's checks ------------------------------------------------------------------


def recorded(entry: ContextEntry, piece: bytes, span: list[int] | None = None) -> list[object]:
    item: dict[str, object] = {"seq": entry.seq, "sha256": hashlib.sha256(piece).hexdigest()}
    if span is not None:
        item["bytes"] = span
    return [item]


def test_recalled_section_is_rebuilt_from_the_entry() -> None:
    entry = turn(2, "Caroline adopted Oscar.")
    section = recalled_section(recorded(entry, b"Caroline adopted Oscar."), 5, {2: entry}, COUNTER)
    assert section.seqs == (2,)
    excerpt = recalled_section(recorded(entry, b"adopted", [9, 16]), 5, {2: entry}, COUNTER)
    assert excerpt.items[0].text == "adopted"


def test_recalled_text_not_entry_bytes_fail() -> None:
    entry = turn(2, "Caroline adopted Oscar.")
    with pytest.raises(RecalledTextMismatchError):
        recalled_section(recorded(entry, b"Caroline adopted Rex."), 5, {2: entry}, COUNTER)
    with pytest.raises(RecalledTextMismatchError):
        recalled_section(recorded(entry, b"adopted!", [9, 16]), 5, {2: entry}, COUNTER)


def test_recalled_future_entry_fail() -> None:
    entry = turn(6, "Caroline adopted Oscar.")
    with pytest.raises(RecalledFutureEntryError):
        recalled_section(recorded(entry, b"Caroline adopted Oscar."), 5, {6: entry}, COUNTER)


def test_recalled_range_outside_entry_fail() -> None:
    entry = turn(2, "Caroline adopted Oscar.")
    for span in ([0, 23], [20, 40]):  # the whole text as a range; past its end
        with pytest.raises(RecalledRangeError):
            recalled_section(recorded(entry, b"x", span), 5, {2: entry}, COUNTER)


def test_recalled_range_cutting_a_character_fail() -> None:
    entry = turn(2, "café au lait")
    with pytest.raises(RecalledRangeError):
        recalled_section(recorded(entry, "café".encode()[:4], [0, 4]), 5, {2: entry}, COUNTER)


def test_recalled_entry_without_text_fail() -> None:
    call = ContextEntry(2, "model.call", "registre", {"model": "m"})
    with pytest.raises(RecalledRangeError):
        recalled_section(recorded(call, b""), 5, {2: call}, COUNTER)
