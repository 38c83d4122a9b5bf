"""THREATS row 17: direct edits to the database are refused by triggers, on both engines."""

from __future__ import annotations

import pytest
from sqlalchemy.exc import DBAPIError

from registre.attest.notes import Signer
from registre.ledger.ledger import Ledger
from registre.ledger.store.triggers import APPEND_ONLY_TABLES, REFUSAL_MARK
from registre.ledger.thread import Thread
from tests.ledger.helpers import dump, execute, turn


@pytest.fixture
def filled(ledger: Ledger, thread: Thread) -> Ledger:
    thread.append_many([turn(f"entry {i}") for i in range(17)])  # a level-4 subtree row
    thread.checkpoint()
    return ledger


def refused(ledger: Ledger, statement: str) -> None:
    before = dump(ledger.engine)
    with pytest.raises(DBAPIError, match=REFUSAL_MARK):
        execute(ledger.engine, statement)
    assert dump(ledger.engine) == before


@pytest.mark.parametrize("table", APPEND_ONLY_TABLES)
def test_direct_update_fail(filled: Ledger, table: str) -> None:
    column = {
        "entry": "kind",
        "subtree": "level",
        "checkpoint": "note",
        "public_key": "name",
        "schema_version": "description",
    }[table]
    value = "5" if column == "level" else "'forged'"  # a level the row check admits
    refused(filled, f"UPDATE {table} SET {column} = {value}")


@pytest.mark.parametrize("table", APPEND_ONLY_TABLES)
def test_direct_delete_fail(filled: Ledger, table: str) -> None:
    refused(filled, f"DELETE FROM {table} WHERE 1 = 1")


@pytest.mark.parametrize("table", [*APPEND_ONLY_TABLES, "thread"])
def test_truncate_fail(filled: Ledger, table: str) -> None:
    # SQLite has no TRUNCATE: its truncate optimisation is `DELETE FROM t` without WHERE,
    # which triggers disable.
    if filled.engine.dialect.name == "sqlite":
        refused(filled, f"DELETE FROM {table}")
    else:
        refused(filled, f"TRUNCATE {table} CASCADE")


def test_thread_head_rollback_fail(filled: Ledger) -> None:
    refused(filled, "UPDATE thread SET size = size - 1")


def test_thread_origin_change_fail(filled: Ledger) -> None:
    refused(filled, "UPDATE thread SET origin = 'other.log/t1'")


def test_thread_delete_fail(filled: Ledger) -> None:
    refused(filled, "DELETE FROM thread")


@pytest.mark.parametrize(
    ("column", "value"),
    [
        ("root", "(SELECT leaf_hash FROM entry WHERE seq = 0)"),  # a 32-byte hash of the log
        ("size", "size + 1"),
        ("created", "'2000-01-01T00:00:00Z'"),
        ("thread", "'t2'"),
    ],
)
def test_signed_checkpoint_field_changed_fail(filled: Ledger, column: str, value: str) -> None:
    """An UPDATE may only append cosignature lines to a stored checkpoint's note: its root,
    size, thread and time stay as signed."""
    if column == "thread":
        filled.create_thread("t2")
    refused(filled, f"UPDATE checkpoint SET {column} = {value}")


def test_bound_thread_key_changed_fail(filled: Ledger) -> None:
    """A thread stays bound to its key: rebinding it to another stored key is refused."""
    impostor = Signer.generate(filled.require_signer().name)
    execute(
        filled.engine,
        "INSERT INTO public_key (vkey, name, key_id, added) "
        f"VALUES ('{impostor.vkey()}', '{impostor.name}', '{impostor.key_id.hex()}', 'x')",
    )
    refused(filled, f"UPDATE thread SET vkey = '{impostor.vkey()}'")
