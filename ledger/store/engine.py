"""Opening a ledger database: engine settings, transactions, schema creation and upgrade.

One code path for both engines, chosen by URL:

* **SQLite** (``sqlite:///path``, the default): every connection runs with
  ``journal_mode=WAL``, ``synchronous=FULL`` (a commit is on disk before it returns),
  ``foreign_keys=ON`` and a busy timeout. pysqlite's own transaction handling is switched
  off and registre emits ``BEGIN IMMEDIATE`` for every write transaction (``BEGIN`` for a
  read), so a writer holds the database write lock from its first statement: two appends can
  never read the same head.
* **PostgreSQL** (``postgresql+psycopg://...``): writers lock the thread row with
  ``SELECT ... FOR UPDATE``; readers that need one snapshot run REPEATABLE READ.

:func:`write_transaction` and :func:`read_transaction` are the only ways the ledger touches
the database. :func:`prepare_schema` creates schema version 1 (tables, then triggers) or
upgrades an older database one version at a time, each step in its own transaction.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from sqlalchemy import Connection, Engine, create_engine, event, func, inspect, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import StaticPool

from registre.ledger.errors import LedgerNotFoundError, SchemaVersionError
from registre.ledger.store.migrations import MIGRATIONS
from registre.ledger.store.row_checks import row_check_ddl
from registre.ledger.store.schema import SCHEMA_VERSION, metadata, tables
from registre.ledger.store.triggers import trigger_ddl

__all__ = [
    "BUSY_TIMEOUT_MS",
    "database_url",
    "make_engine",
    "prepare_schema",
    "read_transaction",
    "schema_version",
    "write_transaction",
]

BUSY_TIMEOUT_MS = 60_000
_WRITE = "registre_write"
_SCHEMA_LOCK = 0x72656769  # pg_advisory_xact_lock key serialising schema creation


def database_url(target: str | os.PathLike[str]) -> str:
    """A SQLAlchemy URL for ``target``: a URL is kept, a file path becomes ``sqlite:///ABS``."""
    value = os.fspath(target)
    if "://" in value:
        return value
    return f"sqlite:///{Path(value).resolve()}"


def make_engine(url: str, *, create: bool = False) -> Engine:
    """An engine for ``url`` configured as the module docstring says.

    For a SQLite file that does not exist: with ``create`` its folder is made, otherwise
    LedgerNotFoundError (SQLite would silently create an empty file).
    """
    parsed = make_url(url)
    if parsed.get_backend_name() == "sqlite":
        return _sqlite_engine(url, parsed.database, create=create)
    engine = create_engine(url, pool_pre_ping=False)
    _mark_writes(engine, begin=None)
    return engine


def _sqlite_engine(url: str, database: str | None, *, create: bool) -> Engine:
    memory = database in (None, "", ":memory:")
    if not memory:
        assert database is not None
        path = Path(database)
        if not path.exists():
            if not create:
                raise LedgerNotFoundError(f"no ledger database at {path}").with_hint(
                    "run `registre init`, or name the database with --db"
                )
            path.parent.mkdir(parents=True, exist_ok=True)
    engine = create_engine(
        url,
        connect_args={"timeout": BUSY_TIMEOUT_MS / 1000, "check_same_thread": False},
        **({"poolclass": StaticPool} if memory else {}),
    )

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # registre emits BEGIN itself
        cursor = dbapi_connection.cursor()
        if not memory:
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={BUSY_TIMEOUT_MS}")
        cursor.close()

    _mark_writes(engine, begin=("BEGIN IMMEDIATE", "BEGIN"))
    return engine


def _mark_writes(engine: Engine, begin: tuple[str, str] | None) -> None:
    if begin is None:
        return
    write_begin, read_begin = begin

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        write = conn.get_execution_options().get(_WRITE, False)
        # Straight to the driver: this runs once per transaction, appends included.
        driver = conn.connection.driver_connection
        assert driver is not None
        driver.execute(write_begin if write else read_begin)


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """A connection inside one write transaction: committed when the block ends normally,
    rolled back (nothing written) when it raises. SQLite: ``BEGIN IMMEDIATE``."""
    with engine.connect() as conn:
        conn.execution_options(**{_WRITE: True})
        with conn.begin():
            yield conn


@contextmanager
def read_transaction(engine: Engine, *, snapshot: bool = False) -> Iterator[Connection]:
    """A connection inside one read transaction. With ``snapshot`` every statement sees the
    same database state (SQLite: any transaction; PostgreSQL: REPEATABLE READ)."""
    with engine.connect() as conn:
        if snapshot and engine.dialect.name == "postgresql":
            conn.execution_options(isolation_level="REPEATABLE READ")
        with conn.begin():
            yield conn


def schema_version(conn: Connection) -> int | None:
    """The database's current schema version, or None if it has no registre schema."""
    if not inspect(conn).has_table("schema_version"):
        return None
    version = conn.execute(select(func.max(tables.schema_version.c.version))).scalar()
    return int(version) if version is not None else None


def prepare_schema(engine: Engine, *, create: bool) -> int:
    """Bring the database to :data:`SCHEMA_VERSION`; return the version it had (0 if new).

    A database without the schema is created when ``create`` is true and refused with
    LedgerNotFoundError otherwise. A newer schema is refused with SchemaVersionError; an
    older one is upgraded through :data:`MIGRATIONS`, one committed step per version.
    """
    with write_transaction(engine) as conn:
        if engine.dialect.name == "postgresql":
            conn.execute(text("SELECT pg_advisory_xact_lock(:key)"), {"key": _SCHEMA_LOCK})
        found = schema_version(conn)
        if found is None:
            if not create:
                raise LedgerNotFoundError(
                    f"{_describe(engine)} holds no registre ledger"
                ).with_hint("run `registre init`")
            metadata.create_all(conn)
            dialect = engine.dialect.name
            for statement in [
                *trigger_ddl(dialect, version=SCHEMA_VERSION),
                *row_check_ddl(dialect),
            ]:
                conn.exec_driver_sql(statement)
            _record_version(conn, SCHEMA_VERSION, "initial schema: tables, triggers, row checks")
            return 0
    if found > SCHEMA_VERSION:
        raise SchemaVersionError(
            f"{_describe(engine)} has schema version {found}; this registre knows up to "
            f"{SCHEMA_VERSION}"
        ).with_hint("upgrade registre")
    for version in range(found, SCHEMA_VERSION):
        with write_transaction(engine) as conn:
            if schema_version(conn) != version:
                continue  # another process upgraded it meanwhile
            description = MIGRATIONS[version](conn)
            _record_version(conn, version + 1, description)
    return found


def _record_version(conn: Connection, version: int, description: str) -> None:
    applied = datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
    conn.execute(
        tables.schema_version.insert().values(
            version=version, applied=applied, description=description
        )
    )


def _describe(engine: Engine) -> str:
    return engine.url.render_as_string(hide_password=True)
