"""Stored subtree hashes as an :class:`registre.attest.merkle.HashSource`.

Every append stores exactly the complete subtrees it finished
(:meth:`registre.attest.merkle.CompactRange.append`) from level 1 up, so the ``subtree`` table
holds every complete subtree of the thread's tree but its leaves, whose hashes are the
``entry`` rows' ``leaf_hash`` (schema version 6). A proof or a past root then costs one
indexed read per hash it needs -- O(log n) -- never a pass over the thread.
"""

from __future__ import annotations

from sqlalchemy import Connection, bindparam, select

from registre.attest.errors import ProofBoundsError
from registre.ledger.errors import StoreCorruptError
from registre.ledger.store.schema import LOWEST_STORED_LEVEL, tables

__all__ = ["StoredHashSource"]

_subtree = tables.subtree
_entry = tables.entry
_NODE = select(_subtree.c.hash).where(
    _subtree.c.thread == bindparam("thread"),
    _subtree.c.level == bindparam("level"),
    _subtree.c.idx == bindparam("idx"),
)
_LEAF = select(_entry.c.leaf_hash).where(
    _entry.c.thread == bindparam("thread"), _entry.c.seq == bindparam("idx")
)


class StoredHashSource:
    """The tree of ``thread`` as of ``size`` leaves, read through ``conn``.

    ``node(level, index)`` raises ProofBoundsError for a subtree that is not complete within
    ``size`` leaves, and StoreCorruptError if a subtree that must be stored (or, at level 0,
    the entry whose ``leaf_hash`` it is) is missing.
    ``reads`` counts the rows read, so callers (and tests) can see the cost of a proof.
    """

    def __init__(self, conn: Connection, thread: str, size: int) -> None:
        self._conn = conn
        self._thread = thread
        self.size = size
        self.reads = 0

    def node(self, level: int, index: int) -> bytes:
        if level < 0 or index < 0 or (index + 1) << level > self.size:
            raise ProofBoundsError(
                f"subtree (level {level}, index {index}) is not complete in the "
                f"{self.size}-leaf tree of thread {self._thread}"
            )
        self.reads += 1
        if level < LOWEST_STORED_LEVEL:
            found = self._conn.execute(_LEAF, {"thread": self._thread, "idx": index}).scalar()
            what = f"leaf hash of entry {index}"
        else:
            found = self._conn.execute(
                _NODE, {"thread": self._thread, "level": level, "idx": index}
            ).scalar()
            what = f"subtree (level {level}, index {index})"
        if found is None:
            raise StoreCorruptError(
                f"thread {self._thread}: the stored {what} is missing"
            ).with_hint("run `registre verify --db`")
        return bytes(found)
