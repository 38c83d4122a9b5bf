"""attest.merkle: RFC 9162 hashing, the frontier, stored subtrees and earlier roots."""

from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registre.attest.errors import ProofBoundsError
from registre.attest.tree import (
    HASH_SIZE,
    MAX_TREE_SIZE,
    CompactRange,
    CompactRangeError,
    HashLengthError,
    MemoryHashSource,
    check_size,
    empty_root,
    leaf_hash,
    node_hash,
    root_at,
)
from registre.errors import MalformedError

VECTORS = json.loads(
    (Path(__file__).parents[3] / "specs" / "vectors" / "merkle-rfc9162.json").read_text()
)
VECTOR_LEAVES = [bytes.fromhex(x) for x in VECTORS["leaf_inputs_hex"]]


def reference_root(leaves: list[bytes]) -> bytes:
    """MTH(D[n]) written straight from RFC 9162 §2.1.1, recursive and slow on purpose."""
    if not leaves:
        return hashlib.sha256(b"").digest()
    if len(leaves) == 1:
        return hashlib.sha256(b"\x00" + leaves[0]).digest()
    k = 1
    while k * 2 < len(leaves):
        k *= 2
    left, right = reference_root(leaves[:k]), reference_root(leaves[k:])
    return hashlib.sha256(b"\x01" + left + right).digest()


class DictHashSource:
    """What a store keeps: only the (level, index) -> hash triples CompactRange.append reports."""

    def __init__(self) -> None:
        self.nodes: dict[tuple[int, int], bytes] = {}

    def node(self, level: int, index: int) -> bytes:
        return self.nodes[(level, index)]


def leaf_data(count: int, salt: bytes = b"") -> list[bytes]:
    return [salt + i.to_bytes(4, "big") for i in range(count)]


# --- hashing ---------------------------------------------------------------------------


def test_empty_root_is_sha256_of_nothing() -> None:
    assert empty_root() == hashlib.sha256(b"").digest()
    assert empty_root().hex() == VECTORS["roots_hex_by_size"]["0"]


@given(st.binary(max_size=300))
def test_leaf_hash_prefixes_0x00(data: bytes) -> None:
    assert leaf_hash(data) == hashlib.sha256(b"\x00" + data).digest()


@given(st.binary(min_size=32, max_size=32), st.binary(min_size=32, max_size=32))
def test_node_hash_prefixes_0x01_and_differs_from_leaf_of_same_bytes(
    left: bytes, right: bytes
) -> None:
    assert node_hash(left, right) == hashlib.sha256(b"\x01" + left + right).digest()
    assert node_hash(left, right) != leaf_hash(left + right)


@pytest.mark.parametrize(("left", "right"), [(b"\x00" * 31, b"\x00" * 32), (b"\x00" * 32, b"")])
def test_node_hash_of_wrong_length_child_fail(left: bytes, right: bytes) -> None:
    with pytest.raises(HashLengthError, match="32 bytes"):
        node_hash(left, right)


def test_vector_leaf_hashes() -> None:
    assert [leaf_hash(d).hex() for d in VECTOR_LEAVES] == VECTORS["leaf_hashes_hex"]


def test_vector_roots_by_size() -> None:
    source = MemoryHashSource(leaf_hash(d) for d in VECTOR_LEAVES)
    frontier = CompactRange()
    assert frontier.root().hex() == VECTORS["roots_hex_by_size"]["0"]
    for size, data in enumerate(VECTOR_LEAVES, start=1):
        frontier.append(leaf_hash(data))
        expected = VECTORS["roots_hex_by_size"][str(size)]
        assert frontier.root().hex() == expected
        assert root_at(source, size).hex() == expected
    assert source.root().hex() == VECTORS["roots_hex_by_size"]["8"]


# --- the frontier ----------------------------------------------------------------------


@given(st.lists(st.binary(max_size=40), max_size=130))
def test_frontier_and_memory_roots_match_rfc_definition(leaves: list[bytes]) -> None:
    frontier = CompactRange()
    source = MemoryHashSource()
    for data in leaves:
        frontier.append(leaf_hash(data))
        source.append(leaf_hash(data))
    assert frontier.size == source.size == len(leaves)
    assert frontier.root() == source.root() == reference_root(leaves)
    assert len(frontier.hashes()) == len(leaves).bit_count()


