"""Text forms of proofs (specs/proof-format.md).

* Inclusion: the C2SP ``tlog-proof`` format ::

      c2sp.org/tlog-proof@v1
      extra BASE64 -- optional, read but never written: opaque, unauthenticated data
      index N
      BASE64(hash) -- one line per proof hash, leaf level first (none for a 1-leaf tree)
      <empty line>
      SIGNED CHECKPOINT (a C2SP signed note whose size is the proof's tree size)

* Consistency (registre's own, shaped the same way) ::

      registre/tlog-consistency-proof@v1
      old M
      BASE64(hash) -- one line per proof hash, RFC 9162 order
      <empty line>
      SIGNED CHECKPOINT of the new tree

Parsing checks the shape only (header, decimal numbers without leading zeros, canonical
base64 of 32 bytes, at most 63 hashes); the caller verifies the checkpoint against a pinned
key and then the proof against the checkpoint's size and root.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from dataclasses import dataclass

from registre.attest.tree import HASH_SIZE, MAX_PROOF_HASHES
from registre.errors import MalformedError

__all__ = [
    "CONSISTENCY_HEADER",
    "INCLUSION_HEADER",
    "ProofTextError",
    "TextProof",
    "format_consistency_proof",
    "format_inclusion_proof",
    "parse_consistency_proof",
    "parse_inclusion_proof",
]

INCLUSION_HEADER = "c2sp.org/tlog-proof@v1"
CONSISTENCY_HEADER = "registre/tlog-consistency-proof@v1"
_DECIMAL = re.compile(r"0|[1-9][0-9]*")


class ProofTextError(MalformedError):
    """Proof text that does not have the documented shape."""


@dataclass(frozen=True)
class TextProof:
    """A parsed proof: ``number`` is the index (inclusion) or the old size (consistency).

    ``extra`` is the decoded ``extra`` line of a C2SP tlog-proof, None if it has none. It is
    not authenticated (neither the checkpoint nor the proof covers it): nothing registre
    checks depends on it.
    """

    number: int
    hashes: list[bytes]
    checkpoint: str
    extra: bytes | None = None


def format_inclusion_proof(index: int, hashes: Sequence[bytes], signed_checkpoint: str) -> str:
    """The C2SP tlog-proof text for leaf ``index``."""
    return _format(INCLUSION_HEADER, f"index {index}", hashes, signed_checkpoint)


def format_consistency_proof(old_size: int, hashes: Sequence[bytes], signed_checkpoint: str) -> str:
    """The consistency proof text from ``old_size`` to the checkpoint's size."""
    return _format(CONSISTENCY_HEADER, f"old {old_size}", hashes, signed_checkpoint)


def parse_inclusion_proof(text: str) -> TextProof:
    """Read a C2SP tlog-proof (what :func:`format_inclusion_proof` writes, or the same with
    the optional ``extra`` line after the header); ProofTextError names the bad line."""
    return _parse(text, INCLUSION_HEADER, "index", extra_allowed=True)


def parse_consistency_proof(text: str) -> TextProof:
    """Read :func:`format_consistency_proof` text; ProofTextError names the bad line."""
    return _parse(text, CONSISTENCY_HEADER, "old")


def _format(header: str, number_line: str, hashes: Sequence[bytes], checkpoint: str) -> str:
    lines = [header, number_line, *(base64.b64encode(h).decode("ascii") for h in hashes)]
    return "\n".join(lines) + "\n\n" + checkpoint


def _parse(text: str, header: str, label: str, *, extra_allowed: bool = False) -> TextProof:
    head, separator, checkpoint = text.partition("\n\n")
    if not separator or not checkpoint:
        raise ProofTextError("proof text needs an empty line followed by a signed checkpoint")
    lines = head.split("\n")
    if lines[0] != header:
        raise ProofTextError(f"line 1 must be {header!r}, got {lines[0][:60]!r}")
    extra = None
    at = 1  # index of the number line
    if extra_allowed and len(lines) > 1 and lines[1].startswith("extra "):
        extra = _extra(lines[1][len("extra ") :])
        at = 2
    if len(lines) <= at or not lines[at].startswith(f"{label} "):
        after = " (after the optional 'extra' line)" if extra_allowed else ""
        raise ProofTextError(f"line {at + 1} must be '{label} N'{after}")
    number = lines[at][len(label) + 1 :]
    if not _DECIMAL.fullmatch(number):
        raise ProofTextError(f"line {at + 1}: {number[:30]!r} is not a decimal number")
    if len(lines) - at - 1 > MAX_PROOF_HASHES:
        raise ProofTextError(f"more than {MAX_PROOF_HASHES} proof hashes")
    hashes = [_hash(line, n) for n, line in enumerate(lines[at + 1 :], start=at + 2)]
    return TextProof(int(number), hashes, checkpoint, extra)


def _extra(value: str) -> bytes:
    try:
        raw = base64.b64decode(value.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error):
        raise ProofTextError("line 2: the 'extra' data is not base64") from None
    if not raw or base64.b64encode(raw).decode("ascii") != value:
        raise ProofTextError("line 2: the 'extra' data must be non-empty canonical base64")
    return raw


def _hash(line: str, number: int) -> bytes:
    try:
        raw = base64.b64decode(line.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error):
        raise ProofTextError(f"line {number} is not base64") from None
    if len(raw) != HASH_SIZE or base64.b64encode(raw).decode("ascii") != line:
        raise ProofTextError(f"line {number} is not the canonical base64 of a 32-byte hash")
    return raw
