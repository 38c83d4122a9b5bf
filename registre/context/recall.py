"""Recall: entries of the whole thread laid out as one budgeted section of a projection
(``specs/context.md`` section 4.3). Pure: no index, no I/O.

Before a model call the ledger asks its full-text index for the entries most relevant to the
latest user turn, the task pins and the latest tool result (:func:`query_terms` builds the
query's words), best first, among the entries the context does not show verbatim. This module
lays them out in a room of tokens (:func:`lay_out_recall`): each entry whole when it is short
enough (:attr:`RecallOptions.excerpt_tokens`), else an *excerpt*, a byte range of its text
centred on the query's words; in ledger order, as one ``system`` message::

    [recalled from the ledger: 2 entries relevant to this call, oldest first]
    [entry 12, user] Caroline: I adopted a dog named Oscar last week.
    [entry 40, tool result bash, bytes 1024-1620 of 5210] …credit_card_9879898 …

What was recalled is recorded in the ``model.call`` body (:meth:`RecallSection.to_body`:
``[{"seq", "sha256", "bytes"?}]``), and a verifier rebuilds the section from the entries
(:func:`recalled_section`): each recalled text must be exactly the bytes of its entry's text
(or of the recorded range) and the entry must lie in the projected prefix, each refusal with
its own error. Which entries were worth recalling is not a verifier's business.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Final

from registre.context.model import ContextEntry, Message
from registre.context.render import MESSAGE_OVERHEAD_TOKENS, entry_text
from registre.context.tokens import TokenCounter
from registre.errors import VerificationError
from registre.lifecycle.errors import LifecycleFormatError

__all__ = [
    "RECALL_KINDS",
    "RecallOptions",
    "RecallSection",
    "RecallVerificationError",
    "RecalledFutureEntryError",
    "RecalledItem",
    "RecalledRangeError",
    "RecalledTextMismatchError",
    "identifier_terms",
    "lay_out_recall",
    "query_terms",
    "recall_label",
    "recalled_section",
]

RECALL_KINDS: Final = ("turn", "tool.call", "tool.result", "decision")
"""Kinds the index holds and recall may show: the entries with words of their own."""

RECALL_HEADER: Final = (
    "[recalled from the ledger: {n} {entries} relevant to this call, oldest first]"
)


class RecallVerificationError(VerificationError):
    """A ``model.call`` whose recorded recalls are not entries of the projected prefix."""


class RecalledFutureEntryError(RecallVerificationError):
    """A recalled seq at or after the call's ``at_seq + 1``: the call could not have read it."""


class RecalledRangeError(RecallVerificationError):
    """A recalled entry with no text of its own (a model call, a pin, ...), or a byte range
    outside its text, not on character boundaries, or covering all of it (then the range is
    left out: one spelling per recall)."""


class RecalledTextMismatchError(RecallVerificationError):
    """A recalled text whose SHA-256 is not that of its entry's bytes (or of the range)."""


