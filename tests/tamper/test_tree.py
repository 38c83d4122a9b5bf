"""Attacks on the tree and its proofs (THREATS rows 1, 3, 8, 9, 13): mostly partial bundles,
where the verifier must rely on proofs and take every size from signed data."""

from __future__ import annotations

import base64
import json

from registre.attest.bundles import (
    PROOFS_MEMBER,
    CompressionRatioError,
    MissingMemberError,
    ProofsFormatError,
    ZipLimits,
    checkpoint_member,
)
from registre.attest.canonical_json import InvalidUTF8Error, canonical_bytes
from registre.attest.entries import sign_entry
from registre.attest.errors import InclusionProofError, ProofLengthError
from registre.attest.tree import inclusion_proof, leaf_hash, node_hash, root_at, verify_inclusion
from registre.attest.verify import (
    CheckpointConsistencyError,
    CheckpointNameError,
    CheckpointRootMismatchError,
    DisclosedSeqMismatchError,
    MissingProofError,
    PrevRootMismatchError,
)
from tests.bundles import LOG, TIME, Thread, build_thread, members, rezip
from tests.tamper.helpers import fails, passes, with_entry_lines


def proofs_of(bundle: bytes) -> dict[str, list[dict[str, object]]]:
    document: dict[str, list[dict[str, object]]] = json.loads(members(bundle)[PROOFS_MEMBER])
    return document


def with_proofs(bundle: bytes, document: dict[str, list[dict[str, object]]]) -> bytes:
    return rezip(bundle, {PROOFS_MEMBER: canonical_bytes(document)})


def b64(values: list[bytes]) -> list[str]:
    return [base64.b64encode(value).decode("ascii") for value in values]


def turns(n: int) -> Thread:
    return build_thread(n, story=False)