@given(st.integers(min_value=0, max_value=300), st.binary(max_size=4))
def test_append_reports_exactly_the_completed_subtrees(count: int, salt: bytes) -> None:
    frontier = CompactRange()
    store = DictHashSource()
    memory = MemoryHashSource()
    for index, data in enumerate(leaf_data(count, salt)):
        completed = frontier.append(leaf_hash(data))
        memory.append(leaf_hash(data))
        # Level 0 is the leaf itself, then one more level per trailing 1-bit of the index.
        assert completed[0] == (0, index, leaf_hash(data))
        assert [level for level, _, _ in completed] == list(range(len(completed)))
        assert len(completed) == 1 + ((index + 1) & -(index + 1)).bit_length() - 1
        for level, node_index, value in completed:
            assert (node_index + 1) << level == index + 1  # the subtree ends at this leaf
            assert value == memory.node(level, node_index)
            assert (level, node_index) not in store.nodes
            store.nodes[(level, node_index)] = value
    # What was reported is enough to rebuild every earlier root.
    for size in range(count + 1):
        assert root_at(store, size) == root_at(memory, size)


@given(st.integers(min_value=0, max_value=600), st.integers(min_value=0, max_value=20))
def test_restored_frontier_continues_identically(size: int, more: int) -> None:
    original = CompactRange()
    for data in leaf_data(size):
        original.append(leaf_hash(data))
    restored = CompactRange.restore(size, original.hashes())
    assert restored.size == size
    assert restored.root() == original.root()
    for data in leaf_data(more, b"more"):
        assert restored.append(leaf_hash(data)) == original.append(leaf_hash(data))
    assert restored.root() == original.root()


@pytest.mark.parametrize(("size", "count"), [(0, 1), (1, 0), (5, 1), (5, 3), (8, 2), (7, 2)])
def test_restore_with_wrong_hash_count_fail(size: int, count: int) -> None:
    with pytest.raises(CompactRangeError, match=f"exactly {size.bit_count()} hashes"):
        CompactRange.restore(size, [b"\x00" * HASH_SIZE] * count)


def test_restore_with_short_hash_fail() -> None:
    with pytest.raises(HashLengthError, match="frontier hash #1"):
        CompactRange.restore(3, [b"\x00" * 32, b"\x00" * 31])


@pytest.mark.parametrize("size", [-1, MAX_TREE_SIZE + 1])
def test_restore_with_size_out_of_range_fail(size: int) -> None:
    with pytest.raises(ProofBoundsError):
        CompactRange.restore(size, [])


def test_restore_with_non_integer_size_fail() -> None:
    with pytest.raises(MalformedError, match="integer"):
        CompactRange.restore(True, [b"\x00" * 32])


def test_hashes_is_a_copy() -> None:
    frontier = CompactRange()
    frontier.append(leaf_hash(b"a"))
    frontier.hashes().clear()
    assert frontier.hashes() == [leaf_hash(b"a")]


@given(st.integers(min_value=0, max_value=300), st.integers(min_value=1, max_value=20))
def test_copy_is_independent_of_its_original(size: int, more: int) -> None:
    original = CompactRange()
    for data in leaf_data(size):
        original.append(leaf_hash(data))
    before = (original.size, original.root(), original.hashes())
    twin = original.copy()
    assert (twin.size, twin.root(), twin.hashes()) == before
    # Appending to the original leaves the copy at the tree it was taken from ...
    for data in leaf_data(more, b"original"):
        original.append(leaf_hash(data))
    assert (twin.size, twin.root(), twin.hashes()) == before
    # ... and appending to the copy grows it exactly as the same leaves grow a fresh tree.
    expected = CompactRange.restore(before[0], before[2])
    for data in leaf_data(more, b"twin"):
        assert twin.append(leaf_hash(data)) == expected.append(leaf_hash(data))
    assert (twin.size, twin.root()) == (expected.size, expected.root())
    assert original.root() != twin.root()
    assert original.size == twin.size == size + more


