"""The token counters: the default counter's rule (specs/context.md section 9), the registry,
and the optional tiktoken counter."""

from __future__ import annotations

import importlib.util
import math
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registre.context import (
    DEFAULT_COUNTER_NAME,
    DefaultTokenCounter,
    TiktokenCounter,
    TokenCounter,
    TokenCounterUnavailableError,
    UnknownTokenCounterError,
    counter_registry,
    default_counter,
    resolve_counter,
)

COUNT = DefaultTokenCounter().count

_PIECES = re.compile(
    r"(?P<letters>[A-Za-z]+)|(?P<digits>[0-9]+)|(?P<space>[\t\n\v\f\r ]+)"
    r"|(?P<punct>[!-/:-@\[-`{-~]+)|(?P<other>.)",
    re.DOTALL,
)


def reference_count(text: str) -> int:
    """specs/context.md section 9 read literally: cut into pieces, charge each piece."""
    total = 0
    for match in _PIECES.finditer(text):
        size = len(match.group())
        if match.lastgroup == "letters":
            total += math.ceil(size / 7)
        elif match.lastgroup == "digits":
            total += math.ceil(size / 3)
        elif match.lastgroup == "space":
            total += 0 if match.group() == " " else 1
        elif match.lastgroup == "punct":
            total += math.ceil(size / 2)
        else:
            total += math.ceil(len(match.group().encode("utf-8", "surrogatepass")) / 2)
    return total


@pytest.mark.parametrize(
    ("text", "tokens"),
    [
        ("", 0),
        ("the", 1),
        ("figures", 1),  # 7 letters: one token
        ("impairment", 2),  # 10 letters: two
        (" ", 0),  # a single space merges into the next word
        ("the ledger", 2),
        ("  ", 1),  # any other whitespace run is one token
        ("\n", 1),
        ("a\n\nb", 3),
        ("2024", 2),  # digits by three
        ("123", 1),
        ("()", 1),  # punctuation by two
        ("();", 2),
        ("é", 1),  # two UTF-8 bytes
        ("日本", 4),  # three bytes each: two tokens each
        ("🙂", 2),  # four bytes
        ("\x00", 1),
        ("\ud800", 2),  # a lone surrogate: three bytes as UTF-8 with surrogatepass
        ('{"command":"ls -la astroid/"}', 10),
    ],
)
def test_default_counter_rule(text: str, tokens: int) -> None:
    assert COUNT(text) == tokens


def test_default_counter_name_and_protocol() -> None:
    counter = default_counter()
    assert counter.name == DEFAULT_COUNTER_NAME == "registre.default/1"
    assert isinstance(counter, TokenCounter)
    assert default_counter() is counter


@given(st.text(), st.text())
def test_count_is_never_negative_and_a_join_costs_at_most_one_token(left: str, right: str) -> None:
    assert COUNT(left) >= 0
    # Joining merges at most the two runs meeting at the join: never more than one token
    # over the parts (two single spaces cost 0 each, a double space 1), nor under them by
    # more than one (two runs of letters, digits or punctuation share a token).
    parts = COUNT(left) + COUNT(right)
    assert parts - 1 <= COUNT(left + right) <= parts + 1


@given(st.text(st.characters(codec=None)) | st.text(alphabet=" \t\n\v\f\r\x1caz09!~é日🙂"))
def test_count_follows_the_specified_rule(text: str) -> None:
    assert COUNT(text) == reference_count(text)


@given(st.lists(st.text(), min_size=1, max_size=5))
def test_count_is_deterministic(texts: list[str]) -> None:
    counts = [COUNT(text) for text in texts]
    # no state carried from call to call or kept per instance: another counter, counting
    # copies of the texts in the other order, gives the same counts
    fresh = DefaultTokenCounter()
    assert [fresh.count("".join(list(text))) for text in reversed(texts)] == counts[::-1]
    assert [default_counter().count(text) for text in texts] == counts


def test_registry_resolves_by_name() -> None:
    class Characters:
        name = "test/characters"

        def count(self, text: str) -> int:
            return len(text)

    registry = counter_registry([Characters()])
    assert resolve_counter("test/characters", registry).count("anything") == 8
    assert resolve_counter(DEFAULT_COUNTER_NAME, registry).count("anything") == 2  # 8 letters
    assert resolve_counter(DEFAULT_COUNTER_NAME, registry) is default_counter()


def test_unknown_counter_fail() -> None:
    with pytest.raises(UnknownTokenCounterError, match="no token counter named 'tiktoken/x'"):
        resolve_counter("tiktoken/x", counter_registry())


@pytest.mark.skipif(importlib.util.find_spec("tiktoken") is not None, reason="tiktoken installed")
def test_tiktoken_counter_unavailable_without_the_package() -> None:
    with pytest.raises(TokenCounterUnavailableError, match="tiktoken package is not installed"):
        TiktokenCounter()


@given(
    st.text(st.characters(codec=None))
    | st.text(alphabet="  \t\n\r\x0b\x0c\x1c\x7faZ09!/:@[`{~é߿ࠀ日🙂\ud800", max_size=200)
)
def test_one_scan_counts_what_the_seven_scans_count(text: str) -> None:
    # the counter scans once with the patterns' alternation (tokens.py, _PIECES); the rule
    # as first written scans once per pattern
    from registre.context.tokens import _PATTERNS

    assert COUNT(text) == sum(len(pattern.findall(text)) for pattern in _PATTERNS)
