"""The roots of registre's one error hierarchy, on the ground floor.

Four families, kept apart because callers react to them differently:

* :class:`MalformedError` -- the input could not even be read as what it claims to be
  (bad JSON, a bad key string, a note with control characters). CLI exit code 2.
* :class:`VerificationError` -- the input was well formed but a cryptographic or structural
  check failed (a signature, a proof, a root, an origin). CLI exit code 1.
* :class:`RefusedError` -- a well-formed request that the rules refuse (a lifecycle step, an
  append that would break the ledger). CLI exit code 2.
* :class:`UnavailableError` -- the request could not be carried out at all: something it needs
  is out of reach (the database server, its lock past the timeout, disk space, a writable
  file). Nothing was changed; the same command may succeed later. CLI exit code 3.

:data:`EXIT_CODES` is the one table of the command line's exit codes.

An error's message is one plain sentence of what is wrong. Advice on what to do about it --
which command to run, which flag to pass -- is not part of the message: it goes in ``hint``,
which the command line prints on a line of its own and a Python caller may ignore. Both
:mod:`registre.lifecycle` and :mod:`registre.attest` import these roots from here, so neither
needs the other for them; this is their one address. ``specs/errors.md`` draws the whole tree
of error classes, each with its one address (``tests/test_error_map.py`` holds it to the code).
"""

from __future__ import annotations

from typing import Self

__all__ = [
    "EXIT_CODES",
    "EXIT_INTERNAL",
    "MalformedError",
    "RefusedError",
    "RegistreError",
    "UnavailableError",
    "VerificationError",
]

EXIT_INTERNAL = 4
"""The exit code of an unexpected error inside registre (a bug), never of a user's mistake."""

EXIT_CODES: tuple[tuple[int, str], ...] = (
    (0, "ok"),
    (1, "verification failed: a signature, proof, root or stored invariant does not check"),
    (2, "bad input or refused request (README: which refusals are recorded)"),
    (3, "could not run: database unreachable, locked past the timeout, read-only or full"),
    (EXIT_INTERNAL, "internal error: a bug in registre (REGISTRE_DEBUG=1 shows the traceback)"),
    (130, "interrupted"),
)
"""Every exit code of the `registre` command line and what it means, in order."""


class RegistreError(Exception):
    """Root of every error registre raises on purpose.

    ``exit_code`` is the CLI's; ``hint`` (None or one sentence) is advice for a person at the
    command line, kept out of the message. A subclass may set a class-level default ``hint``;
    :meth:`with_hint` sets one on an instance.
    """

    exit_code: int = 2
    hint: str | None = None

    def with_hint(self, hint: str | None) -> Self:
        """Set ``hint`` on this error and return it (``raise Error(...).with_hint(...)``)."""
        self.hint = hint
        return self


class MalformedError(RegistreError, ValueError):
    """Input that cannot be read as what it claims to be (CLI exit code 2).

    ``position`` is the byte offset of the problem when one is known.
    """

    exit_code = 2

    def __init__(self, message: str, position: int | None = None) -> None:
        self.position = position
        if position is not None:
            message = f"{message} (at byte {position})"
        super().__init__(message)


class VerificationError(RegistreError):
    """Well-formed input that failed a check (CLI exit code 1)."""

    exit_code = 1


class RefusedError(RegistreError):
    """A well-formed request that the rules refuse; nothing was changed (CLI exit code 2)."""

    exit_code = 2


class UnavailableError(RegistreError):
    """A request that could not be carried out because something it needs is unavailable --
    the database server, its lock (past the timeout), disk space, a writable file. Nothing
    was changed (CLI exit code 3)."""

    exit_code = 3
