"""The baselines of the real-data suites, built from the thread's own transcript.

Each baseline sees the thread as the plain transcript an agent loop without registre keeps:
every entry rendered as registre renders its verbatim tail (``transcript_message``), its
tokens counted by the same counter registre uses, and the same budget. Every baseline keeps
the leading system prompt whole when it takes less than the budget (what a chat application
sends on every call), and fills the rest:

* ``truncation`` -- the newest messages that fit;
* ``masking`` -- observation masking: tool outputs older than the
  :data:`~registre.bench.baselines.MASK_AFTER_TURNS` most recent turns replaced by
  :data:`~registre.bench.baselines.MASK_PLACEHOLDER`, then the newest that fit;
* ``rolling`` -- the bench's rolling summary
  (:class:`~registre.bench.baselines.RollingSummaryBaseline`: first sentences of the folded
  assistant turns) at the same policy, over the transcript after the system prompt;
* ``bm25`` -- retrieval alone: the pending input (the messages after the last assistant
  output) always, then the transcript's messages by SQLite FTS5 ``bm25()`` rank for the query
  (Porter-stemmed, terms OR-ed) while they fit; sent in transcript order.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from registre.bench.baselines import (
    MASK_AFTER_TURNS,
    MASK_PLACEHOLDER,
    RollingSummaryBaseline,
    TruncationBaseline,
    transcript_message,
)
from registre.bench.real.text import STOPWORDS, words
from registre.context import Message, Policy, TokenCounter
from registre.context.render import message_tokens

__all__ = [
    "BASELINES",
    "Bm25Index",
    "Transcript",
    "View",
]

BASELINES: Final = ("truncation", "masking", "rolling", "bm25")
"""The baselines, in report order."""

_BM25_LIMIT: Final = 400  # ranked candidates read per query
_TURN_KINDS: Final = frozenset(("turn", "tool.call"))  # what begins a turn


@dataclass(frozen=True)
class View:
    """A context a method sends at one call: its messages and their tokens in total."""

    messages: tuple[Message, ...]
    tokens: int

    @property
    def contents(self) -> list[str]:
        """The messages' contents, in order."""
        return [message.content for message in self.messages]


class Bm25Index:
    """An in-memory SQLite FTS5 index of texts by integer id, ranked by FTS5's ``bm25()``."""

    def __init__(self) -> None:
        self._db = sqlite3.connect(":memory:")
        self._db.execute("CREATE VIRTUAL TABLE doc USING fts5(body, tokenize='porter unicode61')")

    def add(self, rowid: int, text: str) -> None:
        """Index ``text`` under ``rowid``."""
        self._db.execute("INSERT INTO doc(rowid, body) VALUES (?, ?)", (rowid, text))

    def remove(self, rowid: int) -> None:
        """Drop the text indexed under ``rowid``."""
        self._db.execute("DELETE FROM doc WHERE rowid = ?", (rowid,))

    def search(self, query: str, limit: int = _BM25_LIMIT) -> list[int]:
        """Ids of the texts matching any informative word of ``query``, best first."""
        terms = sorted({word for word in words(query) if word not in STOPWORDS})
        if not terms:
            return []
        match = " OR ".join('"' + term.replace('"', '""') + '"' for term in terms)
        rows = self._db.execute(
            "SELECT rowid FROM doc WHERE doc MATCH ? ORDER BY bm25(doc), rowid LIMIT ?",
            (match, limit),
        )
        return [int(row[0]) for row in rows]

    def close(self) -> None:
        """Release the database."""
        self._db.close()


class _Rest(TruncationBaseline):
    """The transcript after the system prompt, for the rolling summary (which reads a
    :class:`TruncationBaseline`'s lists): messages pushed with their real seqs."""

    def push(self, seq: int, kind: str, message: Message, tokens: int) -> None:
        if kind in _TURN_KINDS:
            self.turn_starts.append(len(self.messages))
        self.seqs.append(seq)
        self.kinds.append(kind)
        self.messages.append(message)
        self.tokens.append(tokens)
        self._cumulative.append(self._cumulative[-1] + tokens)
        self.size = seq + 1


