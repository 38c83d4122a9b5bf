"""The BPE token counters (the optional ``bpe-openai`` package, ``registre[tokens]``) and the
count cache: exact counts, names that resolve when replaying, a clear error without the
package, and a cache that changes nothing but the cost."""

from __future__ import annotations

import functools
import random
import re
import subprocess
import sys
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registre.context import (
    BPE_ENCODINGS,
    BpeCounter,
    CachedCounter,
    ContextState,
    Policy,
    TokenCounter,
    TokenCounterUnavailableError,
    UnknownTokenCounterError,
    bpe_counter,
    bpe_counter_name,
    context_tokens,
    counter_registry,
    default_counter,
    project,
    resolve_counter,
    validate_compaction,
)
from registre.context import tokens as tokens_module
from tests.context.strategies import WORDS
from tests.context.threads import ThreadBuilder

bpe_openai = pytest.importorskip("bpe_openai")

SAMPLES = [
    "",
    "hello world",
    "tiktoken is great!",
    "antidisestablishmentarianism",
    "Residential impairment rose 4.7% to EUR 1,284,000 in 2024-Q3.",
    '{"command":"ls -la astroid/"}',
    "def f(x):\n    return x ** 2\n\n\n",
    "Grüße, 日本語のテキスト 🙂",
    "<|endoftext|> is ordinary text here",
    "   leading and trailing   \t\n",
]


def reference(encoding: str, text: str) -> int:
    """The package's own count through its tiktoken-style API (special tokens as text)."""
    return len(bpe_openai.get_encoding(encoding).encode(text, disallowed_special=()))


@pytest.mark.parametrize("encoding", BPE_ENCODINGS)
@pytest.mark.parametrize("text", SAMPLES)
def test_counts_are_the_package_counts(encoding: str, text: str) -> None:
    assert bpe_counter(encoding).count(text) == reference(encoding, text)


@pytest.mark.parametrize("encoding", BPE_ENCODINGS)
def test_counts_are_tiktoken_counts(encoding: str) -> None:
    # The token ids OpenAI's cookbook shows tiktoken giving for this text, in both encodings
    # (no tiktoken needed: the ids are known).
    ids = {
        "cl100k_base": [83, 1609, 5963, 374, 2294, 0],
        "o200k_base": [83, 8251, 2488, 382, 2212, 0],
    }
    text = "tiktoken is great!"
    assert bpe_openai.get_encoding(encoding).encode(text) == ids[encoding]
    assert bpe_counter(encoding).count(text) == 6


def test_special_token_text_is_counted_as_text() -> None:
    counter = bpe_counter("o200k_base")
    assert counter.count("<|endoftext|>") == 7 == reference("o200k_base", "<|endoftext|>")


def test_a_lone_surrogate_counts_as_a_replacement_character() -> None:
    counter = bpe_counter("o200k_base")
    assert counter.count("a\ud800b") == counter.count("a\ufffdb")


def test_any_length_is_counted() -> None:
    # The package's encode refuses 1,000,000 characters or more; the counter does not.
    counter = BpeCounter("o200k_base", cache_texts=0)
    chunk = "impairment of 12 assets\n"
    assert reference("o200k_base", chunk * 2) == 2 * reference("o200k_base", chunk)
    times = 1_000_000 // len(chunk) + 1
    assert counter.count(chunk * times) == times * reference("o200k_base", chunk)


@given(st.text(st.characters(codec="utf-8"), max_size=300))
def test_counts_match_the_package_on_any_text(text: str) -> None:
    for encoding in BPE_ENCODINGS:
        assert bpe_counter(encoding).count_uncached(text) == reference(encoding, text)


@given(st.lists(st.sampled_from(SAMPLES) | st.text(max_size=40), max_size=30))
def test_the_cache_changes_no_count(texts: list[str]) -> None:
    cached = BpeCounter("o200k_base", cache_texts=4, cache_chars=100)
    uncached = BpeCounter("o200k_base", cache_texts=0)
    for text in texts + texts[::-1]:
        assert cached.count(text) == uncached.count(text)
    assert cached.cached_texts <= 4
    assert uncached.cached_texts == 0


