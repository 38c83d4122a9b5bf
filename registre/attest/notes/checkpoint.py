"""C2SP checkpoints (``c2sp.org/tlog-checkpoint``): signed tree heads, with witness quorum.

A checkpoint body is the note text::

    ORIGIN\\n
    SIZE\\n
    BASE64(ROOT)\\n
    [extension lines, each non-empty]\\n

ORIGIN is non-empty, without whitespace or control characters; SIZE is ASCII decimal
without leading zeros (an empty tree is ``0``) and below 2^64; ROOT is exactly 32 bytes in
canonical standard base64. In registre ORIGIN is ``LOGNAME/THREAD`` and the operator's key
name is LOGNAME (:func:`check_origin`).

:func:`open_checkpoint` is the one way to trust a checkpoint: it requires the pinned log
key's signature and, when asked, a quorum of cosignatures from pinned witnesses.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import NamedTuple

from registre.attest.errors import CheckpointFormatError, OriginMismatchError, QuorumNotMetError
from registre.attest.notes.cosignature import CosignatureSigner, CosignatureVerifier
from registre.attest.notes.keys import Signer, Verifier
from registre.attest.notes.note import OpenedNote, append_signature, open_note, sign_note
from registre.attest.tree import HASH_SIZE
from registre.errors import RefusedError

__all__ = [
    "MAX_CHECKPOINT_SIZE",
    "Checkpoint",
    "VerifiedCheckpoint",
    "WitnessCosignature",
    "WitnessPolicyError",
    "check_origin",
    "cosign_checkpoint",
    "open_checkpoint",
    "sign_checkpoint",
]

MAX_CHECKPOINT_SIZE = 2**64 - 1
"""Largest SIZE a checkpoint body can carry: C2SP's tree size is a uint64 (``specs/checkpoint.md``
section 3). This is a limit of the format, not of the tree: a size above
:data:`registre.attest.tree.merkle.MAX_TREE_SIZE` (2^62) still parses, and is refused where it is
used as a tree (proofs raise ``ProofBoundsError``, a witness ``TreeTooLargeError``)."""
_DECIMAL = re.compile(r"0|[1-9][0-9]*")
# whitespace (ASCII and Unicode), control characters (Cc), lone surrogates
_BAD_ORIGIN_CHAR = re.compile(r"[\s\x00-\x1f\x7f-\x9f\ud800-\udfff]")  # \s: str.isspace()
_BAD_EXTENSION_CHAR = re.compile(r"[\x00-\x1f\x7f-\x9f\ud800-\udfff]")


class WitnessPolicyError(RefusedError):
    """A witness policy that cannot be applied soundly (quorum out of range, shared keys)."""


def _check_origin_text(origin: str, position: int | None = None) -> None:
    if not origin:
        raise CheckpointFormatError("line 1 (origin) is empty", position)
    bad = _BAD_ORIGIN_CHAR.search(origin)
    if bad is not None:
        raise CheckpointFormatError(
            f"line 1 (origin) {origin!r} contains whitespace or control character "
            f"U+{ord(bad.group()):04X}",
            position,
        )


def _check_extension(line: str, number: int, position: int | None = None) -> None:
    if not line:
        raise CheckpointFormatError(f"line {number} (extension) is empty", position)
    bad = _BAD_EXTENSION_CHAR.search(line)
    if bad is not None:
        raise CheckpointFormatError(
            f"line {number} (extension) contains control character U+{ord(bad.group()):04X}",
            position,
        )


@dataclass(frozen=True)
class Checkpoint:
    """A tree head: origin, tree size, root hash, optional extension lines.

    Construction validates every field (CheckpointFormatError), so a Checkpoint always has
    a well-formed :meth:`body`.
    """

    origin: str
    size: int
    root: bytes
    extensions: tuple[str, ...] = field(default=())

    def __post_init__(self) -> None:
        _check_origin_text(self.origin)
        if isinstance(self.size, bool) or not isinstance(self.size, int):
            raise CheckpointFormatError(f"tree size must be an integer, got {self.size!r}")
        if not 0 <= self.size <= MAX_CHECKPOINT_SIZE:
            raise CheckpointFormatError(f"tree size {self.size} is outside 0..2^64-1")
        if len(self.root) != HASH_SIZE:
            raise CheckpointFormatError(
                f"root hash is {len(self.root)} bytes; a SHA-256 root is {HASH_SIZE}"
            )
        for number, line in enumerate(self.extensions, start=4):
            _check_extension(line, number)

    def body(self) -> str:
        """The checkpoint note text, final newline included."""
        lines = [self.origin, str(self.size), base64.b64encode(self.root).decode("ascii")]
        return "\n".join([*lines, *self.extensions]) + "\n"

    @classmethod
    def parse(cls, text: str) -> Checkpoint:
        """Read a checkpoint body; CheckpointFormatError names the offending line.

        The error's ``position`` is the byte offset where that line starts.
        """
        if not text.endswith("\n"):
            raise CheckpointFormatError("checkpoint text must end with a newline")
        lines = text[:-1].split("\n")
        if len(lines) < 3:
            raise CheckpointFormatError(
                f"checkpoint has {len(lines)} line(s); origin, size and root hash are required"
            )
        starts = [0]
        for line in lines:
            starts.append(starts[-1] + len(line.encode("utf-8", "surrogatepass")) + 1)
        origin, size_text, root_text, *extensions = lines
        # line 1: origin
        _check_origin_text(origin, starts[0])
        # line 2: tree size
        if not _DECIMAL.fullmatch(size_text):
            raise CheckpointFormatError(
                f"line 2 (tree size) {size_text[:40]!r} is not a decimal number without "
                "leading zeros",
                starts[1],
            )
        size = int(size_text)
        if size > MAX_CHECKPOINT_SIZE:
            raise CheckpointFormatError(
                f"line 2 (tree size) {size_text} does not fit in 64 bits", starts[1]
            )
        # line 3: root hash
        try:
            root = base64.b64decode(root_text.encode("ascii"), validate=True)
        except (UnicodeEncodeError, binascii.Error):
            raise CheckpointFormatError(
                "line 3 (root hash) is not standard base64", starts[2]
            ) from None
        if base64.b64encode(root).decode("ascii") != root_text:
            raise CheckpointFormatError("line 3 (root hash) is not canonical base64", starts[2])
        if len(root) != HASH_SIZE:
            raise CheckpointFormatError(
                f"line 3 (root hash) decodes to {len(root)} bytes; expected {HASH_SIZE}",
                starts[2],
            )
        # lines 4..: extensions
        for offset, line in enumerate(extensions):
            _check_extension(line, offset + 4, starts[offset + 3])
        return cls(origin=origin, size=size, root=root, extensions=tuple(extensions))


class WitnessCosignature(NamedTuple):
    """A verified cosignature: the pinned witness's name and the time it signed at."""

    name: str
    timestamp: int


