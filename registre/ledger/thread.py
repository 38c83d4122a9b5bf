"""A thread of the ledger: the thread core with its lifecycle and working-context wings.

:class:`Thread` is what :meth:`registre.ledger.Ledger.thread` returns. Its calls come from
three classes, each with one job:

* :class:`~registre.ledger.core.thread_core.ThreadCore` -- append, read, checkpoint, prove;
* :class:`~registre.ledger.lifecycle.api.LifecycleThread` -- sources, evidence, conclusions,
  pins (``read_source``, ``evidence``, ``conclude``, ``pin``, ...);
* :class:`~registre.ledger.context.api.ContextThread` -- the working context (``project``,
  ``compact``, ``model_call``, ``replay_context``, ``expand``).

The one thing only the whole thread knows is which rules a raw append must keep, so
:meth:`Thread.append_many` is defined here.
"""

from __future__ import annotations

from collections.abc import Iterable

from registre.attest.entries import LIFECYCLE_KINDS, Entry
from registre.context import TASK_PIN_KIND
from registre.context.task_pin import TASK_PIN_ACTOR
from registre.kinds import TOOL_CALL, TOOL_RESULT
from registre.ledger.context.api import ContextThread
from registre.ledger.context.store import CONTEXT_WRITE_KINDS, append_context_checked
from registre.ledger.core.append import AppendItem, batch_kinds
from registre.ledger.lifecycle.api import LifecycleThread, PinRefusedError
from registre.ledger.lifecycle.store import append_checked

__all__ = [
    "Thread",
]


class Thread(LifecycleThread, ContextThread):
    """Handle on thread ``id`` of a ledger; ``origin`` is ``LOGNAME/id`` (module docstring)."""

    def _pin_task(self, seq: int, text: str) -> None:
        """The automatic task pin (``specs/context.md`` section 5.1): ``text`` of entry
        ``seq`` pinned as a task parameter, unless a pin of that text was ever made (the
        stored context fold forgets unpinned pins, the pin table does not); a pin the rules
        refuse is left out."""
        pins = self.lifecycle_state().tables().pins.values()  # the signed record's pins
        if any(pin.seq == seq and pin.text == text for pin in pins):
            return
        try:
            self.pin(TASK_PIN_KIND, text, seq, actor=TASK_PIN_ACTOR)
        except PinRefusedError:
            return

    def _unpin_task(self, pin_id: str, reason: str) -> None:
        """Unpin ``pin_id``, an automatic task pin of an earlier task (section 5.1), with
        ``reason``; a refusal (already unpinned) is left alone."""
        try:
            self.unpin(pin_id, reason, actor=TASK_PIN_ACTOR)
        except PinRefusedError:
            return

    def append_many(self, items: Iterable[AppendItem]) -> list[Entry]:
        """Sign and store every ``(kind, body, actor)`` in one transaction: all or nothing.

        Every item is validated before anything is written; consecutive sequence numbers.
        Lifecycle items must record exactly the rules' decision
        (:func:`registre.ledger.lifecycle.store.append_checked`; UndecidedOutcomeError
        otherwise); compactions and model calls must keep the context rules
        (:func:`registre.ledger.context.store.append_context_checked`;
        ContextEntryRefusedError); a ``tool.result`` must answer an earlier ``tool.call``
        of the thread or the batch (:mod:`registre.ledger.core.tool_calls`;
        OrphanToolResultError).
        """
        batch = list(items)
        kinds = batch_kinds(batch)
        if TOOL_RESULT in kinds:
            self._db.tool_calls.check(self._db.engine, self.id, batch)
        if not kinds.isdisjoint(CONTEXT_WRITE_KINDS):
            entries = append_context_checked(self._db, self.id, batch)
        elif not kinds.isdisjoint(LIFECYCLE_KINDS):
            entries = append_checked(self._db, self.id, batch)
        else:
            entries = super().append_many(batch)
        if TOOL_CALL in kinds:
            self._db.tool_calls.remember(self.id, batch)
        return entries
