"""Step 4 of the verifier (``specs/verify.md`` section 4): the tree of the head checkpoint.

Full bundle (:func:`check_tree_full`, over the roots step 3 recomputed):

0. the bundle holds exactly head-size entries (:class:`TreeSizeMismatchError`);
1. the root of all leaves is the head's root (:class:`TreeRootMismatchError`);
2. the root of the first *s* leaves is the root of the checkpoint of size *s*
   (:class:`CheckpointRootMismatchError`).

Partial bundle (:func:`check_tree_partial`):

3. each disclosed leaf's inclusion proof at its signed seq reaches the head's root
   (:func:`registre.attest.tree.proofs.verify_inclusion`'s errors);
4. each disclosed entry's ``prev.root`` is proved by the consistency proof from its seq to the
   head (:class:`~registre.attest.verify.entries.PrevRootMismatchError`,
   :class:`~registre.attest.verify.history.MissingProofError`);
5. each earlier checkpoint is proved consistent with the head
   (:class:`CheckpointConsistencyError`, ``MissingProofError``);
6. a bundle disclosing lifecycle entries discloses all those of the tree
   (:func:`registre.attest.entries.lifecycle_chain.check_lifecycle_chain`'s errors).

Every size comes from a signed checkpoint or a signed entry; the proofs are looked up by them.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from registre.attest.bundles import BundleProofs
from registre.attest.entries import ChainMark, ChainProgress, check_lifecycle_chain
from registre.attest.errors import ConsistencyProofError, RootMismatchError
from registre.attest.notes import Checkpoint
from registre.attest.tree import verify_consistency, verify_inclusion
from registre.attest.verify.entries import PrevRootMismatchError
from registre.attest.verify.history import MissingProofError
from registre.attest.verify.report import StepReport, plural
from registre.errors import VerificationError

__all__ = [
    "CheckpointConsistencyError",
    "CheckpointRootMismatchError",
    "TreeProgress",
    "TreeRootMismatchError",
    "TreeSizeMismatchError",
    "check_tree_full",
    "check_tree_partial",
]


class TreeSizeMismatchError(VerificationError):
    """A full bundle holding fewer or more entries than its head checkpoint's size."""


class TreeRootMismatchError(RootMismatchError):
    """A full bundle whose recomputed root is not the root its head checkpoint signs."""


class CheckpointRootMismatchError(RootMismatchError):
    """An earlier checkpoint whose root is not the recomputed root at its size."""


class CheckpointConsistencyError(ConsistencyProofError):
    """An earlier checkpoint not proved consistent with the head (partial bundles)."""


@dataclass
class TreeProgress:
    """The seq of the entry at fault, once a check of step 4 has raised."""

    seq: int | None = None


def check_tree_full(
    result: StepReport,
    head: Checkpoint,
    checkpoints: Mapping[int, Checkpoint],
    count: int,
    roots: Mapping[int, bytes],
) -> None:
    """4.0-4.2 for a full bundle of ``count`` entries whose roots at the checkpoints' sizes
    step 3 recomputed (``roots``); fills ``result`` or raises."""
    # 4.0 every entry of the head, no more
    if count != head.size:
        raise TreeSizeMismatchError(
            f"the full bundle holds {count} entries, but its head checkpoint covers "
            f"{head.size}: entries were {'cut off' if count < head.size else 'added'}"
        )
    # 4.1 the head's root, recomputed over all leaves
    if roots[head.size] != head.root:
        raise TreeRootMismatchError(
            f"the {head.size} entries hash to root {_b64(roots[head.size])}, but the head "
            f"checkpoint signs {_b64(head.root)}"
        )
    # 4.2 every earlier checkpoint's root, recomputed at its size
    for size, checkpoint in checkpoints.items():
        if roots[size] != checkpoint.root:
            raise CheckpointRootMismatchError(
                f"the first {size} entries hash to root {_b64(roots[size])}, but the "
                f"checkpoint of size {size} signs {_b64(checkpoint.root)}"
            )
    result.checked.append(f"root of {head.size} entries recomputed = head checkpoint root")
    result.checked.append(f"{plural(len(checkpoints) - 1, 'earlier checkpoint root')} recomputed")


