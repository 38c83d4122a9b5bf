"""attest: the cryptographic ground floor of registre.

Canonical bytes (RFC 8785), the RFC 9162 Merkle tree and its proofs, Ed25519 keys in the
C2SP/sumdb note formats, signed notes, checkpoints and witness cosignatures, signed ledger
entries, audit bundles and the offline verifier. Imports no storage and nothing above it
(it may import :mod:`lifecycle` to replay a bundle's events).

The names below are the public API; each module's ``__all__`` lists its specific errors and
helpers.
"""

from registre.attest.bundle import read_bundle, write_bundle
from registre.attest.canonical import canonical_bytes, parse_canonical, parse_strict
from registre.attest.checkpoint import Checkpoint, open_checkpoint, sign_checkpoint
from registre.attest.cosignature import CosignatureSigner, CosignatureVerifier
from registre.attest.entry import Entry, open_entry, sign_entry
from registre.attest.errors import MalformedError, RefusedError, RegistreError, VerificationError
from registre.attest.keys import Signer, Verifier
from registre.attest.merkle import (
    CompactRange,
    HashSource,
    MemoryHashSource,
    leaf_hash,
    node_hash,
    root_at,
)
from registre.attest.note import open_note, sign_note
from registre.attest.proofs import (
    consistency_proof,
    inclusion_proof,
    verify_consistency,
    verify_inclusion,
)
from registre.attest.verifier import TrustPolicy, verify_bundle

__all__ = [
    "Checkpoint",
    "CompactRange",
    "CosignatureSigner",
    "CosignatureVerifier",
    "Entry",
    "HashSource",
    "MalformedError",
    "MemoryHashSource",
    "RefusedError",
    "RegistreError",
    "Signer",
    "TrustPolicy",
    "VerificationError",
    "Verifier",
    "canonical_bytes",
    "consistency_proof",
    "inclusion_proof",
    "leaf_hash",
    "node_hash",
    "open_checkpoint",
    "open_entry",
    "open_note",
    "parse_canonical",
    "parse_strict",
    "read_bundle",
    "root_at",
    "sign_checkpoint",
    "sign_entry",
    "sign_note",
    "verify_bundle",
    "verify_consistency",
    "verify_inclusion",
    "write_bundle",
]