def test_copy_of_empty_frontier_has_the_empty_root() -> None:
    twin = CompactRange().copy()
    assert (twin.size, twin.root(), twin.hashes()) == (0, empty_root(), [])


# --- the documented maximum size -------------------------------------------------------


def test_max_tree_size_is_the_documented_2_to_the_62() -> None:
    assert MAX_TREE_SIZE == 2**62 == 4_611_686_018_427_387_904


def test_check_size_accepts_exactly_2_to_the_62() -> None:
    assert check_size(2**62, "tree size") == 2**62


@pytest.mark.parametrize("size", [2**62 + 1, 2**63, -1])
def test_check_size_beyond_2_to_the_62_fail(size: int) -> None:
    with pytest.raises(ProofBoundsError, match=f"tree size {size} is outside"):
        check_size(size, "tree size")


class OneSubtreeSource:
    """A tree of 2**62 leaves as a store would answer for its root: the one complete subtree."""

    def __init__(self, top: bytes) -> None:
        self.top = top
        self.reads: list[tuple[int, int]] = []

    def node(self, level: int, index: int) -> bytes:
        self.reads.append((level, index))
        if (level, index) != (62, 0):
            raise ProofBoundsError(f"no complete subtree ({level}, {index}) held")
        return self.top


def test_root_and_frontier_at_exactly_2_to_the_62() -> None:
    top = leaf_hash(b"the one subtree of 2**62 leaves")
    source = OneSubtreeSource(top)
    assert root_at(source, 2**62) == top
    assert source.reads == [(62, 0)]
    frontier = CompactRange.restore(2**62, [top])
    assert (frontier.size, frontier.root(), frontier.hashes()) == (2**62, top, [top])
    with pytest.raises(ProofBoundsError, match="outside"):
        root_at(source, 2**62 + 1)


@pytest.mark.parametrize("bad", [b"\x00" * 31, b"\x00" * 33, bytearray(32), "0" * 32])
def test_append_of_non_hash_fail_and_changes_nothing(bad: object) -> None:
    frontier = CompactRange()
    frontier.append(leaf_hash(b"a"))
    memory = MemoryHashSource([leaf_hash(b"a")])
    with pytest.raises(HashLengthError, match="leaf hash"):
        frontier.append(bad)  # type: ignore[arg-type]
    with pytest.raises(HashLengthError, match="leaf hash"):
        memory.append(bad)  # type: ignore[arg-type]
    assert frontier.size == memory.size == 1
    assert frontier.root() == memory.root() == leaf_hash(b"a")


# --- stored subtrees and earlier roots -------------------------------------------------


def test_memory_source_refuses_incomplete_subtree() -> None:
    source = MemoryHashSource(leaf_hash(d) for d in leaf_data(5))
    assert source.node(2, 0) == reference_root(leaf_data(4))
    for level, index in [(0, 5), (1, 2), (2, 1), (3, 0), (-1, 0), (0, -1)]:
        with pytest.raises(ProofBoundsError, match="no complete subtree"):
            source.node(level, index)


def test_root_at_beyond_the_tree_fail() -> None:
    source = MemoryHashSource(leaf_hash(d) for d in leaf_data(5))
    with pytest.raises(ProofBoundsError):
        root_at(source, 6)


@pytest.mark.parametrize("size", [-1, MAX_TREE_SIZE + 1])
def test_root_at_size_out_of_range_fail(size: int) -> None:
    with pytest.raises(ProofBoundsError, match="outside"):
        root_at(MemoryHashSource(), size)


class CountingSource:
    def __init__(self, inner: MemoryHashSource) -> None:
        self.inner = inner
        self.reads = 0

    def node(self, level: int, index: int) -> bytes:
        self.reads += 1
        return self.inner.node(level, index)


@given(st.lists(st.binary(max_size=8), max_size=200), st.data())
def test_root_at_reads_one_node_per_set_bit(leaves: list[bytes], data: st.DataObject) -> None:
    counting = CountingSource(MemoryHashSource(leaf_hash(d) for d in leaves))
    size = data.draw(st.integers(min_value=0, max_value=len(leaves)))
    assert root_at(counting, size) == reference_root(leaves[:size])
    assert counting.reads == size.bit_count()
