"""An in-process cache of the latest context fold per (database, thread), so that the next
fold reads only the entries appended since.

:func:`registre.ledger.store.context_snapshots.fold_context` rebuilds a thread's context from
the latest sealed snapshot: it reads back and folds the whole tail, O(context). At a budget of
128k or 1M tokens the tail holds thousands of entries, and a projection or model call would
pay for all of them every time. This cache keeps, per thread, the last state folded (the
highest ``at`` asked for) with the leaf hash of entry ``at``; a fold at ``at' >= at`` (at most
:data:`CATCH_UP` entries later) reads entries ``at..at'``, checks that entry ``at`` is still
the one the state was folded to, and folds the rest onto a copy.

Why the one leaf hash suffices: every entry's signed envelope carries the tree head before it
(``prev``), so the leaf hash of entry ``at`` commits to the whole prefix ``0..at``. A database
replaced under the same engine, a thread recreated with the same id, a transaction rolled
back after the state was folded: entry ``at`` then hashes differently, and the cache entry is
dropped. Two histories with the same leaf at ``at`` are the same history, so their folds are
equal (the fold is a function of the entries).

Trust. A state restored from a snapshot is as good as the seal that was checked; the cache
remembers under which key (``None``: folded from the entries alone) and serves a state only to
a fold that would have trusted the same key.

Isolation. The cache never hands out the state it keeps: a hit returns a copy
(:meth:`ContextState.copy`, O(tail) pointers; the fold never changes what a copy shares), and a
state is stored as a copy, so a caller may advance what it gets. Bounded: at most
:data:`MAX_THREADS` threads and :data:`MAX_ITEMS` tail items in all, the least recently used
dropped first. Thread safe.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Final

from sqlalchemy import Connection, Engine, bindparam, select

from registre.attest.notes import Signer, Verifier
from registre.context import ContextEntry, ContextState
from registre.ledger.store.schema import tables

__all__ = [
    "CATCH_UP",
    "MAX_ITEMS",
    "MAX_TEXT_CHARS",
    "MAX_THREADS",
    "CachedFold",
    "FoldCache",
    "SharedTexts",
    "TextCache",
    "fold_cache",
    "text_cache",
    "verifier_of",
]

CATCH_UP: Final = 4096
"""The most entries a hit folds onto the cached state; further than that, the snapshot path
(which reads the tail) is no dearer."""

MAX_THREADS: Final = 64
MAX_ITEMS: Final = 100_000
MAX_TEXT_CHARS: Final = 8_000_000
"""The most characters of entry texts :class:`TextCache` keeps per thread (16 threads)."""

_entry = tables.entry
_HASHED = (
    select(_entry.c.seq, _entry.c.leaf, _entry.c.leaf_hash)
    .where(
        _entry.c.thread == bindparam("thread"),
        _entry.c.seq >= bindparam("start"),
        _entry.c.seq <= bindparam("stop"),
    )
    .order_by(_entry.c.seq)
)
_ONE_HASH = select(_entry.c.leaf_hash).where(
    _entry.c.thread == bindparam("thread"), _entry.c.seq == bindparam("seq")
)

EntryParser = Callable[[str, int, object], ContextEntry]
"""``parse(thread, seq, leaf)``: the entry as the context fold reads it."""


@dataclass(frozen=True, slots=True, eq=False)
class CachedFold:
    """A cached state: the fold of entries ``0..state.at``, entry ``at`` hashing to
    ``leaf_hash``; ``trust`` the vkey whose seal the snapshot it came from verified under
    (``None``: folded from the entries alone)."""

    state: ContextState
    leaf_hash: bytes
    trust: str | None


class FoldCache:
    """The cache of the module docstring: ``(engine id, thread) -> CachedFold``."""

    def __init__(self, max_threads: int = MAX_THREADS, max_items: int = MAX_ITEMS) -> None:
        self._lock = threading.Lock()
        self._folds: OrderedDict[tuple[int, str], CachedFold] = OrderedDict()
        self._max_threads, self._max_items = max_threads, max_items
        self._items = 0

    def lookup(self, conn: Connection, thread: str) -> CachedFold | None:
        """The cached fold of ``thread`` in ``conn``'s database, or None."""
        with self._lock:
            key = (id(conn.engine), thread)
            found = self._folds.get(key)
            if found is not None:
                self._folds.move_to_end(key)
            return found

    def catch_up(
        self,
        conn: Connection,
        thread: str,
        found: CachedFold,
        at: int,
        parse: EntryParser,
        fold: Callable[[ContextState, Iterator[ContextEntry]], ContextState],
    ) -> ContextState | None:
        """The fold at ``at`` from ``found`` (``found.state.at <= at``), or None when entry
        ``found.state.at`` is no longer the one it was folded to (the entry is dropped).
        ``fold`` applies the entries (raising what the fold raises)."""
        start = found.state.at
        rows = conn.execute(_HASHED, {"thread": thread, "start": start, "stop": at}).all()
        if not rows or int(rows[0].seq) != start or bytes(rows[0].leaf_hash) != found.leaf_hash:
            self.drop(conn, thread)
            return None
        if at == start:
            return found.state.copy()
        if len(rows) != at - start + 1:
            return None  # an entry is missing: the snapshot path names it
        state = fold(found.state.copy(), (parse(thread, int(r.seq), r.leaf) for r in rows[1:]))
        # the folded copy is nobody else's: keep it as it is, and hand out a copy of it
        self._keep(conn, thread, state, bytes(rows[-1].leaf_hash), found.trust)
        return state.copy()

    def leaf_hash(self, conn: Connection, thread: str, seq: int) -> bytes | None:
        """The stored leaf hash of entry ``seq``, or None."""
        value = conn.execute(_ONE_HASH, {"thread": thread, "seq": seq}).scalar()
        return None if value is None else bytes(value)

    def store(
        self,
        conn: Connection,
        thread: str,
        state: ContextState,
        leaf_hash: bytes,
        trust: str | None,
    ) -> None:
        """Keep a copy of ``state`` as ``thread``'s, unless a later fold is kept already."""
        self._keep(conn, thread, state.copy(), leaf_hash, trust)

    def _keep(
        self,
        conn: Connection,
        thread: str,
        kept: ContextState,
        leaf_hash: bytes,
        trust: str | None,
    ) -> None:
        """:meth:`store` of a state no caller holds (kept as it is, not copied)."""
        key = (id(conn.engine), thread)
        with self._lock:
            old = self._folds.get(key)
            if old is not None:
                if old.state.at > kept.at:
                    return
                self._items -= len(old.state.tail)
            self._folds[key] = CachedFold(kept, leaf_hash, trust)
            self._folds.move_to_end(key)
            self._items += len(kept.tail)
            while self._folds and (
                len(self._folds) > self._max_threads or self._items > self._max_items
            ):
                _key, dropped = self._folds.popitem(last=False)
                self._items -= len(dropped.state.tail)

    def adopt(self, engine: Engine, thread: str, state: ContextState) -> None:
        """Keep with ``thread``'s cached fold what was computed on ``state``, an unchanged
        copy of it that a caller projected (:meth:`ContextState.adopt_caches`: the token
        counts, messages and manifest runs), so that the next copy starts from them."""
        with self._lock:
            found = self._folds.get((id(engine), thread))
            if found is not None and found.state.at == state.at:
                found.state.adopt_caches(state)

    def drop(self, conn: Connection, thread: str) -> None:
        """Forget ``thread``'s fold in ``conn``'s database."""
        with self._lock:
            dropped = self._folds.pop((id(conn.engine), thread), None)
            if dropped is not None:
                self._items -= len(dropped.state.tail)

    def clear(self) -> None:
        """Forget everything."""
        with self._lock:
            self._folds.clear()
            self._items = 0