SPEC = (Path(__file__).resolve().parents[2] / "specs" / "context.md").read_text(encoding="utf-8")
SECTION_9 = SPEC[SPEC.index("## 9. Token counters") : SPEC.index("## 10.")]
BPE_TABLE = re.findall(r"^\| `(.+?)` \| (\d+) \| (\d+) \|$", SECTION_9, re.M)


def test_the_spec_table_has_rows() -> None:
    assert len(BPE_TABLE) >= 5


@pytest.mark.parametrize(("text", "o200k", "cl100k"), BPE_TABLE)
def test_the_spec_table(text: str, o200k: str, cl100k: str) -> None:
    text = text.replace("\\|", "|")  # a | in a Markdown table cell is written \|
    assert bpe_counter("o200k_base").count(text) == int(o200k)
    assert bpe_counter("cl100k_base").count(text) == int(cl100k)


# --- names --------------------------------------------------------------------------------


def test_names() -> None:
    assert bpe_counter_name("o200k_base") == "bpe-openai.o200k_base/1"
    assert BpeCounter().name == "bpe-openai.o200k_base/1"
    assert BpeCounter("cl100k_base").name == "bpe-openai.cl100k_base/1"
    assert isinstance(bpe_counter(), TokenCounter)
    assert bpe_counter("cl100k_base") is bpe_counter("cl100k_base")


@pytest.mark.parametrize("encoding", BPE_ENCODINGS)
def test_name_round_trip_through_the_registry(encoding: str) -> None:
    counter = BpeCounter(encoding)
    # Given to the registry, the counter itself is resolved by its name ...
    assert resolve_counter(counter.name, counter_registry([counter])) is counter
    # ... and without it, the name alone builds one (what a verifier replaying needs).
    resolved = resolve_counter(counter.name, counter_registry())
    assert resolved.name == counter.name
    assert [resolved.count(text) for text in SAMPLES] == [counter.count(t) for t in SAMPLES]


def test_other_names_stay_unknown() -> None:
    for name in ("bpe-openai.o200k_base/2", "bpe-openai.gpt2/1", "bpe-openai.o200k_base"):
        with pytest.raises(UnknownTokenCounterError, match="no token counter named"):
            resolve_counter(name, counter_registry())


def test_an_encoding_it_does_not_count_is_refused() -> None:
    with pytest.raises(TokenCounterUnavailableError, match="no BPE counter for the encoding"):
        BpeCounter("gpt2")


def test_cache_bounds_must_not_be_negative() -> None:
    with pytest.raises(ValueError, match="cache bounds"):
        BpeCounter(cache_texts=-1)
    with pytest.raises(ValueError, match="cache bounds"):
        CachedCounter(default_counter(), max_chars=-1)
    with pytest.raises(ValueError, match="cache bounds"):
        CachedCounter(default_counter(), max_bytes=-1)


# --- without the package ------------------------------------------------------------------


@pytest.fixture
def no_bpe_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    """``import bpe_openai`` fails (a None entry in sys.modules blocks the import), and the
    shared counters are built afresh."""
    monkeypatch.setitem(sys.modules, "bpe_openai", None)
    monkeypatch.setattr(tokens_module, "bpe_counter", functools.cache(BpeCounter))


@pytest.mark.usefixtures("no_bpe_openai")
def test_without_the_package_a_counter_is_refused_with_the_extra_to_install() -> None:
    with pytest.raises(TokenCounterUnavailableError, match="bpe-openai package") as refused:
        BpeCounter()
    assert refused.value.hint == "pip install 'registre[tokens]'"


@pytest.mark.usefixtures("no_bpe_openai")
def test_without_the_package_a_recorded_name_cannot_be_checked() -> None:
    name = "bpe-openai.o200k_base/1"
    with pytest.raises(UnknownTokenCounterError, match=re.escape(name)) as unknown:
        resolve_counter(name, counter_registry())
    assert unknown.value.hint == "pip install 'registre[tokens]'"
    # the default counter needs nothing
    assert resolve_counter("registre.default/1", counter_registry()) is default_counter()


