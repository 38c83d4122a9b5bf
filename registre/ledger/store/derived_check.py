"""``registre verify --db`` step 9: the derived lifecycle tables hold exactly the rows the fold
of the thread's lifecycle entries gives (:mod:`registre.ledger.store.lifecycle_fold`).

* :class:`DerivedCheck` is fed the :class:`~registre.ledger.store.lifecycle_fold.Change` list of
  every folded entry in seq order. The rows of the keyed tables (references, evidence,
  conclusions, pins) are kept, as their later entries update them; the transition rows, one per
  lifecycle entry and never updated, are compared as they come with the stored ones, read in
  seq order a page at a time, and not kept. :meth:`DerivedCheck.finish` compares the kept rows
  and raises the first difference.
* :func:`compare_derived` compares whole expected tables (a :class:`ThreadFold`'s ``rows``).

Both read the stored rows in keyset pages of ``batch`` rows (never a table at once) and raise
:class:`~registre.ledger.store.lifecycle_fold.DerivedTablesDifferError` at the first row that is
not exactly the expected one (missing, extra, or a column differs), in table order
(:data:`~registre.ledger.store.derived.DERIVED_TABLES`) and, within a table, earliest seq first
-- the difference the whole tables read and sorted would give first.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, MutableMapping, Sequence
from typing import Any, Final

from sqlalchemy import Connection, Select, Table, bindparam, select

from registre.ledger.errors import rebuild_hint
from registre.ledger.store.derived import DERIVED_TABLES, derived
from registre.ledger.store.lifecycle_fold import (
    KEY_COLUMNS,
    Change,
    DerivedRows,
    DerivedTablesDifferError,
    RowKey,
)

__all__ = ["CompactRows", "DerivedCheck", "compare_derived"]

_TRANSITION: Final = derived.transition.name


class CompactRows(MutableMapping[RowKey, dict[str, Any]]):
    """Rows of one derived table by key, as a ``dict`` of row dicts reads, stored compactly:
    a row whose columns are those of the first row stored, in the same order, is kept as the
    tuple of its values (about a quarter of a dict's size); any other row as its dict.

    Reading a row gives a new dict with the columns in the order they were stored (so
    changing it changes nothing stored); :meth:`update_row` is ``rows[key].update(values)``
    of a dict of dicts, column order included.
    """

    def __init__(self) -> None:
        self._columns: tuple[str, ...] | None = None
        self._rows: dict[RowKey, tuple[Any, ...] | dict[str, Any]] = {}

    def __getitem__(self, key: RowKey) -> dict[str, Any]:
        row = self._rows[key]
        if isinstance(row, dict):
            return dict(row)
        assert self._columns is not None
        return dict(zip(self._columns, row, strict=True))

    def __setitem__(self, key: RowKey, row: Mapping[str, Any]) -> None:
        columns = tuple(row)
        if self._columns is None:
            self._columns = columns
        self._rows[key] = tuple(row.values()) if columns == self._columns else dict(row)

    def __delitem__(self, key: RowKey) -> None:
        del self._rows[key]

    def __iter__(self) -> Iterator[RowKey]:
        return iter(self._rows)

    def __len__(self) -> int:
        return len(self._rows)

    def update_row(self, key: RowKey, values: Mapping[str, Any]) -> None:
        """Set ``values``' columns on row ``key`` (KeyError if there is none)."""
        row = self[key]
        row.update(values)
        self[key] = row


class DerivedCheck:
    """Step 9 for one thread, in the verifier's read snapshot (module docstring). Memory: the
    rows of the keyed tables (as :class:`CompactRows`), one page of stored transition rows and
    the earliest transition difference -- nothing per transition."""

    def __init__(
        self, conn: Connection, thread: str, *, batch: int = 1000, stored: bool = True
    ) -> None:
        """``stored``: False when the thread is known to have no derived row (then no stored
        transition is read)."""
        self._conn, self._thread, self._batch = conn, thread, batch
        self._rows = {
            table.name: CompactRows() for table in DERIVED_TABLES if table.name != _TRANSITION
        }
        self.changes = 0  # how many changes were fed
        self._stored: Iterator[tuple[RowKey, Mapping[str, Any]]] | None = (
            None if stored else iter(())
        )
        self._next: tuple[RowKey, Mapping[str, Any]] | None = None
        self._first: _Difference | None = None  # the earliest transition difference so far

    def add(self, changes: Sequence[Change]) -> None:
        """Take the changes of the next folded entry (entries in seq order)."""
        for change in changes:
            self.changes += 1
            if change.table == _TRANSITION:
                self._transition(change.key, change.row)
                continue
            table = self._rows[change.table]
            if change.update:
                table.update_row(change.key, change.row)
            else:
                table[change.key] = change.row

    def finish(self) -> None:
        """Compare the kept rows, then the stored transition rows not met yet; raise
        DerivedTablesDifferError at the first difference (module docstring)."""
        for table in DERIVED_TABLES:
            if table.name == _TRANSITION:
                while (stored := self._take()) is not None:
                    self._first = _earlier(self._first, stored[0], None, stored[1])
                first = self._first
            else:
                first = _first_difference(
                    self._conn, table, self._thread, self._rows[table.name], self._batch
                )
            if first is not None:
                _raise(self._thread, table.name, first)

    def _transition(self, key: RowKey, row: Mapping[str, Any]) -> None:
        """Compare the expected transition row ``key`` (keys come in increasing order) with
        the stored one, passing stored rows with a smaller key (rows no entry creates)."""
        while (stored := self._peek()) is not None and _before(stored[0], key):
            self._take()
            self._first = _earlier(self._first, stored[0], None, stored[1])
        stored = self._peek()
        if stored is not None and stored[0] == key:
            self._take()
            if stored[1] != row:
                self._first = _earlier(self._first, key, row, stored[1])
        else:
            self._first = _earlier(self._first, key, row, None)

    def _peek(self) -> tuple[RowKey, Mapping[str, Any]] | None:
        if self._stored is None:
            table = derived.transition
            self._stored = _stored_rows(self._conn, table, self._thread, self._batch)
            self._next = next(self._stored, None)
        return self._next

    def _take(self) -> tuple[RowKey, Mapping[str, Any]] | None:
        taken = self._peek()
        if taken is not None:
            assert self._stored is not None
            self._next = next(self._stored, None)
        return taken


def _before(stored: RowKey, key: RowKey) -> bool:
    """Whether the stored key comes before ``key`` in the stored order (a key of another type
    than an integer -- a hostile TEXT seq -- is never an expected one)."""
    return not isinstance(stored, int) or stored < key  # type: ignore[operator]


def compare_derived(
    conn: Connection, thread: str, expected: DerivedRows, *, batch: int = 1000
) -> None:
    """Raise DerivedTablesDifferError at the first row of ``thread``'s derived tables that is
    not exactly the ``expected`` row (missing, extra, or a column differs), in table order
    and, within a table, earliest seq first.

    The stored rows are read ``batch`` at a time and each matched row is dropped from
    ``expected`` (which is consumed), so memory is ``expected`` plus one batch, never a second
    copy of the tables. Of the differences a table holds, the one reported is the earliest in
    that order, as if the table had been read whole and sorted."""
    for table in DERIVED_TABLES:
        first = _first_difference(conn, table, thread, expected[table.name], batch)
        if first is not None:
            _raise(thread, table.name, first)


def _first_difference(
    conn: Connection,
    table: Table,
    thread: str,
    want: MutableMapping[RowKey, dict[str, Any]],
    batch: int,
) -> _Difference | None:
    """The earliest difference between ``table``'s stored rows and ``want`` (consumed: each
    matched row is dropped from it), or None."""
    first: _Difference | None = None
    for key, have in _stored_rows(conn, table, thread, batch):
        row = want.pop(key, None)
        if row != have:
            first = _earlier(first, key, row, have)
    for key, row in want.items():  # expected rows the table does not hold
        first = _earlier(first, key, row, None)
    return first


def _raise(thread: str, table: str, first: _Difference) -> None:
    _order_key, key, want, have = first
    _compare_row(thread, table, key, want, have)


_Difference = tuple[
    tuple[int, int, str], RowKey, Mapping[str, Any] | None, Mapping[str, Any] | None
]


def _earlier(
    first: _Difference | None,
    key: RowKey,
    want: Mapping[str, Any] | None,
    have: Mapping[str, Any] | None,
) -> _Difference:
    """Of ``first`` and the difference at ``key``, the one :func:`_order` puts first."""
    order = _order(key, {} if want is None else {key: want}, {} if have is None else {key: have})
    if first is None or order < first[0]:
        return (order, key, want, have)
    return first


def _pages(table: Table) -> tuple[Select[Any], Select[Any]]:
    """The first page's query of ``table``'s rows of a thread, and the next pages' (after a
    key), in key order, ``batch`` rows each: built once per table."""
    column = table.c[KEY_COLUMNS[table.name]]
    first = (
        select(table)
        .where(table.c.thread == bindparam("thread"))
        .order_by(column)
        .limit(bindparam("batch"))
    )
    return first, first.where(column > bindparam("after"))


_PAGES: Final = {table.name: _pages(table) for table in DERIVED_TABLES}


def _stored_rows(
    conn: Connection, table: Table, thread: str, batch: int
) -> Iterator[tuple[RowKey, Mapping[str, Any]]]:
    """``thread``'s rows of ``table`` as ``(key, row)`` (the row as
    :func:`~registre.ledger.store.lifecycle_fold.read_derived` gives it), ``batch`` at a time
    in key order (keyset pages on the primary key)."""
    key = KEY_COLUMNS[table.name]
    first, following = _PAGES[table.name]
    params: dict[str, Any] = {"thread": thread, "batch": batch}
    page = first
    while True:
        rows = conn.execute(page, params).mappings().all()
        for row in rows:
            yield row[key], dict(row)
        if len(rows) < batch:
            return
        page, params["after"] = following, rows[-1][key]


def _order(
    key: RowKey, want: Mapping[RowKey, Mapping[str, Any]], have: Mapping[RowKey, Mapping[str, Any]]
) -> tuple[int, int, str]:
    row = want.get(key) or have[key]
    seq = row.get("seq")
    num = row.get("num")
    return (seq if isinstance(seq, int) else -1, num if isinstance(num, int) else 0, str(key))


def _compare_row(
    thread: str,
    table: str,
    key: RowKey,
    want: Mapping[str, Any] | None,
    have: Mapping[str, Any] | None,
) -> None:
    if want == have:
        return
    if want is None:
        assert have is not None
        seq = int(have.get("seq", -1))
        problem = "is in the table but no lifecycle entry creates it"
    elif have is None:
        seq = int(want["seq"])
        problem = "is missing from the table"
    else:
        seq = int(want["seq"])
        column = next(c for c in want if want[c] != have.get(c))
        problem = (
            f"column {column} is {have.get(column)!r} in the table but the fold of the "
            f"entries gives {want[column]!r}"
        )
    raise DerivedTablesDifferError(thread, table, key, seq, problem).with_hint(rebuild_hint(thread))
