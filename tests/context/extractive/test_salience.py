"""Salience that does not depend on our domain (issue 28, item 2): summary lines chosen by
the information they carry, for both speakers; phatic turns never become lines; duplicates
merge with their pointers; a JSON tool result is quoted by its id fields
(``specs/context.md`` section 6). The policies keep no recall share: the summarizer, not
the allocation of the window, is tested here."""

from __future__ import annotations

import json

from hypothesis import given
from hypothesis import strategies as st

from registre.context import ExtractiveSummarizer, Policy, plan_compaction
from registre.context.extractive.salience import Salience, is_phatic, novelty_order
from registre.context.jsontext import json_fields
from registre.context.lineage import quoted_spans
from tests.context.threads import ThreadBuilder

PHATIC = ["Thanks!", "Hello!", "Sure!", "1.", "[Request interrupted by user]", "Ok.", "Hi there!"]
PHATIC_LABELLED = ["Caroline: Thanks, Melanie!", "Caroline: Awesome, Mel!", "Mel: Sounds great!"]


def _summary(builder: ThreadBuilder) -> list[tuple[str, str, tuple[tuple[int, int], ...]]]:
    plan = plan_compaction(builder.state, builder.policy, builder.counter)
    assert plan is not None and plan.folded is not None
    summary = ExtractiveSummarizer().summarize(plan.items, plan)
    return [(line.section, line.text, line.pointers) for line in summary.lines]


def _conversation(filler: list[tuple[str, str]], policy: Policy) -> ThreadBuilder:
    builder = ThreadBuilder(policy=policy, compact=False)
    for role, text in filler:
        builder.turn(role, text)
    return builder


def test_phatic_texts_are_recognised() -> None:
    for text in PHATIC + PHATIC_LABELLED:
        assert is_phatic(text), text
    for text in [
        "Caroline: I went to the LGBTQ support group on 7 May.",
        "Run pytest -q tests/test_io.py",
        "Sure, use credit_card_9879898.",
        "[session 10, 8:56 pm on 20 July, 2023]",
        "Paris, 2019.",
    ]:
        assert not is_phatic(text), text


def test_a_phatic_turn_never_yields_a_summary_line() -> None:
    turns: list[tuple[str, str]] = []
    for number in range(60):
        turns.append(("user", PHATIC[number % len(PHATIC)]))
        turns.append(
            ("assistant", f"Order {1000 + number} ships to depot D{number} on day {number}.")
        )
    builder = _conversation(
        turns, Policy(budget_tokens=1500, keep_recent_turns=2, recall_share_permille=0)
    )
    lines = _summary(builder)
    assert lines
    phatic_seqs = {
        seq for seq, entry in enumerate(builder.entries) if is_phatic(entry.body["text"])
    }
    for _section, text, pointers in lines:
        pointed = {seq for first, last in pointers for seq in range(first, last + 1)}
        assert not pointed & phatic_seqs, text
        assert "instruction:" not in text


def test_both_speakers_get_lines_chosen_by_information() -> None:
    turns = [
        ("user", "Hello!"),
        ("assistant", "Hi! How can I help?"),
        ("user", "My booking reference is ZX81QP and the flight leaves Oslo on 12 March."),
        ("assistant", "Thanks!"),
        ("user", "Sure!"),
        ("assistant", "I rebooked ZX81QP onto flight SK4410, seat 14C, arriving Bergen 10:40."),
    ] + [("user", "Okay, thank you so much!"), ("assistant", "Great, glad to help!")] * 120
    builder = _conversation(
        turns, Policy(budget_tokens=1600, keep_recent_turns=2, recall_share_permille=0)
    )
    text = "\n".join(line for _s, line, _p in _summary(builder))
    assert "ZX81QP and the flight leaves Oslo" in text
    assert "SK4410" in text
    assert "Great" not in text and "Okay" not in text


def test_duplicate_lines_merge_with_their_pointers() -> None:
    turns = [("user", "Watch the reconciliation of ledger segment 11 for tenant acme-eu.")]
    for _number in range(25):
        turns.append(("assistant", "Segment 11 of tenant acme-eu reconciles within tolerance."))
    turns.append(("user", "Now check segment 12 and report its total in EUR."))
    turns += [("assistant", f"Segment 12 total is {n} EUR so far.") for n in range(10, 40)]
    builder = _conversation(
        turns, Policy(budget_tokens=1000, keep_recent_turns=2, recall_share_permille=0)
    )
    lines = _summary(builder)
    same = [(text, pointers) for _s, text, pointers in lines if "reconciles within" in text]
    assert len(same) == 1
    (span,) = same[0][1]  # one line standing for every time it was said
    assert span[0] == 1 and span[1] >= 20


