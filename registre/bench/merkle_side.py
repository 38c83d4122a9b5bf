"""The thread's Merkle tree beside pymerkle, on the thread's own leaves.

``pymerkle`` (a test extra) is an independent RFC 9162 implementation. Given the leaves of a
recorded thread, :func:`compare_trees` builds both trees in memory and times, side by side:
building the tree (leaf hashing included), inclusion proofs and consistency proofs for the
same sampled indices, and checks that both roots equal the thread's signed head root. Proofs
from the ledger's store (``Thread.prove_inclusion``, O(log n) stored hashes read from the
database) are timed too, as the path an auditor's request takes. When pymerkle cannot be
imported the comparison says ``"not installed"`` instead of failing.
"""

from __future__ import annotations

import random
import time
from collections.abc import Iterable, Sequence
from importlib.metadata import PackageNotFoundError, version
from typing import TYPE_CHECKING, Any

from registre.attest.tree import MemoryHashSource, consistency_proof, inclusion_proof, leaf_hash
from registre.errors import VerificationError

if TYPE_CHECKING:
    from registre.ledger import Thread

__all__ = ["TreeMismatchError", "compare_trees", "pymerkle_version"]


class TreeMismatchError(VerificationError):
    """The leaves given, or pymerkle's tree of them, do not make the thread's signed tree:
    the comparison would be about another tree, so it is not reported."""


def pymerkle_version() -> str | None:
    """pymerkle's version, or None when it is not installed."""
    try:
        import pymerkle  # type: ignore[import-untyped]  # noqa: F401
    except ImportError:
        return None
    try:
        return version("pymerkle")
    except PackageNotFoundError:
        return "unknown version"


def compare_trees(
    thread: Thread, leaves: Iterable[Sequence[bytes]], *, samples: int = 200, seed: int = 0
) -> dict[str, Any]:
    """Times (seconds per operation, or per tree for ``build``) of ours and pymerkle's over
    ``leaves`` (the thread's leaf bytes, in batches, seq order). Raises
    TreeMismatchError if a root differs from the thread's head root.
    """
    version = pymerkle_version()
    theirs: Any = None
    if version is not None:
        import pymerkle

        theirs = pymerkle.InmemoryTree(algorithm="sha256")
    ours = MemoryHashSource()
    ours_build = theirs_build = 0.0
    for batch in leaves:
        start = time.perf_counter()
        ours.extend(leaf_hash(leaf) for leaf in batch)
        ours_build += time.perf_counter() - start
        if theirs is not None:
            append = theirs.append_entry
            start = time.perf_counter()
            for leaf in batch:
                append(leaf)
            theirs_build += time.perf_counter() - start
    size = ours.size
    head = thread.head()
    if size != head.size or ours.root() != head.root:
        raise TreeMismatchError(
            f"the {size} leaves given do not make the tree of thread {thread.id} "
            f"({head.size} entries): pass every leaf of the thread, in seq order"
        )
    rng = random.Random(seed)
    indices = [rng.randrange(size) for _ in range(samples)]
    olds = [rng.randrange(1, size) if size > 1 else 1 for _ in range(samples)]
    result: dict[str, Any] = {
        "leaves": size,
        "pymerkle": version or "not installed",
        "ours": {
            "build_s": ours_build,
            "inclusion_s": _mean(lambda i: inclusion_proof(ours, i, size), indices),
            "consistency_s": _mean(lambda m: consistency_proof(ours, m, size), olds),
            "stored_inclusion_s": _mean(lambda i: thread.prove_inclusion(i, size), indices[:50]),
        },
    }
    if theirs is not None:
        if theirs.get_root() != head.root:
            raise TreeMismatchError(
                f"pymerkle's root of thread {thread.id} is not the signed root: one of the two "
                "trees is not RFC 9162"
            )
        result["theirs"] = {
            "build_s": theirs_build,
            "inclusion_s": _mean(lambda i: theirs.prove_inclusion(i + 1, size), indices),
            "consistency_s": _mean(lambda m: theirs.prove_consistency(m, size), olds),
        }
    return result


def _mean(operation: Any, arguments: Sequence[int]) -> float:
    start = time.perf_counter()
    for argument in arguments:
        operation(argument)
    return (time.perf_counter() - start) / max(1, len(arguments))