@dataclass(frozen=True)
class VerifiedCheckpoint:
    """A checkpoint signed by the pinned log key, with its verified witness cosignatures."""

    checkpoint: Checkpoint
    note: OpenedNote
    cosignatures: list[WitnessCosignature]


def sign_checkpoint(checkpoint: Checkpoint, signer: Signer) -> str:
    """The signed note for ``checkpoint`` with one Ed25519 signature by ``signer``."""
    return sign_note(checkpoint.body(), [signer])


def check_origin(checkpoint: Checkpoint, log_name: str) -> str:
    """Require registre's origin layout ``LOGNAME/THREAD``; return THREAD.

    Raises OriginMismatchError unless the origin is ``log_name`` followed by ``/`` and a
    non-empty thread id, i.e. the checkpoint belongs to a thread of the log whose operator
    key is named ``log_name``.
    """
    prefix = log_name + "/"
    thread = checkpoint.origin[len(prefix) :]
    if not checkpoint.origin.startswith(prefix) or not thread:
        raise OriginMismatchError(
            f"checkpoint origin {checkpoint.origin!r} is not a thread of log {log_name!r} "
            f"(expected {prefix}THREAD)"
        )
    return thread


def _check_witness_policy(
    log_key: Verifier, witnesses: Sequence[CosignatureVerifier], quorum: int
) -> dict[tuple[str, bytes], CosignatureVerifier]:
    if not 0 <= quorum <= len(witnesses):
        raise WitnessPolicyError(
            f"quorum {quorum} cannot be met by {len(witnesses)} pinned witness(es); "
            "use 0..number of witnesses"
        )
    index: dict[tuple[str, bytes], CosignatureVerifier] = {}
    public_keys: set[bytes] = {log_key.public_key}
    for witness in witnesses:
        if witness.public_key in public_keys:
            raise WitnessPolicyError(
                f"witness {witness.name} shares its public key with the log or another "
                "witness; each witness needs its own key or it would be counted twice"
            )
        public_keys.add(witness.public_key)
        index[(witness.name, witness.key_id)] = witness
    return index


