"""Token counting for the working context: a two-member interface and the default counter.

A :class:`TokenCounter` has a ``name`` and ``count(text) -> int``. The name identifies the
counting rule exactly: two counters with one name must give the same count for every text,
because every event that depends on token counts (``context.compaction``, ``model.call``)
records the counter's name, and a verifier recounts with the counter of that name.

:class:`DefaultTokenCounter` (``registre.default/1``) ships with the project, needs no data
file and no network, and is specified exactly in ``specs/context.md`` section 9 so that any
verifier can reimplement it. It approximates byte-pair-encoding tokenizers of the GPT family
from above: it cuts text into pieces as their pre-tokenizers do and charges each piece what
such vocabularies typically need for it.

:class:`TiktokenCounter` wraps the optional ``tiktoken`` package when it is installed and its
encoding loads offline; registre never requires it.

:class:`BpeCounter` (``bpe-openai.<encoding>/1``, for ``o200k_base`` and ``cl100k_base``)
counts exactly with the optional ``bpe-openai`` package (``pip install 'registre[tokens]'``),
whose wheel ships the vocabularies, so it works offline. It is imported only when a
:class:`BpeCounter` is built, and :func:`resolve_counter` builds one by name, so a verifier
replaying a thread counted with it needs no more than the package.

:class:`CachedCounter` wraps any counter with a bounded cache of counts by text, under the
wrapped counter's name (the counts are the same); :class:`BpeCounter` caches this way by
default, so the texts a context recounts on every call (pins, summaries, the recent tail, a
state rebuilt from the ledger) are counted once.
"""

from __future__ import annotations

import functools
import importlib
import re
import sys
import threading
from collections.abc import Callable, Iterable, Mapping
from typing import Any, Final, Protocol, runtime_checkable

from registre.context.errors import TokenCounterUnavailableError, UnknownTokenCounterError

__all__ = [
    "BPE_ENCODINGS",
    "DEFAULT_COUNTER_NAME",
    "BpeCounter",
    "CachedCounter",
    "DefaultTokenCounter",
    "TiktokenCounter",
    "TokenCounter",
    "bpe_counter",
    "bpe_counter_name",
    "counter_registry",
    "default_counter",
    "resolve_counter",
]

DEFAULT_COUNTER_NAME: Final = "registre.default/1"

BPE_ENCODINGS: Final = ("o200k_base", "cl100k_base")
"""The encodings :class:`BpeCounter` counts with (both ship in the ``bpe-openai`` wheel)."""

BPE_RULE: Final = "1"
"""The version of :class:`BpeCounter`'s counting rule, the ``/1`` of its names (change the
rule, change the version)."""

BPE_HINT: Final = "pip install 'registre[tokens]'"

CACHE_TEXTS: Final = 65_536
"""The most texts a counter's cache holds by default (least recently counted dropped first)."""

CACHE_CHARS: Final = 16_000_000
"""The most characters of text a counter's cache holds by default (a longer text is counted
every time, never cached)."""

CACHE_BYTES: Final = 16 * 2**20
"""The most bytes the texts a counter's cache holds may take in memory, by default: each
text's ``sys.getsizeof``, which is 1, 2 or 4 bytes a character in CPython (by the widest
character: a text with a "–" or a "…" takes 2), plus its header. The character bound alone
let a cache of 2-byte texts hold twice what it says."""


@runtime_checkable
class TokenCounter(Protocol):
    """Counts the tokens of a text. ``count("")`` is 0; counts are never negative.

    Contract: ``count`` is a pure function of the text, and ``name`` names that function
    (change the rule, change the name).
    """

    @property
    def name(self) -> str:
        """The counter's stable name, recorded in the events that depend on its counts."""
        ...

    def count(self, text: str) -> int:
        """The number of tokens ``text`` takes."""
        ...