_CACHE: Final = FoldCache()
_VERIFIERS: dict[int, tuple[Signer, Verifier]] = {}
_VERIFIERS_LOCK: Final = threading.Lock()


def verifier_of(signer: Signer) -> Verifier:
    """``signer.verifier()``, built once per signer (building one checks the public key,
    which costs more than the fold of a few entries)."""
    found = _VERIFIERS.get(id(signer))
    if found is not None and found[0] is signer:
        return found[1]
    verifier = signer.verifier()
    with _VERIFIERS_LOCK:
        if len(_VERIFIERS) >= MAX_THREADS:
            _VERIFIERS.clear()
        _VERIFIERS[id(signer)] = (signer, verifier)
    return verifier


def fold_cache() -> FoldCache:
    """The process's cache (one per process, shared by every database handle)."""
    return _CACHE


class SharedTexts:
    """Entry texts of one thread of one database, by seq, kept from one compaction to the
    next (the quote checks of a refold look up the same old entries every time). Valid for
    the history whose entry ``anchor`` hashes to ``anchor_hash``; at most
    :data:`MAX_TEXT_CHARS` characters, the least recently used dropped first. Thread safe."""

    def __init__(self, anchor: int, anchor_hash: bytes, max_chars: int = MAX_TEXT_CHARS) -> None:
        self.anchor, self.anchor_hash = anchor, anchor_hash
        self._texts: OrderedDict[int, str] = OrderedDict()
        self._chars, self._max = 0, max_chars
        self._lock = threading.Lock()

    def get(self, seq: int) -> str | None:
        """The kept text of entry ``seq``, or None."""
        with self._lock:
            text = self._texts.get(seq)
            if text is not None:
                self._texts.move_to_end(seq)
            return text

    def put(self, seq: int, text: str) -> None:
        """Keep the text of entry ``seq`` (an entry at or before the anchor)."""
        if seq > self.anchor or len(text) > self._max:
            return
        with self._lock:
            old = self._texts.pop(seq, None)
            self._chars += len(text) - (0 if old is None else len(old))
            self._texts[seq] = text
            while self._chars > self._max:
                _seq, dropped = self._texts.popitem(last=False)
                self._chars -= len(dropped)


