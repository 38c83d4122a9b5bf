"""The working-context quality measures: count-only lines, pointer spans, shared prefixes and
the fact-recall rule, on hand-made contexts."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registre.bench.facts import Fact, FactBook, definition_keys, figure_fact, instruction_fact
from registre.bench.quality import ContextView, MethodTally, common_prefix, count_only, span_sizes
from registre.context import Message

OFFICES = Fact(
    "fact-1",
    "exception",
    87,
    "Exception: Offices does not reconcile, the ECL differs from the loan tape by EUR 3.10m.",
    ("Offices", "EUR 3.10m"),
    "Offices",
)


@pytest.mark.parametrize(
    "text",
    [
        "4 findings",
        "0 items folded",
        "latest: 1 dead ends; latest: …",
        "15 findings; latest: ……",
        "findings: 3 findings; latest: “x”…",  # a one-character quote is no quote
        "Findings: 12 tool outputs",
    ],
)
def test_counts_and_labels_are_count_only(text: str) -> None:
    assert count_only(text)


@pytest.mark.parametrize(
    "text",
    [
        '15 findings; latest: assistant: "Finding: Residential development interes"…',
        "assistant: “Exception: Offices does not reconcile”",  # a quote
        "18 sql queries on risk_mart over 7 segments; 16 returned rows, 2 empty",  # identifier
        "all segments reconciled within tolerance except Offices (see #87)",  # a name
        "ECL differs by EUR 3m",  # an amount
        "coverage rose by 12%",  # a percentage
        "PD 0.42 after the reset",  # a decimal
        "superseded by ev-12",  # an identifier
        "H3 revised twice",  # an identifier
        "reported on 2025-09-30",  # a date
    ],
)
def test_quotes_figures_and_names_are_not_count_only(text: str) -> None:
    assert not count_only(text)


def test_span_sizes_count_entries_per_span() -> None:
    lines = [("a", ((0, 0), (5, 7))), ("b", ((10, 3009),))]
    assert span_sizes(lines) == [1, 3, 3000]


@given(
    first=st.lists(st.integers(0, 3), max_size=12),
    second=st.lists(st.integers(0, 3), max_size=12),
)
def test_common_prefix_is_the_longest_shared_run(first: list[int], second: list[int]) -> None:
    a = tuple(Message("user", str(n)) for n in first)
    b = tuple(Message("user", str(n)) for n in second)
    expected = 0
    while expected < min(len(a), len(b)) and a[expected] == b[expected]:
        expected += 1
    assert common_prefix(a, b) == expected


def _view(
    *contents: str, lines: tuple[tuple[str, tuple[tuple[int, int], ...]], ...] = ()
) -> ContextView:
    return ContextView.of([Message("system", c) for c in contents], [10] * len(contents), 0, lines)


def test_a_fact_is_recalled_verbatim_or_through_a_line_pointing_at_its_entry() -> None:
    tally = MethodTally()
    tally.observe(_view("noise", OFFICES.text), [OFFICES], 100, sample=False)
    quoting = ("assistant: “Exception: Offices … by EUR 3.10m.”", ((80, 90),))
    tally.observe(_view("noise", lines=(quoting,)), [OFFICES], 100, sample=False)
    elsewhere = ("assistant: “Exception: Offices … by EUR 3.10m.”", ((88, 90),))
    tally.observe(_view("noise", lines=(elsewhere,)), [OFFICES], 100, sample=False)
    vague = ("assistant: “Exception: Offices does not reconcile”…", ((80, 90),))
    tally.observe(_view("noise", lines=(vague,)), [OFFICES], 100, sample=True)
    tally.refuse([OFFICES], pins_fit=True)
    figures = tally.to_json(summary_lines=True)
    assert figures["fact_recall"] == {
        "needs": 5,
        "recalled": 2,
        "verbatim": 1,
        "summarized": 1,
        "share": 0.4,
        "by_kind": {"exception": {"needs": 5, "recalled": 2}},
    }
    assert figures["refused"] == {"calls": 1, "pins_fit": 1} and figures["calls"] == 4
    assert figures["pointers"]["span_p50"] == 11 and figures["count_only"]["share"] == 0.0


def test_stable_prefix_is_declared_compared_and_reused() -> None:
    tally = MethodTally()
    pins = Message("system", "[pinned task_parameter pin-1] Reporting date")
    first = ContextView.of([pins, Message("user", "a")], [30, 70], 1)
    second = ContextView.of([pins, Message("user", "a"), Message("user", "b")], [30, 70, 100], 1)
    third = ContextView.of([Message("system", "summary"), Message("user", "b")], [50, 50], 1)
    for view in (first, second, third):
        tally.observe(view, [], 200, sample=False)
    prefix = tally.to_json(summary_lines=True)["stable_prefix"]
    assert prefix["declared_share"] == round((0.3 + 0.15 + 0.5) / 3, 6)
    assert prefix["identical_share"] == 0.5  # the same pins, then a new summary
    assert prefix["reused_share"] == 0.25  # 100 of 200 tokens reusable, then none
    assert tally.to_json(summary_lines=True)["tokens"] == {"mean_use": 0.6667, "max_use": 1.0}


def test_facts_name_their_keys_and_the_book_keeps_what_is_current() -> None:
    import random

    rng = random.Random(1)
    text, keys = figure_fact(rng, "Hotels")
    assert all(key in text for key in keys) and keys[0] == "Hotels"
    instruction, instruction_keys = instruction_fact(rng, 2, "Retail")
    assert instruction.startswith("Instruction 2: ") and all(
        k in instruction for k in instruction_keys
    )
    definition = "Definition DEF-01: a Retail loan is forborne when a concession is granted."
    assert definition_keys("DEF-01", definition) == ("DEF-01", "forborne")
    book = FactBook()
    old = book.add("figure", 10, text, keys, "Hotels")
    new = book.add("figure", 40, text.replace("Stage", "stage"), keys, "Hotels")
    book.add("instruction", 50, instruction, instruction_keys, "Retail")
    assert book.about("Hotels") == [new] and old not in book.current()
    assert [f.seq for f in book.current()] == [40, 50]