# Counting by matches: a run of n letters holds ceil(n / 7) matches of [A-Za-z]{1,7} (the
# matching is greedy), and likewise for digits and punctuation; a whitespace run costs one
# unless it is a single space; a non-ASCII character costs 1, plus 1 from U+0800 on (three
# and four UTF-8 bytes); an ASCII control character that is not whitespace costs 1.
_LETTERS: Final = re.compile(r"[A-Za-z]{1,7}")
_DIGITS: Final = re.compile(r"[0-9]{1,3}")
_PUNCT: Final = re.compile(r"[!-/:-@\[-`{-~]{1,2}")
_SPACE: Final = re.compile(r"[\t\n\v\f\r ]{2,}|[\t\n\v\f\r]")
_NON_ASCII: Final = re.compile(r"[^\x00-\x7f]")
_WIDE: Final = re.compile(r"[^\x00-\u07ff]")
_CONTROL: Final = re.compile(r"[\x00-\x08\x0e-\x1f\x7f]")
_PATTERNS: Final = (_LETTERS, _DIGITS, _PUNCT, _SPACE, _NON_ASCII, _WIDE, _CONTROL)
# The classes of the patterns but _WIDE partition the characters (letters, digits,
# punctuation, ASCII whitespace, non-ASCII, ASCII controls), and each pattern's matches lie
# inside one maximal run of its class, cut by the same greedy rule whatever surrounds the
# run. So one scan with their alternation (the two whitespace alternatives in their order)
# finds exactly the matches of the six scans, and _WIDE (a subset of _NON_ASCII) adds its
# own, none in an ASCII text. ``subn`` counts the matches without building their list.
# A single space after a letter, digit or punctuation mark and before no whitespace (a
# whitespace run of one space: no match, no charge) is taken into the match before it, so
# the scan does not stop at it to try every alternative and fail (a third of the time on
# prose); the count is the same. The runs are matched possessively (nothing to give back).
_PIECES: Final = re.compile(
    r"[A-Za-z]{1,7}+(?: (?![\t\n\v\f\r ]))?|[0-9]{1,3}+(?: (?![\t\n\v\f\r ]))?"
    r"|[!-/:-@\[-`{-~]{1,2}+(?: (?![\t\n\v\f\r ]))?|[\t\n\v\f\r ]{2,}|[\t\n\v\f\r]"
    r"|[^\x00-\x7f]|[\x00-\x08\x0e-\x1f\x7f]"
)
_count_pieces: Final = _PIECES.subn
_count_wide: Final = _WIDE.findall


class DefaultTokenCounter:
    """``registre.default/1``: a deterministic estimate of BPE token counts, no data needed.

    The text is cut into maximal runs of ASCII letters, ASCII digits, ASCII whitespace
    (tab, LF, VT, FF, CR, space) and ASCII punctuation (``!`` to ``/``, ``:`` to ``@``, ``[``
    to `````, ``{`` to ``~``); every other character is a piece of its own. Charges:

    * letters: ``ceil(n / 7)`` for a run of n letters (most English words are one token);
    * digits: ``ceil(n / 3)`` (GPT tokenizers group digits by three);
    * whitespace: 0 for a single space (it merges into the next word), else 1;
    * punctuation: ``ceil(n / 2)``;
    * any other character (non-ASCII, or an ASCII control character): ``ceil(b / 2)`` where
      b is the length of its UTF-8 form (so 1 for accented Latin letters, 2 for CJK and most
      emoji, 1 for a control character).

    On English prose and code it lands within a few percent above tiktoken's ``cl100k_base``;
    being a little high is the safe side for a budget. O(len(text)).
    """

    name: Final = DEFAULT_COUNTER_NAME

    def count(self, text: str) -> int:
        """Tokens of ``text`` by the rule of the class docstring: the matches of the
        :data:`_PATTERNS`, counted in one scan (see :data:`_PIECES`)."""
        count = _count_pieces("", text)[1]
        if not text.isascii():
            count += len(_count_wide(text))
        return count

    def __repr__(self) -> str:
        return f"DefaultTokenCounter(name={self.name!r})"


class TiktokenCounter:
    """Exact counts of a ``tiktoken`` encoding, named ``tiktoken/<encoding>``.

    Raises :class:`TokenCounterUnavailableError` at construction when ``tiktoken`` is not
    installed or the encoding cannot be loaded (``tiktoken`` downloads encodings on first use
    unless they are cached; registre never reaches for the network itself). Special-token
    text is counted as ordinary text.
    """

    def __init__(self, encoding: str = "cl100k_base") -> None:
        try:
            module: Any = importlib.import_module("tiktoken")
        except ImportError:
            raise TokenCounterUnavailableError(
                "the tiktoken package is not installed; use the default counter "
                f"({DEFAULT_COUNTER_NAME}) or install tiktoken"
            ) from None
        try:
            self._encoding: Any = module.get_encoding(encoding)
        except Exception as error:  # tiktoken raises whatever its download layer raises
            raise TokenCounterUnavailableError(
                f"tiktoken could not load the encoding {encoding!r} ({type(error).__name__}); "
                "cache it first or use the default counter"
            ) from None
        self._name = f"tiktoken/{encoding}"

    @property
    def name(self) -> str:
        """``tiktoken/<encoding>``."""
        return self._name

    def count(self, text: str) -> int:
        """The number of tokens of ``text`` in the encoding."""
        return len(self._encoding.encode(text, disallowed_special=()))


