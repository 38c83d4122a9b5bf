"""The exceptions lifecycle raises.

Refusals are never exceptions: a request the rules refuse gets an outcome that says so (see
:mod:`registre.lifecycle.reasons`). lifecycle raises only when

* the input is malformed (:class:`LifecycleFormatError`, a :class:`ValueError` whose message
  starts with the field path, e.g. ``body.request.statements[2].cites``);
* a recorded event disagrees with the rules during replay (:class:`ReplayMismatchError`):
  the history was forged, altered, or written under different rules;
* a state object is used after :func:`registre.lifecycle.machine.apply` handed its tables to the
  next state (:class:`StateRetiredError`, a programming error).

The roots of the project's one error hierarchy (:class:`RegistreError` and its three
families) live in :mod:`registre.errors`, below both lifecycle and attest, and are imported
from there only. So a malformed lifecycle body is a :class:`MalformedError` and a forged
lifecycle history a :class:`VerificationError`, like every other malformed input and failed
check.
"""

from __future__ import annotations

from registre.errors import MalformedError, RegistreError, VerificationError

__all__ = [
    "LifecycleError",
    "LifecycleFormatError",
    "ReplayMismatchError",
    "StateRetiredError",
]


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
    :func:`registre.lifecycle.machine.replay` (``None`` for a single
    :func:`~registre.lifecycle.machine.apply`).
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
