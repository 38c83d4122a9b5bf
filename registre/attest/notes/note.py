"""C2SP signed notes: text signed by one or more keys (``c2sp.org/signed-note``).

A signed note is the text (non-empty, ending in ``\\n``), a blank line, then one or more
signature lines ``— NAME BASE64(key id ‖ signature)\\n`` (em dash U+2014, space). The text
is everything up to and including the newline before the *last* blank line.

Reading rules, stricter than the spec where the spec leaves room (``specs/checkpoint.md``):

* the whole note is valid UTF-8 with no control character (Unicode category Cc: C0, DEL,
  C1) other than ``\\n``;
* base64 must be canonical (re-encoding gives the same characters), so no two spellings of
  one signature line exist;
* at most :data:`MAX_SIGNATURES` signature lines (the spec requires accepting 16);
* two signature lines naming the same key (same name *and* key id) make the note malformed
  (:class:`DuplicateSignatureError`), whether or not the key is known: verifying only the
  first, as some readers do, would leave the second unexamined.

Opening against a set of verifiers: a line whose (name, key id) matches no verifier is kept,
unchecked, in ``unverified``; a matching line must verify or the whole note is rejected
(KnownSignerFailedError); at least one verified signature is required
(NoTrustedSignatureError). Ed25519 signatures cover exactly the UTF-8 bytes of the text.
"""

from __future__ import annotations

import base64
import binascii
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from registre.attest.errors import (
    BadKeyError,
    KnownSignerFailedError,
    NoteFormatError,
    NoTrustedSignatureError,
    TooManySignaturesError,
)
from registre.attest.notes.keys import check_key_name
from registre.errors import RefusedError, VerificationError

__all__ = [
    "MAX_SIGNATURES",
    "SIGNATURE_PREFIX",
    "DuplicateSignatureError",
    "NoteSignature",
    "NoteSigner",
    "NoteVerifier",
    "OpenedNote",
    "VerifierSetError",
    "append_signature",
    "check_note_text",
    "open_note",
    "parse_note",
    "sign_note",
]

MAX_SIGNATURES = 100
SIGNATURE_PREFIX = "— "
_PREFIX_BYTES = SIGNATURE_PREFIX.encode("utf-8")


class DuplicateSignatureError(NoteFormatError):
    """Two signature lines in one note from the same key (same name and key id)."""


class VerifierSetError(RefusedError):
    """Verifiers given to :func:`open_note` that are ambiguous (same name and id, other key)."""


class NoteSigner(Protocol):
    """What :func:`sign_note` needs: a key name, a 4-byte key id and a signing function.

    ``sign(text)`` returns the bytes that follow the key id in the signature line.
    """

    @property
    def name(self) -> str: ...
    @property
    def key_id(self) -> bytes: ...
    def sign(self, message: bytes) -> bytes: ...


class NoteVerifier(Protocol):
    """What :func:`open_note` needs: name, key id, public key and a raising ``verify``.

    ``verify(text, signature)`` returns normally only if ``signature`` (the bytes after the
    key id) is valid for ``text``; it raises a VerificationError otherwise. Its return value
    is ignored.
    """

    @property
    def name(self) -> str: ...
    @property
    def key_id(self) -> bytes: ...
    @property
    def public_key(self) -> bytes: ...
    def verify(self, message: bytes, signature: bytes) -> object: ...


@dataclass(frozen=True)
class NoteSignature:
    """One signature line: key name, 4-byte key id, and the signature bytes after the id."""

    name: str
    key_id: bytes
    signature: bytes

    def line(self) -> str:
        """The signature line, ``— NAME BASE64(key id ‖ signature)\\n``."""
        blob = base64.b64encode(self.key_id + self.signature).decode("ascii")
        return f"{SIGNATURE_PREFIX}{self.name} {blob}\n"


@dataclass(frozen=True)
class OpenedNote:
    """A note whose text is vouched for by every signature in ``verified``.

    ``unverified`` holds the lines from keys the caller did not name; nothing about them
    was checked.
    """

    text: str
    verified: list[NoteSignature]
    unverified: list[NoteSignature]


