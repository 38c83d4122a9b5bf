"""The C2SP ``tlog-witness`` wire format: the ``add-checkpoint`` request and its answers.

Request body (``POST <prefix>/add-checkpoint``), every line ending in ``\\n``::

    old <size>                  ASCII decimal, no leading zeros ("0" for none)
    <base64 hash>               zero to 63 consistency proof lines, one 32-byte hash each
                                an empty line
    <signed checkpoint note>    C2SP tlog-checkpoint text, blank line, signature lines

Answers: 200 with one or more cosignature lines (``— NAME BASE64(key id ‖ time ‖ sig)\\n``);
409 with the stored tree size in decimal and a newline, ``Content-Type: text/x.tlog.size``;
other refusals with their status (see :mod:`registre.witness.errors`).

Monitoring: ``GET <prefix>/<origin hash>/checkpoint``, the origin hash being the SHA-256 of
the origin in lowercase hex (:func:`monitor_path`, :func:`parse_monitor_path`); the answer is
the latest cosigned checkpoint, or 404.

Parsing checks form only; nothing here verifies a signature or a proof.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import re
from collections.abc import Sequence
from dataclasses import dataclass

from registre.attest.errors import CheckpointFormatError, NoteFormatError
from registre.attest.notes import Checkpoint, NoteSignature, parse_note
from registre.attest.tree import HASH_SIZE, MAX_PROOF_HASHES, MAX_TREE_SIZE
from registre.witness.errors import (
    RequestFormatError,
    RequestTooLargeError,
    TreeTooLargeError,
)

__all__ = [
    "ADD_CHECKPOINT_PATH",
    "COSIGNATURE_CONTENT_TYPE",
    "MAX_REQUEST_BYTES",
    "MAX_RESPONSE_BYTES",
    "MONITOR_SUFFIX",
    "SIZE_CONTENT_TYPE",
    "AddCheckpointRequest",
    "encode_size_body",
    "monitor_path",
    "parse_cosignature_lines",
    "parse_monitor_path",
    "parse_size_body",
]

ADD_CHECKPOINT_PATH = "/add-checkpoint"
MONITOR_SUFFIX = "/checkpoint"
MAX_REQUEST_BYTES = 64 * 1024
"""Largest request body a witness reads: a 63-hash proof and a note with 100 signatures fit
with room to spare (about 3 KiB and 10 KiB)."""
MAX_RESPONSE_BYTES = 64 * 1024
SIZE_CONTENT_TYPE = "text/x.tlog.size"
COSIGNATURE_CONTENT_TYPE = "text/plain; charset=utf-8"

_OLD_LINE = re.compile(r"old (0|[1-9][0-9]{0,19})")
_SIZE_BODY = re.compile(rb"(0|[1-9][0-9]{0,19})\n")
_MONITOR_PATH = re.compile(r"/([0-9a-f]{64})/checkpoint")


def _check_tree_size(size: int, what: str) -> None:
    if size > MAX_TREE_SIZE:
        raise TreeTooLargeError(
            f"{what} {size} is beyond 2^62, the largest tree this witness handles"
        )


def _decode_hash(line: str, number: int) -> bytes:
    try:
        raw = base64.b64decode(line.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error):
        raise RequestFormatError(
            f"line {number} is neither a base64 proof hash nor the empty line ending the proof"
        ) from None
    if len(raw) != HASH_SIZE or base64.b64encode(raw).decode("ascii") != line:
        raise RequestFormatError(
            f"line {number}: a proof hash is {HASH_SIZE} bytes in canonical base64 "
            f"({len(raw)} bytes given)"
        )
    return raw


@dataclass(frozen=True)
class AddCheckpointRequest:
    """A well-formed ``add-checkpoint`` request: old size, proof, signed note, its checkpoint.

    ``checkpoint`` is parsed from the note's text; neither the note's signatures nor the proof
    have been checked.
    """

    old_size: int
    proof: tuple[bytes, ...]
    note: str
    checkpoint: Checkpoint

    @classmethod
    def build(cls, old_size: int, proof: Sequence[bytes], note: str) -> AddCheckpointRequest:
        """A request to send; raises like :meth:`parse` if it would not be well formed."""
        return cls.parse(_encode(old_size, proof, note))

    def encode(self) -> bytes:
        """The request body, byte for byte as the protocol lays it out."""
        return _encode(self.old_size, self.proof, self.note)

    @classmethod
    def parse(cls, body: bytes) -> AddCheckpointRequest:
        """Read a request body, checking its form in this order:

        1. at most :data:`MAX_REQUEST_BYTES` (RequestTooLargeError, 413);
        2. UTF-8, and a first line ``old N`` with N decimal without leading zeros;
        3. at most 63 proof lines, each a canonical base64 32-byte hash, then an empty line;
        4. the rest is a signed note (C2SP signed-note) whose text is a checkpoint;
        5. both sizes at most 2^62 (TreeTooLargeError).

        Steps 2-4 raise RequestFormatError (400) naming the line.
        """
        # 1. size cap
        if len(body) > MAX_REQUEST_BYTES:
            raise RequestTooLargeError(
                f"request body is {len(body)} bytes; this witness reads at most {MAX_REQUEST_BYTES}"
            )
        # 2. old size line
        try:
            text = body.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise RequestFormatError("request body is not UTF-8", exc.start) from None
        end = text.find("\n")
        match = _OLD_LINE.fullmatch(text[:end]) if end >= 0 else None
        if match is None:
            raise RequestFormatError(
                "line 1 must be 'old N' (N the size of the previous checkpoint, decimal "
                "without leading zeros, ending with a newline)"
            )
        old_size = int(match.group(1))
        # 3. proof lines up to the empty line
        proof: list[bytes] = []
        number = 1
        start = end + 1
        while True:
            number += 1
            end = text.find("\n", start)
            if end < 0:
                raise RequestFormatError(
                    "no empty line after the proof lines: the body must be 'old N', proof "
                    "lines, an empty line, then the checkpoint"
                )
            if end == start:
                break
            if len(proof) == MAX_PROOF_HASHES:
                raise RequestFormatError(
                    f"more than {MAX_PROOF_HASHES} consistency proof lines; no valid proof "
                    "is longer"
                )
            proof.append(_decode_hash(text[start:end], number))
            start = end + 1
        rest = text[end + 1 :]
        # 4. the signed checkpoint
        try:
            note_text, _signatures = parse_note(rest)
            checkpoint = Checkpoint.parse(note_text)
        except (NoteFormatError, CheckpointFormatError) as exc:
            raise RequestFormatError(f"checkpoint note after line {number}: {exc}") from None
        # 5. sizes registre can prove
        _check_tree_size(old_size, "old size")
        _check_tree_size(checkpoint.size, "checkpoint size")
        return cls(old_size, tuple(proof), rest, checkpoint)


def _encode(old_size: int, proof: Sequence[bytes], note: str) -> bytes:
    lines = [f"old {old_size}", *(base64.b64encode(h).decode("ascii") for h in proof), ""]
    return ("\n".join(lines) + "\n" + note).encode("utf-8")


def monitor_path(origin: str) -> str:
    """``/<hex SHA-256 of the UTF-8 origin>/checkpoint``, relative to the monitoring prefix."""
    return "/" + hashlib.sha256(origin.encode("utf-8")).hexdigest() + MONITOR_SUFFIX


def parse_monitor_path(path: str) -> bytes | None:
    """The origin hash named by a monitoring path, or None if ``path`` is not one (the hash
    must be 64 lowercase hex digits)."""
    match = _MONITOR_PATH.fullmatch(path)
    return bytes.fromhex(match.group(1)) if match is not None else None


def encode_size_body(size: int) -> bytes:
    """The body of a 409 answer: the stored size in decimal and a newline."""
    return f"{size}\n".encode("ascii")


def parse_size_body(body: bytes) -> int:
    """Read a 409 body (``text/x.tlog.size``); RequestFormatError if it is not a size line."""
    match = _SIZE_BODY.fullmatch(body)
    if match is None:
        raise RequestFormatError(
            f"409 answer body {body[:40]!r} is not a tree size in decimal and a newline"
        )
    return int(match.group(1))


def parse_cosignature_lines(checkpoint_text: str, body: bytes) -> list[NoteSignature]:
    """The signature lines of a 200 answer, read as if appended to the checkpoint's text.

    Raises RequestFormatError unless ``body`` is one or more well-formed note signature
    lines (at most :data:`MAX_RESPONSE_BYTES`). Nothing is verified.
    """
    if len(body) > MAX_RESPONSE_BYTES:
        raise RequestFormatError(f"answer is {len(body)} bytes; at most {MAX_RESPONSE_BYTES}")
    try:
        text, signatures = parse_note(checkpoint_text.encode("utf-8") + b"\n" + body)
    except NoteFormatError as exc:
        raise RequestFormatError(f"answer is not cosignature lines: {exc}") from None
    if text != checkpoint_text:
        raise RequestFormatError("answer holds an empty line; it must be only signature lines")
    return signatures
