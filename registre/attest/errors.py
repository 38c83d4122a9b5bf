"""The errors that attest's subpackages share.

They stand under the roots of the one hierarchy, :mod:`registre.errors` (four families:
malformed input, failed verification, a refused request, an unavailable resource), and are
imported from here only; ``specs/errors.md`` draws the whole tree.

Every check raises its own subclass with a message a person can act on; nothing in registre
returns a boolean that a caller could forget to look at. The classes shared across modules are
here; a check that only one module makes defines its class next to it (e.g.
``registre.attest.canonical_json.strict_json.DuplicateKeyError``,
``registre.attest.entries.entry.EntrySignatureError``),
always under one of these families.
"""

from __future__ import annotations

# The roots live on the ground floor (registre.errors), shared with lifecycle.
import errno
import os
from pathlib import Path

from registre.errors import MalformedError, RefusedError, UnavailableError, VerificationError

__all__ = [
    "BadKeyError",
    "CheckpointFormatError",
    "ConsistencyProofError",
    "CosignatureError",
    "InclusionProofError",
    "KnownSignerFailedError",
    "NoTrustedSignatureError",
    "NoteFormatError",
    "OriginMismatchError",
    "OutputFolderError",
    "OutputWriteError",
    "ProofBoundsError",
    "ProofLengthError",
    "QuorumNotMetError",
    "RootMismatchError",
    "TooManySignaturesError",
    "WeakKeyError",
    "output_error",
]


# --- malformed input -------------------------------------------------------------------


class BadKeyError(MalformedError):
    """A key string or key file that cannot be parsed."""


class WeakKeyError(BadKeyError):
    """An Ed25519 public key of small order (or the identity), which would verify forgeries."""


class NoteFormatError(MalformedError):
    """A signed note that does not follow the C2SP signed-note format."""


class TooManySignaturesError(NoteFormatError):
    """A signed note carrying more signature lines than the reader accepts."""


class CheckpointFormatError(MalformedError):
    """A checkpoint body that does not follow the C2SP tlog-checkpoint format."""


# --- failed verification ---------------------------------------------------------------


class ProofBoundsError(VerificationError):
    """A proof requested or offered for an index or size outside the tree."""


class ProofLengthError(VerificationError):
    """A proof with more or fewer hashes than the tree shape requires."""


class RootMismatchError(VerificationError):
    """A recomputed root that differs from the expected root."""


class InclusionProofError(VerificationError):
    """An inclusion proof that does not lead from the leaf to the root."""


class ConsistencyProofError(VerificationError):
    """A consistency proof that does not lead from the old root to the new root."""


class NoTrustedSignatureError(VerificationError):
    """A signed note with no signature from any key the verifier trusts."""


class KnownSignerFailedError(VerificationError):
    """A signature line from a trusted key whose signature does not verify."""


class OriginMismatchError(VerificationError):
    """A checkpoint whose origin is not the one the verifier expects."""


class CosignatureError(VerificationError):
    """A witness cosignature that is malformed for its key or does not verify."""


class QuorumNotMetError(VerificationError):
    """Fewer valid cosignatures from pinned witnesses than the policy requires."""


# --- writing an output file --------------------------------------------------------------


class OutputFolderError(RefusedError):
    """An output file (a bundle, a transcript, a report) whose folder does not exist, or is
    not a folder: nothing was written (exit 2)."""


class OutputWriteError(UnavailableError):
    """An output file that could not be written -- no permission, a read-only or full file
    system, one without hard links -- named by its own path, never by the temporary file it
    was being written through; nothing was left behind (exit 3)."""


def output_error(
    target: str | os.PathLike[str], error: OSError
) -> OutputFolderError | OutputWriteError:
    """The error to raise for ``error``, met while writing ``target`` through a temporary
    file beside it: it names ``target`` and its folder, never the temporary name."""
    path = Path(target)
    folder = path.parent if str(path.parent) else Path(".")
    if error.errno in (errno.ENOENT, errno.ENOTDIR) and not folder.is_dir():
        return OutputFolderError(
            f"cannot write {path}: its folder {folder} does not exist"
        ).with_hint("create the folder first, or choose another path")
    reason = error.strerror or type(error).__name__
    failure = OutputWriteError(f"cannot write {path}: {reason.lower()}")
    if error.errno in (errno.EACCES, errno.EPERM, errno.EROFS):
        return failure.with_hint(f"choose a folder you can write to (not {folder})")
    if error.errno == errno.ENOSPC:
        return failure.with_hint(f"free space on the file system of {folder}, or write elsewhere")
    return failure
