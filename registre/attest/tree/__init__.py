"""The RFC 9162 Merkle tree (``specs/merkle.md``): leaf and node hashes, roots, compact ranges
and hash sources (:mod:`.merkle`); inclusion and consistency proofs and their verification
(:mod:`.proofs`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from registre._lazy import lazy_face

if TYPE_CHECKING:
    from registre.attest.tree.merkle import (
        HASH_SIZE,
        MAX_TREE_SIZE,
        CompactRange,
        CompactRangeError,
        HashLengthError,
        HashSource,
        MemoryHashSource,
        check_hash,
        check_size,
        empty_root,
        leaf_hash,
        node_hash,
        range_root,
        root_at,
    )
    from registre.attest.tree.proofs import (
        MAX_PROOF_HASHES,
        consistency_proof,
        consistency_proof_length,
        inclusion_proof,
        inclusion_proof_length,
        verify_consistency,
        verify_inclusion,
    )

__all__ = [
    "HASH_SIZE",
    "MAX_PROOF_HASHES",
    "MAX_TREE_SIZE",
    "CompactRange",
    "CompactRangeError",
    "HashLengthError",
    "HashSource",
    "MemoryHashSource",
    "check_hash",
    "check_size",
    "consistency_proof",
    "consistency_proof_length",
    "empty_root",
    "inclusion_proof",
    "inclusion_proof_length",
    "leaf_hash",
    "node_hash",
    "range_root",
    "root_at",
    "verify_consistency",
    "verify_inclusion",
]

__getattr__, __dir__ = lazy_face(
    __name__,
    {
        "merkle": (
            "CompactRange",
            "CompactRangeError",
            "HASH_SIZE",
            "HashLengthError",
            "HashSource",
            "MAX_TREE_SIZE",
            "MemoryHashSource",
            "check_hash",
            "check_size",
            "empty_root",
            "leaf_hash",
            "node_hash",
            "range_root",
            "root_at",
        ),
        "proofs": (
            "MAX_PROOF_HASHES",
            "consistency_proof",
            "consistency_proof_length",
            "inclusion_proof",
            "inclusion_proof_length",
            "verify_consistency",
            "verify_inclusion",
        ),
    },
)
