"""The RFC 9162 tree beside pymerkle 7 (InmemoryTree, RFC 9162 hashing) on the same data.

Each group ("append n=1000", "inclusion prove n=100000", ...) holds the registre and the
pymerkle measurement for one operation and one tree size, from ``bench_sizes()``.

- append: build a tree of n leaves from nothing, leaf hashing included (pymerkle's
  ``append_entry`` hashes the data itself); the rate is n / time. ``CompactRange`` is what the
  ledger runs per entry; ``MemoryHashSource`` keeps every subtree, as pymerkle's tree does.
- root: the current root (remembered by ``CompactRange`` after the first call, kept up to
  date on every append by pymerkle; computed by ``root_at`` from stored subtrees), and the
  root at an earlier size.
- prove / verify: one proof per call, cycling through 256 random queries against the tree of
  n leaves (consistency: from a random earlier size to n).

Trees are built once per size per module. Issue goals: append >= 1.5x pymerkle's rate,
proof generation >= 2x.
"""

from __future__ import annotations

import functools
import itertools
import random
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import pymerkle  # type: ignore[import-untyped]
import pytest

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
from tests.benchmarks.conftest import bench_sizes

SIZES = bench_sizes()
QUERIES = 256
T = TypeVar("T")

size_params = pytest.mark.parametrize("n", SIZES, ids=[f"n={n}" for n in SIZES])


@functools.cache
def entries(n: int) -> list[bytes]:
    """n distinct leaf inputs of ~64 bytes (a small ledger entry's order of size)."""
    return [b"%08d" % i + b"\x5a" * 56 for i in range(n)]


@functools.cache
def our_tree(n: int) -> MemoryHashSource:
    return MemoryHashSource(leaf_hash(e) for e in entries(n))


@functools.cache
def our_frontier(n: int) -> CompactRange:
    frontier = CompactRange()
    for e in entries(n):
        frontier.append(leaf_hash(e))
    return frontier


@functools.cache
def their_tree(n: int) -> Any:
    tree = pymerkle.InmemoryTree(algorithm="sha256")
    for e in entries(n):
        tree.append_entry(e)
    return tree


@functools.cache
def leaf_queries(n: int) -> list[int]:
    rng = random.Random(n)
    return [rng.randrange(n) for _ in range(QUERIES)]


@functools.cache
def old_sizes(n: int) -> list[int]:
    rng = random.Random(-n)
    return [rng.randrange(1, n) for _ in range(QUERIES)]


def cycling(items: list[T]) -> Callable[[], T]:
    iterator: Iterator[T] = itertools.cycle(items)
    return functools.partial(next, iterator)


