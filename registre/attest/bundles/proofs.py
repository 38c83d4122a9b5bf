"""``proofs.json`` of a partial audit bundle (``specs/bundle.md`` section 3): the proofs that tie
disclosed entries and earlier checkpoints to the head, made from any
:class:`~registre.attest.tree.merkle.HashSource` and read back under bounds.

Nothing here is verified: :mod:`registre.attest.verify.verifier` looks each proof up by sizes it
takes from
signed data and checks it with :mod:`registre.attest.tree.proofs`.
"""

from __future__ import annotations

import base64
import binascii
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from registre.attest.canonical_json import parse_strict
from registre.attest.tree import (
    HASH_SIZE,
    MAX_PROOF_HASHES,
    HashSource,
    consistency_proof,
    inclusion_proof,
)
from registre.errors import MalformedError

__all__ = [
    "PROOFS_MEMBER",
    "BundleProofs",
    "InclusionProof",
    "ProofsFormatError",
    "build_proofs",
    "parse_proofs",
]

PROOFS_MEMBER = "proofs.json"
_MAX_PROOF_JSON_BYTES = 64 + MAX_PROOF_HASHES * 47  # '"' 44 base64 characters '",' per hash


class ProofsFormatError(MalformedError):
    """``proofs.json`` that does not follow its schema."""


@dataclass(frozen=True)
class InclusionProof:
    """The inclusion proof of the disclosed entry ``seq`` in the head checkpoint's tree."""

    seq: int
    hashes: tuple[bytes, ...]


@dataclass(frozen=True)
class BundleProofs:
    """What ``proofs.json`` holds: one inclusion proof per disclosed entry (in line order) and
    consistency proofs keyed by ``(old_size, new_size)``.

    The verifier takes every size it checks against from a signed checkpoint, a disclosed
    entry's signed ``seq`` or its own state file, and only looks proofs up by those sizes:
    the numbers written here are an index, never trusted.
    """

    inclusion: tuple[InclusionProof, ...] = ()
    consistency: Mapping[tuple[int, int], tuple[bytes, ...]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "inclusion": [
                {"seq": proof.seq, "hashes": _b64_list(proof.hashes)} for proof in self.inclusion
            ],
            "consistency": [
                {"old_size": old, "new_size": new, "hashes": _b64_list(hashes)}
                for (old, new), hashes in sorted(self.consistency.items())
            ],
        }


def build_proofs(
    source: HashSource,
    *,
    tree_size: int,
    seqs: Sequence[int],
    consistency_from: Iterable[int] = (),
) -> BundleProofs:
    """Proofs for a partial bundle of the tree of ``tree_size`` leaves behind ``source``.

    Gives an inclusion proof for each disclosed seq, a consistency proof from every
    disclosed ``seq > 0`` to ``tree_size`` (it proves the entry's ``prev.root``, which a
    verifier cannot recompute without the leaves before it), and one from every size in
    ``consistency_from`` (earlier checkpoints in the bundle, sizes a verifier may hold).
    Raises ProofBoundsError for a seq or size outside the tree.
    """
    inclusion = tuple(
        InclusionProof(seq, tuple(inclusion_proof(source, seq, tree_size))) for seq in seqs
    )
    olds = {seq for seq in seqs if seq > 0} | {size for size in consistency_from if size > 0}
    consistency = {
        (old, tree_size): tuple(consistency_proof(source, old, tree_size))
        for old in sorted(olds)
        if old < tree_size
    }
    return BundleProofs(inclusion, consistency)