class _CountCache:
    """Counts by text, filled by ``count`` on a miss: at most ``max_texts`` texts,
    ``max_chars`` characters of them and ``max_bytes`` bytes of their memory
    (``sys.getsizeof``; the cache holds the texts it keys on), the text counted longest ago
    dropped first. A counter reads ``counts`` directly (a hit is one dictionary lookup, and
    Python caches a string's hash) and calls :meth:`fill` on a miss.

    Thread safe: reads take no lock; writes take one, never while counting.
    """

    __slots__ = (
        "_bytes",
        "_chars",
        "_count",
        "_lock",
        "_max_bytes",
        "_max_chars",
        "_max_texts",
        "counts",
    )

    def __init__(
        self,
        count: Callable[[str], int],
        max_texts: int,
        max_chars: int,
        max_bytes: int = CACHE_BYTES,
    ) -> None:
        if max_texts < 0 or max_chars < 0 or max_bytes < 0:
            raise ValueError(
                f"cache bounds must be >= 0, got {max_texts} texts, {max_chars} characters, "
                f"{max_bytes} bytes"
            )
        self.counts: dict[str, int] = {}
        self._count = count
        self._chars = 0
        self._bytes = 0
        self._max_texts = max_texts
        self._max_chars = max_chars
        self._max_bytes = max_bytes
        self._lock = threading.Lock()

    def fill(self, text: str) -> int:
        """Count ``text`` and keep its count if the bounds allow."""
        value = self._count(text)
        size = len(text)
        memory = sys.getsizeof(text)
        if self._max_texts and size <= self._max_chars and memory <= self._max_bytes:
            with self._lock:
                counts = self.counts
                if text not in counts:
                    counts[text] = value
                    self._chars += size
                    self._bytes += memory
                    while (
                        len(counts) > self._max_texts
                        or self._chars > self._max_chars
                        or self._bytes > self._max_bytes
                    ):
                        oldest = next(iter(counts))
                        del counts[oldest]
                        self._chars -= len(oldest)
                        self._bytes -= sys.getsizeof(oldest)
        return value

    def clear(self) -> None:
        with self._lock:
            self.counts.clear()
            self._chars = 0
            self._bytes = 0


class CachedCounter:
    """``counter`` with its counts cached by text, under ``counter``'s own name.

    The counts are ``counter``'s (a counter is a pure function of the text), so the name
    stays: a compaction counted through the cache verifies with the bare counter and the
    other way round. The cache keeps at most ``max_texts`` texts, ``max_chars`` characters
    of them and ``max_bytes`` bytes of their memory (:data:`CACHE_BYTES`), dropping the text
    counted longest ago first (a hit does not refresh it); a text beyond either of the last
    two bounds alone is counted every time. A hit costs a dictionary lookup (Python
    caches a string's hash).
    """

    def __init__(
        self,
        counter: TokenCounter,
        *,
        max_texts: int = CACHE_TEXTS,
        max_chars: int = CACHE_CHARS,
        max_bytes: int = CACHE_BYTES,
    ) -> None:
        self._counter = counter
        self._cache = _CountCache(counter.count, max_texts, max_chars, max_bytes)
        self._counts = self._cache.counts

    @property
    def name(self) -> str:
        """The wrapped counter's name."""
        return self._counter.name

    @property
    def counter(self) -> TokenCounter:
        """The wrapped counter."""
        return self._counter

    @property
    def cached_texts(self) -> int:
        """How many texts the cache holds now."""
        return len(self._counts)

    def count(self, text: str) -> int:
        """The wrapped counter's count of ``text``, from the cache when it holds it."""
        value = self._counts.get(text)
        return self._cache.fill(text) if value is None else value

    def clear(self) -> None:
        """Empty the cache."""
        self._cache.clear()

    def __repr__(self) -> str:
        return f"CachedCounter({self._counter!r})"


def bpe_counter_name(encoding: str) -> str:
    """The name of :class:`BpeCounter`'s counts in ``encoding``: ``bpe-openai.<encoding>/1``."""
    return f"bpe-openai.{encoding}/{BPE_RULE}"


_BPE_NAMES: Final = {bpe_counter_name(encoding): encoding for encoding in BPE_ENCODINGS}


def _import_bpe_openai() -> Any:
    try:
        return importlib.import_module("bpe_openai")
    except ImportError:
        raise TokenCounterUnavailableError(
            "the bpe-openai package, which the BPE token counters need, is not installed"
        ).with_hint(BPE_HINT) from None