def test_without_the_package_registre_imports_and_counts() -> None:
    code = (
        "import sys; sys.modules['bpe_openai'] = None\n"
        "from registre.context import default_counter, BpeCounter\n"
        "print(default_counter().count('the ledger'))"
    )
    ran = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert ran.stdout.strip() == "2"


# --- the cache ----------------------------------------------------------------------------


class Calls:
    """Characters, counting how often it is asked."""

    name = "test/characters"

    def __init__(self) -> None:
        self.asked: list[str] = []

    def count(self, text: str) -> int:
        self.asked.append(text)
        return len(text)


def test_cached_counter_counts_each_text_once_under_the_same_name() -> None:
    inner = Calls()
    cached = CachedCounter(inner)
    assert cached.name == inner.name and cached.counter is inner
    for _ in range(3):
        assert [cached.count(text) for text in ("ab", "abc", "ab")] == [2, 3, 2]
    assert inner.asked == ["ab", "abc"]
    assert cached.cached_texts == 2
    cached.clear()
    assert cached.count("ab") == 2 and inner.asked == ["ab", "abc", "ab"]


def test_cache_drops_the_text_counted_longest_ago_first() -> None:
    inner = Calls()
    cached = CachedCounter(inner, max_texts=2)
    for text in ("a", "b", "a", "c"):  # "c" drops "a", counted first ("a" again was a hit)
        cached.count(text)
    inner.asked.clear()
    cached.count("b")
    cached.count("c")
    assert inner.asked == []
    cached.count("a")
    assert inner.asked == ["a"]
    assert cached.cached_texts == 2


def test_cache_holds_at_most_its_characters() -> None:
    inner = Calls()
    cached = CachedCounter(inner, max_chars=10)
    cached.count("x" * 11)  # longer than the whole cache: counted, never kept
    assert cached.cached_texts == 0
    cached.count("a" * 6)
    cached.count("b" * 6)  # 12 characters: the older text goes
    assert cached.cached_texts == 1
    inner.asked.clear()
    cached.count("b" * 6)
    assert inner.asked == []


def test_cache_holds_at_most_its_bytes_two_byte_texts_counting_double() -> None:
    inner = Calls()
    ascii_text, dashes = "a" * 10, "\u2013" * 10  # "–": 2 bytes a character in CPython
    bound = 2 * sys.getsizeof(ascii_text)
    assert sys.getsizeof(ascii_text) < sys.getsizeof(dashes) <= bound
    cached = CachedCounter(inner, max_bytes=bound)
    cached.count(ascii_text)
    cached.count("b" * 10)  # exactly the bound: both kept
    assert cached.cached_texts == 2
    cached.count(dashes)  # 10 characters like the others, but both older texts go
    assert cached.cached_texts == 1
    inner.asked.clear()
    cached.count(dashes)
    assert inner.asked == []
    cached.count("\u2013" * 60)  # more bytes than the whole cache: counted, never kept
    assert cached.cached_texts == 1


def test_threads_counted_with_a_bpe_counter_replay_by_name() -> None:
    rng = random.Random(7)
    policy = Policy(budget_tokens=1200, keep_recent_turns=2, bulky_tool_output_tokens=120)
    builder = ThreadBuilder(policy=policy, counter=bpe_counter())
    for number in range(60):
        sentence = " ".join(rng.choice(WORDS) for _ in range(12))
        builder.tool("bash", f"grep -n segment_{number}", "\n".join([sentence] * (1 + number % 9)))
        builder.turn("assistant", f"Step {number}: {sentence}")
    assert builder.compactions
    # every compaction verifies against a counter found by its recorded name alone
    state = ContextState()
    for entry in builder.entries:
        if entry.kind == "context.compaction":
            assert entry.body["token_counter"] == "bpe-openai.o200k_base/1"
            validate_compaction(state, entry, builder.texts, counter_registry())
        state.apply(entry)
    counter = resolve_counter("bpe-openai.o200k_base/1", counter_registry())
    projection = project(state, policy.budget_tokens, policy, counter)
    assert projection.core_tokens == context_tokens(state, counter) <= policy.budget_tokens
    assert projection.tokens <= policy.window_tokens()
    assert projection.tokens != context_tokens(state, default_counter())
