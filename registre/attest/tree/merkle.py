"""The RFC 9162 §2.1 Merkle tree over SHA-256: hashing, subtree storage and roots.

Hashing is fixed, with no switch to turn it off: a leaf hashes as ``SHA-256(0x00 ‖ data)`` and
an interior node as ``SHA-256(0x01 ‖ left ‖ right)``, so no interior node can be passed off as a
leaf (THREATS row 1). The tree of ``n > 1`` leaves splits at the largest power of two smaller
than ``n``, so appending a copy of the last leaf always changes the root (THREATS row 2). The
empty tree's root is ``SHA-256(b"")``.

Storage model. Every proof and every earlier root can be answered from the hashes of *complete*
subtrees only: the perfect subtree at ``(level, index)`` covers the ``2**level`` leaves
``[index * 2**level, (index + 1) * 2**level)``. :class:`CompactRange.append` returns exactly
the complete subtrees each append finishes, so a store that persists them can serve any proof
with O(log n) reads through the :class:`HashSource` protocol. :class:`MemoryHashSource` keeps
them all in memory (tests, the offline verifier).
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Sequence
from typing import Protocol

from registre.attest.errors import ProofBoundsError
from registre.errors import MalformedError

__all__ = [
    "HASH_SIZE",
    "MAX_TREE_SIZE",
    "CompactRange",
    "CompactRangeError",
    "HashLengthError",
    "HashSource",
    "MemoryHashSource",
    "empty_root",
    "leaf_hash",
    "node_hash",
    "root_at",
]

HASH_SIZE = 32
"""Bytes in every hash of the tree (SHA-256)."""

MAX_TREE_SIZE = 2**62
"""Largest tree size registre handles: proofs, roots and witnesses refuse any larger size. Every
valid proof for a tree up to this size has at most 63 hashes
(``registre.attest.tree.proofs.MAX_PROOF_HASHES``), and every size fits a signed 64-bit column. (A
checkpoint body can spell sizes up to ``registre.attest.notes.checkpoint.MAX_CHECKPOINT_SIZE``, the
C2SP uint64; no tree that large is ever served or verified.)"""

_sha256 = hashlib.sha256
_LEAF_PREFIX = b"\x00"
_NODE_PREFIX = b"\x01"
_EMPTY_ROOT = _sha256(b"").digest()


class HashLengthError(MalformedError):
    """A value used as a tree hash that is not ``bytes`` of exactly :data:`HASH_SIZE`."""


class CompactRangeError(MalformedError):
    """A persisted frontier whose hash count does not match its tree size."""


def check_hash(value: object, what: str) -> bytes:
    """Return ``value`` if it is ``bytes`` of length 32; raise :class:`HashLengthError` naming
    ``what`` otherwise. (Shared with :mod:`registre.attest.tree.proofs`; not part of the public
    API.)"""
    if type(value) is not bytes:
        raise HashLengthError(f"{what} must be {HASH_SIZE} raw bytes, got {type(value).__name__}")
    if len(value) != HASH_SIZE:
        raise HashLengthError(
            f"{what} must be {HASH_SIZE} bytes (a SHA-256 digest), got {len(value)} bytes"
        )
    return value


def check_size(value: object, what: str) -> int:
    """Return ``value`` if it is an ``int`` (not a bool) in ``[0, MAX_TREE_SIZE]``.

    Raises :class:`MalformedError` for a non-integer and :class:`ProofBoundsError` for an integer
    out of range. (Shared with :mod:`registre.attest.tree.proofs`; not part of the public API.)
    """
    if type(value) is not int:
        raise MalformedError(f"{what} must be an integer, got {type(value).__name__}")
    if not 0 <= value <= MAX_TREE_SIZE:
        raise ProofBoundsError(f"{what} {value} is outside [0, 2**62]")
    return value


def empty_root() -> bytes:
    """The root of the tree with no leaves: ``SHA-256(b"")`` (RFC 9162 §2.1.1)."""
    return _EMPTY_ROOT


def leaf_hash(data: bytes) -> bytes:
    """``SHA-256(0x00 ‖ data)``: the hash under which ``data`` enters the tree."""
    return _sha256(_LEAF_PREFIX + data).digest()


def node_hash(left: bytes, right: bytes) -> bytes:
    """``SHA-256(0x01 ‖ left ‖ right)`` for two 32-byte child hashes.

    Raises :class:`HashLengthError` if either child is not 32 bytes: with children of other
    lengths the concatenation would be ambiguous.
    """
    if len(left) != HASH_SIZE or len(right) != HASH_SIZE:
        check_hash(left, "left child hash")
        check_hash(right, "right child hash")
    return _sha256(_NODE_PREFIX + left + right).digest()


class HashSource(Protocol):
    """Read access to the hashes of complete subtrees of one tree.

    ``node(level, index)`` returns the hash of the perfect subtree of ``2**level`` leaves
    covering leaves ``[index * 2**level, (index + 1) * 2**level)``; level 0 is the leaf hash.
    Callers only ever ask for subtrees that are complete in the tree size they work with. An
    implementation raises (a :class:`~registre.errors.RegistreError`) for a subtree it does
    not hold; it never invents one.
    """

    def node(self, level: int, index: int) -> bytes: ...


def root_at(source: HashSource, size: int) -> bytes:
    """The root of the first ``size`` leaves of the tree behind ``source``.

    ``[0, size)`` is decomposed into its complete subtrees (one per set bit of ``size``, largest
    first) and their hashes are folded right to left: exactly ``popcount(size)`` reads.
    Raises :class:`ProofBoundsError` for a size outside ``[0, 2**62]``, and whatever ``source``
    raises for a subtree it does not hold (a size beyond the stored tree).
    """
    check_size(size, "tree size")
    return range_root(source, 0, size)


def range_root(source: HashSource, start: int, end: int) -> bytes:
    """Root of the leaves ``[start, end)``. (Shared with :mod:`registre.attest.tree.proofs`; not
    public.)

    ``start`` must be a multiple of a power of two that is at least ``end - start``, as it is
    for every subtree of an RFC 9162 tree. One read per set bit of ``end - start``, so a
    complete subtree costs one read.
    """
    width = end - start
    if width == 0:
        return _EMPTY_ROOT
    if width & (width - 1) == 0:
        level = width.bit_length() - 1
        return source.node(level, start >> level)
    # Complete pieces from the right (smallest) to the left (largest), folded as we go.
    result = b""
    level = 0
    while width:
        if width & 1:
            end -= 1 << level
            piece = source.node(level, end >> level)
            result = piece if not result else _sha256(_NODE_PREFIX + piece + result).digest()
        width >>= 1
        level += 1
    return result


class CompactRange:
    """The frontier of an append-only tree: enough to append and to compute the current root.

    It holds one hash per set bit of ``size`` -- the complete subtrees that tile ``[0, size)``,
    largest (leftmost) first -- so it takes O(log n) memory. ``append`` is amortised O(1) hash
    operations; ``root`` is O(log n) the first time after an append, then remembered.
    """

    __slots__ = ("_hashes", "_root", "_size")

    def __init__(self) -> None:
        self._size = 0
        self._hashes: list[bytes] = []
        self._root: bytes | None = _EMPTY_ROOT

    @property
    def size(self) -> int:
        """Number of leaves appended so far."""
        return self._size

    def append(self, leaf: bytes) -> list[tuple[int, int, bytes]]:
        """Append one LEAF HASH (``leaf_hash(data)``, not the data).

        Returns every complete subtree this append finished, as ``(level, index, hash)`` from
        level 0 (the leaf itself) upwards. Persisting exactly these, for every append, is what a
        :class:`HashSource` needs to answer any proof with O(log n) reads.
        Raises :class:`HashLengthError` (nothing changes) if ``leaf`` is not 32 bytes.
        """
        if type(leaf) is not bytes or len(leaf) != HASH_SIZE:
            check_hash(leaf, "leaf hash")
        index = self._size
        completed = [(0, index, leaf)]
        hashes = self._hashes
        current = leaf
        level = 0
        # A right child (odd index) completes its parent; climb while that keeps happening.
        while index & 1:
            current = _sha256(_NODE_PREFIX + hashes.pop() + current).digest()
            level += 1
            index >>= 1
            completed.append((level, index, current))
        hashes.append(current)
        self._size += 1
        self._root = None
        return completed

    def root(self) -> bytes:
        """The root of the current tree: the frontier hashes folded right to left."""
        if self._root is not None:
            return self._root
        hashes = self._hashes
        position = len(hashes) - 1
        result = hashes[position]
        while position:
            position -= 1
            result = _sha256(_NODE_PREFIX + hashes[position] + result).digest()
        self._root = result
        return result

    def hashes(self) -> list[bytes]:
        """A copy of the frontier, largest subtree first: what :meth:`restore` takes back."""
        return list(self._hashes)

    def copy(self) -> CompactRange:
        """An independent frontier of the same tree (appending to one leaves the other)."""
        twin = CompactRange.__new__(CompactRange)
        twin._size = self._size
        twin._hashes = list(self._hashes)
        twin._root = self._root
        return twin

    @classmethod
    def restore(cls, size: int, hashes: Sequence[bytes]) -> CompactRange:
        """Rebuild a frontier from a persisted ``size`` and :meth:`hashes`.

        Raises :class:`CompactRangeError` unless there is exactly one hash per set bit of
        ``size``, :class:`HashLengthError` for a hash that is not 32 bytes, and
        :class:`ProofBoundsError` / :class:`MalformedError` for a bad size. Only the shape can be
        checked here; compare :meth:`root` with a signed checkpoint to trust the content.
        """
        check_size(size, "frontier size")
        expected = size.bit_count()
        if len(hashes) != expected:
            raise CompactRangeError(
                f"a frontier for {size} leaves needs exactly {expected} hashes (one per set bit "
                f"of the size), got {len(hashes)}: the stored frontier is corrupt or truncated"
            )
        frontier = cls()
        frontier._hashes = [check_hash(h, f"frontier hash #{i}") for i, h in enumerate(hashes)]
        frontier._size = size
        frontier._root = None if size else _EMPTY_ROOT
        return frontier


class MemoryHashSource:
    """A whole tree in memory: every complete subtree hash, one list per level.

    Implements :class:`HashSource`. ``node(level, index)`` raises :class:`ProofBoundsError` for
    a subtree that is not complete in the current tree. Memory is about two hashes per leaf.
    """

    __slots__ = ("_levels",)

    def __init__(self, leaf_hashes: Iterable[bytes] = ()) -> None:
        self._levels: list[list[bytes]] = [[]]
        self.extend(leaf_hashes)

    @property
    def size(self) -> int:
        """Number of leaves."""
        return len(self._levels[0])

    def append(self, leaf: bytes) -> None:
        """Append one LEAF HASH; raises :class:`HashLengthError` (nothing changes) if it is not
        32 bytes. Amortised O(1) hash operations."""
        if type(leaf) is not bytes or len(leaf) != HASH_SIZE:
            check_hash(leaf, "leaf hash")
        levels = self._levels
        row = levels[0]
        row.append(leaf)
        index = len(row) - 1
        level = 0
        current = leaf
        while index & 1:
            current = _sha256(_NODE_PREFIX + row[index - 1] + current).digest()
            level += 1
            index >>= 1
            if level == len(levels):
                levels.append([])
            row = levels[level]
            row.append(current)

    def extend(self, leaf_hashes: Iterable[bytes]) -> None:
        """Append each leaf hash in order (see :meth:`append`)."""
        append = self.append
        for leaf in leaf_hashes:
            append(leaf)

    def node(self, level: int, index: int) -> bytes:
        """Hash of the complete subtree at ``(level, index)``; :class:`ProofBoundsError` if the
        tree holds no such complete subtree."""
        levels = self._levels
        if 0 <= level < len(levels) and 0 <= index < len(levels[level]):
            return levels[level][index]
        raise ProofBoundsError(
            f"no complete subtree at level {level}, index {index} in a tree of {self.size} "
            f"leaves: the requested size is larger than the tree"
        )

    def root(self) -> bytes:
        """Root of the whole tree (:func:`root_at` at the current size)."""
        return root_at(self, self.size)
