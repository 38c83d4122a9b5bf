"""attest.proofs: RFC 9162 inclusion and consistency proofs, and every way to break them."""

from __future__ import annotations

import functools
import json
import math
import re
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registre.attest.errors import (
    ConsistencyProofError,
    InclusionProofError,
    ProofBoundsError,
    ProofLengthError,
)
from registre.attest.tree import (
    MAX_PROOF_HASHES,
    MAX_TREE_SIZE,
    CompactRange,
    HashLengthError,
    MemoryHashSource,
    consistency_proof,
    consistency_proof_length,
    empty_root,
    inclusion_proof,
    inclusion_proof_length,
    leaf_hash,
    root_at,
    verify_consistency,
    verify_inclusion,
)
from registre.errors import MalformedError, VerificationError

VECTORS = json.loads(
    (Path(__file__).parents[3] / "specs" / "vectors" / "merkle-rfc9162.json").read_text()
)
BIG = 3000  # leaves in the shared tree for the properties
HUGE = 100_000  # leaves in the shared tree for the read-count guarantee


@functools.cache
def big_tree() -> MemoryHashSource:
    """Built once per module: leaf i is the leaf hash of b"leaf-" + i."""
    return MemoryHashSource(leaf_hash(b"leaf-%d" % i) for i in range(BIG))


@functools.cache
def huge_tree() -> MemoryHashSource:
    return MemoryHashSource(leaf_hash(i.to_bytes(4, "big")) for i in range(HUGE))


@functools.cache
def big_root(size: int) -> bytes:
    return root_at(big_tree(), size)


