"""The thread's tree beside pymerkle: same roots, and a clear "not installed" without it."""

from __future__ import annotations

import sys

import pytest

from registre.attest.notes import Signer
from registre.bench import InvestigationConfig, policy_for, record_investigation
from registre.bench.merkle_side import TreeMismatchError, compare_trees
from registre.ledger.ledger import Ledger
from registre.ledger.thread import Thread


@pytest.fixture(scope="module")
def thread(tmp_path_factory: pytest.TempPathFactory) -> Thread:
    folder = tmp_path_factory.mktemp("merkle")
    ledger = Ledger.open(str(folder / "l.db"), Signer.from_seed("bench.test", bytes(32)))
    recorded = ledger.create_thread("investigation")
    record_investigation(recorded, InvestigationConfig(100, 1, policy_for(8000)))
    return recorded


def _batches(thread: Thread) -> list[list[bytes]]:
    leaves = [entry.leaf for entry in thread.entries()]
    return [leaves[:37], leaves[37:]]


def test_both_trees_are_the_threads_tree(thread: Thread) -> None:
    pytest.importorskip("pymerkle")
    result = compare_trees(thread, _batches(thread), samples=20)
    assert result["leaves"] == thread.head().size
    assert set(result["theirs"]) == {"build_s", "inclusion_s", "consistency_s"}


def test_without_pymerkle_it_says_not_installed(
    thread: Thread, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setitem(sys.modules, "pymerkle", None)  # import pymerkle now raises
    result = compare_trees(thread, _batches(thread), samples=5)
    assert result["pymerkle"] == "not installed" and "theirs" not in result


def test_leaves_of_another_tree_are_refused(thread: Thread) -> None:
    leaves = [entry.leaf for entry in thread.entries()]
    with pytest.raises(TreeMismatchError, match="do not make the tree of thread"):
        compare_trees(thread, [leaves[:-1]], samples=5)