class TextCache:
    """``(engine id, thread) -> SharedTexts``, checked like the fold cache: the texts are
    served for a database whose entry ``anchor`` still has the leaf hash it had (that leaf
    commits to the whole prefix, so every kept text is still the text of its entry)."""

    def __init__(self, max_threads: int = 16) -> None:
        self._lock = threading.Lock()
        self._threads: OrderedDict[tuple[int, str], SharedTexts] = OrderedDict()
        self._max_threads = max_threads

    def texts(self, conn: Connection, thread: str, size: int) -> SharedTexts | None:
        """The kept texts of ``thread`` for its first ``size`` entries, re-anchored at entry
        ``size - 1``; None for an empty thread. One indexed read (two when re-anchoring)."""
        if size < 1:
            return None
        key = (id(conn.engine), thread)
        head = conn.execute(_ONE_HASH, {"thread": thread, "seq": size - 1}).scalar()
        if head is None:
            return None
        with self._lock:
            found = self._threads.get(key)
        if found is not None and found.anchor != size - 1:
            kept = None
            if found.anchor < size - 1:
                kept = conn.execute(_ONE_HASH, {"thread": thread, "seq": found.anchor}).scalar()
            if kept is None or bytes(kept) != found.anchor_hash:
                found = None
        elif found is not None and bytes(head) != found.anchor_hash:
            found = None
        if found is None:
            found = SharedTexts(size - 1, bytes(head))
        else:
            found.anchor, found.anchor_hash = size - 1, bytes(head)
        with self._lock:
            self._threads[key] = found
            self._threads.move_to_end(key)
            while len(self._threads) > self._max_threads:
                self._threads.popitem(last=False)
        return found


_TEXTS: Final = TextCache()


def text_cache() -> TextCache:
    """The process's entry-text cache (one per process, shared by every database handle)."""
    return _TEXTS