def check_tree_partial(
    result: StepReport,
    head: Checkpoint,
    checkpoints: Mapping[int, Checkpoint],
    proofs: BundleProofs,
    leaf_hashes: Sequence[bytes],
    prev_roots: Sequence[bytes],
    marks: Sequence[ChainMark],
    progress: TreeProgress,
) -> bool:
    """4.3-4.6 for a partial bundle: ``leaf_hashes`` and ``prev_roots`` of the disclosed
    entries (in the order of ``proofs.inclusion``), ``marks`` their chain marks (step 3).
    Fills ``result`` and returns whether the lifecycle was proved complete (4.6), or raises
    with ``progress.seq`` naming the entry at fault."""
    consistency = proofs.consistency
    # 4.3 each disclosed leaf is in the head's tree at its signed seq
    for digest, proof in zip(leaf_hashes, proofs.inclusion, strict=True):
        progress.seq = proof.seq
        verify_inclusion(digest, proof.seq, head.size, proof.hashes, head.root)
    # 4.4 each disclosed entry's prev.root is the head tree's root at its seq
    for proof, prev_root in zip(proofs.inclusion, prev_roots, strict=True):
        progress.seq = seq = proof.seq
        hashes = _proof(consistency, seq, head.size) if seq else ()
        try:
            verify_consistency(seq, head.size, hashes, prev_root, head.root)
        except VerificationError as exc:
            raise PrevRootMismatchError(
                f"entry seq {seq} signs prev.root {_b64(prev_root)}, which is not the root "
                f"of the first {seq} entries of the head tree ({exc})"
            ) from exc
    progress.seq = None
    # 4.5 each earlier checkpoint is consistent with the head
    for size, checkpoint in checkpoints.items():
        if size == head.size:
            continue
        hashes = _proof(consistency, size, head.size) if size else ()
        try:
            verify_consistency(size, head.size, hashes, checkpoint.root, head.root)
        except VerificationError as exc:
            raise CheckpointConsistencyError(
                f"the checkpoint of size {size} is not consistent with the head of size "
                f"{head.size}: {exc}"
            ) from exc
    disclosed = len(leaf_hashes)
    result.checked.append(
        f"{plural(disclosed, 'inclusion proof')} against the head of size {head.size}"
    )
    result.checked.append("every disclosed prev.root proved by a consistency proof")
    result.checked.append(
        f"{plural(len(checkpoints) - 1, 'earlier checkpoint')} proved consistent with the head"
    )
    result.not_checked.append(
        f"{plural(head.size - disclosed, 'undisclosed entry')} (only their hashes are used)"
    )
    # 4.6 a bundle disclosing lifecycle entries discloses all those of the tree
    if not any(mark.lifecycle for mark in marks):
        result.not_checked.append(
            "the lifecycle: no lifecycle entry disclosed, so no claim or status is proved"
        )
        return False
    chain = ChainProgress()
    try:
        sentence, _head = check_lifecycle_chain(
            marks, full=False, tree_size=head.size, progress=chain
        )
    finally:
        progress.seq = chain.seq
    result.checked.append(sentence)
    return True


def _proof(
    consistency: Mapping[tuple[int, int], tuple[bytes, ...]], old_size: int, new_size: int
) -> tuple[bytes, ...]:
    proof = consistency.get((old_size, new_size))
    if proof is None:
        raise MissingProofError(
            f"proofs.json carries no consistency proof from size {old_size} to {new_size}; "
            "a partial bundle must prove what it does not disclose"
        )
    return proof


def _b64(value: bytes) -> str:
    return base64.b64encode(value).decode("ascii")