def flip(value: bytes, bit: int) -> bytes:
    """``value`` with one bit inverted (bit counted over the whole byte string, mod its length)."""
    bit %= len(value) * 8
    changed = bytearray(value)
    changed[bit // 8] ^= 1 << (bit % 8)
    return bytes(changed)


def inclusion_error(index: int, size: int, proof_length: int) -> type[VerificationError]:
    """The error a proof of ``proof_length`` hashes must raise when checked as (index, size)
    against a root it does not lead to."""
    if not 0 <= index < size:
        return ProofBoundsError
    if inclusion_proof_length(index, size) != proof_length:
        return ProofLengthError
    return InclusionProofError


def consistency_error(old: int, new: int, proof_length: int) -> type[VerificationError]:
    if not 0 <= old <= new:
        return ProofBoundsError
    if consistency_proof_length(old, new) != proof_length:
        return ProofLengthError
    return ConsistencyProofError


sizes = st.integers(min_value=1, max_value=BIG)
bits = st.integers(min_value=0, max_value=255)


@st.composite
def leaf_in_tree(draw: st.DrawFn, min_size: int = 1) -> tuple[int, int]:
    size = draw(st.integers(min_value=min_size, max_value=BIG))
    return draw(st.integers(min_value=0, max_value=size - 1)), size


@st.composite
def size_pairs(draw: st.DrawFn) -> tuple[int, int]:
    new = draw(st.integers(min_value=2, max_value=BIG))
    return draw(st.integers(min_value=1, max_value=new - 1)), new


# --- published vectors -----------------------------------------------------------------


@functools.cache
def vector_tree() -> MemoryHashSource:
    return MemoryHashSource(leaf_hash(bytes.fromhex(x)) for x in VECTORS["leaf_inputs_hex"])


@pytest.mark.parametrize(
    "vector", VECTORS["inclusion"], ids=lambda v: f"leaf{v['index']}-of-{v['size']}"
)
def test_vector_inclusion_proof(vector: dict[str, object]) -> None:
    index, size = vector["index"], vector["size"]
    assert isinstance(index, int) and isinstance(size, int)
    proof = inclusion_proof(vector_tree(), index, size)
    assert [h.hex() for h in proof] == vector["proof"]
    verify_inclusion(
        bytes.fromhex(str(vector["leaf_hash"])),
        index,
        size,
        proof,
        bytes.fromhex(str(vector["root"])),
    )


@pytest.mark.parametrize(
    "vector", VECTORS["consistency"], ids=lambda v: f"{v['size1']}-to-{v['size2']}"
)
def test_vector_consistency_proof(vector: dict[str, object]) -> None:
    old, new = vector["size1"], vector["size2"]
    assert isinstance(old, int) and isinstance(new, int)
    proof = consistency_proof(vector_tree(), old, new)
    assert [h.hex() for h in proof] == vector["proof"]
    verify_consistency(
        old, new, proof, bytes.fromhex(str(vector["root1"])), bytes.fromhex(str(vector["root2"]))
    )


SPEC = (Path(__file__).parents[3] / "specs" / "merkle.md").read_text()


def test_spec_worked_example() -> None:
    """specs/merkle.md §6: every hash it prints, and the proofs it derives from them."""
    source = vector_tree()
    printed = dict(re.findall(r"^(\(\d,\d\)|root, size \d) .* ([0-9a-f]{64})$", SPEC, re.M))
    node = {
        (level, index): source.node(level, index)
        for level in range(3)
        for index in range(8 >> level)
    }
    for level, index in [(0, 4), (0, 5), (1, 2), (1, 3), (2, 0), (2, 1)]:
        assert printed[f"({level},{index})"] == node[(level, index)].hex()
    assert printed["root, size 6"] == root_at(source, 6).hex()
    assert printed["root, size 8"] == root_at(source, 8).hex()
    assert inclusion_proof(source, 5, 8) == [node[(0, 4)], node[(1, 3)], node[(2, 0)]]
    assert consistency_proof(source, 6, 8) == [node[(1, 2)], node[(1, 3)], node[(2, 0)]]
    assert consistency_proof(source, 4, 8) == [node[(2, 1)]]


def test_size_must_come_from_the_checkpoint() -> None:
    """specs/merkle.md §5: a proof is bound to a (size, root) pair only as a pair. The proof of
    leaf 0 in the tree of 3 also folds to the 3-leaf root when the size is claimed to be 4,
    which is why the size is taken from the same signed checkpoint as the root."""
    source = vector_tree()
    proof = inclusion_proof(source, 0, 3)
    verify_inclusion(source.node(0, 0), 0, 4, proof, root_at(source, 3))
    with pytest.raises(InclusionProofError):
        verify_inclusion(source.node(0, 0), 0, 4, proof, root_at(source, 4))


def test_vectors_are_all_there() -> None:
    assert len(VECTORS["inclusion"]) == 36
    assert len(VECTORS["consistency"]) == 28


# --- proof lengths equal what RFC 9162's verification loops accept ---------------------


def rfc_inclusion_hashes_accepted(index: int, size: int) -> int:
    """How many proof hashes the loop of RFC 9162 §2.1.3.2 consumes before sn reaches 0: the
    only length for which its steps 4a and 5 both pass."""
    fn, sn, count = index, size - 1, 0
    while sn:
        count += 1
        if fn & 1 or fn == sn:
            while fn and not fn & 1:
                fn, sn = fn >> 1, sn >> 1
        fn, sn = fn >> 1, sn >> 1
    return count


def rfc_consistency_hashes_accepted(old: int, new: int) -> int:
    """The same for RFC 9162 §2.1.4.2, counting the hash its step 2 prepends."""
    fn, sn = old - 1, new - 1
    while fn & 1:
        fn, sn = fn >> 1, sn >> 1
    count = 1
    while sn:
        count += 1
        if fn & 1 or fn == sn:
            while fn and not fn & 1:
                fn, sn = fn >> 1, sn >> 1
        fn, sn = fn >> 1, sn >> 1
    return count - (1 if old & (old - 1) == 0 else 0)


def test_exact_lengths_are_the_rfc_accepted_lengths() -> None:
    for size in range(1, 260):
        for index in range(size):
            assert inclusion_proof_length(index, size) == rfc_inclusion_hashes_accepted(index, size)
        for old in range(1, size):
            assert consistency_proof_length(old, size) == rfc_consistency_hashes_accepted(old, size)


@given(st.integers(min_value=1, max_value=MAX_TREE_SIZE), st.data())
def test_max_proof_hashes_fits_every_tree_size(new: int, data: st.DataObject) -> None:
    old = data.draw(st.integers(min_value=0, max_value=new))
    index = data.draw(st.integers(min_value=0, max_value=new - 1))
    assert inclusion_proof_length(index, new) <= MAX_PROOF_HASHES - 1
    assert consistency_proof_length(old, new) <= MAX_PROOF_HASHES
    assert consistency_proof_length(old, new) == (
        0 if old in (0, new) else rfc_consistency_hashes_accepted(old, new)
    )


def test_largest_tree_needs_the_full_cap() -> None:
    assert inclusion_proof_length(0, MAX_TREE_SIZE) == 62
    assert consistency_proof_length(3, MAX_TREE_SIZE) == MAX_PROOF_HASHES


# --- inclusion: every proof verifies, every mutation fails -----------------------------


@given(leaf_in_tree())
def test_every_inclusion_proof_verifies(case: tuple[int, int]) -> None:
    index, size = case
    proof = inclusion_proof(big_tree(), index, size)
    assert len(proof) == inclusion_proof_length(index, size)
    verify_inclusion(big_tree().node(0, index), index, size, proof, big_root(size))


@given(leaf_in_tree(min_size=2), st.data(), bits)
def test_flipped_bit_in_proof_hash_fail(
    case: tuple[int, int], data: st.DataObject, bit: int
) -> None:
    index, size = case
    proof = inclusion_proof(big_tree(), index, size)
    position = data.draw(st.integers(min_value=0, max_value=len(proof) - 1))
    proof[position] = flip(proof[position], bit)
    with pytest.raises(InclusionProofError, match="leads to root"):
        verify_inclusion(big_tree().node(0, index), index, size, proof, big_root(size))


@given(leaf_in_tree(), bits)
def test_flipped_bit_in_leaf_hash_fail(case: tuple[int, int], bit: int) -> None:
    index, size = case
    proof = inclusion_proof(big_tree(), index, size)
    leaf = flip(big_tree().node(0, index), bit)
    with pytest.raises(InclusionProofError):
        verify_inclusion(leaf, index, size, proof, big_root(size))


@given(leaf_in_tree(), bits)
def test_flipped_bit_in_root_fail(case: tuple[int, int], bit: int) -> None:
    index, size = case
    proof = inclusion_proof(big_tree(), index, size)
    with pytest.raises(InclusionProofError):
        verify_inclusion(big_tree().node(0, index), index, size, proof, flip(big_root(size), bit))


@given(leaf_in_tree(), st.data())
def test_wrong_index_fail(case: tuple[int, int], data: st.DataObject) -> None:
    index, size = case
    proof = inclusion_proof(big_tree(), index, size)
    other = data.draw(st.integers(min_value=-2, max_value=size + 2).filter(lambda i: i != index))
    with pytest.raises(inclusion_error(other, size, len(proof))):
        verify_inclusion(big_tree().node(0, index), other, size, proof, big_root(size))


@given(leaf_in_tree(), st.data())
def test_wrong_size_fail(case: tuple[int, int], data: st.DataObject) -> None:
    """The proof is offered for another size, with that size's genuine root (as a checkpoint of
    that size would carry): it must not verify."""
    index, size = case
    proof = inclusion_proof(big_tree(), index, size)
    other = data.draw(st.integers(min_value=0, max_value=BIG).filter(lambda n: n != size))
    with pytest.raises(inclusion_error(index, other, len(proof))):
        verify_inclusion(big_tree().node(0, index), index, other, proof, big_root(other))


@given(leaf_in_tree(min_size=2), st.data())
def test_proof_one_hash_short_fail(case: tuple[int, int], data: st.DataObject) -> None:
    index, size = case
    proof = inclusion_proof(big_tree(), index, size)
    del proof[data.draw(st.integers(min_value=0, max_value=len(proof) - 1))]
    with pytest.raises(ProofLengthError, match=f"has exactly {len(proof) + 1} hashes"):
        verify_inclusion(big_tree().node(0, index), index, size, proof, big_root(size))


@given(leaf_in_tree(), st.data(), st.binary(min_size=32, max_size=32))
def test_proof_one_hash_long_fail(case: tuple[int, int], data: st.DataObject, extra: bytes) -> None:
    index, size = case
    proof = inclusion_proof(big_tree(), index, size)
    proof.insert(data.draw(st.integers(min_value=0, max_value=len(proof))), extra)
    with pytest.raises(ProofLengthError):
        verify_inclusion(big_tree().node(0, index), index, size, proof, big_root(size))


@given(leaf_in_tree())
def test_proofs_from_stored_subtrees_equal_proofs_from_memory(case: tuple[int, int]) -> None:
    """A store persisting only what CompactRange.append reports answers the same proofs."""
    index, size = case
    stored: dict[tuple[int, int], bytes] = {}
    frontier = CompactRange()
    for i in range(size):
        for level, node_index, value in frontier.append(big_tree().node(0, i)):
            stored[(level, node_index)] = value

    class Store:
        def node(self, level: int, node_index: int) -> bytes:
            return stored[(level, node_index)]

    assert frontier.root() == big_root(size)
    assert inclusion_proof(Store(), index, size) == inclusion_proof(big_tree(), index, size)
    assert consistency_proof(Store(), index, size) == consistency_proof(big_tree(), index, size)


# --- inclusion: bounds and malformed input ---------------------------------------------


def test_inclusion_in_empty_tree_fail() -> None:
    with pytest.raises(ProofBoundsError, match="empty tree has no inclusion proofs"):
        inclusion_proof(MemoryHashSource(), 0, 0)
    with pytest.raises(ProofBoundsError, match="empty tree"):
        verify_inclusion(leaf_hash(b""), 0, 0, [], empty_root())


@pytest.mark.parametrize(("index", "size"), [(-1, 5), (5, 5), (6, 5), (0, MAX_TREE_SIZE + 1)])
def test_index_out_of_bounds_fail(index: int, size: int) -> None:
    with pytest.raises(ProofBoundsError):
        inclusion_proof(big_tree(), index, size)
    with pytest.raises(ProofBoundsError):
        verify_inclusion(leaf_hash(b"x"), index, size, [], leaf_hash(b"x"))


def test_proof_for_size_beyond_stored_tree_fail() -> None:
    with pytest.raises(ProofBoundsError, match="no complete subtree"):
        inclusion_proof(big_tree(), 0, BIG + 1)


@pytest.mark.parametrize(("index", "size"), [(True, 2), (0, 2.0), ("0", 2), (None, 2)])
def test_non_integer_index_or_size_fail(index: object, size: object) -> None:
    with pytest.raises(MalformedError, match="integer"):
        verify_inclusion(leaf_hash(b"x"), index, size, [b"\x00" * 32], b"\x00" * 32)  # type: ignore[arg-type]


def test_oversized_proof_refused_before_reading_fail() -> None:
    not_hashes = [b""] * (MAX_PROOF_HASHES + 1)
    with pytest.raises(ProofLengthError, match="no valid proof has more than 63"):
        verify_inclusion(leaf_hash(b"x"), 0, 2**40, not_hashes, leaf_hash(b"x"))
    with pytest.raises(ProofLengthError, match="no valid proof has more than 63"):
        verify_consistency(1, 2**40, not_hashes, leaf_hash(b"x"), leaf_hash(b"x"))


@pytest.mark.parametrize(
    ("leaf", "proof", "root", "what"),
    [
        (b"\x00" * 31, [b"\x00" * 32], b"\x00" * 32, "leaf hash"),
        (b"\x00" * 32, [b"\x00" * 33], b"\x00" * 32, "inclusion proof hash #0"),
        (b"\x00" * 32, [bytearray(32)], b"\x00" * 32, "inclusion proof hash #0"),
        (b"\x00" * 32, [b"\x00" * 32], "00" * 32, "root"),
    ],
)
def test_malformed_hash_fail(leaf: bytes, proof: list[bytes], root: bytes, what: str) -> None:
    with pytest.raises(HashLengthError, match=what):
        verify_inclusion(leaf, 0, 2, proof, root)


# --- the threats (THREATS.md rows 1-3) -------------------------------------------------


@given(st.integers(min_value=2, max_value=BIG), st.data())
def test_interior_node_as_leaf_fail(size: int, data: st.DataObject) -> None:
    """Row 1: an attacker presents the preimage of an interior node as a leaf's data."""
    source = big_tree()
    root = big_root(size)
    level = data.draw(st.integers(min_value=1, max_value=size.bit_length() - 1))
    index = data.draw(st.integers(min_value=0, max_value=(size >> level) - 1))
    interior = source.node(level, index)
    preimage = source.node(level - 1, 2 * index) + source.node(level - 1, 2 * index + 1)
    # The genuine path above the interior node, as if the tree ended at that level.
    path_above = inclusion_proof(source, index << level, size)[level:]
    leaves_at_level = ((size - 1) >> level) + 1
    # The set-up is real: the node's own hash does lead to the root along that path...
    verify_inclusion(interior, index, leaves_at_level, path_above, root)
    # ...but no leaf hashes to it, whatever the attacker puts in front of the preimage.
    for forged in (preimage, b"\x01" + preimage):
        assert leaf_hash(forged) != interior
        with pytest.raises(InclusionProofError):
            verify_inclusion(leaf_hash(forged), index, leaves_at_level, path_above, root)


@given(st.lists(st.binary(max_size=12), min_size=1, max_size=300, unique=True))
def test_duplicated_last_leaf_fail(leaves: list[bytes]) -> None:
    """Row 2: in a Bitcoin-style tree [a, b, c] and [a, b, c, c] share a root; not here."""
    size = len(leaves)
    source = MemoryHashSource(leaf_hash(d) for d in leaves)
    old_root = source.root()
    source.append(leaf_hash(leaves[-1]))
    assert source.root() != old_root
    duplicate_proof = inclusion_proof(source, size, size + 1)
    # The duplicate cannot be shown in the old tree, neither at its own index...
    with pytest.raises(ProofBoundsError):
        verify_inclusion(leaf_hash(leaves[-1]), size, size, duplicate_proof, old_root)
    # ...nor passed off as the original last leaf.
    with pytest.raises(inclusion_error(size - 1, size, len(duplicate_proof))):
        verify_inclusion(leaf_hash(leaves[-1]), size - 1, size, duplicate_proof, old_root)


def test_index_size_confusion_fail() -> None:
    """Row 3: proofs made in a tree of 4 leaves, offered against the 3-leaf root (and back)."""
    source = MemoryHashSource(leaf_hash(d) for d in (b"a", b"b", b"c", b"d"))
    root3, root4 = root_at(source, 3), root_at(source, 4)
    leaf = [source.node(0, i) for i in range(4)]
    expected_in_3 = [InclusionProofError, InclusionProofError, ProofLengthError, ProofBoundsError]
    for index, error in enumerate(expected_in_3):
        proof4 = inclusion_proof(source, index, 4)
        verify_inclusion(leaf[index], index, 4, proof4, root4)  # genuine in its own tree
        with pytest.raises(error):
            verify_inclusion(leaf[index], index, 3, proof4, root3)
        with pytest.raises(InclusionProofError):
            verify_inclusion(leaf[index], index, 4, proof4, root3)
    expected_in_4 = [InclusionProofError, InclusionProofError, ProofLengthError]
    for index, error in enumerate(expected_in_4):
        proof3 = inclusion_proof(source, index, 3)
        with pytest.raises(error):
            verify_inclusion(leaf[index], index, 4, proof3, root4)


# --- consistency -----------------------------------------------------------------------


SMALL = 40


@functools.cache
def small_roots() -> list[bytes]:
    return [root_at(big_tree(), size) for size in range(SMALL + 1)]


def test_consistency_all_pairs_of_small_trees_and_their_mutations() -> None:
    roots = small_roots()
    for new in range(SMALL + 1):
        for old in range(new + 1):
            proof = consistency_proof(big_tree(), old, new)
            assert len(proof) == consistency_proof_length(old, new)
            verify_consistency(old, new, proof, roots[old], roots[new])
            for position in range(len(proof)):
                for bit in (0, 255):
                    mutated = list(proof)
                    mutated[position] = flip(mutated[position], bit)
                    with pytest.raises(ConsistencyProofError, match="root check failed"):
                        verify_consistency(old, new, mutated, roots[old], roots[new])
            with pytest.raises(ConsistencyProofError, match="root check failed"):
                verify_consistency(old, new, proof, flip(roots[old], 7), roots[new])
            if old != 0:  # nothing about the new tree can be checked from the empty tree
                with pytest.raises(ConsistencyProofError, match="root check failed"):
                    verify_consistency(old, new, proof, roots[old], flip(roots[new], 7))
            with pytest.raises(ProofLengthError):
                verify_consistency(old, new, [*proof, roots[new]], roots[old], roots[new])
            if proof:
                with pytest.raises(ProofLengthError):
                    verify_consistency(old, new, proof[1:], roots[old], roots[new])


def test_consistency_wrong_sizes_in_small_trees_fail() -> None:
    """Every proof offered for every other pair of sizes, with those sizes' genuine roots."""
    roots = small_roots()
    proofs = {
        (old, new): consistency_proof(big_tree(), old, new)
        for new in range(1, 17)
        for old in range(1, new)
    }
    for (old, new), proof in proofs.items():
        for other_old, other_new in proofs:
            if (other_old, other_new) == (old, new):
                continue
            with pytest.raises(consistency_error(other_old, other_new, len(proof))):
                verify_consistency(other_old, other_new, proof, roots[other_old], roots[other_new])


@given(size_pairs())
def test_every_consistency_proof_verifies(pair: tuple[int, int]) -> None:
    old, new = pair
    proof = consistency_proof(big_tree(), old, new)
    assert len(proof) == consistency_proof_length(old, new)
    verify_consistency(old, new, proof, big_root(old), big_root(new))


@given(size_pairs(), st.data(), bits)
def test_flipped_bit_in_consistency_proof_fail(
    pair: tuple[int, int], data: st.DataObject, bit: int
) -> None:
    old, new = pair
    proof = consistency_proof(big_tree(), old, new)
    position = data.draw(st.integers(min_value=0, max_value=len(proof) - 1))
    proof[position] = flip(proof[position], bit)
    with pytest.raises(ConsistencyProofError):
        verify_consistency(old, new, proof, big_root(old), big_root(new))


@given(size_pairs(), bits, st.booleans())
def test_flipped_bit_in_old_or_new_root_fail(
    pair: tuple[int, int], bit: int, old_one: bool
) -> None:
    old, new = pair
    proof = consistency_proof(big_tree(), old, new)
    old_root, new_root = big_root(old), big_root(new)
    if old_one:
        old_root = flip(old_root, bit)
    else:
        new_root = flip(new_root, bit)
    with pytest.raises(ConsistencyProofError):
        verify_consistency(old, new, proof, old_root, new_root)


@given(size_pairs(), st.data())
def test_consistency_proof_for_other_sizes_fail(pair: tuple[int, int], data: st.DataObject) -> None:
    old, new = pair
    proof = consistency_proof(big_tree(), old, new)
    other_old = data.draw(st.integers(min_value=1, max_value=BIG))
    other_new = data.draw(st.integers(min_value=1, max_value=BIG))
    if (other_old, other_new) == (old, new):
        other_new = new - 1 if new - 1 >= 1 else new + 1
    with pytest.raises(consistency_error(other_old, other_new, len(proof))):
        verify_consistency(other_old, other_new, proof, big_root(other_old), big_root(other_new))


@given(size_pairs(), st.data(), st.binary(min_size=32, max_size=32))
def test_consistency_proof_one_hash_short_or_long_fail(
    pair: tuple[int, int], data: st.DataObject, extra: bytes
) -> None:
    old, new = pair
    proof = consistency_proof(big_tree(), old, new)
    if data.draw(st.booleans()):
        del proof[data.draw(st.integers(min_value=0, max_value=len(proof) - 1))]
    else:
        proof.insert(data.draw(st.integers(min_value=0, max_value=len(proof))), extra)
    with pytest.raises(ProofLengthError):
        verify_consistency(old, new, proof, big_root(old), big_root(new))


def test_consistency_from_empty_tree() -> None:
    """Decision: every tree extends the empty tree. The proof is empty and the old root must be
    SHA-256(""); the new root cannot be checked from nothing and is taken as signed."""
    assert consistency_proof(big_tree(), 0, 5) == []
    verify_consistency(0, 5, [], empty_root(), big_root(5))
    verify_consistency(0, 0, [], empty_root(), empty_root())


def test_consistency_from_empty_tree_with_wrong_old_root_fail() -> None:
    with pytest.raises(ConsistencyProofError, match="old root check failed"):
        verify_consistency(0, 5, [], big_root(1), big_root(5))
    with pytest.raises(ConsistencyProofError, match="new root check failed"):
        verify_consistency(0, 0, [], empty_root(), big_root(1))


def test_consistency_from_empty_tree_with_proof_fail() -> None:
    with pytest.raises(ProofLengthError, match="exactly 0 hashes"):
        verify_consistency(0, 5, [big_root(5)], empty_root(), big_root(5))


def test_consistency_of_equal_sizes() -> None:
    assert consistency_proof(big_tree(), 7, 7) == []
    verify_consistency(7, 7, [], big_root(7), big_root(7))


def test_consistency_of_equal_sizes_with_different_roots_fail() -> None:
    with pytest.raises(ConsistencyProofError, match="same size 7 must have the same root"):
        verify_consistency(7, 7, [], big_root(7), flip(big_root(7), 0))


def test_consistency_of_equal_sizes_with_proof_fail() -> None:
    with pytest.raises(ProofLengthError, match="exactly 0 hashes"):
        verify_consistency(7, 7, [big_root(7)], big_root(7), big_root(7))


def test_consistency_old_larger_than_new_fail() -> None:
    with pytest.raises(ProofBoundsError, match="never shrinks"):
        consistency_proof(big_tree(), 8, 7)
    with pytest.raises(ProofBoundsError, match="never shrinks"):
        verify_consistency(8, 7, [], big_root(8), big_root(7))


@pytest.mark.parametrize(("old", "new"), [(-1, 5), (0, MAX_TREE_SIZE + 1)])
def test_consistency_sizes_out_of_range_fail(old: int, new: int) -> None:
    with pytest.raises(ProofBoundsError):
        consistency_proof(big_tree(), old, new)
    with pytest.raises(ProofBoundsError):
        verify_consistency(old, new, [], empty_root(), empty_root())


def test_consistency_malformed_hash_fail() -> None:
    proof = consistency_proof(big_tree(), 3, 7)
    with pytest.raises(HashLengthError, match="consistency proof hash #1"):
        verify_consistency(3, 7, [proof[0], proof[1][:31], *proof[2:]], big_root(3), big_root(7))
    with pytest.raises(HashLengthError, match="old root"):
        verify_consistency(3, 7, proof, big_root(3).hex().encode()[:33], big_root(7))


# --- generation reads O(log n) nodes ---------------------------------------------------


class CountingSource:
    def __init__(self, inner: MemoryHashSource) -> None:
        self.inner = inner
        self.reads = 0

    def node(self, level: int, index: int) -> bytes:
        self.reads += 1
        return self.inner.node(level, index)


def read_budget(size: int) -> int:
    """Two reads per level: a proof has at most one incomplete subtree, costing one read per
    set bit of its width; every other subtree is one read."""
    return 2 * math.ceil(math.log2(size)) + 2 if size > 1 else 0


@given(st.integers(min_value=1, max_value=HUGE), st.data())
def test_proof_generation_reads_logarithmic_nodes(size: int, data: st.DataObject) -> None:
    counting = CountingSource(huge_tree())
    index = data.draw(st.integers(min_value=0, max_value=size - 1))
    inclusion_proof(counting, index, size)
    assert counting.reads <= read_budget(size)
    counting.reads = 0
    consistency_proof(counting, index, size)
    assert counting.reads <= read_budget(size)


@pytest.mark.parametrize("size", [HUGE, 2**16 - 1, 2**16 + 1, 0b10111111111111111, 99_999])
def test_proof_generation_reads_logarithmic_nodes_worst_shapes(size: int) -> None:
    counting = CountingSource(huge_tree())
    for index in (0, 1, size // 3, size // 2, size - 2, size - 1):
        counting.reads = 0
        inclusion_proof(counting, index, size)
        assert counting.reads <= read_budget(size)
        counting.reads = 0
        consistency_proof(counting, index, size)
        assert counting.reads <= read_budget(size)