def open_checkpoint(
    note: str | bytes,
    log_key: Verifier,
    *,
    origin: str | None = None,
    witnesses: Sequence[CosignatureVerifier] = (),
    quorum: int = 0,
) -> VerifiedCheckpoint:
    """Verify a signed checkpoint against pinned keys; return it with its cosignatures.

    0. The witness policy must be sound: ``0 <= quorum <= len(witnesses)``, every witness
       its own public key, none equal to the log key (WitnessPolicyError).
    1. Open the note against ``log_key`` alone: NoteFormatError if malformed,
       KnownSignerFailedError if the log's line fails, NoTrustedSignatureError if absent.
    2. Parse the text as a checkpoint (CheckpointFormatError).
    3. If ``origin`` is given, the checkpoint's origin must equal it (OriginMismatchError).
    4. Each signature line from a pinned witness (same name and key id) must be a valid
       cosignature/v1 over the text (CosignatureError otherwise); lines from other keys are
       ignored. Fewer distinct valid pinned witnesses than ``quorum`` raises
       QuorumNotMetError.
    """
    # 0. witness policy
    pinned = _check_witness_policy(log_key, witnesses, quorum)
    # 1. the log's signature
    opened = open_note(note, [log_key])
    # 2. the checkpoint body
    checkpoint = Checkpoint.parse(opened.text)
    # 3. origin
    if origin is not None and checkpoint.origin != origin:
        raise OriginMismatchError(
            f"checkpoint origin is {checkpoint.origin!r}; expected {origin!r}"
        )
    # 4. cosignatures from pinned witnesses, counted against the quorum
    message = opened.text.encode("utf-8")
    cosignatures: list[WitnessCosignature] = []
    for line in opened.unverified:
        witness = pinned.get((line.name, line.key_id))
        if witness is None:
            continue
        timestamp = witness.verify(message, line.signature)
        cosignatures.append(WitnessCosignature(witness.name, timestamp))
    if len(cosignatures) < quorum:
        raise QuorumNotMetError(
            f"{len(cosignatures)} valid cosignature(s) from pinned witnesses; {quorum} needed "
            f"(pinned: {', '.join(w.name for w in witnesses)})"
        )
    return VerifiedCheckpoint(checkpoint=checkpoint, note=opened, cosignatures=cosignatures)


def cosign_checkpoint(
    signed_note: str, log_key: Verifier, witness: CosignatureSigner, timestamp: int
) -> str:
    """``signed_note`` with ``witness``'s cosignature/v1 line appended.

    The log's signature is verified and the checkpoint parsed first (the errors of
    :func:`open_checkpoint` steps 1-2), so a witness never vouches for an unsigned or
    malformed checkpoint. Checking consistency with earlier checkpoints is the caller's job.
    Raises DuplicateSignatureError if this witness already cosigned the note.
    """
    opened = open_checkpoint(signed_note, log_key)
    return append_signature(signed_note, witness.cosign(opened.note.text, timestamp))
