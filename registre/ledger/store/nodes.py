"""Stored subtree hashes as an :class:`registre.attest.tree.merkle.HashSource`.

Every append stores the complete subtrees it finished
(:meth:`registre.attest.tree.merkle.CompactRange.append`) from level :data:`LOWEST_STORED_LEVEL`
(4) up, one ``subtree`` row each (schema version 6). Below that level a subtree covers at
most 8 leaves, and its hash is computed from the ``entry`` rows' ``leaf_hash`` -- the tree's
level 0, stored once -- read as one block of the (at most 16) leaves of the aligned level-4
subtree holding it, kept for the next node of that block. This is how transparency-log
stores keep the bottom of the tree (Trillian keeps only the leaf level of its subtree tiles):
an entry costs an eighth of a row instead of two, and a proof or a past root still costs
O(log n) reads -- one per stored hash, plus one block per low corner of the tree it visits
(an inclusion proof one, a consistency proof at most two) -- never a pass over the thread.
"""

from __future__ import annotations

from sqlalchemy import Connection, bindparam, select

from registre.attest.errors import ProofBoundsError
from registre.attest.tree import node_hash
from registre.ledger.errors import StoreCorruptError
from registre.ledger.store.schema import LOWEST_STORED_LEVEL, entry_range, tables

__all__ = ["StoredHashSource"]

_subtree = tables.subtree
_entry = tables.entry
_NODE = select(_subtree.c.hash).where(
    _subtree.c.thread == bindparam("thread"),
    _subtree.c.level == bindparam("level"),
    _subtree.c.idx == bindparam("idx"),
)
_BLOCK = entry_range(_entry.c.seq, _entry.c.leaf_hash)
_BLOCK_LEAVES = 1 << LOWEST_STORED_LEVEL
_BLOCKS_KEPT = 64
"""Blocks of leaf hashes a source keeps (32 KiB): a proof reads at most three, a claim
export's proofs one per claimed entry."""


class StoredHashSource:
    """The tree of ``thread`` as of ``size`` leaves, read through ``conn``.

    ``node(level, index)`` raises ProofBoundsError for a subtree that is not complete within
    ``size`` leaves, and StoreCorruptError if a subtree row that must be stored, or the entry
    row of a leaf below it, is missing (or holds a leaf hash that is not 32 bytes).
    ``reads`` counts the queries made (a stored hash, or a block of leaf hashes), so callers
    (and tests) can see the cost of a proof.
    """

    def __init__(self, conn: Connection, thread: str, size: int) -> None:
        self._conn = conn
        self._thread = thread
        self.size = size
        self.reads = 0
        self._blocks: dict[int, list[bytes]] = {}

    def node(self, level: int, index: int) -> bytes:
        if level < 0 or index < 0 or (index + 1) << level > self.size:
            raise ProofBoundsError(
                f"subtree (level {level}, index {index}) is not complete in the "
                f"{self.size}-leaf tree of thread {self._thread}"
            )
        if level < LOWEST_STORED_LEVEL:
            return self._computed(level, index)
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

    def _computed(self, level: int, index: int) -> bytes:
        """The hash of a complete subtree below the stored levels, folded from its leaves'
        hashes (RFC 9162: ``node_hash`` of the two halves, level by level)."""
        first = index << level
        block = first >> LOWEST_STORED_LEVEL
        leaves = self._blocks.get(block)
        if leaves is None:
            if len(self._blocks) >= _BLOCKS_KEPT:
                self._blocks.clear()
            leaves = self._blocks[block] = self._read_block(block)
        offset = first - (block << LOWEST_STORED_LEVEL)
        hashes = leaves[offset : offset + (1 << level)]
        while len(hashes) > 1:
            hashes = [node_hash(hashes[k], hashes[k + 1]) for k in range(0, len(hashes), 2)]
        return hashes[0]

    def _read_block(self, block: int) -> list[bytes]:
        """The leaf hashes of the entries of ``block`` (the aligned level-4 subtree of that
        index) within ``size``, in one query."""
        start = block << LOWEST_STORED_LEVEL
        stop = min(start + _BLOCK_LEAVES, self.size)
        self.reads += 1
        rows = self._conn.execute(
            _BLOCK, {"thread": self._thread, "start": start, "stop": stop}
        ).all()
        leaves: list[bytes] = []
        for seq, digest in rows:
            if seq != start + len(leaves):
                break
            if not isinstance(digest, bytes | bytearray | memoryview) or len(digest) != 32:
                raise StoreCorruptError(
                    f"thread {self._thread}: the stored leaf hash of entry {seq} is not a "
                    "32-byte hash"
                ).with_hint("run `registre verify --db`")
            leaves.append(bytes(digest))
        if len(leaves) != stop - start:
            raise StoreCorruptError(
                f"thread {self._thread}: entry {start + len(leaves)} is missing"
            ).with_hint("run `registre verify --db`")
        return leaves