# --- text checks -----------------------------------------------------------------------


# Unicode category Cc (C0, DEL, C1) except '\n', and lone surrogates (not UTF-8 encodable).
_FORBIDDEN = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\ud800-\udfff]")


def _check_characters(data: str, what: str) -> None:
    """Raise NoteFormatError at the byte position of any control character except '\\n'."""
    found = _FORBIDDEN.search(data)
    if found is None:
        return
    char = found.group()
    position = len(data[: found.start()].encode("utf-8", "surrogatepass"))
    kind = "a lone surrogate" if "\ud800" <= char <= "\udfff" else "control character"
    raise NoteFormatError(
        f"{what} contains {kind} U+{ord(char):04X}; no control character but '\\n' is allowed",
        position,
    )


def check_note_text(text: str) -> None:
    """Raise NoteFormatError unless ``text`` can be the text of a signed note.

    Non-empty, ends in ``\\n``, valid UTF-8, no control character other than ``\\n``.
    """
    if not text:
        raise NoteFormatError("note text is empty; a note needs at least one line")
    if not text.endswith("\n"):
        raise NoteFormatError("note text must end with a newline", len(text.encode("utf-8")))
    _check_characters(text, "note text")


# --- parsing ---------------------------------------------------------------------------


def _parse_signature_line(line: bytes, position: int) -> NoteSignature:
    if not line.startswith(_PREFIX_BYTES):
        raise NoteFormatError(
            "signature line does not start with an em dash (U+2014) and a space", position
        )
    rest = line[len(_PREFIX_BYTES) :].decode("utf-8")
    name, space, blob = rest.partition(" ")
    if not space:
        raise NoteFormatError(
            "signature line has no space between key name and signature", position
        )
    try:
        check_key_name(name)
    except BadKeyError as exc:
        raise NoteFormatError(f"signature line: {exc}", position) from None
    try:
        raw = base64.b64decode(blob.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error):
        raise NoteFormatError(f"signature by {name} is not standard base64", position) from None
    if base64.b64encode(raw).decode("ascii") != blob:
        raise NoteFormatError(f"signature by {name} is not canonical base64", position)
    if len(raw) < 5:
        raise NoteFormatError(
            f"signature by {name} is {len(raw)} bytes; a key id and a signature need at least 5",
            position,
        )
    return NoteSignature(name=name, key_id=raw[:4], signature=raw[4:])


def parse_note(note: str | bytes) -> tuple[str, list[NoteSignature]]:
    """Split a signed note into its text and signature lines, verifying nothing.

    Raises NoteFormatError (with the byte position) for anything that is not a well-formed
    note, TooManySignaturesError above :data:`MAX_SIGNATURES` lines, and
    DuplicateSignatureError for two lines from one (name, key id).
    """
    if isinstance(note, str):
        _check_characters(note, "note")
        data = note.encode("utf-8")
    else:
        data = bytes(note)
        try:
            decoded = data.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise NoteFormatError("note is not valid UTF-8", exc.start) from None
        _check_characters(decoded, "note")
    # 1. the text ends at the last blank line
    split = data.rfind(b"\n\n")
    if split < 0:
        raise NoteFormatError("note has no blank line separating the text from its signatures")
    text_bytes, block = data[: split + 1], data[split + 2 :]
    # 2. the signature block: one or more lines, each ending in '\n'
    if not block:
        raise NoteFormatError("note has no signature lines after the blank line", split + 2)
    if not block.endswith(b"\n"):
        raise NoteFormatError("note does not end with a newline", len(data))
    count = block.count(b"\n")
    if count > MAX_SIGNATURES:
        raise TooManySignaturesError(
            f"note has {count} signature lines; at most {MAX_SIGNATURES} are read"
        )
    # 3. each line parses; no key signs twice
    signatures: list[NoteSignature] = []
    seen: set[tuple[str, bytes]] = set()
    position = split + 2
    for line in block[:-1].split(b"\n"):
        signature = _parse_signature_line(line, position)
        ident = (signature.name, signature.key_id)
        if ident in seen:
            raise DuplicateSignatureError(
                f"two signature lines from key {signature.name}+{signature.key_id.hex()}; "
                "a note carries at most one signature per key",
                position,
            )
        seen.add(ident)
        signatures.append(signature)
        position += len(line) + 1
    return text_bytes.decode("utf-8"), signatures


