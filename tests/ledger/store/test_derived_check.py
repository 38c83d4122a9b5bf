"""ledger.store.derived_check: compare_derived and DerivedCheck (fed the fold's changes entry by
entry, transitions compared as they come) read the stored rows a page at a time and report the
same first difference as the whole tables read and sorted (the former compare_derived),
whatever rows are deleted, changed or added and whatever the page size. Both engines.
CompactRows reads as the dict of row dicts it replaces, whatever is stored, updated and
deleted."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlalchemy import Connection, Table, text

from registre.ledger.ledger import Ledger
from registre.ledger.store.derived import DERIVED_TABLES
from registre.ledger.store.derived_check import (
    CompactRows,
    DerivedCheck,
    _compare_row,
    _order,
    compare_derived,
)
from registre.ledger.store.lifecycle_fold import (
    KEY_COLUMNS,
    Change,
    DerivedRows,
    DerivedTablesDifferError,
    ThreadFold,
    lifecycle_entries,
    read_derived,
)
from registre.ledger.thread import Thread
from tests.examples_budget import examples
from tests.ledger.lifecycle_helpers import folded_rows, investigation

Outcome = tuple[str, str, Any, int] | None


def sorted_compare(conn: Connection, thread: str, expected: DerivedRows) -> None:
    """The former compare_derived: every stored row read at once, each table's keys sorted."""
    found = read_derived(conn, thread)
    for table in DERIVED_TABLES:
        want, have = expected[table.name], found[table.name]
        for key in sorted(set(want) | set(have), key=lambda k: _order(k, want, have)):
            _compare_row(thread, table.name, key, want.get(key), have.get(key))


def fed_check(conn: Connection, thread: str, changes: list[list[Change]], batch: int) -> None:
    """DerivedCheck fed ``changes`` (entry by entry), then finished."""
    check = DerivedCheck(conn, thread, batch=batch)
    for step in changes:
        check.add(step)
    check.finish()


def fold_changes(ledger: Ledger, thread: Thread) -> list[list[Change]]:
    """The changes of each lifecycle entry of ``thread``, in seq order."""
    fold = ThreadFold(thread.id)
    with ledger.engine.connect() as conn:
        entries = list(lifecycle_entries(conn, thread.id, 0, thread.head().size))
    return [fold.add_entry(seq, kind, body) for seq, kind, body in entries]


def outcome(check: Any, conn: Connection, expected: Any, **options: Any) -> Outcome:
    try:
        check(conn, "t1", expected, **options)
    except DerivedTablesDifferError as exc:
        return (str(exc), exc.table, exc.key, exc.seq)
    return None


def tamper(
    conn: Connection, table: Table, rows: list[dict[str, Any]], data: st.DataObject, number: int
) -> None:
    """Delete, change or add one row of ``table`` (whose stored rows are ``rows``); an added
    row's key is made from ``number``, distinct for each tamper."""
    key = KEY_COLUMNS[table.name]
    row = data.draw(st.sampled_from(rows), label="row")
    where = f"thread = 't1' AND {key} = :key"
    action = data.draw(st.sampled_from(["delete", "change", "add"]), label="action")
    if action == "delete":
        conn.execute(text(f"DELETE FROM {table.name} WHERE {where}"), {"key": row[key]})
        return
    columns = [c for c in row if c not in ("thread", key)]
    column = data.draw(st.sampled_from(columns), label="column")
    value, kind = row[column], table.c[column].type.python_type
    if kind is bool:
        changed: Any = not value
    elif kind is int:
        changed = (value or 0) + data.draw(st.integers(min_value=1, max_value=50), label="delta")
    else:
        changed = f"{value or ''}x"
    if action == "change":
        statement = f"UPDATE {table.name} SET {column} = :value WHERE {where}"
        conn.execute(text(statement), {"value": changed, "key": row[key]})
        return
    extra = dict(row)
    extra[key] = row[key] + 1000 * number if isinstance(row[key], int) else f"{row[key]}-{number}"
    extra[column] = changed
    names = ", ".join(extra)
    conn.execute(
        text(f"INSERT INTO {table.name} ({names}) VALUES ({', '.join(':' + n for n in extra)})"),
        extra,
    )


@pytest.fixture
def investigated(ledger: Ledger, thread: Thread) -> Ledger:
    investigation(thread)
    return ledger


@settings(max_examples=examples(60), suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(data=st.data())
def test_paged_compare_reports_the_sorted_first_difference(
    investigated: Ledger, thread: Thread, data: st.DataObject
) -> None:
    # Each example tampers inside a transaction rolled back at its end: examples share one
    # database.
    sorted_rows, paged_rows = folded_rows(investigated, thread), folded_rows(investigated, thread)
    changes = fold_changes(investigated, thread)
    with investigated.engine.connect() as conn, conn.begin() as transaction:
        stored = read_derived(conn, "t1")
        for number in range(1, data.draw(st.integers(min_value=1, max_value=4), label="n")):
            table = data.draw(st.sampled_from(DERIVED_TABLES), label="table")
            rows = list(stored[table.name].values())
            if rows:
                tamper(conn, table, rows, data, number)
        batch = data.draw(st.integers(min_value=1, max_value=6), label="batch")
        want = outcome(sorted_compare, conn, sorted_rows)
        assert outcome(compare_derived, conn, paged_rows, batch=batch) == want
        assert outcome(fed_check, conn, changes, batch=batch) == want
        transaction.rollback()


def test_untampered_tables_compare_equal_at_every_page_size(
    investigated: Ledger, thread: Thread
) -> None:
    with investigated.engine.connect() as conn:
        for batch in (1, 2, 3, 1000):
            assert outcome(
                compare_derived, conn, folded_rows(investigated, thread), batch=batch
            ) is (None)


COLUMNS = ("thread", "id", "num", "seq", "text", "stale")
VALUES = st.one_of(st.none(), st.booleans(), st.integers(-3, 3), st.text(max_size=3))
KEYS = st.one_of(st.integers(0, 5), st.sampled_from(["ev-1", "ev-2", "cc-1"]))
ROWS = st.lists(st.sampled_from(COLUMNS), unique=True).flatmap(
    lambda names: st.fixed_dictionaries({name: VALUES for name in names})
)
OPERATIONS = st.lists(
    st.one_of(
        st.tuples(st.just("set"), KEYS, ROWS),
        st.tuples(st.just("update"), KEYS, ROWS),
        st.tuples(st.just("delete"), KEYS, st.just({})),
    ),
    max_size=30,
)


@given(first=st.fixed_dictionaries({name: VALUES for name in COLUMNS}), operations=OPERATIONS)
def test_compact_rows_read_as_a_dict_of_dicts(
    first: dict[str, Any], operations: list[tuple[str, Any, dict[str, Any]]]
) -> None:
    model: dict[Any, dict[str, Any]] = {"first": dict(first)}
    compact = CompactRows()
    compact["first"] = first
    for action, key, row in operations:
        if action == "set":
            model[key] = dict(row)
            compact[key] = row
        elif action == "update":
            if key not in model:
                with pytest.raises(KeyError):
                    compact.update_row(key, row)
                continue
            model[key].update(row)
            compact.update_row(key, row)
        elif key in model:
            del model[key]
            del compact[key]
    # the same rows, keys and columns in the same order; a row read is a copy
    assert [(k, list(v.items())) for k, v in compact.items()] == [
        (k, list(v.items())) for k, v in model.items()
    ]
    for key in compact:
        compact[key]["text"] = "changed"
    assert dict(compact.items()) == model
