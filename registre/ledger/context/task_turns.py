"""The current task's turns, as :func:`registre.context.task_pins_due` reads them, read
once per entry and remembered.

Before every compaction that folds a range, ``Thread.compact`` asks which task entries to
pin and which automatic task pins belong to an earlier task (``specs/context.md`` section
5.1). Both follow from :class:`~registre.context.task_pin.TaskScan` fed the thread's
``turn`` entries in order. Reading them all on every compaction would cost O(thread); so
the scan is kept per (database engine, thread) with how far it read and the leaf hash of the
last entry it read (which commits to every entry before it: each envelope carries the tree
head before it), and fed only the turns written since, while the database still holds that
leaf hash (one indexed read). Bounded (:data:`_MAX_THREADS` scans), thread safe.
"""

from __future__ import annotations

import copy
import threading
from collections import OrderedDict
from dataclasses import dataclass
from typing import Final

from sqlalchemy import Connection

from registre.context import ContextEntry
from registre.context.task_pin import TaskScan
from registre.ledger.store.context_cache import fold_cache
from registre.ledger.store.context_snapshots import turn_entries

__all__ = ["task_turns"]

_MAX_THREADS: Final = 256


@dataclass(slots=True)
class _Kept:
    stop: int  # entries 0 .. stop - 1 were read
    anchor: bytes | None  # the leaf hash of entry stop - 1
    scan: TaskScan


_KEPT: OrderedDict[tuple[int, str], _Kept] = OrderedDict()
_LOCK: Final = threading.Lock()


def task_turns(conn: Connection, thread: str, stop: int) -> list[ContextEntry]:
    """:attr:`TaskScan.turns` of ``thread``'s entries ``0 .. stop - 1``, read in ``conn``'s
    transaction (only the turns not read before, module docstring). ContextHistoryError for
    an unreadable entry."""
    key = (id(conn.engine), thread)
    with _LOCK:
        kept = _KEPT.get(key)
    start, scan = 0, TaskScan()
    if kept is not None and kept.stop <= stop:
        anchor = fold_cache().leaf_hash(conn, thread, kept.stop - 1) if kept.stop else None
        if anchor == kept.anchor:
            start, scan = kept.stop, copy.copy(kept.scan)
    for entry in turn_entries(conn, thread, start, stop):
        scan.feed(entry)
    if stop > 0:
        anchor = fold_cache().leaf_hash(conn, thread, stop - 1)
        with _LOCK:
            _KEPT[key] = _Kept(stop, anchor, scan)
            _KEPT.move_to_end(key)
            while len(_KEPT) > _MAX_THREADS:
                _KEPT.popitem(last=False)
    return scan.turns
