"""Reading a thread's lifecycle from the derived tables: evidence, conclusions, references,
pins, revision chains and the trace of a conclusion back to the reads behind it.

These are reads of caches (:mod:`registre.ledger.store.derived`), one read transaction each; they
never decide anything. What they show is shown as the record, so each read first checks the
thread's head under its key and the cached rows against the fold of the signed entries, in the
same snapshot (issue 29 item 5): an edited row raises DerivedTablesDifferError (exit 1, "run
`registre rebuild`") instead of being shown. The check replays the thread's lifecycle entries
(O(lifecycle entries) per read, through the ``entry_lifecycle`` index). Every function raises
UnknownThreadError for a thread the ledger does not hold and :class:`UnknownItemError` for an id
the thread does not have.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, fields
from typing import Any, Final, TypeVar

from sqlalchemy import Connection, Engine, RowMapping, Table, select

from registre.errors import RefusedError
from registre.ledger.core.append import read_bound_head
from registre.ledger.errors import UnknownThreadError
from registre.ledger.store.derived import derived
from registre.ledger.store.derived_check import compare_derived
from registre.ledger.store.engine import read_transaction
from registre.ledger.store.lifecycle_fold import ThreadFold, catch_up
from registre.ledger.store.schema import tables

__all__ = [
    "ConclusionRecord",
    "EvidenceRecord",
    "PinRecord",
    "ReferenceRecord",
    "TraceNode",
    "UnknownItemError",
    "evidence_history",
    "get_conclusion",
    "get_evidence",
    "list_conclusions",
    "list_evidence",
    "list_pins",
    "list_references",
    "trace",
    "trace_to_json",
]


class UnknownItemError(RefusedError):
    """An evidence, conclusion or pin id that the thread does not have."""


@dataclass(frozen=True)
class ReferenceRecord:
    """A registered source reference; ``seq`` is the ``source.read`` entry that registered it."""

    ref: str
    source: str
    location: str
    sha256: str
    seq: int


@dataclass(frozen=True)
class EvidenceRecord:
    """Evidence ``id`` as the fold leaves it; ``seq`` admitted it, ``changed_seq`` (if any)
    superseded or retracted it."""

    id: str
    status: str
    text: str
    cites: tuple[str, ...]
    successor: str | None
    predecessor: str | None
    seq: int
    changed_seq: int | None


@dataclass(frozen=True)
class ConclusionRecord:
    """Conclusion version ``id``; ``changed_seq`` is the entry that last changed its status or
    made it stale."""

    id: str
    kind: str
    status: str
    stale: bool
    text: str
    cites: tuple[str, ...]
    relies_on: tuple[str, ...]
    successor: str | None
    predecessor: str | None
    seq: int
    changed_seq: int | None


@dataclass(frozen=True)
class PinRecord:
    """Pin ``id``: ``source_seq`` is the entry its text comes from, ``seq`` the pin entry,
    ``changed_seq`` the unpin entry (if any)."""

    id: str
    kind: str
    text: str
    source_seq: int
    live: bool
    unpin_reason: str | None
    seq: int
    changed_seq: int | None


@dataclass(frozen=True)
class TraceNode:
    """One step of a trace: a conclusion (whose ``children`` are what it cites) or an evidence
    entry (whose ``references`` are the passages it cites, each with its read's seq)."""

    item: ConclusionRecord | EvidenceRecord
    children: tuple[TraceNode, ...] = ()
    references: tuple[ReferenceRecord, ...] = ()


# --- queries -------------------------------------------------------------------------------


def list_references(engine: Engine, thread: str) -> list[ReferenceRecord]:
    """Every registered reference, in registration order."""
    table = derived.reference
    with _reading(engine, thread) as conn:
        rows = conn.execute(
            select(table).where(table.c.thread == thread).order_by(table.c.seq, table.c.ref)
        )
        return [_record(ReferenceRecord, row) for row in rows.mappings()]


def list_evidence(engine: Engine, thread: str, status: str | None = None) -> list[EvidenceRecord]:
    """Every evidence entry (or those with ``status``), in id order."""
    table = derived.evidence
    query = select(table).where(table.c.thread == thread).order_by(table.c.num)
    if status is not None:
        query = query.where(table.c.status == status)
    with _reading(engine, thread) as conn:
        return [_record(EvidenceRecord, row) for row in conn.execute(query).mappings()]


def get_evidence(engine: Engine, thread: str, evidence_id: str) -> EvidenceRecord:
    """Evidence ``evidence_id`` in whatever status."""
    with _reading(engine, thread) as conn:
        return _get(conn, EvidenceRecord, thread, evidence_id)


def evidence_history(engine: Engine, thread: str, evidence_id: str) -> list[EvidenceRecord]:
    """The revision chain through ``evidence_id``: from the entry it started as to its latest
    successor, oldest first. Cost: one read per version."""
    with _reading(engine, thread) as conn:
        start = _get(conn, EvidenceRecord, thread, evidence_id)
        older: list[EvidenceRecord] = []
        current = start
        while current.predecessor is not None:
            current = _get(conn, EvidenceRecord, thread, current.predecessor)
            older.append(current)
        chain = [*reversed(older), start]
        while chain[-1].successor is not None:
            successor = chain[-1].successor
            chain.append(_get(conn, EvidenceRecord, thread, successor))
        return chain


def list_conclusions(
    engine: Engine, thread: str, *, stale: bool | None = None, status: str | None = None
) -> list[ConclusionRecord]:
    """Every conclusion version in id order, filtered on ``stale`` and ``status`` if given."""
    table = derived.conclusion
    query = select(table).where(table.c.thread == thread).order_by(table.c.num)
    if stale is not None:
        query = query.where(table.c.stale == stale)
    if status is not None:
        query = query.where(table.c.status == status)
    with _reading(engine, thread) as conn:
        return [_record(ConclusionRecord, row) for row in conn.execute(query).mappings()]


def get_conclusion(engine: Engine, thread: str, conclusion_id: str) -> ConclusionRecord:
    """Conclusion version ``conclusion_id`` in whatever status."""
    with _reading(engine, thread) as conn:
        return _get(conn, ConclusionRecord, thread, conclusion_id)


def list_pins(engine: Engine, thread: str, *, live: bool | None = None) -> list[PinRecord]:
    """Every pin (or only live / only unpinned ones), in pin order."""
    table = derived.pin
    query = select(table).where(table.c.thread == thread).order_by(table.c.num)
    if live is not None:
        query = query.where(table.c.live == live)
    with _reading(engine, thread) as conn:
        return [_record(PinRecord, row) for row in conn.execute(query).mappings()]


def trace(engine: Engine, thread: str, conclusion_id: str) -> TraceNode:
    """``conclusion_id`` -> what it cites (computes, then their evidence) -> the references
    each evidence entry cites, each with the seq of the ``source.read`` that registered it.
    Cost: one read per node."""
    with _reading(engine, thread) as conn:
        root = _get(conn, ConclusionRecord, thread, conclusion_id)
        return _trace_conclusion(conn, thread, root)


def _trace_conclusion(conn: Connection, thread: str, item: ConclusionRecord) -> TraceNode:
    children = []
    for cited in item.cites:
        if cited.startswith("cc-"):
            conclusion = _get(conn, ConclusionRecord, thread, cited)
            children.append(_trace_conclusion(conn, thread, conclusion))
        else:
            evidence = _get(conn, EvidenceRecord, thread, cited)
            refs = tuple(_get(conn, ReferenceRecord, thread, r) for r in evidence.cites)
            children.append(TraceNode(evidence, references=refs))
    return TraceNode(item, children=tuple(children))


def trace_to_json(node: TraceNode) -> dict[str, Any]:
    """``node`` as plain JSON: the item's fields, then ``cites`` (nested nodes) for a
    conclusion or ``references`` for evidence."""
    item = node.item
    if isinstance(item, ConclusionRecord):
        return {
            "id": item.id,
            "kind": item.kind,
            "status": item.status,
            "stale": item.stale,
            "text": item.text,
            "seq": item.seq,
            "changed_seq": item.changed_seq,
            "successor": item.successor,
            "cites": [trace_to_json(child) for child in node.children],
        }
    return {
        "id": item.id,
        "kind": "evidence",
        "status": item.status,
        "text": item.text,
        "seq": item.seq,
        "changed_seq": item.changed_seq,
        "successor": item.successor,
        "references": [
            {
                "ref": ref.ref,
                "source": ref.source,
                "location": ref.location,
                "sha256": ref.sha256,
                "read_seq": ref.seq,
            }
            for ref in node.references
        ],
    }


# --- helpers -------------------------------------------------------------------------------


@contextmanager
def _reading(engine: Engine, thread: str) -> Iterator[Connection]:
    """A read snapshot, after checking the thread exists (UnknownThreadError)."""
    with read_transaction(engine, snapshot=True) as conn:
        found = conn.execute(select(tables.thread.c.id).where(tables.thread.c.id == thread))
        if found.first() is None:
            raise UnknownThreadError(f"no thread {thread!r}")
        _, head, _ = read_bound_head(conn, thread, lock=False)
        fold = ThreadFold(thread, keep_rows=True)
        catch_up(conn, fold, head.size)
        assert fold.rows is not None
        compare_derived(conn, thread, fold.rows)
        yield conn


_R = TypeVar("_R", ReferenceRecord, EvidenceRecord, ConclusionRecord, PinRecord)


def _get(conn: Connection, record: type[_R], thread: str, key: str) -> _R:
    """The ``record`` ``key`` of ``thread`` (UnknownItemError if it has none)."""
    table, what = _TABLES[record]
    column = table.c.ref if table is derived.reference else table.c.id
    row = (
        conn.execute(select(table).where(table.c.thread == thread, column == key))
        .mappings()
        .first()
    )
    if row is None:
        listing = "evidence list" if what == "evidence" else "conclusions"
        raise UnknownItemError(
            f"thread {thread} has no {what} {key!r}; see `registre {listing} {thread}`"
        )
    return _record(record, row)


def _ids(value: str) -> tuple[str, ...]:
    return tuple(json.loads(value))


def _same(value: Any) -> Any:
    return value


_TABLES: Final[dict[type[Any], tuple[Table, str]]] = {
    ReferenceRecord: (derived.reference, "reference"),
    EvidenceRecord: (derived.evidence, "evidence"),
    ConclusionRecord: (derived.conclusion, "conclusion"),
    PinRecord: (derived.pin, "pin"),
}
"""Each record's derived table, and what an error calls it."""

_DECODE: Final[dict[str, Callable[[Any], Any]]] = {
    "cites": _ids,
    "relies_on": _ids,
    "stale": bool,
    "live": bool,
}
"""The columns stored otherwise than their field holds them: id lists as JSON text, flags as
integers."""


def _record(record: type[_R], row: RowMapping) -> _R:
    """``record`` from a derived row: each field is the column of its name, decoded."""
    return record(**{f.name: _DECODE.get(f.name, _same)(row[f.name]) for f in fields(record)})
