"""attest: the cryptographic ground floor of registre, one subpackage per concept.

=====================================  ==========================================================
:mod:`registre.attest.canonical_json`  RFC 8785 canonical bytes and the strict JSON parser
:mod:`registre.attest.tree`            the RFC 9162 Merkle tree, inclusion and consistency proofs
:mod:`registre.attest.notes`           Ed25519 keys, C2SP signed notes, checkpoints, cosignatures
:mod:`registre.attest.entries`         signed ledger entries, their leaves and body schemas
:mod:`registre.attest.bundles`         audit bundles: the zip container, manifest, proofs, leaves
:mod:`registre.attest.projection_digest`  digests of working-context projections
:mod:`registre.attest.verify`          the offline verifier, its steps and its report
:mod:`registre.attest.errors`          the errors the subpackages share
=====================================  ==========================================================

Each subpackage's face (its ``__init__``) is the one public path of its names, e.g.
``from registre.attest.tree import leaf_hash``; faces load their modules lazily. The
floors inside attest, top down: verify; bundles and projection_digest; entries; notes;
tree; canonical_json; errors. attest imports no storage and nothing above it (it may import
:mod:`registre.lifecycle` and :mod:`registre.context` to replay a bundle's events).
"""

__all__: list[str] = []
