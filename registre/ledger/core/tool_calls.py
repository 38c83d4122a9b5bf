"""A tool result answers a call: the thread rule every append of a ``tool.result`` keeps.

A ``tool.result`` whose ``call_id`` no earlier ``tool.call`` of the thread -- or of the same
batch, before it -- issued is refused before anything is written (:class:`OrphanToolResultError`,
exit 2, the ledger unchanged). A result carrying ``call_ref`` (a reused id, ``ID#N``) must
answer a call carrying the same ``call_ref``. The importers keep the stricter pairing of
``specs/entries.md`` section 6 (the most recent *unanswered* call), and refuse an orphan in a
file with its place; this rule is what every writer keeps, the Python API and the MCP server
included.

The check is cheap where it matters. :class:`ToolCallCache` (one per open database) remembers
the call keys this process appended or read; a miss reads the thread's ``tool.call`` entries
newest first, page by page, from the head down to where the previous full scan ended, and
stops at the call -- usually a few entries back. Only a result that really answers nothing
reads the rest (once: later misses read only the entries appended since).
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from sqlalchemy import Connection, Engine, text

from registre.errors import RefusedError
from registre.kinds import TOOL_CALL, TOOL_RESULT
from registre.ledger.store.engine import read_transaction

__all__ = ["OrphanToolResultError", "ToolCallCache", "call_keys"]

_PAGE = 256
_HEAD = text("SELECT size FROM thread WHERE id = :thread")
_CALLS = text(
    "SELECT seq, leaf FROM entry WHERE thread = :thread AND kind = :kind "
    "AND seq >= :low AND seq < :high ORDER BY seq DESC LIMIT :page"
)


class OrphanToolResultError(RefusedError):
    """A ``tool.result`` that answers no earlier ``tool.call`` of its thread (no call with its
    ``call_id``, or with its ``call_ref``): refused, nothing written."""


def call_keys(body: Any) -> list[str]:
    """The keys a ``tool.call`` body answers to: its ``call_id`` and its ``call_ref``."""
    if not isinstance(body, dict):
        return []
    keys = []
    if isinstance(body.get("call_id"), str):
        keys.append(f"id {body['call_id']}")
    if isinstance(body.get("call_ref"), str):
        keys.append(f"ref {body['call_ref']}")
    return keys


def _wanted(body: Any) -> tuple[str, str] | None:
    """The key a ``tool.result`` body needs and how to name it, or None for a body that is
    not one (the schema check refuses it)."""
    if not isinstance(body, dict) or not isinstance(body.get("call_id"), str):
        return None
    if isinstance(body.get("call_ref"), str):
        return f"ref {body['call_ref']}", f"call_ref {body['call_ref']!r}"
    return f"id {body['call_id']}", f"call_id {body['call_id']!r}"


@dataclass
class _Known:
    keys: set[str] = field(default_factory=set)
    scanned_to: int = 0
    """Every tool.call below this seq is in ``keys``."""


class ToolCallCache:
    """The call keys of each thread this process appended or read (module docstring).
    Thread-safe; keys are only ever added (calls are never removed from a ledger)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._threads: dict[str, _Known] = {}

    def remember(self, thread: str, items: Iterable[tuple[str, Any, str]]) -> None:
        """Add the calls among appended ``(kind, body, actor)`` items."""
        keys = [key for kind, body, _ in items if kind == TOOL_CALL for key in call_keys(body)]
        if keys:
            with self._lock:
                self._threads.setdefault(thread, _Known()).keys.update(keys)

    def check(self, engine: Engine, thread: str, items: Sequence[tuple[str, Any, str]]) -> None:
        """Raise OrphanToolResultError for the first ``tool.result`` of ``items`` that
        answers no call before it, in the batch or in the thread (read from ``engine`` only
        when this process does not know the call yet)."""
        batch: set[str] = set()
        for index, item in enumerate(items):
            if not isinstance(item, tuple) or len(item) != 3:
                continue  # the append refuses it
            kind, body = item[0], item[1]
            if kind == TOOL_CALL:
                batch.update(call_keys(body))
            elif kind == TOOL_RESULT:
                wanted = _wanted(body)
                if wanted is None or wanted[0] in batch:
                    continue
                if not self._in_thread(engine, thread, wanted[0]):
                    where = f"item {index} of the batch" if len(items) > 1 else "the result"
                    raise OrphanToolResultError(
                        f"{where} answers no tool call: no earlier tool.call of thread "
                        f"{thread} has {wanted[1]}"
                    ).with_hint(
                        "append the tool.call first (a result answers a call); output with "
                        "no call of its own goes in a turn"
                    )

    def _in_thread(self, engine: Engine, thread: str, key: str) -> bool:
        with self._lock:
            known = self._threads.setdefault(thread, _Known())
            if key in known.keys:
                return True
            scanned_to = known.scanned_to
        with read_transaction(engine) as conn:
            head = conn.execute(_HEAD, {"thread": thread}).scalar()
            if head is None:
                return True  # an unknown thread: the append refuses it with its own error
            found, seen = _read(conn, thread, key, scanned_to, int(head))
        with self._lock:
            known.keys.update(seen)
            if not found:  # everything from scanned_to to the head was read
                known.scanned_to = max(known.scanned_to, int(head))
        return found


def _read(conn: Connection, thread: str, key: str, low: int, high: int) -> tuple[bool, list[str]]:
    """Read the thread's calls in ``[low, high)`` newest first, a page at a time, until one
    answers to ``key``: ``(found, every key read)``."""
    found, seen = False, []
    while high > low and not found:
        rows = conn.execute(
            _CALLS, {"thread": thread, "kind": TOOL_CALL, "low": low, "high": high, "page": _PAGE}
        ).all()
        if not rows:
            break
        for seq, leaf in rows:
            keys = call_keys(json.loads(bytes(leaf))["entry"]["body"])
            seen.extend(keys)
            found = found or key in keys
            high = int(seq)
    return found, seen
