"""Stored subtree hashes as an :class:`registre.attest.merkle.HashSource`.

Every append stores exactly the complete subtrees it finished
(:meth:`registre.attest.merkle.CompactRange.append`), so the ``subtree`` table holds every complete
subtree of the thread's tree. A proof or a past root then costs one indexed read per hash it
needs -- O(log n) -- never a pass over the thread.
"""

from __future__ import annotations

from sqlalchemy import Connection, bindparam, select

from registre.attest.errors import ProofBoundsError
from registre.ledger.errors import StoreCorruptError
from registre.ledger.store.schema import tables

__all__ = ["StoredHashSource"]

_subtree = tables.subtree
_NODE = select(_subtree.c.hash).where(
    _subtree.c.thread == bindparam("thread"),
    _subtree.c.level == bindparam("level"),
    _subtree.c.idx == bindparam("idx"),
)


class StoredHashSource:
    """The tree of ``thread`` as of ``size`` leaves, read through ``conn``.

    ``node(level, index)`` raises ProofBoundsError for a subtree that is not complete within
    ``size`` leaves, and StoreCorruptError if a subtree that must be stored is missing.
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
        found = self._conn.execute(
            _NODE, {"thread": self._thread, "level": level, "idx": index}
        ).scalar()
        if found is None:
            raise StoreCorruptError(
                f"thread {self._thread}: the stored subtree (level {level}, index {index}) is "
                "missing"
            ).with_hint("run `registre verify --db`")
        return bytes(found)
