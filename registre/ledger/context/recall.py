"""Recall before a model call: the ledger's side (``specs/context.md`` section 4.3).

:func:`recall_section`, inside the model call's write transaction: build the query from the
context at the head (:func:`recall_terms`), ask the full-text index once
(:func:`registre.ledger.store.search.search`) for the entries before the context's verbatim
tail, best first, read them, and lay them out in the room the other messages leave
(:func:`registre.context.recall.lay_out_recall`). The entries a live pin already carries
word for word are left out.
"""

from __future__ import annotations

import json
import re
from collections import Counter
from collections.abc import Sequence

from sqlalchemy import Connection, select

from registre.context import ContextEntry, ContextState, Manifest, TokenCounter
from registre.context.recall import (
    RECALL_KINDS,
    RecallOptions,
    RecallSection,
    identifier_terms,
    lay_out_recall,
    query_terms,
)
from registre.context.task_pin import TASK_PIN_KIND
from registre.ledger.store.schema import tables
from registre.ledger.store.search import search

__all__ = ["MIN_RECALL_ROOM", "common_words", "read_entries", "recall_section", "recall_terms"]

MIN_RECALL_ROOM = 48
"""Fewer tokens than this left by the other messages: nothing is recalled (no query)."""

_PIN_TERMS = 8
_SAMPLE = 64
_SAMPLE_CHARS = 2000
_WORD = re.compile(r"[^\W_]+")
_FEW_TERMS = 4
_TOOL_TERMS = 8


def recall_terms(state: ContextState, options: RecallOptions) -> tuple[str, ...]:
    """The query's words: the identifiers of the latest tool result (when it follows the
    latest user turn), the informative words of the latest user turn, then, when that turn
    has fewer than 4, a few of the live task pins' (the pins are in the context already: as
    query words they only pull in entries that share the task's general vocabulary); each
    once, at most ``options.max_terms`` (+ the tool's and the pins' few)."""
    user = ""
    tool: str | None = None
    for item in reversed(state.tail):
        if item.kind == "tool.result" and tool is None:
            tool = item.text
        if item.kind == "turn" and item.body.get("role") == "user":
            user = item.text
            break
    pins = [pin.text for pin in state.live_pins() if pin.kind == TASK_PIN_KIND]
    common = common_words(state)
    words = dict.fromkeys(identifier_terms(tool, _TOOL_TERMS) if tool else ())
    asked = [word for word in query_terms([user], options.max_terms) if word not in common]
    words.update(dict.fromkeys(asked))
    if len(asked) < _FEW_TERMS:  # a terse turn ("and the other one?"): the task says more
        pinned = query_terms(pins, _PIN_TERMS + len(common))
        words.update(dict.fromkeys([word for word in pinned if word not in common][:_PIN_TERMS]))
    return tuple(words)


def common_words(state: ContextState) -> frozenset[str]:
    """Words in more than a quarter of the tail's entries with text (its last 64, their
    first 2,000 characters; at least 8 entries): the thread's own vocabulary (its speakers'
    names, its tool's field names), which says little about which old entry matters and
    would make the index rank most of the thread. Empty for a shorter tail."""
    texts = [item.text[:_SAMPLE_CHARS] for item in state.tail if item.kind in RECALL_KINDS]
    texts = texts[-_SAMPLE:]
    if len(texts) < 8:
        return frozenset()
    counts: Counter[str] = Counter()
    for text in texts:
        counts.update({word.lower() for word in _WORD.findall(text)})
    floor = len(texts) // 4
    return frozenset(word for word, count in counts.items() if count > floor)


def _shown(manifest: Manifest | None, seq: int) -> bool:
    if manifest is None:
        return False
    try:
        return manifest.status_of(seq).status in ("verbatim", "pinned")
    except KeyError:
        return False


def read_entries(conn: Connection, thread: str, seqs: Sequence[int]) -> list[ContextEntry]:
    """Entries ``seqs`` of ``thread`` (one query), in the order given; a seq not stored is
    left out."""
    if not seqs:
        return []
    entry = tables.entry
    rows = conn.execute(
        select(entry.c.seq, entry.c.leaf).where(entry.c.thread == thread, entry.c.seq.in_(seqs))
    ).all()
    found = {}
    for row in rows:
        envelope = json.loads(bytes(row.leaf))["entry"]
        found[int(row.seq)] = ContextEntry(
            int(row.seq), envelope["kind"], envelope["actor"], envelope["body"]
        )
    return [found[seq] for seq in seqs if seq in found]


def recall_section(
    conn: Connection,
    thread: str,
    state: ContextState,
    room: int,
    counter: TokenCounter,
    options: RecallOptions,
    manifest: Manifest | None = None,
) -> RecallSection | None:
    """The recalled section for a call projecting ``state`` with ``room`` tokens left for it,
    or None (no room, nothing before the tail, no query words, no match that fits).
    ``manifest``: the projection's without the section; an entry it shows verbatim or as a
    pin (an entry before the tail shown again whole) is not recalled."""
    if room < MIN_RECALL_ROOM or state.boundary == 0:
        return None
    terms = recall_terms(state, options)
    if not terms:
        return None
    seqs = search(conn, thread, terms, state.boundary, options.candidates(room))
    carried = {pin.seq for pin in state.live_pins()}
    seqs = [seq for seq in seqs if seq not in carried and not _shown(manifest, seq)]
    return lay_out_recall(read_entries(conn, thread, seqs), terms, room, counter, options)
