"""The exceptions lifecycle raises.

Refusals are never exceptions: a request the rules refuse gets an outcome that says so (see
:mod:`lifecycle.reasons`). lifecycle raises only when

* the input is malformed (:class:`LifecycleFormatError`, a :class:`ValueError` whose message
  starts with the field path, e.g. ``body.request.statements[2].cites``);
* a recorded event disagrees with the rules during replay (:class:`ReplayMismatchError`):
  the history was forged, altered, or written under different rules;
* a state object is used after :func:`lifecycle.machine.apply` handed its tables to the next
  state (:class:`StateRetiredError`, a programming error).

The roots of the project's one error hierarchy (:class:`RegistreError` and its three
families) are defined here, in the lowest package, because lifecycle may import nothing else
of registre; :mod:`attest.errors` re-exports them and adds the attest-specific checks. So a
malformed lifecycle body is a :class:`MalformedError` and a forged lifecycle history a
:class:`VerificationError`, like every other malformed input and failed check.
"""

from __future__ import annotations

__all__ = [
    "LifecycleError",
    "LifecycleFormatError",
    "MalformedError",
    "RefusedError",
    "RegistreError",
    "ReplayMismatchError",
    "StateRetiredError",
    "VerificationError",
]


class RegistreError(Exception):
    """Root of every error registre raises on purpose. ``exit_code`` is the CLI's."""

    exit_code: int = 2


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


class LifecycleError(RegistreError):
    """Root of the exceptions lifecycle raises on purpose."""


class LifecycleFormatError(LifecycleError, MalformedError):
    """A request, outcome or entry body whose shape is wrong.

    ``path`` names the offending field (``body.request.statements[2].cites``) and ``problem``
    says what was expected; the message is ``"<path>: <problem>"``.
    """

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class ReplayMismatchError(LifecycleError, VerificationError):
    """A recorded outcome that differs from what the rules decide for its request now.

    ``index`` is the position of the event in the replayed sequence when the caller is
    :func:`lifecycle.machine.replay` (``None`` for a single :func:`~lifecycle.machine.apply`).
    """

    def __init__(self, message: str, index: int | None = None) -> None:
        self.index = index
        if index is not None:
            message = f"event {index}: {message}"
        super().__init__(message)


class StateRetiredError(RuntimeError):
    """A state used after ``apply`` returned its successor (its tables now belong to that one).

    A programming error, deliberately outside :class:`RegistreError` so that it surfaces with
    a traceback instead of being reported as bad input."""