def build_rounds(n: int) -> int:
    return max(1, min(30, 300_000 // n))


# --- append ----------------------------------------------------------------------------


@size_params
def test_append_registre_compact_range(benchmark: Any, n: int) -> None:
    benchmark.group = f"append n={n}"
    data = entries(n)

    def build() -> CompactRange:
        frontier = CompactRange()
        append = frontier.append
        for e in data:
            append(leaf_hash(e))
        return frontier

    frontier = benchmark.pedantic(build, rounds=build_rounds(n), iterations=1)
    assert frontier.root() == our_frontier(n).root()


@size_params
def test_append_and_root_registre_compact_range(benchmark: Any, n: int) -> None:
    """The ledger's pattern: every append is followed by reading the new root (pymerkle's
    append also brings its root up to date)."""
    benchmark.group = f"append n={n}"
    data = entries(n)

    def build() -> CompactRange:
        frontier = CompactRange()
        append, root = frontier.append, frontier.root
        for e in data:
            append(leaf_hash(e))
            root()
        return frontier

    frontier = benchmark.pedantic(build, rounds=build_rounds(n), iterations=1)
    assert frontier.root() == our_frontier(n).root()


@size_params
def test_append_registre_memory(benchmark: Any, n: int) -> None:
    benchmark.group = f"append n={n}"
    data = entries(n)

    def build() -> MemoryHashSource:
        source = MemoryHashSource()
        append = source.append
        for e in data:
            append(leaf_hash(e))
        return source

    source = benchmark.pedantic(build, rounds=build_rounds(n), iterations=1)
    assert source.size == n


@size_params
def test_append_pymerkle(benchmark: Any, n: int) -> None:
    benchmark.group = f"append n={n}"
    data = entries(n)

    def build() -> Any:
        tree = pymerkle.InmemoryTree(algorithm="sha256")
        append = tree.append_entry
        for e in data:
            append(e)
        return tree

    tree = benchmark.pedantic(build, rounds=build_rounds(n), iterations=1)
    assert tree.get_size() == n


# --- roots -----------------------------------------------------------------------------


@size_params
def test_root_registre_compact_range(benchmark: Any, n: int) -> None:
    benchmark.group = f"root n={n}"
    assert benchmark(our_frontier(n).root) == their_tree(n).get_root()


@size_params
def test_root_registre_memory(benchmark: Any, n: int) -> None:
    benchmark.group = f"root n={n}"
    assert benchmark(root_at, our_tree(n), n) == their_tree(n).get_root()


@size_params
def test_root_pymerkle(benchmark: Any, n: int) -> None:
    benchmark.group = f"root n={n}"
    assert benchmark(their_tree(n).get_root) == our_frontier(n).root()


@size_params
def test_earlier_root_registre(benchmark: Any, n: int) -> None:
    benchmark.group = f"root at an earlier size n={n}"
    next_size = cycling(old_sizes(n))
    source = our_tree(n)
    benchmark(lambda: root_at(source, next_size()))


@size_params
def test_earlier_root_pymerkle(benchmark: Any, n: int) -> None:
    benchmark.group = f"root at an earlier size n={n}"
    next_size = cycling(old_sizes(n))
    tree = their_tree(n)
    benchmark(lambda: tree.get_root(next_size()))


# --- inclusion proofs ------------------------------------------------------------------


@size_params
def test_inclusion_prove_registre(benchmark: Any, n: int) -> None:
    benchmark.group = f"inclusion prove n={n}"
    next_index = cycling(leaf_queries(n))
    source = our_tree(n)
    proof = benchmark(lambda: inclusion_proof(source, next_index(), n))
    assert len(proof) >= 1


@size_params
def test_inclusion_prove_pymerkle(benchmark: Any, n: int) -> None:
    benchmark.group = f"inclusion prove n={n}"
    next_index = cycling(leaf_queries(n))
    tree = their_tree(n)
    benchmark(lambda: tree.prove_inclusion(next_index() + 1, n))


@size_params
def test_inclusion_verify_registre(benchmark: Any, n: int) -> None:
    benchmark.group = f"inclusion verify n={n}"
    source, root = our_tree(n), our_frontier(n).root()
    cases = [(source.node(0, i), i, inclusion_proof(source, i, n)) for i in leaf_queries(n)]
    next_case = cycling(cases)

    def verify() -> None:
        leaf, index, proof = next_case()
        verify_inclusion(leaf, index, n, proof, root)

    benchmark(verify)


@size_params
def test_inclusion_verify_pymerkle(benchmark: Any, n: int) -> None:
    benchmark.group = f"inclusion verify n={n}"
    tree = their_tree(n)
    root = tree.get_root()
    cases = [(tree.get_leaf(i + 1), tree.prove_inclusion(i + 1, n)) for i in leaf_queries(n)]
    next_case = cycling(cases)

    def verify() -> None:
        leaf, proof = next_case()
        pymerkle.verify_inclusion(leaf, root, proof)

    benchmark(verify)


# --- consistency proofs ----------------------------------------------------------------


@size_params
def test_consistency_prove_registre(benchmark: Any, n: int) -> None:
    benchmark.group = f"consistency prove n={n}"
    next_old = cycling(old_sizes(n))
    source = our_tree(n)
    benchmark(lambda: consistency_proof(source, next_old(), n))


@size_params
def test_consistency_prove_pymerkle(benchmark: Any, n: int) -> None:
    benchmark.group = f"consistency prove n={n}"
    next_old = cycling(old_sizes(n))
    tree = their_tree(n)
    benchmark(lambda: tree.prove_consistency(next_old(), n))


@size_params
def test_consistency_verify_registre(benchmark: Any, n: int) -> None:
    benchmark.group = f"consistency verify n={n}"
    source, root = our_tree(n), our_frontier(n).root()
    cases = [(m, consistency_proof(source, m, n), root_at(source, m)) for m in old_sizes(n)]
    next_case = cycling(cases)

    def verify() -> None:
        old, proof, old_root = next_case()
        verify_consistency(old, n, proof, old_root, root)

    benchmark(verify)


@size_params
def test_consistency_verify_pymerkle(benchmark: Any, n: int) -> None:
    benchmark.group = f"consistency verify n={n}"
    tree = their_tree(n)
    root = tree.get_root()
    cases = [(tree.get_root(m), tree.prove_consistency(m, n)) for m in old_sizes(n)]
    next_case = cycling(cases)

    def verify() -> None:
        old_root, proof = next_case()
        pymerkle.verify_consistency(old_root, root, proof)

    benchmark(verify)