@dataclass(frozen=True, slots=True)
class RecallOptions:
    """How much a model call may recall (the room itself is the policy's: what the other
    messages leave of the window, at least its ``recall_share_permille`` once the refill
    kept to its room).

    ``limit``: the most candidates asked of the index (one query per call;
    :meth:`candidates` asks for about as many as the room could show); ``excerpt_tokens``:
    an entry longer than this is shown as an excerpt of about this size; ``max_terms``: words
    in the query."""

    limit: int = 512
    excerpt_tokens: int = 200
    max_terms: int = 32

    def candidates(self, room: int) -> int:
        """Candidates to ask for a section of ``room`` tokens: one per 16 tokens (a short
        turn and its label), at least 16, at most ``limit``."""
        return max(16, min(self.limit, room // 16))

    @staticmethod
    def room(window: int, used: int) -> int:
        """Tokens the section may take in a context whose ``window`` (budget less the output
        reserve) the other messages fill with ``used``: ``window - used``, at least 0."""
        return max(0, window - used)


@dataclass(frozen=True, slots=True)
class RecalledItem:
    """One recalled entry: its seq, label, and the text shown, which is its entry text's
    UTF-8 bytes ``start..end`` (``whole``: all of them, no range recorded)."""

    seq: int
    label: str
    text: str
    start: int
    end: int
    size: int
    whole: bool

    def line(self) -> str:
        """``[entry SEQ, LABEL] TEXT``, or for an excerpt ``[entry SEQ, LABEL, bytes A-B of
        N] …TEXT…`` (``…`` on each side that was cut)."""
        if self.whole:
            return f"[entry {self.seq}, {self.label}] {self.text}"
        before = "…" if self.start > 0 else ""
        after = "…" if self.end < self.size else ""
        return (
            f"[entry {self.seq}, {self.label}, bytes {self.start}-{self.end} of {self.size}] "
            f"{before}{self.text}{after}"
        )

    def to_body(self) -> dict[str, object]:
        """``{"seq", "sha256"}`` plus ``"bytes": [A, B]`` for an excerpt."""
        data: dict[str, object] = {
            "seq": self.seq,
            "sha256": hashlib.sha256(self.text.encode()).hexdigest(),
        }
        if not self.whole:
            data["bytes"] = [self.start, self.end]
        return data


@dataclass(frozen=True, slots=True)
class RecallSection:
    """The recalled section: its items in ledger order, its message and the message's tokens."""

    items: tuple[RecalledItem, ...]
    message: Message
    tokens: int

    @property
    def seqs(self) -> tuple[int, ...]:
        return tuple(item.seq for item in self.items)

    def to_body(self) -> list[dict[str, object]]:
        """What the ``model.call`` body records under ``"recalled"``."""
        return [item.to_body() for item in self.items]

    def to_json(self, message: int) -> dict[str, object]:
        """The projection's ``"recalled"`` member: ``{"entries", "message", "tokens"}``."""
        return {"entries": list(self.seqs), "message": message, "tokens": self.tokens}


def section_of(items: Sequence[RecalledItem], counter: TokenCounter) -> RecallSection:
    """The section showing ``items`` (already in ledger order)."""
    header = RECALL_HEADER.format(n=len(items), entries="entry" if len(items) == 1 else "entries")
    content = "\n".join([header, *(item.line() for item in items)])
    message = Message("system", content)
    return RecallSection(
        tuple(items), message, MESSAGE_OVERHEAD_TOKENS + counter.count(message.content)
    )


# --- the query ------------------------------------------------------------------------------

_WORD: Final = re.compile(r"[^\W_]+")
_IDENTIFIER: Final = re.compile(r"[\w.\-/:@]*\d[\w.\-/:@]*|\w+_\w+")
_STOPWORD_TEXT: Final = (
    "a about above after again against all am an and any are as at be because been before "
    "being below between both but by can could did do does doing down during each few for "
    "from further had has have having he her here hers herself him himself his how i if in "
    "into is it its itself just let me more most my myself no nor not now of off on once only "
    "or other our ours ourselves out over own same she should so some such than that the "
    "their theirs them themselves then there these they this those through to too under until "
    "up very was we were what when where which while who whom why will with would you your "
    "yours yourself yourselves also ever get got hey hi hello oh ok okay please thanks thank "
    "yes yeah sure really much many well like just one two go going know think thing things "
    "way want wanted tell told say said see make made us s t ll re ve d m don didn doesn isn "
    "wasn aren "
)
_STOPWORDS: Final = frozenset(_STOPWORD_TEXT.split())


def query_terms(texts: Sequence[str], limit: int = 32) -> tuple[str, ...]:
    """The informative words of ``texts``, most important text first: lowercase runs of
    letters and digits, without common English function words and single letters, each
    once, at most ``limit``. The index ORs them."""
    seen: dict[str, None] = {}
    for text in texts:
        for match in _WORD.finditer(text):
            word = match.group().lower()
            if word in seen or word in _STOPWORDS:
                continue
            if len(word) < 2 and not word.isdigit():
                continue
            seen[word] = None
            if len(seen) >= limit:
                return tuple(seen)
    return tuple(seen)


def identifier_terms(text: str, limit: int = 8) -> tuple[str, ...]:
    """The identifier-like tokens of ``text`` (those with a digit or an underscore: ids,
    paths, versions, amounts), first ``limit`` distinct, as plain words for the query."""
    found: dict[str, None] = {}
    for match in _IDENTIFIER.finditer(text):
        for word in query_terms([match.group()], limit):
            found.setdefault(word, None)
        if len(found) >= limit:
            break
    return tuple(found)[:limit]


# --- laying out -----------------------------------------------------------------------------


def recall_label(entry: ContextEntry) -> str:
    """How an entry is named in the section: a turn by its role, a tool call or result by
    ``tool call NAME`` / ``tool result NAME`` (the call id when no name is recorded), a
    decision as ``decision``."""
    body = entry.body
    if entry.kind == "turn":
        return str(body.get("role", "turn"))
    if entry.kind in ("tool.call", "tool.result"):
        name = body.get("name", body.get("call_id", ""))
        return f"{entry.kind.replace('.', ' ')} {name}"
    return entry.kind


def lay_out_recall(
    candidates: Sequence[ContextEntry],
    terms: Sequence[str],
    room: int,
    counter: TokenCounter,
    options: RecallOptions | None = None,
) -> RecallSection | None:
    """The section showing as many of ``candidates`` (best first; entries of
    :data:`RECALL_KINDS`, others skipped) as fit ``room`` tokens, in ledger order; None when
    none fits. An entry of at most ``excerpt_tokens`` (and fitting what is left) is shown
    whole, a longer one as the excerpt around ``terms`` that fits min(``excerpt_tokens``, what
    is left). Deterministic."""
    options = options or RecallOptions()
    header = MESSAGE_OVERHEAD_TOKENS + counter.count(RECALL_HEADER.format(n=0, entries="entries"))
    left = room - header
    chosen: list[RecalledItem] = []
    for entry in candidates:
        if left < 16:
            break
        if entry.kind not in RECALL_KINDS:
            continue
        text = entry_text(entry.kind, entry.body)
        if not text.strip():
            continue
        item = _item(entry, text, terms, min(options.excerpt_tokens, left - 8), counter)
        if item is None:
            continue
        cost = counter.count(item.line()) + 1
        if cost > left:
            continue
        chosen.append(item)
        left -= cost
    chosen.sort(key=lambda item: item.seq)
    while chosen:
        section = section_of(chosen, counter)
        if section.tokens <= room:
            return section
        chosen.pop(max(range(len(chosen)), key=lambda i: len(chosen[i].text)))
    return None


def _item(
    entry: ContextEntry, text: str, terms: Sequence[str], cap: int, counter: TokenCounter
) -> RecalledItem | None:
    """``entry`` whole if its text takes at most ``cap`` tokens, else its best excerpt of at
    most ``cap`` tokens (None when even a short one does not fit)."""
    label = recall_label(entry)
    size = len(text.encode())
    if counter.count(text) <= cap:
        return RecalledItem(entry.seq, label, text, 0, size, size, True)
    if cap < 8:
        return None
    width = max(40, cap * 4)
    while width >= 40:
        first, last = _window(text, terms, width)
        piece = text[first:last]
        if counter.count(piece) + 12 <= cap:
            start = len(text[:first].encode())
            end = start + len(piece.encode())
            return RecalledItem(entry.seq, label, piece, start, end, size, False)
        width = width * 3 // 4
    return None


def _window(text: str, terms: Sequence[str], width: int) -> tuple[int, int]:
    """The character range of about ``width`` characters holding the most distinct query
    words (ties: the earliest), starting a third of the width before the first of them and
    snapped outwards to whitespace when that keeps it within 1.25 widths."""
    lower = text.lower()
    hits: list[tuple[int, str]] = []
    for term in terms:
        for match in re.finditer(rf"(?<![^\W_]){re.escape(term)}", lower):
            hits.append((match.start(), term))
            if len(hits) > 128:
                break
    hits.sort()
    best, best_start = -1, 0
    for position, _term in hits:
        start = max(0, position - width // 3)
        covered = {term for at, term in hits if start <= at < start + width}
        if len(covered) > best:
            best, best_start = len(covered), start
    start = min(best_start, max(0, len(text) - width))
    end = min(len(text), start + width)
    if start > 0:
        space = text.rfind(" ", max(0, start - width // 8), start)
        start = space + 1 if space >= 0 else start
    if end < len(text):
        space = text.find(" ", end, end + width // 8)
        end = space if space >= 0 else end
    return start, end


# --- verifying --------------------------------------------------------------------------------


def recalled_section(
    recalled: object,
    at_seq: int,
    entries: Callable[[int], ContextEntry] | Mapping[int, ContextEntry],
    counter: TokenCounter,
) -> RecallSection:
    """The section a ``model.call`` body's ``"recalled"`` list describes, rebuilt from the
    entries (``entries(seq)`` or ``entries[seq]``: the entry at ``seq``, read from the ledger
    or the bundle). Raises, for the first recall that is wrong: RecalledFutureEntryError (not
    in ``0..at_seq``), RecalledRangeError (an entry without text, a range that is not a
    proper part of it on character boundaries), RecalledTextMismatchError (the bytes' SHA-256
    is not the recorded one); LifecycleFormatError for a list of the wrong shape (the body
    schema refuses it first)."""
    if not isinstance(recalled, list) or not recalled:
        raise LifecycleFormatError("body.recalled", "expected a non-empty list of recalls")
    read = entries.__getitem__ if isinstance(entries, Mapping) else entries
    items = []
    for index, record in enumerate(recalled):
        where = f"body.recalled[{index}]"
        if not isinstance(record, Mapping) or type(record.get("seq")) is not int:
            raise LifecycleFormatError(where, "expected {seq, sha256, bytes?}")
        seq = int(record["seq"])
        if not 0 <= seq <= at_seq:
            raise RecalledFutureEntryError(
                f"{where}: entry {seq} is not in the prefix 0..{at_seq} the call projected: "
                "a call can recall only entries before it"
            )
        entry = read(seq)
        if entry.kind not in RECALL_KINDS:
            raise RecalledRangeError(
                f"{where}: entry {seq} is a {entry.kind}, which has no text to recall"
            )
        items.append(_checked_item(where, entry, record))
    return section_of(items, counter)


def _checked_item(where: str, entry: ContextEntry, record: Mapping[str, object]) -> RecalledItem:
    text = entry_text(entry.kind, entry.body)
    data = text.encode()
    size = len(data)
    span = record.get("bytes")
    if span is None:
        start, end, whole = 0, size, True
    else:
        if not isinstance(span, list) or len(span) != 2 or not all(type(v) is int for v in span):
            raise LifecycleFormatError(f"{where}.bytes", "expected [start, end]")
        start, end = int(span[0]), int(span[1])
        whole = False
        if not 0 <= start < end <= size or (start == 0 and end == size):
            raise RecalledRangeError(
                f"{where}.bytes: [{start}, {end}] is not a proper part of entry {entry.seq}'s "
                f"{size} bytes (a whole entry is recalled without a range)"
            )
    piece = data[start:end]
    try:
        shown = piece.decode()
        data[:start].decode()
    except UnicodeDecodeError:
        raise RecalledRangeError(
            f"{where}.bytes: [{start}, {end}] cuts a character of entry {entry.seq}'s text"
        ) from None
    digest = hashlib.sha256(piece).hexdigest()
    if digest != record.get("sha256"):
        raise RecalledTextMismatchError(
            f"{where}: the recorded sha256 {record.get('sha256')} is not that of entry "
            f"{entry.seq}'s bytes {start}-{end} ({digest}): the recalled text is not the entry's"
        )
    return RecalledItem(entry.seq, recall_label(entry), shown, start, end, size, whole)
