"""The writer's per-thread cache of lifecycle folds, one per open ledger handle.

Replaying a thread's lifecycle history for every request would cost O(history). Each open
ledger (:class:`registre.ledger.core.database.Database`) keeps a :class:`LifecycleCache`: per
thread, the fold (:class:`registre.ledger.store.lifecycle_fold.ThreadFold`) as of some size.
Under the thread's lock it catches up on the lifecycle entries appended since that size
(:func:`registre.ledger.store.lifecycle_fold.catch_up`). A fold a failed transaction may have
moved is dropped, so the next user replays from the entries; nothing half-applied is kept.

Within one process the slot's lock is taken before the database lock, always in that order.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager

from sqlalchemy import Connection

from registre.ledger.store.lifecycle_fold import ThreadFold, catch_up

__all__ = ["LifecycleCache", "ThreadSlot"]


class ThreadSlot:
    """One thread's cached fold; ``lock`` serialises its users within the process.
    ``dirty`` is set while the fold holds events of a transaction not yet committed."""

    def __init__(self, thread: str) -> None:
        self.thread = thread
        self.lock = threading.Lock()
        self.fold: ThreadFold | None = None
        self.dirty = False

    def current(self, conn: Connection, size: int) -> ThreadFold:
        """The fold as of ``size`` entries, caught up (or replayed cold) through ``conn``."""
        fold = self.fold
        if fold is None or fold.size > size:  # cold, or a database that went backwards
            fold = ThreadFold(self.thread)
        self.fold = None  # dropped unless the catch-up completes
        catch_up(conn, fold, size)
        self.fold = fold
        return fold


class LifecycleCache:
    """Per-thread lifecycle folds of one open database
    (:class:`~registre.ledger.core.database.Database`)."""

    def __init__(self) -> None:
        self._slots: dict[str, ThreadSlot] = {}
        self._guard = threading.Lock()

    @contextmanager
    def using(self, thread: str) -> Iterator[ThreadSlot]:
        """Hold ``thread``'s slot. If the block raises while the slot is dirty, the fold is
        dropped (the next user replays from the entries)."""
        with self._guard:
            slot = self._slots.setdefault(thread, ThreadSlot(thread))
        with slot.lock:
            try:
                yield slot
            except BaseException:
                if slot.dirty:
                    slot.fold = None
                raise
            finally:
                slot.dirty = False

    def forget(self, thread: str | None = None) -> None:
        """Drop the cached fold of ``thread`` (default: every thread)."""
        with self._guard:
            slots = list(self._slots.values()) if thread is None else [self._slots.get(thread)]
        for slot in slots:
            if slot is not None:
                with slot.lock:
                    slot.fold = None
