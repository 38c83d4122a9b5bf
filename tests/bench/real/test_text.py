"""The scoring rules: what counts as a turn, an answer, in a context's text."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registre.bench.real.outputs import parse_budgets
from registre.bench.real.text import (
    ContextText,
    answer_share,
    content_words,
    seq_refs,
    turn_present,
)

TURN = "Ines: My cousin Zephyrine adopted a greyhound named Quillon in Reykjavik."


def test_verbatim_turn_scores() -> None:
    context = ContextText.of(["hello", f"[summary]\n{TURN}\nmore"])
    assert turn_present(context, 5, TURN)


def test_whitespace_does_not_matter() -> None:
    context = ContextText.of([TURN.replace(" ", "\n  ")])
    assert turn_present(context, 5, TURN)


def test_absent_turn_scores_nothing() -> None:
    context = ContextText.of(["Ines: hello there", "Tomas: the weather is fine"])
    assert not turn_present(context, 5, TURN)


def test_excerpt_naming_the_seq_with_most_words_scores() -> None:
    line = "- Ines: cousin Zephyrine adopted greyhound Quillon, Reykjavik (seq 5)"  # 7 of 8
    assert turn_present(ContextText.of([line]), 5, TURN)
    ranged = "- Ines: cousin Zephyrine adopted a greyhound named Quillon in Reykjavik (seqs 2-9)"
    assert turn_present(ContextText.of([ranged]), 5, TURN)


def test_excerpt_of_another_seq_fail() -> None:
    line = "- Ines: cousin Zephyrine adopted greyhound Quillon, Reykjavik (seq 6)"
    assert not turn_present(ContextText.of([line]), 5, TURN)


def test_pointer_with_few_words_fail() -> None:
    line = "- Ines: cousin Zephyrine adopted greyhound Quillon (seq 5)"  # 6 of 8: 75%
    assert not turn_present(ContextText.of([line]), 5, TURN)


def test_words_without_pointer_fail() -> None:
    line = "- Ines: cousin Zephyrine adopted greyhound Quillon, Reykjavik"
    assert not turn_present(ContextText.of([line]), 5, TURN)


def test_seq_refs() -> None:
    assert seq_refs("(seq 268)") == {268}
    assert seq_refs("segments reconcile (seq 61-63)") == {61, 62, 63}
    assert seq_refs("seqs 3, 7–8 and nothing else 99") == {3, 7, 8}
    assert seq_refs("no pointer 12") == frozenset()
    assert seq_refs("[entry 28, user] text") == {28}
    assert seq_refs("[summary of ledger entries 0-467]") == frozenset()  # a header


def test_answer_share() -> None:
    context = ContextText.of(["Tomas: I repainted the boathouse teal in May 2023"])
    assert answer_share(context, "teal") == 1.0
    assert answer_share(context, "7 May 2023") == 2 / 3
    assert answer_share(context, "the") is None  # no content word: left out


@given(st.text(min_size=1, max_size=80).filter(str.strip), st.text(max_size=20))
def test_a_text_is_in_a_context_holding_it(text: str, around: str) -> None:
    context = ContextText.of([f"{around} {text} {around}", "other"])
    assert turn_present(context, 0, text)


@given(st.text(max_size=60), st.text(max_size=60))
def test_answer_share_is_a_share(context: str, answer: str) -> None:
    share = answer_share(ContextText.of([context]), answer)
    assert share is None or 0.0 <= share <= 1.0
    if share is not None and content_words(answer) <= content_words(context):
        assert share == 1.0


def test_budgets() -> None:
    assert parse_budgets("4k, 8k,16000,1.5k") == (4000, 8000, 16000, 1500)
    for bad in ("", "0", "k", "1.2345k", "20m"):
        with pytest.raises(ValueError):
            parse_budgets(bad)
