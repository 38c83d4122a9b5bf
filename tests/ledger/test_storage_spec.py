"""specs/storage.md section 10: the worked example is what the ledger really stores."""

from __future__ import annotations

import base64
import re
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

import pytest

import registre.attest.entries.batch
import registre.attest.entries.entry
from registre.attest.entries import open_entry
from registre.attest.notes import Signer, Verifier
from registre.attest.tree import node_hash
from registre.ledger.ledger import Ledger
from tests.ledger.helpers import dump

SPEC = Path(__file__).resolve().parents[2] / "specs" / "storage.md"
TIMES = ["2026-11-30T08:30:18.123456Z", "2026-11-30T08:30:19.000001Z"]


class Example(NamedTuple):
    vkey: str
    leaves: list[bytes]
    leaf_hashes: list[bytes]
    subtrees: list[tuple[int, int, bytes]]
    root: bytes


def example() -> Example:
    section = SPEC.read_text(encoding="utf-8").split("## 10. Worked example", 1)[1]
    blocks = re.findall(r"```text\n(.*?)```", section, re.DOTALL)
    vkey = blocks[0].strip()
    leaves = [line.encode() for line in blocks[1].strip().splitlines()]
    leaf_hashes = [bytes.fromhex(line) for line in blocks[2].strip().splitlines()]
    subtrees = []
    for line in blocks[3].strip().splitlines():
        level, index, digest = line.split()
        subtrees.append((int(level), int(index), bytes.fromhex(digest)))
    root = re.search(r"`([A-Za-z0-9+/]{43}=)` in base64", section)
    assert root is not None
    return Example(vkey, leaves, leaf_hashes, subtrees, base64.b64decode(root.group(1)))


@pytest.fixture
def fixed_times(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    times = iter(TIMES)

    def fixed(moment: object = None) -> str:
        return next(times)

    monkeypatch.setattr(registre.attest.entries.entry, "format_time", fixed)
    monkeypatch.setattr(registre.attest.entries.batch, "format_time", fixed)  # the append path
    yield


def computed_node(level: int, index: int, leaves: list[bytes]) -> bytes:
    hashes = leaves[index << level : (index + 1) << level]
    while len(hashes) > 1:
        hashes = [node_hash(hashes[k], hashes[k + 1]) for k in range(0, len(hashes), 2)]
    return hashes[0]


def test_worked_example_is_what_the_store_holds(db_url: str, fixed_times: None) -> None:
    vkey, leaves, leaf_hashes, subtrees, root = example()
    signer = Signer.from_seed("example.com/ledger", bytes(range(32)))
    assert signer.vkey() == vkey
    with Ledger.open(db_url, signer) as ledger:
        thread = ledger.create_thread("q3-review")
        thread.append("turn", {"role": "user", "text": "Reconcile the Q3 figures."}, "alice")
        thread.append("turn", {"role": "assistant", "text": "Reading the extract."}, "agent")
        rows = dump(ledger.engine)
        consistency = thread.prove_consistency(1).hashes  # a node computed from leaf_hash
    assert [row[2] for row in rows["entry"]] == leaves
    assert [row[3] for row in rows["entry"]] == leaf_hashes
    assert rows["subtree"] == []  # the level-1 node of the example is computed, not stored
    assert consistency == [leaf_hashes[1]]
    assert [computed_node(level, index, leaf_hashes) for level, index, _ in subtrees] == [
        digest for _, _, digest in subtrees
    ]
    ((_, _, size, head_root, frontier, _, bound),) = rows["thread"]
    assert (size, head_root, frontier, bound) == (2, root, root, vkey)


def test_worked_example_leaves_verify_with_the_published_key() -> None:
    found = example()
    for seq, leaf in enumerate(found.leaves):
        entry = open_entry(leaf, [Verifier.from_vkey(found.vkey)])
        assert entry.seq == seq and entry.leaf_hash == found.leaf_hashes[seq]
    assert found.subtrees == [(1, 0, node_hash(*found.leaf_hashes))]
    assert found.root == found.subtrees[0][2]