def test_interior_node_as_leaf_fail() -> None:
    """Leaves 2i and 2i+1's hashes offered as one disclosed leaf, with the proof of their
    parent (the first pair whose bytes hold no newline, so they fit on one line)."""
    thread = turns(8)
    pairs = [
        (s, thread.entries[s].leaf_hash + thread.entries[s + 1].leaf_hash) for s in (2, 4, 6, 0)
    ]
    seq, node_bytes = next((s, b) for s, b in pairs if b"\n" not in b and b"\r" not in b)
    genuine = thread.partial_bundle([seq])
    passes(genuine)
    left, right = node_bytes[:32], node_bytes[32:]
    parent_proof = inclusion_proof(thread.tree, seq, 8)[1:]  # the proof of node (1, seq // 2)
    document = proofs_of(genuine)
    document["inclusion"][0]["hashes"] = b64(parent_proof)
    forged = with_proofs(with_entry_lines(genuine, [node_bytes]), document)
    fails(forged, InvalidUTF8Error, step=3, seq=seq)
    # and the tree itself refuses it: as a leaf those bytes hash with the 0x00 prefix
    root = root_at(thread.tree, 8)
    assert node_hash(left, right) != leaf_hash(node_bytes)
    try:
        verify_inclusion(leaf_hash(node_bytes), seq // 2, 4, parent_proof, root)
    except InclusionProofError:
        return
    raise AssertionError("an interior node was accepted as a leaf")


def test_proof_index_and_size_confused_fail() -> None:
    """A genuine proof for leaf 2 in the tree of 4 offered against the signed tree of 3."""
    thread = turns(3)
    genuine = thread.partial_bundle([2])
    passes(genuine)
    thread.turn("one more")
    document = proofs_of(genuine)
    document["inclusion"][0]["hashes"] = b64(inclusion_proof(thread.tree, 2, 4))
    fails(with_proofs(genuine, document), ProofLengthError, step=4, seq=2)


def test_proof_for_another_index_fail() -> None:
    """Two disclosed entries' inclusion proofs swapped (same length, wrong path)."""
    genuine = turns(8).partial_bundle([1, 6])
    passes(genuine)
    document = proofs_of(genuine)
    first, second = document["inclusion"]
    first["hashes"], second["hashes"] = second["hashes"], first["hashes"]
    fails(with_proofs(genuine, document), InclusionProofError, step=4, seq=1)


def test_disclosed_seq_relabelled_fail() -> None:
    """proofs.json claims another seq for a disclosed line than the entry signs."""
    genuine = turns(8).partial_bundle([1, 6])
    document = proofs_of(genuine)
    document["inclusion"][1]["seq"] = 5
    fails(with_proofs(genuine, document), DisclosedSeqMismatchError, step=3, seq=5)


def test_promise_without_proof_fail() -> None:
    """A partial bundle with its proofs removed: only a promise that the entries belong."""
    genuine = turns(8).partial_bundle([3])
    passes(genuine)
    fails(rezip(genuine, {PROOFS_MEMBER: None}), MissingMemberError, step=1)


def test_inclusion_proof_emptied_fail() -> None:
    """An inclusion proof with no hashes at all."""
    genuine = turns(8).partial_bundle([3])
    document = proofs_of(genuine)
    document["inclusion"][0]["hashes"] = []
    fails(with_proofs(genuine, document), ProofLengthError, step=4, seq=3)


def test_prev_root_proof_missing_fail() -> None:
    """The consistency proof that binds a disclosed entry's prev.root is left out."""
    genuine = turns(8).partial_bundle([3])
    document = proofs_of(genuine)
    document["consistency"] = []
    fails(with_proofs(genuine, document), MissingProofError, step=4, seq=3)


def test_prev_root_rebound_in_partial_bundle_fail() -> None:
    """A disclosed entry signed after another history: its prev.root cannot be proved."""
    thread = turns(5)
    entry = sign_entry(
        LOG,
        thread=thread.thread,
        seq=5,
        kind="turn",
        actor="agent",
        body={"role": "user", "text": "rebound"},
        prev_root=root_at(thread.tree, 4),
        time=TIME,
    )
    thread.add(entry)
    thread.turn("after")
    passes(thread.partial_bundle([4]))
    fails(thread.partial_bundle([5]), PrevRootMismatchError, step=4, seq=5)


def test_earlier_checkpoint_from_fork_partial_fail() -> None:
    """A genuine checkpoint of a forked history beside the head, in a partial bundle."""
    thread = turns(8)
    genuine = thread.partial_bundle([6], checkpoint_sizes=[5])
    passes(genuine)
    fork = turns(4)
    fork.turn("other")
    forged = rezip(genuine, {checkpoint_member(5): fork.checkpoint(5).encode()})
    fails(forged, CheckpointConsistencyError, step=4)


def test_earlier_checkpoint_from_fork_full_fail() -> None:
    """A genuine checkpoint of a forked history beside the head, in a full bundle."""
    thread = turns(8)
    genuine = thread.full_bundle(checkpoint_sizes=[5])
    passes(genuine)
    fork = turns(4)
    fork.turn("other")
    forged = rezip(genuine, {checkpoint_member(5): fork.checkpoint(5).encode()})
    fails(forged, CheckpointRootMismatchError, step=4)


def test_checkpoint_stored_under_other_size_fail() -> None:
    """A genuine checkpoint of size 6 filed as the checkpoint of size 5."""
    thread = turns(8)
    genuine = thread.full_bundle(checkpoint_sizes=[5])
    forged = rezip(genuine, {checkpoint_member(5): thread.checkpoint(6).encode()})
    fails(forged, CheckpointNameError, step=2)


def test_proof_with_a_million_hashes_fail() -> None:
    """An inclusion proof of 10^6 hashes (47 MB), refused by its size before it is parsed
    (and, as it inflates from 137 kB, before it is inflated, by the compression ratio)."""
    genuine = turns(8).partial_bundle([3])
    hashes = b",".join([b'"' + b"A" * 43 + b'="'] * 1_000_000)
    document = b'{"consistency":[],"inclusion":[{"hashes":[' + hashes + b'],"seq":3}]}'
    forged = rezip(genuine, {PROOFS_MEMBER: document})
    fails(forged, CompressionRatioError, step=1)
    fails(forged, ProofsFormatError, step=1, limits=ZipLimits(max_ratio=1 << 20))


def test_as_many_proofs_as_entries_taken_for_a_full_disclosure_fail() -> None:
    """Labelled partial, the entries 0..7 of a tree of 8, and 8 inclusion proofs -- but for
    seqs 0..6 and 8. A bundle is full by the seqs it proves, not by how many proofs it has:
    counted as full, its proofs would never be read and it verified."""
    genuine = turns(8).partial_bundle(list(range(8)))
    assert passes(genuine).disclosure == "full"
    document = proofs_of(genuine)
    document["inclusion"][-1]["seq"] = 8
    forged = with_proofs(genuine, document)
    error = fails(forged, DisclosedSeqMismatchError, step=3, seq=8)
    assert "proofs.json discloses seq 8" in str(error)