class BpeCounter:
    """Exact token counts of an OpenAI BPE vocabulary, named ``bpe-openai.<encoding>/1``.

    ``encoding`` is one of :data:`BPE_ENCODINGS`: ``o200k_base`` (GPT-4o, GPT-4.1, o-series)
    or ``cl100k_base`` (GPT-4, GPT-3.5). The counting is the optional ``bpe-openai`` package's
    (its wheel ships the vocabularies: no download, no network), imported here and only here;
    loading an encoding takes a fraction of a second, so share one counter (:func:`bpe_counter`).

    Rule 1 (``specs/context.md`` section 9): the number of tokens of the text encoded as
    ordinary text -- special-token text such as ``<|endoftext|>`` counts as the characters it
    is -- after replacing any lone surrogate with U+FFFD; any length.

    Counts are cached by text (:class:`CachedCounter`'s bounds; ``cache_texts=0`` turns the
    cache off). Raises :class:`TokenCounterUnavailableError` (hint: ``pip install
    'registre[tokens]'``) when the package is missing or cannot load the encoding.
    """

    def __init__(
        self,
        encoding: str = "o200k_base",
        *,
        cache_texts: int = CACHE_TEXTS,
        cache_chars: int = CACHE_CHARS,
        cache_bytes: int = CACHE_BYTES,
    ) -> None:
        self._cache = _CountCache(self.count_uncached, cache_texts, cache_chars, cache_bytes)
        self._counts = self._cache.counts
        if encoding not in BPE_ENCODINGS:
            raise TokenCounterUnavailableError(
                f"no BPE counter for the encoding {encoding!r}; the BPE counters count with "
                f"{', '.join(BPE_ENCODINGS)}"
            )
        module = _import_bpe_openai()
        try:
            loaded: Any = module.get_encoding(encoding)
        except Exception as error:  # whatever the package raises on a broken install
            raise TokenCounterUnavailableError(
                f"bpe-openai could not load the encoding {encoding!r} ({type(error).__name__})"
            ).with_hint(BPE_HINT) from error
        # The package's tokenizer counts without building the token list and without the
        # length limits of its tiktoken-style ``encode`` (1,000,000 characters, 200,000
        # tokens); fall back to the public API should a release move it.
        backend_count = getattr(getattr(loaded, "_backend", None), "count", None)
        self._bpe: Callable[[str], int] = (
            backend_count
            if callable(backend_count)
            else (lambda text: len(loaded.encode_ordinary(text)))
        )
        self._encoding = encoding
        self._name = bpe_counter_name(encoding)

    @property
    def name(self) -> str:
        """``bpe-openai.<encoding>/1``."""
        return self._name

    @property
    def encoding(self) -> str:
        """The encoding counted with."""
        return self._encoding

    @property
    def cached_texts(self) -> int:
        """How many texts the cache holds now (always 0 with ``cache_texts=0``)."""
        return len(self._counts)

    def count(self, text: str) -> int:
        """The number of tokens of ``text`` (rule 1, class docstring), cached."""
        value = self._counts.get(text)
        return self._cache.fill(text) if value is None else value

    def count_uncached(self, text: str) -> int:
        """The number of tokens of ``text``, counted now (the cache neither read nor filled)."""
        if not text:
            return 0
        try:
            return self._bpe(text)
        except UnicodeEncodeError:  # a lone surrogate has no UTF-8 form: U+FFFD stands for it
            return self._bpe(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))

    def __repr__(self) -> str:
        return f"BpeCounter(encoding={self._encoding!r})"


@functools.cache
def bpe_counter(encoding: str = "o200k_base") -> BpeCounter:
    """One shared, cached :class:`BpeCounter` per encoding (built on first use; raises what
    :class:`BpeCounter` raises, and then builds again on the next call)."""
    return BpeCounter(encoding)


_DEFAULT: Final = DefaultTokenCounter()


def default_counter() -> DefaultTokenCounter:
    """The default counter (one shared, stateless instance)."""
    return _DEFAULT


def counter_registry(extra: Iterable[TokenCounter] = ()) -> dict[str, TokenCounter]:
    """Counters by name: the default counter plus ``extra`` (a later counter with the same
    name replaces an earlier one)."""
    registry: dict[str, TokenCounter] = {_DEFAULT.name: _DEFAULT}
    for counter in extra:
        registry[counter.name] = counter
    return registry


def resolve_counter(name: str, registry: Mapping[str, TokenCounter]) -> TokenCounter:
    """The counter called ``name``: the registry's, else the shared :func:`bpe_counter` for a
    BPE counter's name (``bpe-openai.<encoding>/1``). Raises
    :class:`UnknownTokenCounterError` naming the counters that are available when there is
    none (hint: the extra to install, for a BPE name without the package)."""
    counter = registry.get(name)
    if counter is not None:
        return counter
    encoding = _BPE_NAMES.get(name)
    if encoding is not None:
        try:
            return bpe_counter(encoding)
        except TokenCounterUnavailableError as unavailable:
            raise UnknownTokenCounterError(
                f"the token counter {name!r} is not available here ({unavailable}); the "
                "token counts recorded with it cannot be checked without it"
            ).with_hint(unavailable.hint) from unavailable
    known = ", ".join(sorted(registry)) or "none"
    raise UnknownTokenCounterError(
        f"no token counter named {name!r} is available (available: {known}); the token "
        "counts recorded with it cannot be checked without it"
    )