def parse_proofs(data: bytes, entry_count: int, checkpoint_count: int) -> BundleProofs:
    """Read ``proofs.json`` for a bundle of ``entry_count`` lines and ``checkpoint_count``
    checkpoints: at most the bytes such proofs can take, strict JSON, one inclusion proof per
    line with strictly increasing seqs, 32-byte hashes in canonical base64, at most 63 per
    proof, no consistency pair twice. Raises :class:`ProofsFormatError` (or the strict-JSON
    errors)."""
    # Bound the work before parsing: an inclusion and a prev-root proof per entry, one per
    # checkpoint, and room for 1024 more consistency proofs, each at most 63 hashes.
    limit = (2 * entry_count + checkpoint_count + 1024) * _MAX_PROOF_JSON_BYTES
    if len(data) > limit:
        raise ProofsFormatError(
            f"{PROOFS_MEMBER} is {len(data)} bytes; proofs for {entry_count} entries and "
            f"{checkpoint_count} checkpoints take at most {limit}"
        )
    value = parse_strict(data, max_depth=8)
    if not isinstance(value, dict) or set(value) != {"inclusion", "consistency"}:
        raise ProofsFormatError(
            f'{PROOFS_MEMBER} must be {{"inclusion": [...], "consistency": [...]}}'
        )
    inclusion_list, consistency_list = value["inclusion"], value["consistency"]
    if not isinstance(inclusion_list, list) or not isinstance(consistency_list, list):
        raise ProofsFormatError(f"{PROOFS_MEMBER}: inclusion and consistency must be lists")
    if len(inclusion_list) != entry_count:
        raise ProofsFormatError(
            f"{PROOFS_MEMBER} has {len(inclusion_list)} inclusion proofs for {entry_count} "
            "disclosed entries; one per entry, in line order"
        )
    inclusion: list[InclusionProof] = []
    for index, item in enumerate(inclusion_list):
        where = f"inclusion[{index}]"
        if not isinstance(item, dict) or set(item) != {"seq", "hashes"}:
            raise ProofsFormatError(f'{PROOFS_MEMBER} {where} must be {{"seq", "hashes"}}')
        seq = _proof_int(item["seq"], f"{where}.seq")
        if inclusion and seq <= inclusion[-1].seq:
            raise ProofsFormatError(f"{PROOFS_MEMBER} {where}: seqs must strictly increase")
        inclusion.append(InclusionProof(seq, _hashes(item["hashes"], where)))
    consistency: dict[tuple[int, int], tuple[bytes, ...]] = {}
    for index, item in enumerate(consistency_list):
        where = f"consistency[{index}]"
        if not isinstance(item, dict) or set(item) != {"old_size", "new_size", "hashes"}:
            raise ProofsFormatError(
                f'{PROOFS_MEMBER} {where} must be {{"old_size", "new_size", "hashes"}}'
            )
        pair = (
            _proof_int(item["old_size"], f"{where}.old_size"),
            _proof_int(item["new_size"], f"{where}.new_size"),
        )
        if pair in consistency:
            raise ProofsFormatError(f"{PROOFS_MEMBER} {where}: sizes {pair} given twice")
        consistency[pair] = _hashes(item["hashes"], where)
    return BundleProofs(tuple(inclusion), consistency)


def _proof_int(value: object, where: str) -> int:
    if type(value) is not int or value < 0:
        raise ProofsFormatError(f"{PROOFS_MEMBER} {where} must be a non-negative integer")
    return value


def _hashes(value: object, where: str) -> tuple[bytes, ...]:
    if not isinstance(value, list):
        raise ProofsFormatError(f"{PROOFS_MEMBER} {where}.hashes must be a list")
    if len(value) > MAX_PROOF_HASHES:
        raise ProofsFormatError(
            f"{PROOFS_MEMBER} {where} has {len(value)} hashes; no valid proof has more than "
            f"{MAX_PROOF_HASHES}"
        )
    hashes = []
    for index, text in enumerate(value):
        try:
            raw = base64.b64decode(text, validate=True) if isinstance(text, str) else b""
        except (binascii.Error, ValueError):
            raw = b""
        if len(raw) != HASH_SIZE or base64.b64encode(raw).decode("ascii") != text:
            raise ProofsFormatError(
                f"{PROOFS_MEMBER} {where}.hashes[{index}] must be a 32-byte hash in canonical "
                "base64"
            )
        hashes.append(raw)
    return tuple(hashes)


def _b64_list(hashes: Sequence[bytes]) -> list[str]:
    return [base64.b64encode(value).decode("ascii") for value in hashes]
