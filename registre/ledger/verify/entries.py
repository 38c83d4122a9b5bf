"""Steps 2-6 of ``registre verify --db`` for one thread's entries (module docstring of
:mod:`registre.ledger.verify.database`): :func:`check_row` checks one stored entry row against
the tree of the entries before it -- sequence, leaf hash, the entry itself, the prev binding --
and appends it; :func:`check_subtrees` compares the subtree rows a batch completed with the
recomputed ones. :func:`blob` reads a stored column that must hold bytes.
"""

from __future__ import annotations

from typing import Any

from sqlalchemy import Connection, Row, bindparam, select

from registre.attest.entries import Entry, open_leaf
from registre.attest.notes import Verifier
from registre.attest.tree import CompactRange, leaf_hash
from registre.errors import RegistreError
from registre.ledger.store.schema import LOWEST_STORED_LEVEL, tables
from registre.ledger.verify.errors import (
    EntryMismatchError,
    EntryRejectedError,
    HeadMismatchError,
    LeafHashMismatchError,
    StoredPrevRootMismatchError,
    StoredSeqGapError,
    SubtreeMismatchError,
)

__all__ = ["ENTRY_ROWS", "blob", "check_row", "check_subtrees"]

_entry = tables.entry
_subtree = tables.subtree
ENTRY_ROWS = (
    select(_entry.c.seq, _entry.c.leaf, _entry.c.leaf_hash, _entry.c.kind, _entry.c.time)
    .where(_entry.c.thread == bindparam("thread"), _entry.c.seq >= bindparam("start"))
    .order_by(_entry.c.seq)
    .limit(bindparam("batch"))
)
_SUBTREES = select(_subtree.c.idx, _subtree.c.hash).where(
    _subtree.c.thread == bindparam("thread"),
    _subtree.c.level == bindparam("level"),
    _subtree.c.idx.between(bindparam("low"), bindparam("high")),
)


def check_row(
    row: Row[Any, Any, Any, Any, Any],
    tree: CompactRange,
    keys: list[Verifier],
    thread: str,
    origin: str,
    size: int,
    completed: dict[tuple[int, int], bytes],
) -> Entry:
    """Steps 2-5 for ``row``, the next stored entry of ``thread`` (seq ``tree.size``): the
    entry it holds, once appended to ``tree`` (the subtrees that completes, from
    :data:`LOWEST_STORED_LEVEL` up, added to ``completed``). Raises the step's
    LedgerTamperedError subclass, naming the seq."""
    seq = tree.size
    stored_seq = row.seq
    if type(stored_seq) is not int:
        raise EntryMismatchError(thread, seq, f"stored seq is a {type(stored_seq).__name__}")
    leaf = blob(row.leaf, thread, seq, "leaf")
    # 2. sequence continuity, within the head
    if stored_seq != seq:
        raise StoredSeqGapError(thread, seq, f"entry missing (next stored entry is {stored_seq})")
    if seq >= size:
        raise HeadMismatchError(thread, seq, f"entry beyond the head size {size}")
    # 3. leaf hash
    digest = leaf_hash(leaf)
    if blob(row.leaf_hash, thread, seq, "leaf hash") != digest:
        raise LeafHashMismatchError(thread, seq, "stored leaf hash is not H(0x00 ‖ leaf)")
    # 4. the entry itself
    try:
        entry = open_leaf(leaf, keys)
    except RegistreError as exc:
        raise EntryRejectedError(thread, seq, f"entry refused: {exc}") from exc
    if entry.thread != thread or entry.log != origin or entry.seq != seq:
        raise EntryMismatchError(
            thread, seq, f"the leaf is entry {entry.seq} of {entry.log}, stored in the wrong place"
        )
    if entry.kind != row.kind or entry.time != row.time:
        raise EntryMismatchError(thread, seq, "kind/time columns differ from the signed entry")
    # 5. prev binding
    if entry.prev_root != tree.root():
        raise StoredPrevRootMismatchError(
            thread, seq, "prev.root is not the root of the entries before it"
        )
    for level, index, node in tree.append(digest):
        if level >= LOWEST_STORED_LEVEL:  # lower ones are computed from leaf hashes (step 3)
            completed[(level, index)] = node
    return entry


def blob(value: object, thread: str, seq: int | None, what: str) -> bytes:
    """``value``, a stored column that must hold bytes, as bytes (EntryMismatchError naming
    ``what`` otherwise: a hostile TEXT column)."""
    if isinstance(value, bytes | bytearray | memoryview):
        return bytes(value)
    raise EntryMismatchError(thread, seq, f"stored {what} is a {type(value).__name__}, not bytes")


def check_subtrees(
    conn: Connection, thread: str, start: int, stop: int, expected: dict[tuple[int, int], bytes]
) -> None:
    """Step 6: the subtree rows stored for the subtrees completed by appending leaves
    ``start..stop-1`` are exactly ``expected`` (SubtreeMismatchError at the first missing,
    differing or unexpected one: a row below :data:`LOWEST_STORED_LEVEL`, which schema
    version 6 never stores, is unexpected)."""
    # Subtrees completed by appending leaves start..stop-1: at each level, the indices whose
    # end (index + 1) << level lies in (start, stop].
    stored: dict[tuple[int, int], bytes] = {}
    for level in range(stop.bit_length()):
        low, high = start >> level, (stop >> level) - 1
        if low <= high:
            rows = conn.execute(
                _SUBTREES, {"thread": thread, "level": level, "low": low, "high": high}
            )
            for r in rows:
                if type(r.idx) is not int:
                    raise SubtreeMismatchError(
                        thread, None, "a stored subtree index is not an integer"
                    )
                stored[(level, r.idx)] = blob(r.hash, thread, None, "subtree hash")
    for (level, index), node in expected.items():
        found = stored.pop((level, index), None)
        if found != node:
            first_leaf = index << level
            problem = "missing" if found is None else "differs from the recomputed hash"
            raise SubtreeMismatchError(
                thread,
                first_leaf,
                f"stored subtree (level {level}, index {index}) covering seq {first_leaf}.."
                f"{((index + 1) << level) - 1} is {problem}",
            )
    if stored:
        level, index = min(stored)
        raise SubtreeMismatchError(
            thread, index << level, f"unexpected stored subtree (level {level}, index {index})"
        )
