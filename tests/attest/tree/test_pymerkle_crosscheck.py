"""Cross-check against pymerkle 7 (test-only; the package never imports it).

pymerkle's ``InmemoryTree`` with its default ``disable_security=False`` hashes leaves and nodes
as RFC 9162 does, and ``append_entry(data)`` hashes ``data`` as a leaf itself. Its leaf indices
count from 1. Its inclusion path is ``[leaf hash, *RFC 9162 audit path]``.

Its consistency path is NOT RFC 9162's: it always starts with a base hash, orders the hashes by
its own rule, and when the old size equals a left subtree's size it descends into the right
subtree down to a single leaf (e.g. from 2 to 4 leaves it gives 3 hashes where RFC 9162 gives
1). So consistency proofs are cross-checked through the roots they prove: pymerkle's proofs
rebuild our roots and verify against them, and ours verify against pymerkle's roots.
"""

from __future__ import annotations

import functools

import pymerkle  # type: ignore[import-untyped]
from hypothesis import given
from hypothesis import strategies as st

from registre.attest.tree import (
    CompactRange,
    MemoryHashSource,
    consistency_proof,
    inclusion_proof,
    leaf_hash,
    root_at,
    verify_consistency,
    verify_inclusion,
)

SIZE = 700


@functools.cache
def trees() -> tuple[list[bytes], MemoryHashSource, pymerkle.InmemoryTree]:
    """The same leaf data in both trees, built once per module."""
    data = [b"entry %d \x00\xff" % i for i in range(SIZE)]
    ours = MemoryHashSource(leaf_hash(d) for d in data)
    theirs = pymerkle.InmemoryTree(algorithm="sha256")
    for d in data:
        theirs.append_entry(d)
    return data, ours, theirs


def pymerkle_rule(index: int, size: int) -> list[int]:
    """pymerkle's direction bits for an inclusion path, from the RFC 9162 descent: 1 where the
    node on the path is a right child, leaf first, the root (never a child) last."""
    directions = []
    start, end = 0, size
    while end - start > 1:
        k = 1 << ((end - start - 1).bit_length() - 1)
        if index < start + k:
            directions.append(0)
            end = start + k
        else:
            directions.append(1)
            start += k
    return [*reversed(directions), 0]


def test_pymerkle_runs_with_rfc9162_hashing() -> None:
    data, ours, theirs = trees()
    assert theirs.security is True
    for index in (0, 1, SIZE - 1):
        assert theirs.get_leaf(index + 1) == leaf_hash(data[index]) == ours.node(0, index)


def test_roots_at_every_size_match() -> None:
    data, ours, theirs = trees()
    frontier = CompactRange()
    assert frontier.root() == theirs.get_root(0) == root_at(ours, 0)
    for size in range(1, SIZE + 1):
        frontier.append(leaf_hash(data[size - 1]))
        assert frontier.root() == theirs.get_root(size) == root_at(ours, size)


@given(st.integers(min_value=1, max_value=SIZE), st.data())
def test_inclusion_proofs_match_and_cross_verify(size: int, data: st.DataObject) -> None:
    _, ours, theirs = trees()
    index = data.draw(st.integers(min_value=0, max_value=size - 1))
    root = root_at(ours, size)
    our_proof = inclusion_proof(ours, index, size)
    their_proof = theirs.prove_inclusion(index + 1, size)
    assert their_proof.path == [ours.node(0, index), *our_proof]
    # Each side verifies the other's proof.
    verify_inclusion(their_proof.path[0], index, size, their_proof.path[1:], root)
    ours_for_them = pymerkle.InclusionProof(
        "sha256",
        True,
        size,
        index + 1,
        pymerkle_rule(index, size),
        [ours.node(0, index), *our_proof],
    )
    pymerkle.verify_inclusion(ours.node(0, index), theirs.get_root(size), ours_for_them)


@given(st.integers(min_value=2, max_value=SIZE), st.data())
def test_consistency_proofs_prove_the_same_roots(new: int, data: st.DataObject) -> None:
    _, ours, theirs = trees()
    old = data.draw(st.integers(min_value=1, max_value=new - 1))
    their_proof = theirs.prove_consistency(old, new)
    # pymerkle's proof rebuilds our roots and verifies against them...
    assert their_proof.retrieve_prior_state() == root_at(ours, old)
    assert their_proof.compute_root() == root_at(ours, new)
    pymerkle.verify_consistency(root_at(ours, old), root_at(ours, new), their_proof)
    # ...and ours verifies against pymerkle's roots.
    our_proof = consistency_proof(ours, old, new)
    verify_consistency(old, new, our_proof, theirs.get_root(old), theirs.get_root(new))


@given(st.lists(st.binary(max_size=64), max_size=120))
def test_roots_of_random_data_match(leaves: list[bytes]) -> None:
    ours = CompactRange()
    theirs = pymerkle.InmemoryTree(algorithm="sha256")
    for data in leaves:
        ours.append(leaf_hash(data))
        theirs.append_entry(data)
        assert ours.root() == theirs.get_root()
