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
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Iterable, Mapping
from typing import Any, Final, Protocol, runtime_checkable

from registre.lifecycle.context.errors import TokenCounterUnavailableError, UnknownTokenCounterError

__all__ = [
    "DEFAULT_COUNTER_NAME",
    "DefaultTokenCounter",
    "TiktokenCounter",
    "TokenCounter",
    "counter_registry",
    "default_counter",
    "resolve_counter",
]

DEFAULT_COUNTER_NAME: Final = "registre.default/1"


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
        """Tokens of ``text`` by the rule of the class docstring."""
        return sum(len(pattern.findall(text)) for pattern in _PATTERNS)

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
    """The counter called ``name``; raises :class:`UnknownTokenCounterError` naming the
    counters that are available when there is none."""
    counter = registry.get(name)
    if counter is None:
        known = ", ".join(sorted(registry)) or "none"
        raise UnknownTokenCounterError(
            f"no token counter named {name!r} is available (available: {known}); the token "
            "counts recorded with it cannot be checked without it"
        )
    return counter
