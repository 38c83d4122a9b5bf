"""Counting line by line: the same counts as the counter, each line counted once."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from registre.context import CachedCounter, DefaultTokenCounter, default_counter
from registre.context.line_counts import LineCounter, block_counter, line_counter

lines_text = st.lists(
    st.text(st.sampled_from("ab Z9\t\n\r.,;é漢\x00\x7f  -"), max_size=12), max_size=6
).map("\n".join)


@given(st.one_of(lines_text, st.text(max_size=60)))
def test_line_counter_counts_as_the_default_counter(text: str) -> None:
    counter = LineCounter(DefaultTokenCounter())
    assert counter.count(text) == DefaultTokenCounter().count(text)
    assert counter.count(text) == DefaultTokenCounter().count(text)  # from the cache too


def test_line_counter_is_only_for_the_default_rule() -> None:
    assert isinstance(line_counter(default_counter()), LineCounter)
    other = CachedCounter(default_counter())
    wrapped = line_counter(other)
    assert not isinstance(wrapped, LineCounter)
    assert wrapped.name == other.name


def test_the_block_counter_is_kept_per_counter_and_counts_as_it() -> None:
    counter = default_counter()
    kept = block_counter(counter)
    assert block_counter(counter) is kept
    text = "[lifecycle at entry 7] 2 active\n- ev-1: Offices ECL is 12.4m"
    assert kept.count(text) == counter.count(text)
    other = CachedCounter(counter)
    assert block_counter(other) is not kept and block_counter(other).name == counter.name


def test_a_counter_that_caches_already_is_not_cached_twice() -> None:
    counter = default_counter()
    lines = line_counter(counter)
    cached = CachedCounter(counter)
    assert block_counter(lines) is lines and block_counter(cached) is cached