def test_a_json_tool_result_is_quoted_by_its_id_fields() -> None:
    details = {
        "name": {"first_name": "Sofia", "last_name": "Kim"},
        "address": {"city": "Austin", "country": "USA", "zip": "78701"},
        "user_id": "sofia_kim_7287",
        "payment_methods": {
            "credit_card_9879898": {"source": "credit_card", "brand": "visa", "last_four": "5237"}
        },
        "membership": "gold",
    }
    builder = ThreadBuilder(
        policy=Policy(budget_tokens=1600, keep_recent_turns=1, recall_share_permille=0),
        compact=False,
    )
    builder.turn("user", "Please change the payment of my reservation.")
    builder.tool("get_user_details", "sofia_kim_7287", json.dumps(details))
    for number in range(40):
        builder.turn("assistant", f"Reservation R{number} flies on day {number}; no change yet.")
        builder.turn("user", f"What about the seat on reservation R{number}?")
    lines = _summary(builder)
    quoted = [span for _s, text, _p in lines for span in quoted_spans(text)]
    assert any("credit_card_9879898" in span for span in quoted), lines
    assert any('"user_id": "sofia_kim_7287"' in span for span in quoted), lines
    assert not any(span.startswith('{"name"') for span in quoted)


def test_json_fields_prefers_ids_and_values() -> None:
    text = json.dumps({"status": "ok", "order_id": "A-17", "total": 12.5, "note": "fine"})
    assert json_fields(text) == ['"order_id": "A-17"', '"total": 12.5']
    assert json_fields("not json at all: id=5") == []


@given(
    st.dictionaries(
        st.text(min_size=1, max_size=12), st.one_of(st.text(max_size=20), st.integers()), max_size=8
    )
)
def test_json_fields_are_the_texts_own_bytes(value: dict[str, object]) -> None:
    text = json.dumps(value)
    for field in json_fields(text):
        assert field in text


@given(st.lists(st.text(max_size=60), min_size=1, max_size=12))
def test_novelty_order_takes_every_text_once(texts: list[str]) -> None:
    order = novelty_order(texts, Salience(texts))
    assert sorted(index for index, _gain in order) == list(range(len(texts)))
    gains = [gain for _index, gain in order]
    assert all(gain >= 0 for gain in gains)


def test_rare_and_specific_terms_weigh_more() -> None:
    salience = Salience(
        ["the report is late", "the report is done", "the build failed at src/io.py"]
    )
    weights = salience.weights("the report mentions src/io.py and 42 errors")
    assert weights["src/io.py"] > weights["report"]
    assert weights["42"] > weights["report"]


def test_a_standing_rule_outranks_chatter_whoever_wrote_the_rest() -> None:
    turns = [("user", "Audit the loan tape.")]
    for number in range(120):
        turns.append(("assistant", f"Segment S{number} holds {number * 11} loans, checked."))
        if number == 5:
            turns.append(("user", "From now on, leave Retail loans under EUR 2.5m out of totals."))
    builder = _conversation(
        turns, Policy(budget_tokens=900, keep_recent_turns=2, recall_share_permille=0)
    )
    lines = _summary(builder)
    rule = [line for line in lines if "From now on" in line[1]]
    assert rule and rule[0][0] == "decisions" and rule[0][1].startswith("user: “From now on")


def test_a_line_never_quotes_only_the_courtesy_of_a_longer_turn() -> None:
    turns = [("user", "Tell me about the garden.")]
    for number in range(60):
        turns.append(
            (
                "assistant",
                f"Mel: Thanks, Caroline! Plot {number} grows {number + 2} kinds of tomatoes "
                f"this year, and the {number}th bed floods after rain.",
            )
        )
        turns.append(("user", f"Caroline: Wow! What about bed {number}?"))
    builder = _conversation(
        turns, Policy(budget_tokens=900, keep_recent_turns=2, recall_share_permille=0)
    )
    for _section, text, _pointers in _summary(builder):
        spans = quoted_spans(text)
        assert not spans or not is_phatic(" ".join(spans)), text
