"""Errors of the witness, each carrying the HTTP status the C2SP ``tlog-witness`` protocol gives
it, and the errors of the log-side client.

Every refusal of an ``add-checkpoint`` request is a :class:`WitnessRefusal` with an
``http_status``; the server answers with that status and the one-line message (for 409, the
stored tree size as the protocol requires; 409 only ever means "the old size is not the one
held"). Nothing is cosigned or stored when one is raised.
"""

from __future__ import annotations

from typing import ClassVar

from registre.attest.errors import QuorumNotMetError
from registre.errors import MalformedError, RefusedError, VerificationError

__all__ = [
    "EmptyTreeRootError",
    "InconsistentCheckpointError",
    "LogSignatureError",
    "OldSizeConflictError",
    "OldSizeTooLargeError",
    "RequestFormatError",
    "RequestTooLargeError",
    "SplitViewError",
    "TreeTooLargeError",
    "UnknownLogError",
    "WitnessQuorumError",
    "WitnessRefusal",
    "WitnessSpecError",
    "WitnessStateError",
]


class WitnessRefusal:
    """Mixin: an ``add-checkpoint`` refusal and the HTTP status it is answered with."""

    http_status: ClassVar[int] = 400


class RequestTooLargeError(WitnessRefusal, MalformedError):
    """A request body above the witness's size cap (413; registre's cap, not in the spec)."""

    http_status = 413


class RequestFormatError(WitnessRefusal, MalformedError):
    """A body that is not ``old N``, proof lines, a blank line and a checkpoint note (400)."""

    http_status = 400


class TreeTooLargeError(WitnessRefusal, RefusedError):
    """A tree size beyond 2^62, the largest registre's proofs handle (400)."""

    http_status = 400


class UnknownLogError(WitnessRefusal, RefusedError):
    """A checkpoint origin that no followed log covers (404)."""

    http_status = 404


class LogSignatureError(WitnessRefusal, VerificationError):
    """No signature from a followed log key verifies, or one fails (403)."""

    http_status = 403


class OldSizeTooLargeError(WitnessRefusal, RefusedError):
    """An ``old`` size larger than the checkpoint's size (400)."""

    http_status = 400


class OldSizeConflictError(WitnessRefusal, RefusedError):
    """An ``old`` size other than the size the witness holds for the origin (409).

    ``stored_size`` is the size it holds; the answer's body is that size.
    """

    http_status = 409

    def __init__(self, message: str, stored_size: int) -> None:
        super().__init__(message)
        self.stored_size = stored_size


class SplitViewError(WitnessRefusal, VerificationError):
    """A checkpoint of the size the witness holds but with another root: a fork (422).

    C2SP tlog-witness answered 409 here until July 2026; its current text says 422.
    """

    http_status = 422


class EmptyTreeRootError(WitnessRefusal, VerificationError):
    """A checkpoint of size 0 whose root is not the empty tree's, SHA-256 of nothing (422).

    Only one root exists for the empty tree, so a log that signed another one signed a
    history that cannot be true.
    """

    http_status = 422


class InconsistentCheckpointError(WitnessRefusal, VerificationError):
    """A consistency proof that does not lead from the stored checkpoint to this one (422)."""

    http_status = 422


class WitnessStateError(RefusedError):
    """A witness state directory that is missing, half made, or already initialised."""


class WitnessSpecError(MalformedError):
    """A ``--witness`` value that is not ``VKEY@URL`` with a witness key and an http(s) URL."""


class WitnessQuorumError(QuorumNotMetError):
    """Fewer witnesses cosigned than the quorum asks for.

    ``result`` holds what was collected (the cosignatures obtained and each witness's
    outcome), so a caller can store the partial result before failing.
    """

    def __init__(self, message: str, result: object) -> None:
        super().__init__(message)
        self.result = result
