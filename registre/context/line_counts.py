"""Counting a text line by line, for counters whose count adds up over lines.

The lifecycle block (``specs/context.md`` section 4.1) is rebuilt for every ``model.call``:
its lines are mostly the same from call to call, but its first line names ``at``, so the
whole text is new each time and a cache by text never hits. For ``registre.default/1``
(``specs/context.md`` section 9) the count of such a text is the sum of the counts of its
lines plus one per line break, whenever no line is empty and none begins or ends with ASCII
whitespace: every piece the rule charges (runs of letters, digits, punctuation, whitespace,
and single other characters) then lies inside one line or is the lone ``\\n`` between two,
which the rule charges 1. :class:`LineCounter` counts such texts from the cached counts of
their lines, and any other text whole; for any other counter it is the plain
:class:`~registre.context.CachedCounter` (no such rule is known for it).
"""

from __future__ import annotations

import threading
from typing import Final

from registre.context.tokens import CachedCounter, DefaultTokenCounter, TokenCounter

__all__ = ["LineCounter", "block_counter", "line_counter"]

_ASCII_SPACE: Final = "\t\n\v\f\r "

_KEPT: Final = 8
"""The most counters :func:`block_counter` keeps a cache for (the oldest dropped first)."""


class LineCounter:
    """``counter``'s counts, under its name, from cached counts of lines (module docstring)."""

    def __init__(self, counter: DefaultTokenCounter) -> None:
        self._counter = counter
        self._lines = CachedCounter(counter)

    @property
    def name(self) -> str:
        """The wrapped counter's name."""
        return self._counter.name

    @property
    def counter(self) -> TokenCounter:
        """The wrapped counter."""
        return self._counter

    def count(self, text: str) -> int:
        """``counter.count(text)``: line by line when the lines add up, else whole."""
        if "\n" not in text:
            return self._lines.count(text)
        lines = text.split("\n")
        total = len(lines) - 1
        for line in lines:
            if not line or line[0] in _ASCII_SPACE or line[-1] in _ASCII_SPACE:
                return self._lines.count(text)
            total += self._lines.count(line)
        return total


def line_counter(counter: TokenCounter) -> TokenCounter:
    """A counter giving ``counter``'s counts under its name, with the texts it counts (or,
    for ``registre.default/1``, their lines) cached."""
    if type(counter) is DefaultTokenCounter:
        return LineCounter(counter)
    return CachedCounter(counter)


_block_counters: dict[int, tuple[TokenCounter, TokenCounter]] = {}
_block_lock = threading.Lock()


def block_counter(counter: TokenCounter) -> TokenCounter:
    """:func:`line_counter` of ``counter``, kept from call to call for the same counter
    object (at most a few counters at a time): what the lifecycle block counts with, so the
    statement lines it counts at every call are counted once. A counter that caches already
    (a :class:`LineCounter` or a :class:`~registre.context.CachedCounter`: the
    verifier's model-call check hands one in) is used as it is: a second cache over it
    would hold every whole block text, which names ``at`` and so never hits again (it
    filled its 16 M characters, 32 MB of 2-byte text, by 50,000 entries)."""
    if isinstance(counter, LineCounter | CachedCounter):
        return counter
    found = _block_counters.get(id(counter))
    if found is not None and found[0] is counter:
        return found[1]
    wrapped = line_counter(counter)
    with _block_lock:
        _block_counters[id(counter)] = (counter, wrapped)
        while len(_block_counters) > _KEPT:
            del _block_counters[next(iter(_block_counters))]
    return wrapped
