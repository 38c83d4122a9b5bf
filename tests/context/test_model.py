"""Pointer spans and summary lines."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registre.context import SummaryLine
from registre.context.model import coalesce, format_spans, span_count
from registre.lifecycle.errors import LifecycleFormatError

SPANS = st.lists(
    st.tuples(st.integers(0, 60), st.integers(0, 8)).map(lambda p: (p[0], p[0] + p[1])),
    max_size=8,
)


@given(SPANS)
def test_coalesce_keeps_exactly_the_same_seqs_in_one_spelling(spans: list[tuple[int, int]]) -> None:
    merged = coalesce(spans)
    seqs = {seq for first, last in spans for seq in range(first, last + 1)}
    assert {seq for first, last in merged for seq in range(first, last + 1)} == seqs
    assert span_count(merged) == len(seqs)
    for (_, last), (first, _) in itertools.pairwise(merged):
        assert last + 1 < first  # neither overlapping nor touching
    assert coalesce(merged) == merged
    assert coalesce(reversed(spans)) == merged


@given(SPANS.filter(bool), st.integers(0, 70))
def test_covers_is_membership(spans: list[tuple[int, int]], seq: int) -> None:
    line = SummaryLine("findings", "x", coalesce(spans))
    assert line.covers(seq) == any(first <= seq <= last for first, last in spans)


def test_format_spans() -> None:
    assert format_spans(((2, 5), (12, 13), (20, 20))) == "2-5, 12-13, 20"


@pytest.mark.parametrize(
    ("section", "pointers"),
    [
        ("misc", ((1, 1),)),
        ("findings", ()),
        ("findings", ((2, 3), (4, 5))),  # touching: two spellings of one set
        ("findings", ((4, 5), (1, 2))),
        ("findings", ((3, 2),)),
    ],
)
def test_malformed_summary_line_fail(section: str, pointers: tuple[tuple[int, int], ...]) -> None:
    with pytest.raises(LifecycleFormatError):
        SummaryLine(section, "text", pointers)


def test_summary_line_json() -> None:
    line = SummaryLine("dead_ends", "F0010 again", ((12, 13), (20, 20)))
    assert line.to_json() == {
        "section": "dead_ends",
        "text": "F0010 again",
        "pointers": [[12, 13], [20, 20]],
    }
