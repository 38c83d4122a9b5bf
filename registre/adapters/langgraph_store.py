"""LangGraph's long-term memory on a registre ledger (``registre[langgraph]``).

:class:`RegistreStore` is a ``langgraph.store.base.BaseStore`` on one registre thread (by
default ``langgraph.store``): pass it as ``builder.compile(store=...)`` or ``create_agent(...,
store=...)``. ``batch`` (and ``abatch``) run ``GetOp``, ``SearchOp``, ``PutOp`` and
``ListNamespacesOp`` in order; the puts of a batch are appended in one transaction.

* A put is a signed ``transcript.entry`` (``framework: "langgraph"``) holding the record
  ``{"op": "store.put", "namespace", "key", "value", "expires"?}``; a delete (a put of None)
  the record ``{"op": "store.delete", "namespace", "key"}``: the value stays on the ledger,
  the store stops returning it. ``value`` is the item's JSON (floats allowed: the record is
  signed as RFC 8785 text, so an integral float such as ``1.0`` reads back as ``1``).
* TTL: a put with ``ttl`` (minutes) records ``expires``, the entry's time plus the TTL,
  as RFC 3339 UTC; reads leave out an expired item. Reads do not refresh the TTL (that would
  make every read a write): ``supports_ttl`` is True with ``refresh_on_read`` off.
* ``created_at`` is the time of the first put of the item (since its last delete),
  ``updated_at`` of the latest.
* Search: namespace prefix, the ``filter`` (equality on value fields, or the operators
  ``$eq``, ``$ne``, ``$gt``, ``$gte``, ``$lt``, ``$lte``), and ``query``: every word of the
  query appears, case-folded, in the item's value text (no embeddings, no score), newest
  first, then ``offset`` and ``limit``.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterable
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import Any, Final

from langgraph.store.base import (
    BaseStore,
    GetOp,
    Item,
    ListNamespacesOp,
    Op,
    PutOp,
    Result,
    SearchItem,
    SearchOp,
    TTLConfig,
)

from registre.adapters.langgraph_records import FRAMEWORK
from registre.attest.canonical_json import canonical_bytes
from registre.kinds import TRANSCRIPT_ENTRY
from registre.ledger import Ledger, Thread
from registre.ledger.errors import UnknownThreadError

__all__ = ["STORE_THREAD", "RegistreStore"]

STORE_THREAD: Final = "langgraph.store"
_ACTOR: Final = "langgraph"
_OPERATORS: Final = {
    "$eq": lambda a, b: a == b,
    "$ne": lambda a, b: a != b,
    "$gt": lambda a, b: a > b,
    "$gte": lambda a, b: a >= b,
    "$lt": lambda a, b: a < b,
    "$lte": lambda a, b: a <= b,
}


def _time(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


@dataclass(frozen=True)
class _Stored:
    value: dict[str, Any]
    created: datetime
    updated: datetime
    expires: datetime | None


class RegistreStore(BaseStore):
    """A LangGraph store on thread ``thread_id`` of ``ledger`` (module docstring)."""

    supports_ttl: bool = True
    ttl_config: TTLConfig | None = TTLConfig(refresh_on_read=False, default_ttl=None)

    def __init__(self, ledger: Ledger, *, thread_id: str = STORE_THREAD) -> None:
        self._ledger = ledger
        self._thread_id = thread_id
        self._items: dict[tuple[tuple[str, ...], str], _Stored] = {}
        self._size = 0
        self._lock = threading.RLock()

    @property
    def thread(self) -> Thread:
        """The thread the store records on (created on first use)."""
        try:
            return self._ledger.thread(self._thread_id)
        except UnknownThreadError:
            return self._ledger.create_thread(self._thread_id)

    def _catch_up(self, thread: Thread) -> None:
        head = thread.head().size
        for entry in thread.entries(self._size, head):
            if entry.kind != TRANSCRIPT_ENTRY or entry.body["framework"] != FRAMEWORK:
                continue
            record = json.loads(entry.body["entry_json"])
            where = (tuple(record["namespace"]), str(record["key"]))
            if record["op"] == "store.delete":
                self._items.pop(where, None)
            elif record["op"] == "store.put":
                now = _time(entry.time)
                before = self._items.get(where)
                expires = _time(record["expires"]) if "expires" in record else None
                created = before.created if before else now
                self._items[where] = _Stored(record["value"], created, now, expires)
        self._size = head

    def _live(self, now: datetime) -> dict[tuple[tuple[str, ...], str], _Stored]:
        return {
            where: stored
            for where, stored in self._items.items()
            if stored.expires is None or stored.expires > now
        }

    def batch(self, ops: Iterable[Op]) -> list[Result]:
        """Run ``ops`` in order (module docstring); one result per op (None for puts)."""
        ops = list(ops)
        with self._lock:
            thread = self.thread
            self._catch_up(thread)
            puts = [op for op in ops if isinstance(op, PutOp)]
            if puts:
                self._record(thread, puts)
                self._catch_up(thread)
            live = self._live(datetime.now(UTC))
            return [self._answer(op, live) for op in ops]

    async def abatch(self, ops: Iterable[Op]) -> list[Result]:
        """:meth:`batch`."""
        return self.batch(ops)

    def _record(self, thread: Thread, puts: list[PutOp]) -> None:
        items = []
        now = datetime.now(UTC)
        for op in puts:
            record: dict[str, Any] = {"namespace": list(op.namespace), "key": op.key}
            if op.value is None:
                record["op"] = "store.delete"
            else:
                record["op"] = "store.put"
                record["value"] = dict(op.value)
                if op.ttl is not None:
                    expires = now + timedelta(minutes=op.ttl)
                    record["expires"] = expires.isoformat().replace("+00:00", "Z")
            body = {
                "framework": FRAMEWORK,
                "session": "store",
                "entry_json": canonical_bytes(record).decode("utf-8"),
            }
            items.append((TRANSCRIPT_ENTRY, body, _ACTOR))
        thread.append_many(items)

    def _answer(self, op: Op, live: dict[tuple[tuple[str, ...], str], _Stored]) -> Result:
        if isinstance(op, GetOp):
            stored = live.get((tuple(op.namespace), op.key))
            return None if stored is None else self._item(Item, op.namespace, op.key, stored)
        if isinstance(op, SearchOp):
            return self._search(op, live)
        if isinstance(op, ListNamespacesOp):
            return self._namespaces(op, live)
        return None

    @staticmethod
    def _item(cls: Any, namespace: tuple[str, ...], key: str, stored: _Stored) -> Any:
        return cls(
            value=json.loads(json.dumps(stored.value)),
            key=key,
            namespace=tuple(namespace),
            created_at=stored.created,
            updated_at=stored.updated,
        )

    def _search(
        self, op: SearchOp, live: dict[tuple[tuple[str, ...], str], _Stored]
    ) -> list[SearchItem]:
        prefix = tuple(op.namespace_prefix)
        words = (op.query or "").casefold().split()
        found = []
        for (namespace, key), stored in live.items():
            if namespace[: len(prefix)] != prefix or not _matches(stored.value, op.filter):
                continue
            text = json.dumps(stored.value, ensure_ascii=False).casefold()
            if all(word in text for word in words):
                found.append((namespace, key, stored))
        found.sort(key=lambda hit: hit[2].updated, reverse=True)
        page = found[op.offset : op.offset + op.limit]
        return [self._item(SearchItem, ns, key, stored) for ns, key, stored in page]

    @staticmethod
    def _namespaces(
        op: ListNamespacesOp, live: dict[tuple[tuple[str, ...], str], _Stored]
    ) -> list[tuple[str, ...]]:
        spaces = {namespace for namespace, _key in live}
        chosen = set()
        for namespace in spaces:
            if all(
                _namespace_matches(c.match_type, c.path, namespace)
                for c in op.match_conditions or ()
            ):
                chosen.add(namespace if op.max_depth is None else namespace[: op.max_depth])
        return sorted(chosen)[op.offset : op.offset + op.limit]


def _matches(value: dict[str, Any], wanted: dict[str, Any] | None) -> bool:
    for field, condition in (wanted or {}).items():
        held = value.get(field)
        if isinstance(condition, dict) and condition and set(condition) <= set(_OPERATORS):
            try:
                if not all(_OPERATORS[name](held, arg) for name, arg in condition.items()):
                    return False
            except TypeError:
                return False
        elif held != condition:
            return False
    return True


def _namespace_matches(kind: str, path: tuple[str, ...], namespace: tuple[str, ...]) -> bool:
    if len(path) > len(namespace):
        return False
    part = namespace[: len(path)] if kind == "prefix" else namespace[len(namespace) - len(path) :]
    return all(want in ("*", have) for want, have in zip(path, part, strict=True))
