"""The exceptions lifecycle raises.

Refusals are never exceptions: a request the rules refuse gets an outcome that says so (see
:mod:`lifecycle.reasons`). lifecycle raises only when

* the input is malformed (:class:`LifecycleFormatError`, a :class:`ValueError` whose message
  starts with the field path, e.g. ``body.request.statements[2].cites``);
* a recorded event disagrees with the rules during replay (:class:`ReplayMismatchError`):
  the history was forged, altered, or written under different rules;
* a state object is used after :func:`lifecycle.machine.apply` handed its tables to the next
  state (:class:`StateRetiredError`, a programming error).

lifecycle may not import :mod:`attest`, so these classes sit outside ``attest.errors``;
callers that need the project hierarchy map them (format -> MalformedError, mismatch ->
VerificationError).
"""

from __future__ import annotations

__all__ = [
    "LifecycleError",
    "LifecycleFormatError",
    "ReplayMismatchError",
    "StateRetiredError",
]


class LifecycleError(Exception):
    """Root of the exceptions lifecycle raises on purpose."""


class LifecycleFormatError(LifecycleError, ValueError):
    """A request, outcome or entry body whose shape is wrong.

    ``path`` names the offending field (``body.request.statements[2].cites``) and ``problem``
    says what was expected; the message is ``"<path>: <problem>"``.
    """

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        self.problem = problem
        super().__init__(f"{path}: {problem}")


class ReplayMismatchError(LifecycleError):
    """A recorded outcome that differs from what the rules decide for its request now.

    ``index`` is the position of the event in the replayed sequence when the caller is
    :func:`lifecycle.machine.replay` (``None`` for a single :func:`~lifecycle.machine.apply`).
    """

    def __init__(self, message: str, index: int | None = None) -> None:
        self.index = index
        if index is not None:
            message = f"event {index}: {message}"
        super().__init__(message)


class StateRetiredError(LifecycleError, RuntimeError):
    """A state used after ``apply`` returned its successor (its tables now belong to that one)."""
