"""ledger.store.engine: engine settings, write locking, schema creation and upgrade."""

from __future__ import annotations

import sqlite3
from pathlib import Path

import pytest
from sqlalchemy import text

from registre.attest.notes import Signer
from registre.ledger.errors import LedgerNotFoundError, SchemaVersionError
from registre.ledger.ledger import Ledger
from registre.ledger.store import engine as engine_module
from registre.ledger.store.engine import (
    database_url,
    make_engine,
    prepare_schema,
    read_transaction,
    schema_version,
    write_transaction,
)
from registre.ledger.store.schema import SCHEMA_VERSION
from tests.ledger.helpers import execute


def test_sqlite_connection_settings(tmp_path: Path) -> None:
    engine = make_engine(database_url(tmp_path / "r.db"), create=True)
    with read_transaction(engine) as conn:
        assert conn.execute(text("PRAGMA journal_mode")).scalar() == "wal"
        assert conn.execute(text("PRAGMA synchronous")).scalar() == 2  # FULL
        assert conn.execute(text("PRAGMA foreign_keys")).scalar() == 1
        assert conn.execute(text("PRAGMA busy_timeout")).scalar() == engine_module.BUSY_TIMEOUT_MS
    engine.dispose()


def test_write_transaction_holds_the_write_lock_from_begin(tmp_path: Path) -> None:
    path = tmp_path / "r.db"
    engine = make_engine(database_url(path), create=True)
    prepare_schema(engine, create=True)
    other = sqlite3.connect(path, timeout=0, isolation_level=None)
    # Inside a write transaction no statement has run yet, and still no other writer may start.
    with write_transaction(engine), pytest.raises(sqlite3.OperationalError, match="locked"):
        other.execute("BEGIN IMMEDIATE")
    other.execute("BEGIN IMMEDIATE")
    other.execute("ROLLBACK")
    with read_transaction(engine):
        other.execute("BEGIN IMMEDIATE")  # a reader does not block writers
        other.execute("ROLLBACK")
    other.close()
    engine.dispose()


def test_missing_sqlite_file_refused_and_not_created(tmp_path: Path) -> None:
    path = tmp_path / "absent" / "registre.db"
    with pytest.raises(LedgerNotFoundError, match="no ledger database at") as refused:
        Ledger.open(str(path), create=False)
    assert "registre init" not in str(refused.value)  # advice is the hint, not the message
    assert refused.value.hint == "run `registre init`, or name the database with --db"
    assert not path.exists()


def test_database_without_schema_refused(db_url: str) -> None:
    if db_url.startswith("sqlite"):
        sqlite3.connect(db_url.removeprefix("sqlite:///")).close()  # an empty file
    with pytest.raises(LedgerNotFoundError, match="no registre ledger"):
        Ledger.open(db_url, create=False)


def test_schema_version_recorded_once(db_url: str, signer: Signer) -> None:
    Ledger.open(db_url, signer).close()
    Ledger.open(db_url, signer).close()  # reopening changes nothing
    engine = make_engine(db_url)
    with read_transaction(engine) as conn:
        assert schema_version(conn) == SCHEMA_VERSION
        rows = conn.execute(text("SELECT version FROM schema_version")).scalars().all()
        keys = conn.execute(text("SELECT count(*) FROM public_key")).scalar()
    assert rows == [SCHEMA_VERSION]
    assert keys == 0  # opening signs nothing, so it stores no key
    engine.dispose()


def test_newer_schema_refused(db_url: str, signer: Signer) -> None:
    Ledger.open(db_url, signer).close()
    engine = make_engine(db_url)
    execute(
        engine,
        "INSERT INTO schema_version (version, applied, description) "
        f"VALUES ({SCHEMA_VERSION + 1}, '2030-01-01T00:00:00Z', 'from the future')",
    )
    with pytest.raises(SchemaVersionError, match="this registre knows up to") as refused:
        Ledger.open(db_url, signer)
    assert refused.value.hint == "upgrade registre"
    engine.dispose()


def test_older_schema_upgraded_one_step_at_a_time(
    db_url: str, signer: Signer, monkeypatch: pytest.MonkeyPatch
) -> None:
    Ledger.open(db_url, signer).close()
    steps: list[int] = []

    def add_note_column(conn: object) -> str:
        steps.append(SCHEMA_VERSION)
        return "test step"

    monkeypatch.setattr(engine_module, "SCHEMA_VERSION", SCHEMA_VERSION + 1)
    monkeypatch.setitem(engine_module.MIGRATIONS, SCHEMA_VERSION, add_note_column)
    engine = make_engine(db_url)
    assert prepare_schema(engine, create=False) == SCHEMA_VERSION
    assert prepare_schema(engine, create=False) == SCHEMA_VERSION + 1  # nothing left to do
    with read_transaction(engine) as conn:
        assert schema_version(conn) == SCHEMA_VERSION + 1
    assert steps == [SCHEMA_VERSION]
    engine.dispose()


def test_database_url_accepts_paths_and_urls(tmp_path: Path) -> None:
    assert database_url(tmp_path / "x.db") == f"sqlite:///{tmp_path / 'x.db'}"
    assert database_url("postgresql+psycopg://h/db") == "postgresql+psycopg://h/db"
