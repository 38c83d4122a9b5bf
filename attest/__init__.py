"""attest: the cryptographic ground floor of registre.

Canonical bytes (RFC 8785), the RFC 9162 Merkle tree and its proofs, Ed25519 keys in the
C2SP/sumdb note formats, signed notes, checkpoints and witness cosignatures. Imports no
storage and nothing above it.
"""
