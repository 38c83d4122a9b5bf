"""Witness cosignatures, C2SP ``tlog-cosignature`` Ed25519 type (``cosignature/v1``).

A witness key is an Ed25519 key whose key id uses type byte 0x04
(:data:`~registre.attest.notes.keys.ALG_COSIGNATURE_V1`); its vkey is ``name+hex8+base64(0x04 ‖
key)``.

The witness signs::

    cosignature/v1\\n
    time <T>\\n
    <the checkpoint note text, final newline included, no signature lines>

where ``T`` is a POSIX time in seconds, ASCII decimal without leading zeros, at most
2^63 - 1. The note signature line carries ``base64(key id ‖ T as 8-byte big-endian ‖
64-byte Ed25519 signature)``. The signed message does not name the witness, so one public
key must never serve two witness names (``open_checkpoint`` refuses such a witness set).
"""

from __future__ import annotations

from cryptography.exceptions import InvalidSignature

from registre.attest.errors import CosignatureError
from registre.attest.notes.keys import ALG_COSIGNATURE_V1, SigningKey, VerifierKey
from registre.attest.notes.note import NoteSignature, check_note_text

__all__ = [
    "COSIGNATURE_HEADER",
    "COSIGNATURE_SIZE",
    "MAX_TIMESTAMP",
    "CosignatureSigner",
    "CosignatureVerifier",
    "cosigned_message",
]

COSIGNATURE_HEADER = b"cosignature/v1\n"
MAX_TIMESTAMP = 2**63 - 1
COSIGNATURE_SIZE = 8 + 64  # timestamp ‖ Ed25519 signature, after the 4-byte key id


def _check_timestamp(timestamp: int) -> None:
    if isinstance(timestamp, bool) or not isinstance(timestamp, int):
        raise CosignatureError(f"cosignature timestamp must be an integer, got {timestamp!r}")
    if not 0 <= timestamp <= MAX_TIMESTAMP:
        raise CosignatureError(
            f"cosignature timestamp {timestamp} is outside 0..2^63-1 (POSIX seconds)"
        )


def cosigned_message(checkpoint_body: str | bytes, timestamp: int) -> bytes:
    """The exact bytes a witness signs: header, time line, checkpoint note text."""
    _check_timestamp(timestamp)
    body = checkpoint_body.encode("utf-8") if isinstance(checkpoint_body, str) else checkpoint_body
    return COSIGNATURE_HEADER + b"time " + str(timestamp).encode("ascii") + b"\n" + body


class CosignatureVerifier(VerifierKey):
    """A pinned witness public key (alg 0x04); verifies cosignature/v1 signatures and returns
    their time. ``from_vkey`` refuses a log key (0x01)."""

    alg = ALG_COSIGNATURE_V1

    def verify(self, message: bytes, signature: bytes) -> int:
        """Verify a cosignature over the checkpoint text ``message``; return its timestamp.

        ``signature`` is what follows the key id in the note line: 8-byte big-endian
        timestamp ‖ 64-byte Ed25519 signature. Raises CosignatureError if the length or
        timestamp is malformed or the signature does not verify.
        """
        if len(signature) != COSIGNATURE_SIZE:
            raise CosignatureError(
                f"cosignature by {self.name} is {len(signature)} bytes after the key id; "
                f"cosignature/v1 needs {COSIGNATURE_SIZE} (timestamp and signature)"
            )
        timestamp = int.from_bytes(signature[:8], "big")
        _check_timestamp(timestamp)
        try:
            self._key.verify(signature[8:], cosigned_message(message, timestamp))
        except InvalidSignature:
            raise CosignatureError(
                f"cosignature by witness {self.name}+{self.key_id.hex()} (time {timestamp}) "
                "does not verify over this checkpoint"
            ) from None
        return timestamp


class CosignatureSigner(SigningKey):
    """A witness private key (alg 0x04): produces cosignature/v1 signature lines."""

    alg = ALG_COSIGNATURE_V1

    def verifier(self) -> CosignatureVerifier:
        return CosignatureVerifier(self.name, self.public_key)

    def cosign(self, checkpoint_body: str, timestamp: int) -> str:
        """The signature line ``— NAME BASE64(key id ‖ T ‖ sig)\\n`` for this checkpoint text.

        ``checkpoint_body`` must be a valid note text (NoteFormatError otherwise); the
        caller is responsible for having checked the checkpoint before vouching for it
        (see :func:`registre.attest.notes.checkpoint.cosign_checkpoint`).
        """
        check_note_text(checkpoint_body)
        signature = self._private.sign(cosigned_message(checkpoint_body, timestamp))
        payload = timestamp.to_bytes(8, "big") + signature
        return NoteSignature(self.name, self.key_id, payload).line()
