"""attest.lifecycle_chain: steps 3.5 (full) and 4.6 (partial) on chain marks, one attack per
test (the bundles behind them: tests/tamper/test_semantics.py)."""

from __future__ import annotations

import pytest

from registre.attest.entries import (
    EMPTY_LIFECYCLE,
    ChainMark,
    LifecycleAnchorMissingError,
    LifecycleHead,
    LifecycleHeadMismatchError,
    LifecycleOmittedError,
    check_lifecycle_chain,
)
from registre.attest.tree import leaf_hash


def honest(lifecycle: list[bool], *, legacy: int = 0) -> list[ChainMark]:
    """Marks of entries 0.. (``lifecycle[seq]``: a lifecycle entry), each signing the chain
    of the lifecycle entries before it; the first ``legacy`` entries sign none."""
    marks, running = [], EMPTY_LIFECYCLE
    for seq, is_lifecycle in enumerate(lifecycle):
        leaf = leaf_hash(f"entry {seq}".encode())
        marks.append(ChainMark(seq, is_lifecycle, leaf, None if seq < legacy else running))
        running = running.extend(leaf) if is_lifecycle else running
    return marks


@pytest.mark.parametrize("full", [True, False], ids=["full", "partial"])
def test_honest_chain_passes(full: bool) -> None:
    marks = honest([True, False, True, True, False])
    sentence, head = check_lifecycle_chain(marks, full=full, tree_size=5)
    assert head is not None and head.count == 3
    assert head == marks[-1].signed
    assert "3 lifecycle entries" in sentence


@pytest.mark.parametrize(
    ("full", "error"),
    [(True, LifecycleHeadMismatchError), (False, LifecycleOmittedError)],
    ids=["full", "partial"],
)
def test_lifecycle_entry_replaced_by_one_of_the_same_count_fail(
    full: bool, error: type[Exception]
) -> None:
    """The bundle holds another lifecycle entry at seq 2 than the one the later entries
    signed after: the count of lifecycle entries is right, the chain's hash is not."""
    marks = honest([True, False, True, False])
    marks[2] = ChainMark(2, True, leaf_hash(b"another entry"), marks[2].signed)
    with pytest.raises(error, match="entry seq 3 signs a lifecycle head of 2 entr"):
        check_lifecycle_chain(marks, full=full, tree_size=4)


@pytest.mark.parametrize("full", [True, False], ids=["full", "partial"])
def test_lifecycle_head_forged_with_the_right_count_fail(full: bool) -> None:
    marks = honest([True, True, False])
    assert marks[2].signed is not None and marks[2].signed.count == 2
    marks[2] = ChainMark(2, False, marks[2].leaf_hash, LifecycleHead(2, bytes(32)))
    error = LifecycleHeadMismatchError if full else LifecycleOmittedError
    with pytest.raises(error, match="entry seq 2"):
        check_lifecycle_chain(marks, full=full, tree_size=3)


def test_partial_bundle_with_a_legacy_anchor_fail() -> None:
    """A partial bundle of legacy entries only: its last entry signs no lifecycle head, so
    nothing proves that every lifecycle entry was disclosed (a retraction may be hidden)."""
    marks = honest([True, False, True], legacy=3)
    with pytest.raises(LifecycleAnchorMissingError, match=r"at seq 2, the last .* is legacy"):
        check_lifecycle_chain(marks, full=False, tree_size=3)
    # a full bundle of the same entries needs no anchor: it holds every entry
    sentence, head = check_lifecycle_chain(marks, full=True, tree_size=3)
    assert head is None and "legacy" in sentence


def test_partial_bundle_without_its_last_entry_fail() -> None:
    marks = honest([True, False, True, False])[:3]
    with pytest.raises(LifecycleAnchorMissingError, match=r"at seq 3, .* is not disclosed"):
        check_lifecycle_chain(marks, full=False, tree_size=4)