# --- signing and opening ---------------------------------------------------------------


def sign_note(text: str, signers: Sequence[NoteSigner]) -> str:
    """The signed note: ``text``, a blank line, one signature line per signer in order.

    Raises NoteFormatError for text that cannot be a note, no signers, or two signers with
    the same (name, key id); TooManySignaturesError for more than MAX_SIGNATURES signers.
    """
    check_note_text(text)
    if not signers:
        raise NoteFormatError("a signed note needs at least one signer")
    if len(signers) > MAX_SIGNATURES:
        raise TooManySignaturesError(f"{len(signers)} signers; at most {MAX_SIGNATURES}")
    message = text.encode("utf-8")
    lines: list[str] = []
    seen: set[tuple[str, bytes]] = set()
    for signer in signers:
        try:
            check_key_name(signer.name)
        except BadKeyError as exc:
            raise NoteFormatError(f"signer name: {exc}") from None
        ident = (signer.name, bytes(signer.key_id))
        if ident in seen:
            raise DuplicateSignatureError(f"key {signer.name} is given twice")
        seen.add(ident)
        signature = NoteSignature(signer.name, bytes(signer.key_id), signer.sign(message))
        lines.append(signature.line())
    return text + "\n" + "".join(lines)


def append_signature(note: str, line: str) -> str:
    """``note`` with one more signature line (e.g. a witness cosignature) at the end.

    Both are parsed first (nothing is verified); raises NoteFormatError,
    DuplicateSignatureError or TooManySignaturesError if the result would be malformed.
    """
    if not line.endswith("\n"):
        line += "\n"
    combined = note + line
    parse_note(combined)
    return combined


def _index_verifiers(
    verifiers: Sequence[NoteVerifier],
) -> dict[tuple[str, bytes], NoteVerifier]:
    index: dict[tuple[str, bytes], NoteVerifier] = {}
    for verifier in verifiers:
        ident = (verifier.name, bytes(verifier.key_id))
        known = index.get(ident)
        if known is not None and known.public_key != verifier.public_key:
            raise VerifierSetError(
                f"two different keys named {verifier.name} share key id "
                f"{verifier.key_id.hex()}; the verifier set is ambiguous"
            )
        index[ident] = verifier
    return index


def open_note(note: str | bytes, verifiers: Sequence[NoteVerifier]) -> OpenedNote:
    """Open a signed note against the keys the caller trusts.

    1. Parse the note (:func:`parse_note`); any format problem raises before any check.
    2. Each line whose (name, key id) matches a verifier must verify over the text bytes,
       else KnownSignerFailedError rejects the whole note; other lines go to ``unverified``.
    3. At least one line must have verified, else NoTrustedSignatureError.
    """
    index = _index_verifiers(verifiers)
    # 1. parse
    text, signatures = parse_note(note)
    message = text.encode("utf-8")
    verified: list[NoteSignature] = []
    unverified: list[NoteSignature] = []
    # 2. every known key's signature must verify
    for signature in signatures:
        verifier = index.get((signature.name, signature.key_id))
        if verifier is None:
            unverified.append(signature)
            continue
        try:
            verifier.verify(message, signature.signature)
        except VerificationError as exc:
            raise KnownSignerFailedError(
                f"signature by trusted key {signature.name}+{signature.key_id.hex()} does "
                f"not verify ({exc}); the note was altered or not signed by that key"
            ) from exc
        verified.append(signature)
    # 3. at least one trusted signature
    if not verified:
        names = ", ".join(f"{v.name}+{v.key_id.hex()}" for v in verifiers) or "none given"
        raise NoTrustedSignatureError(
            f"note has no signature from a trusted key (trusted: {names}; "
            f"found {len(unverified)} signature(s) from other keys)"
        )
    return OpenedNote(text=text, verified=verified, unverified=unverified)
