"""The thread's task turns, as :func:`registre.context.task_pins_due` reads them,
remembered once they can no longer change.

Before every compaction that folds a range, ``Thread.compact`` asks which task entries to
pin (``specs/context.md`` section 5.1): the first ``turn`` of role ``system`` and of role
``user`` among the thread's first :data:`~registre.context.task_pin.TASK_PIN_SCAN`
entries. A thread that has no such turn there made every compaction read and parse all of
those entries again. :func:`task_turns` returns just those turns (at most two, in seq
order): ``task_pins_due`` decides on them exactly as on all the entries, since it takes the
first turn of each role at or before the folded range's end and looks at nothing else.

Once the thread has all of its first ``TASK_PIN_SCAN`` entries they never change, and the
leaf hash of the last of them commits to all of them (each entry's envelope carries the tree
head before it): the turns are kept per (database engine, thread) with that leaf hash, and
served while the database still holds it (one indexed read). Bounded, thread safe.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from collections.abc import Iterable
from typing import Final

from sqlalchemy import Connection

from registre.context import ContextEntry
from registre.context.task_pin import TASK_PIN_SCAN
from registre.ledger.store.context_cache import fold_cache
from registre.ledger.store.context_snapshots import context_entries

__all__ = ["first_task_turns", "task_turns"]

_MAX_THREADS: Final = 256
_KEPT: OrderedDict[tuple[int, str], tuple[bytes, tuple[ContextEntry, ...]]] = OrderedDict()
_LOCK: Final = threading.Lock()


def first_task_turns(entries: Iterable[ContextEntry]) -> list[ContextEntry]:
    """The first ``turn`` of role ``system`` and the first of role ``user`` whose ``text`` is
    a string, among ``entries`` (in seq order), in seq order: the only entries
    ``task_pins_due`` takes from them."""
    found: dict[str, ContextEntry] = {}
    for entry in entries:
        role, text = entry.body.get("role"), entry.body.get("text")
        if entry.kind != "turn" or role not in ("system", "user") or not isinstance(text, str):
            continue
        found.setdefault(str(role), entry)
        if len(found) == 2:
            break
    return sorted(found.values(), key=lambda entry: entry.seq)


def task_turns(conn: Connection, thread: str, stop: int) -> list[ContextEntry]:
    """:func:`first_task_turns` of ``thread``'s entries ``0 .. stop - 1`` (``stop`` at most
    ``TASK_PIN_SCAN``), read in ``conn``'s transaction, or remembered (module docstring).
    ContextHistoryError for a missing or unreadable entry."""
    if stop < TASK_PIN_SCAN:
        return first_task_turns(context_entries(conn, thread, 0, stop))
    key = (id(conn.engine), thread)
    anchor = fold_cache().leaf_hash(conn, thread, TASK_PIN_SCAN - 1)
    with _LOCK:
        kept = _KEPT.get(key)
        if kept is not None and anchor is not None and kept[0] == anchor:
            _KEPT.move_to_end(key)
            return list(kept[1])
    turns = first_task_turns(context_entries(conn, thread, 0, TASK_PIN_SCAN))
    if anchor is not None:
        with _LOCK:
            _KEPT[key] = (anchor, tuple(turns))
            _KEPT.move_to_end(key)
            while len(_KEPT) > _MAX_THREADS:
                _KEPT.popitem(last=False)
    return turns