class Transcript:
    """A thread as plain transcript (module docstring), fed entry by entry with :meth:`add`,
    and the context of each baseline at ``budget`` on demand (:meth:`view`)."""

    def __init__(self, counter: TokenCounter, budget: int, policy: Policy) -> None:
        self.counter = counter
        self.budget = budget
        self.seqs: list[int] = []
        self.kinds: list[str] = []
        self.messages: list[Message] = []
        self.tokens: list[int] = []
        self.turn_starts: list[int] = []
        self.system = 0  # messages[:system] are the leading system prompt
        self._open = True  # still reading the leading system prompt
        self._rest = _Rest(counter)
        self._rolling = RollingSummaryBaseline(self._rest, policy)
        self._index = Bm25Index()

    def add(self, seq: int, kind: str, body: Mapping[str, object]) -> None:
        """Append entry ``seq`` (its kind and body); control entries add no message."""
        message = transcript_message(kind, body)
        if message is None:
            return
        tokens = message_tokens(message, self.counter)
        index = len(self.messages)
        if self._open and kind == "turn" and message.role == "system":
            self.system = index + 1
        else:
            self._open = False
            self._rest.push(seq, kind, message, tokens)
        if kind in _TURN_KINDS:
            self.turn_starts.append(index)
        self.seqs.append(seq)
        self.kinds.append(kind)
        self.messages.append(message)
        self.tokens.append(tokens)
        self._index.add(index, message.content)

    def close(self) -> None:
        """Release the BM25 index."""
        self._index.close()

    def ask(
        self, seq: int, kind: str, body: Mapping[str, object], queries: Mapping[str, str]
    ) -> dict[str, View]:
        """The view of each method in ``queries`` (method -> its query) with entry ``seq``
        added for the call, then the transcript as it was before (the rolling summary's
        state included): a question asked on a copy of the thread."""
        sizes = (len(self.messages), len(self.turn_starts), self._open, self.system)
        rest = self._rest
        rest_sizes = (len(rest.messages), len(rest.turn_starts), rest.size)
        rolling = dict(vars(self._rolling))
        rolling["sentences"] = list(self._rolling.sentences)
        rolling["compactions"] = list(self._rolling.compactions)
        self.add(seq, kind, body)
        try:
            return {method: self.view(method, query) for method, query in queries.items()}
        finally:
            count, starts, self._open, self.system = sizes
            for index in range(count, len(self.messages)):
                self._index.remove(index)
            for items in (self.seqs, self.kinds, self.messages, self.tokens):
                del items[count:]
            del self.turn_starts[starts:]
            count, starts, rest.size = rest_sizes
            for items in (rest.seqs, rest.kinds, rest.messages, rest.tokens):
                del items[count:]
            del rest._cumulative[count + 1 :]
            del rest.turn_starts[starts:]
            vars(self._rolling).update(rolling)

    def _prefix(self) -> tuple[list[int], int]:
        """The system prompt's message indices and the budget left after them (the prompt
        is kept only when it takes less than the budget)."""
        tokens = sum(self.tokens[: self.system])
        if not self.system or tokens >= self.budget:
            return [], self.budget
        return list(range(self.system)), self.budget - tokens

    def _newest(self, shown: Sequence[int], left: int, start: int) -> list[int]:
        """The newest of ``messages[start:]`` that fit ``left`` tokens (with ``shown``'s
        token counts), oldest first."""
        kept: list[int] = []
        for index in range(len(self.messages) - 1, start - 1, -1):
            if shown[index] > left:
                break
            left -= shown[index]
            kept.append(index)
        kept.reverse()
        return kept

    def _build(self, indices: Sequence[int], swap: Mapping[int, Message] | None = None) -> View:
        swap = swap or {}
        messages = tuple(swap.get(index, self.messages[index]) for index in indices)
        return View(messages, sum(message_tokens(m, self.counter) for m in messages))

    def view(self, method: str, query: str = "") -> View:
        """The context ``method`` (one of :data:`BASELINES`) sends now; ``query`` is the BM25
        query (for the others, ignored). The rolling summary compacts when called, so call it
        at every model call, in order."""
        prefix, left = self._prefix()
        start = len(prefix)
        if method == "truncation":
            return self._build(prefix + self._newest(self.tokens, left, start))
        if method == "masking":
            return self._masked(prefix, left, start)
        if method == "rolling":
            rolled = self._rolling.view(left)
            messages = tuple(self.messages[index] for index in prefix) + rolled.messages
            return View(messages, sum(self.tokens[: len(prefix)]) + rolled.total)
        if method == "bm25":
            return self._retrieved(prefix, left, query)
        raise ValueError(f"unknown baseline {method!r}")

    def _masked(self, prefix: list[int], left: int, start: int) -> View:
        boundary = (
            self.turn_starts[-MASK_AFTER_TURNS] if len(self.turn_starts) >= MASK_AFTER_TURNS else 0
        )
        swap: dict[int, Message] = {}
        shown = list(self.tokens)
        for index in range(start, boundary):
            if self.kinds[index] == "tool.result":
                old = self.messages[index]
                swap[index] = Message("tool", MASK_PLACEHOLDER, old.name, old.call_id)
                shown[index] = message_tokens(swap[index], self.counter)
        return self._build(prefix + self._newest(shown, left, start), swap)

    def _retrieved(self, prefix: list[int], left: int, query: str) -> View:
        chosen = set(prefix)
        pending = len(self.messages)
        while pending > len(prefix) and self.messages[pending - 1].role != "assistant":
            pending -= 1
        for index in range(pending, len(self.messages)):
            if self.tokens[index] > left:
                break
            chosen.add(index)
            left -= self.tokens[index]
        for index in self._index.search(query):
            if index in chosen or self.tokens[index] > left:
                continue
            chosen.add(index)
            left -= self.tokens[index]
        return self._build(sorted(chosen))
