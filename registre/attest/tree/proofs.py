"""RFC 9162 §2.1.3-2.1.4 inclusion and consistency proofs: generation and verification.

Generation reads complete-subtree hashes through a :class:`~registre.attest.tree.merkle.HashSource`
and
makes O(log n) reads per proof (at most ``2·log2(n) + 2``), so a store only needs the subtree hashes
that :meth:`~registre.attest.tree.merkle.CompactRange.append` reports.

Verification raises and never returns a value to check. Its steps, in order:

1. sizes and index are integers with ``0 <= index < size`` (inclusion) or
   ``0 <= old_size <= new_size`` (consistency), sizes at most ``2**62`` -> ProofBoundsError;
2. the proof has at most :data:`MAX_PROOF_HASHES` hashes -> ProofLengthError;
3. every hash is 32 bytes -> HashLengthError (a MalformedError);
4. the proof has exactly the number of hashes the tree shape requires -> ProofLengthError;
5. the hashes are folded as RFC 9162 prescribes and the result compared with the expected
   root(s) -> InclusionProofError / ConsistencyProofError, naming the check that failed.

A proof binds a leaf to a ``(size, root)`` pair, and only as a pair: a verifier must take both
from the same signed checkpoint (THREATS row 3).
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Sequence

from registre.attest.errors import (
    ConsistencyProofError,
    InclusionProofError,
    ProofBoundsError,
    ProofLengthError,
)
from registre.attest.tree.merkle import HashSource, check_hash, check_size, empty_root, range_root

__all__ = [
    "MAX_PROOF_HASHES",
    "consistency_proof",
    "consistency_proof_length",
    "inclusion_proof",
    "inclusion_proof_length",
    "verify_consistency",
    "verify_inclusion",
]

MAX_PROOF_HASHES = 63
"""No proof with more hashes is read. Every valid proof for a tree of up to ``2**62`` leaves
(``registre.attest.tree.merkle.MAX_TREE_SIZE``) fits: inclusion needs at most 62, consistency at
most
63."""

_sha256 = hashlib.sha256
_NODE_PREFIX = b"\x01"


# --- shapes ----------------------------------------------------------------------------


def inclusion_proof_length(index: int, size: int) -> int:
    """Number of hashes in the inclusion proof of leaf ``index`` in a tree of ``size`` leaves
    (``0 <= index < size``): one per level where the paths of ``index`` and of the last leaf
    differ, plus one per left sibling on the right border above them."""
    inner = (index ^ (size - 1)).bit_length()
    return inner + (index >> inner).bit_count()


def consistency_proof_length(old_size: int, new_size: int) -> int:
    """Number of hashes in the consistency proof from ``old_size`` to ``new_size``
    (``0 <= old_size <= new_size``); 0 when the sizes are equal or ``old_size`` is 0.

    The proof is the inclusion proof of the old tree's last complete subtree in the new tree,
    preceded by that subtree's hash unless the old tree is itself complete (a power of two).
    """
    if old_size == 0 or old_size == new_size:
        return 0
    level = (old_size & -old_size).bit_length() - 1
    length = inclusion_proof_length((old_size - 1) >> level, ((new_size - 1) >> level) + 1)
    return length if old_size & (old_size - 1) == 0 else length + 1


def _largest_power_of_two_below(width: int) -> int:
    """The split point k of RFC 9162: the largest power of two smaller than ``width`` (> 1)."""
    return 1 << ((width - 1).bit_length() - 1)


# --- generation ------------------------------------------------------------------------


def inclusion_proof(source: HashSource, index: int, size: int) -> list[bytes]:
    """The audit path PATH(index, D[0:size]) of RFC 9162 §2.1.3.1, leaf level first.

    Raises :class:`ProofBoundsError` unless ``0 <= index < size <= 2**62`` (so there is no
    inclusion proof in the empty tree), and whatever ``source`` raises for a subtree it lacks.
    Reads at most ``2·log2(size) + 1`` nodes.
    """
    _check_inclusion_bounds(index, size)
    path: list[bytes] = []
    start, end = 0, size
    # Descend from the root towards the leaf; each step records the sibling subtree.
    while end - start > 1:
        k = _largest_power_of_two_below(end - start)
        if index < start + k:
            path.append(range_root(source, start + k, end))
            end = start + k
        else:
            path.append(range_root(source, start, start + k))
            start += k
    path.reverse()
    return path


def consistency_proof(source: HashSource, old_size: int, new_size: int) -> list[bytes]:
    """PROOF(old_size, D[0:new_size]) of RFC 9162 §2.1.4.1.

    Empty when ``old_size == new_size`` or ``old_size == 0`` (every tree extends the empty
    tree; see :func:`verify_consistency`). Raises :class:`ProofBoundsError` unless
    ``0 <= old_size <= new_size <= 2**62``. Reads at most ``2·log2(new_size) + 2`` nodes.
    """
    _check_consistency_bounds(old_size, new_size)
    if old_size == 0 or old_size == new_size:
        return []
    siblings: list[bytes] = []
    start, end = 0, new_size
    old_is_whole_subtree = True  # the flag b of SUBPROOF: still on the left edge of the tree
    # SUBPROOF(m, D[start:end], b) until the old tree's part equals the whole subtree.
    while old_size != end:
        k = _largest_power_of_two_below(end - start)
        if old_size - start <= k:
            siblings.append(range_root(source, start + k, end))
            end = start + k
        else:
            siblings.append(range_root(source, start, start + k))
            start += k
            old_is_whole_subtree = False
    siblings.reverse()
    if old_is_whole_subtree:
        return siblings
    return [range_root(source, start, end), *siblings]


# --- verification ----------------------------------------------------------------------


def verify_inclusion(
    leaf_hash: bytes, index: int, size: int, proof: Sequence[bytes], root: bytes
) -> None:
    """Check that ``proof`` leads from ``leaf_hash`` at ``index`` to ``root`` of a tree of
    ``size`` leaves (RFC 9162 §2.1.3.2, with exact bounds and length). Returns None; raises
    ProofBoundsError, ProofLengthError, HashLengthError or InclusionProofError."""
    # 1. Bounds: a leaf exists only at 0 <= index < size.
    _check_inclusion_bounds(index, size)
    # 2. Refuse an oversized proof before reading it.
    _check_proof_cap(proof, "inclusion")
    # 3. Every hash is a 32-byte SHA-256 digest.
    check_hash(leaf_hash, "leaf hash")
    check_hash(root, "root")
    _check_proof_hashes(proof, "inclusion")
    # 4. Exactly the number of hashes the tree shape requires.
    expected = inclusion_proof_length(index, size)
    if len(proof) != expected:
        raise ProofLengthError(
            f"an inclusion proof for leaf {index} in a tree of {size} leaves has exactly "
            f"{expected} hashes, this one has {len(proof)}: it was made for another index or size"
        )
    # 5. Fold (RFC 9162 §2.1.3.2 step 4) and compare with the root.
    computed = _fold_inclusion(leaf_hash, index, size, proof)
    if not hmac.compare_digest(computed, root):
        raise InclusionProofError(
            f"inclusion proof for leaf {index} in a tree of {size} leaves leads to root "
            f"{computed.hex()}, not to the expected root {root.hex()}: the leaf, the proof or "
            f"the root is wrong"
        )


def verify_consistency(
    old_size: int, new_size: int, proof: Sequence[bytes], old_root: bytes, new_root: bytes
) -> None:
    """Check that the tree of ``new_size`` leaves with ``new_root`` extends the tree of
    ``old_size`` leaves with ``old_root`` (RFC 9162 §2.1.4.2, with exact bounds and length).

    Edge cases: equal sizes need an empty proof and equal roots; ``old_size == 0`` needs an
    empty proof and ``old_root`` equal to the empty-tree root (any tree extends the empty tree).
    Returns None; raises ProofBoundsError, ProofLengthError, HashLengthError or
    ConsistencyProofError.
    """
    # 1. Bounds: a tree never shrinks.
    _check_consistency_bounds(old_size, new_size)
    # 2. Refuse an oversized proof before reading it.
    _check_proof_cap(proof, "consistency")
    # 3. Every hash is a 32-byte SHA-256 digest.
    check_hash(old_root, "old root")
    check_hash(new_root, "new root")
    _check_proof_hashes(proof, "consistency")
    # 4. Exactly the number of hashes the two sizes require.
    expected = consistency_proof_length(old_size, new_size)
    if len(proof) != expected:
        raise ProofLengthError(
            f"a consistency proof from size {old_size} to size {new_size} has exactly "
            f"{expected} hashes, this one has {len(proof)}: it was made for other sizes"
        )
    # 5. Roots. Without leaves in between, the roots themselves are all there is to check.
    if old_size == 0:
        if not hmac.compare_digest(old_root, empty_root()):
            raise ConsistencyProofError(
                f"old root check failed: the tree of size 0 has root {empty_root().hex()} "
                f"(SHA-256 of nothing), not {old_root.hex()}"
            )
        if new_size == 0 and not hmac.compare_digest(new_root, old_root):
            raise ConsistencyProofError(
                f"new root check failed: two trees of size 0 must have the same root, got "
                f"{old_root.hex()} and {new_root.hex()}"
            )
        return
    if old_size == new_size:
        if not hmac.compare_digest(old_root, new_root):
            raise ConsistencyProofError(
                f"root check failed: two trees of the same size {old_size} must have the same "
                f"root, got {old_root.hex()} and {new_root.hex()} (a split view)"
            )
        return
    computed_old, computed_new = _fold_consistency(old_size, new_size, proof, old_root)
    if not hmac.compare_digest(computed_old, old_root):
        raise ConsistencyProofError(
            f"old root check failed: the consistency proof from size {old_size} to {new_size} "
            f"rebuilds old root {computed_old.hex()}, not the expected {old_root.hex()}"
        )
    if not hmac.compare_digest(computed_new, new_root):
        raise ConsistencyProofError(
            f"new root check failed: the consistency proof from size {old_size} to {new_size} "
            f"rebuilds new root {computed_new.hex()}, not the expected {new_root.hex()}"
        )


def _fold_inclusion(leaf: bytes, index: int, size: int, proof: Sequence[bytes]) -> bytes:
    """RFC 9162 §2.1.3.2 step 4 for a proof already known to have the right length."""
    fn, sn = index, size - 1
    result = leaf
    for sibling in proof:
        if fn & 1 or fn == sn:
            result = _sha256(_NODE_PREFIX + sibling + result).digest()
            if not fn & 1:
                # fn == sn on a left child: the levels above have no right sibling.
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            result = _sha256(_NODE_PREFIX + result + sibling).digest()
        fn >>= 1
        sn >>= 1
    return result


def _fold_consistency(
    old_size: int, new_size: int, proof: Sequence[bytes], old_root: bytes
) -> tuple[bytes, bytes]:
    """RFC 9162 §2.1.4.2 steps 2-6 for ``0 < old_size < new_size`` and a proof already known to
    have the right length; returns the rebuilt (old root, new root)."""
    path = list(proof)
    # 2. A complete old tree is its own first node: the proof omits it, the verifier adds it.
    if old_size & (old_size - 1) == 0:
        path.insert(0, old_root)
    # 3-4. Skip the levels where the old tree's last node is a right child within itself.
    fn, sn = old_size - 1, new_size - 1
    while fn & 1:
        fn >>= 1
        sn >>= 1
    # 5-6. Fold both roots up from the old tree's last complete subtree.
    old_result = new_result = path[0]
    for sibling in path[1:]:
        if fn & 1 or fn == sn:
            old_result = _sha256(_NODE_PREFIX + sibling + old_result).digest()
            new_result = _sha256(_NODE_PREFIX + sibling + new_result).digest()
            if not fn & 1:
                while fn and not fn & 1:
                    fn >>= 1
                    sn >>= 1
        else:
            new_result = _sha256(_NODE_PREFIX + new_result + sibling).digest()
        fn >>= 1
        sn >>= 1
    return old_result, new_result


# --- checks shared by generation and verification --------------------------------------


def _check_inclusion_bounds(index: int, size: int) -> None:
    check_size(size, "tree size")
    check_size(index, "leaf index")
    if not index < size:
        raise ProofBoundsError(
            f"leaf index {index} is outside a tree of {size} leaves (need 0 <= index < size)"
            + ("; the empty tree has no inclusion proofs" if size == 0 else "")
        )


def _check_consistency_bounds(old_size: int, new_size: int) -> None:
    check_size(old_size, "old tree size")
    check_size(new_size, "new tree size")
    if old_size > new_size:
        raise ProofBoundsError(
            f"old tree size {old_size} is larger than new tree size {new_size}: an append-only "
            f"tree never shrinks (rollback or swapped arguments)"
        )


def _check_proof_cap(proof: Sequence[bytes], kind: str) -> None:
    if len(proof) > MAX_PROOF_HASHES:
        raise ProofLengthError(
            f"{kind} proof has {len(proof)} hashes; no valid proof has more than {MAX_PROOF_HASHES}"
        )


def _check_proof_hashes(proof: Sequence[bytes], kind: str) -> None:
    for position, value in enumerate(proof):
        check_hash(value, f"{kind} proof hash #{position}")
