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

Faults (:mod:`registre.ledger.store.faults`): every exception of the driver or of SQLAlchemy
met while opening the engine, connecting or inside a transaction leaves as a registre error
naming the database (a file that is not SQLite, a server that does not answer, a lock held
past the timeout, a full disk, ...), the transaction rolled back.

Read-only storage: a SQLite file that this process cannot write (a read-only file, folder or
medium) is opened read-only, so every read works; a write on it raises
DatabaseReadOnlyError. A ledger whose folder cannot hold the WAL's shared-memory file is
opened immutable (nothing can change it while it is read).

The lock: a writer waits for another writer's lock up to :data:`lock_policy`'s ``timeout``
(default :data:`LOCK_TIMEOUT_S`), then DatabaseLockedError; with an ``on_wait`` callback, it is
told once, after :data:`LOCK_NOTICE_S` of waiting, what it waits for.
"""

from __future__ import annotations

import os
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any
from urllib.parse import quote

from sqlalchemy import Connection, Engine, create_engine, event, func, inspect, select, text
from sqlalchemy.engine import make_url
from sqlalchemy.pool import StaticPool

from registre.ledger.errors import LedgerNotFoundError, SchemaVersionError
from registre.ledger.store.faults import NotALedgerError, database_fault, describe_url
from registre.ledger.store.migrations import MIGRATIONS
from registre.ledger.store.row_checks import row_check_ddl
from registre.ledger.store.schema import SCHEMA_VERSION, metadata, tables
from registre.ledger.store.search import create_search
from registre.ledger.store.triggers import trigger_ddl

__all__ = [
    "BUSY_TIMEOUT_MS",
    "LOCK_NOTICE_S",
    "LOCK_TIMEOUT_S",
    "LockPolicy",
    "database_url",
    "lock_policy",
    "make_engine",
    "prepare_schema",
    "read_transaction",
    "schema_version",
    "write_transaction",
]

LOCK_TIMEOUT_S = 60.0
BUSY_TIMEOUT_MS = int(LOCK_TIMEOUT_S * 1000)
LOCK_NOTICE_S = 1.0
_WRITE = "registre_write"
_SCHEMA_LOCK = 0x72656769  # pg_advisory_xact_lock key serialising schema creation


def database_url(target: str | os.PathLike[str]) -> str:
    """A SQLAlchemy URL for ``target``: a URL is kept, a file path becomes ``sqlite:///ABS``."""
    value = os.fspath(target)
    if "://" in value:
        return value
    return f"sqlite:///{Path(value).resolve()}"


@dataclass
class LockPolicy:
    """How long a writer waits for the database lock (seconds) and whom it tells, once,
    after :data:`LOCK_NOTICE_S` of waiting (``on_wait`` gets one sentence)."""

    timeout: float = LOCK_TIMEOUT_S
    on_wait: Callable[[str], None] | None = None


lock_policy = LockPolicy()
"""The process's lock policy, read when an engine is made and at each wait (the command line
sets it from ``--lock-timeout``)."""


def make_engine(url: str, *, create: bool = False) -> Engine:
    """An engine for ``url`` configured as the module docstring says.

    For a SQLite file that does not exist: with ``create`` its folder is made, otherwise
    LedgerNotFoundError (SQLite would silently create an empty file). A URL that cannot be
    parsed, an engine other than SQLite and PostgreSQL, a directory or an unusable folder
    raise the errors of :mod:`registre.ledger.store.faults`.
    """
    try:
        parsed = make_url(url)
        backend = parsed.get_backend_name()
        if backend == "sqlite":
            return _sqlite_engine(url, parsed.database, create=create)
        if backend != "postgresql":
            raise _fault(ModuleNotFoundError(backend), url)
        connect_args: dict[str, Any] = {}
        if "connect_timeout" not in parsed.query:
            connect_args["connect_timeout"] = 10
        engine = create_engine(url, pool_pre_ping=False, connect_args=connect_args)
    except (ImportError, OSError, ValueError) as exc:
        raise _fault(exc, url) from exc
    except Exception as exc:
        fault = database_fault(exc, url)
        if fault is None:
            raise
        raise fault from exc
    _postgres_lock_timeout(engine)
    _mark_writes(engine, begin=None)
    return engine


def _fault(exc: BaseException, url: str) -> Exception:
    """The registre error for ``exc`` (an unsupported engine when there is none)."""
    from registre.ledger.store.faults import DatabaseUrlError, UnsupportedDatabaseError

    fault = database_fault(exc, url)
    if fault is not None:
        return fault
    if isinstance(exc, ImportError):
        scheme = url.split("://", 1)[0]
        return UnsupportedDatabaseError(f"registre does not run on {scheme}:// databases")
    if isinstance(exc, ValueError):
        return DatabaseUrlError(f"--db {describe_url(url)!r} is not a database URL ({exc})")
    return exc if isinstance(exc, Exception) else RuntimeError(str(exc))


def _writable(path: Path) -> bool:
    return os.access(path, os.W_OK)


def _sqlite_engine(url: str, database: str | None, *, create: bool) -> Engine:
    memory = database in (None, "", ":memory:")
    read_only = immutable = False
    if not memory:
        assert database is not None
        path = Path(database)
        if path.is_dir():
            raise NotALedgerError(f"{path} is a directory, not a ledger database").with_hint(
                "name the database file with --db (e.g. DIR/registre.db)"
            )
        if not path.exists():
            if not create:
                raise LedgerNotFoundError(f"no ledger database at {path}").with_hint(
                    "run `registre init`, or name the database with --db"
                )
            path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        elif not create and path.stat().st_size == 0:
            raise LedgerNotFoundError(f"{path} is empty: it holds no registre ledger").with_hint(
                "run `registre init`, or name the database with --db"
            )
        else:
            read_only, immutable = _read_only_mode(path)
        if read_only:
            options = "mode=ro&immutable=1" if immutable else "mode=ro"
            url = f"sqlite:///file:{quote(str(path))}?{options}&uri=true"
    engine = create_engine(
        url,
        connect_args={"timeout": lock_policy.timeout, "check_same_thread": False},
        **({"poolclass": StaticPool} if memory else {}),
    )

    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None  # registre emits BEGIN itself
        cursor = dbapi_connection.cursor()
        if not memory and not read_only:
            cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute("PRAGMA synchronous=FULL")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.execute(f"PRAGMA busy_timeout={int(lock_policy.timeout * 1000)}")
        cursor.close()

    _mark_writes(engine, begin=("BEGIN IMMEDIATE", "BEGIN"))
    return engine


def _read_only_mode(path: Path) -> tuple[bool, bool]:
    """``(read_only, immutable)`` for an existing SQLite file: read-only when this process
    cannot write the file, or its folder cannot hold the WAL files; immutable when the
    shared-memory file can be neither used nor created (and no WAL content is pending)."""
    folder = path.parent
    wal = Path(f"{path}-wal")
    shm = Path(f"{path}-shm")
    folder_ok = _writable(folder)
    wal_ok = folder_ok or (wal.exists() and _writable(wal) and shm.exists() and _writable(shm))
    if _writable(path) and wal_ok:
        return False, False
    shm_usable = (shm.exists() and _writable(shm)) or folder_ok
    pending = wal.exists() and wal.stat().st_size > 0
    return True, not shm_usable and not pending


def _postgres_lock_timeout(engine: Engine) -> None:
    @event.listens_for(engine, "connect")
    def _configure(dbapi_connection: Any, _record: Any) -> None:
        milliseconds = max(1, int(lock_policy.timeout * 1000))
        with dbapi_connection.cursor() as cursor:
            cursor.execute(f"SET lock_timeout = {milliseconds}")
        dbapi_connection.commit()


def _mark_writes(engine: Engine, begin: tuple[str, str] | None) -> None:
    if begin is None:
        return
    write_begin, read_begin = begin
    where = describe_url(engine.url.render_as_string(hide_password=True))

    @event.listens_for(engine, "begin")
    def _begin(conn: Connection) -> None:
        write = conn.get_execution_options().get(_WRITE, False)
        # Straight to the driver: this runs once per transaction, appends included.
        driver = conn.connection.driver_connection
        assert driver is not None
        if not write:
            driver.execute(read_begin)
            return
        notice = lock_policy.on_wait
        if notice is not None:
            _WATCH.arm(LOCK_NOTICE_S, lambda: notice(_sqlite_waiting(where)))
        try:
            _begin_write(driver, write_begin)
        finally:
            if notice is not None:
                _WATCH.disarm()


_PAUSE_FIRST_S = 0.00005
_PAUSE_MAX_S = 0.001


def _begin_write(driver: Any, begin: str) -> None:
    """``BEGIN IMMEDIATE`` on ``driver``, waiting for another writer's lock up to
    :data:`lock_policy`'s timeout, then raising SQLite's own "database is locked" error.

    The connection's busy timeout is 0 while the lock is asked for, and restored after; the
    wait is polled from :data:`_PAUSE_FIRST_S`, doubling to :data:`_PAUSE_MAX_S`, instead of
    SQLite's busy handler (why: ``docs/design/2026-12-01-sqlite-lock-polling.md``)."""
    deadline = time.monotonic() + lock_policy.timeout
    pause = _PAUSE_FIRST_S
    driver.execute("PRAGMA busy_timeout=0")
    try:
        while True:
            try:
                driver.execute(begin)
                return
            except sqlite3.OperationalError as exc:
                remaining = deadline - time.monotonic()
                if not _busy(exc) or remaining <= 0:
                    raise
            time.sleep(min(pause, remaining))
            pause = min(pause * 2, _PAUSE_MAX_S)
    finally:
        driver.execute(f"PRAGMA busy_timeout={int(lock_policy.timeout * 1000)}")


def _busy(exc: sqlite3.OperationalError) -> bool:
    name = getattr(exc, "sqlite_errorname", "")
    return name in ("SQLITE_BUSY", "SQLITE_LOCKED") or "database is locked" in str(exc)


def _sqlite_waiting(where: str) -> str:
    """What a SQLite writer waits for: the lock, and the other processes that have it open."""
    holders = _processes_holding(Path(where))
    held = f" (the database is open in pid {', '.join(holders)})" if holders else ""
    return (
        f"waiting for the write lock on {where}{held}; "
        f"giving up after {lock_policy.timeout:g} s (--lock-timeout)"
    )


def _processes_holding(path: Path) -> list[str]:
    """The ids of other processes with ``path`` open (Linux /proc; empty elsewhere)."""
    try:
        target = str(path.resolve())
        found = []
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit() or int(entry.name) == os.getpid():
                continue
            try:
                if any(os.readlink(fd) == target for fd in (entry / "fd").iterdir()):
                    found.append(entry.name)
            except OSError:
                continue
        return found[:5]
    except OSError:
        return []


class _Watch:
    """One daemon thread that runs a job once a deadline passes, unless disarmed first
    (cheap to arm and disarm around every write transaction)."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._deadline: float | None = None
        self._job: Callable[[], None] | None = None
        self._thread: threading.Thread | None = None

    def arm(self, delay: float, job: Callable[[], None]) -> None:
        with self._cond:
            self._deadline = time.monotonic() + delay
            self._job = job
            if self._thread is None:
                self._thread = threading.Thread(target=self._run, daemon=True)
                self._thread.start()
            self._cond.notify()

    def disarm(self) -> None:
        with self._cond:
            self._deadline = None
            self._job = None

    def _run(self) -> None:
        while True:
            with self._cond:
                while self._deadline is None:
                    self._cond.wait()
                remaining = self._deadline - time.monotonic()
                if remaining > 0:
                    self._cond.wait(remaining)
                    continue
                job, self._job, self._deadline = self._job, None, None
            if job is not None:
                job()


_WATCH = _Watch()


def _postgres_waiting(engine: Engine, conn: Connection) -> Callable[[], None] | None:
    """A job telling ``lock_policy.on_wait`` which backend holds the lock ``conn`` waits for."""
    notice = lock_policy.on_wait
    if notice is None or engine.dialect.name != "postgresql":
        return None
    driver = conn.connection.driver_connection
    pid = getattr(getattr(driver, "info", None), "backend_pid", None)
    if pid is None:
        return None
    where = describe_url(engine.url.render_as_string(hide_password=True))

    def job() -> None:
        try:
            with engine.connect() as probe:
                holders = probe.execute(text("SELECT pg_blocking_pids(:pid)"), {"pid": pid})
                blocking = list(holders.scalar() or [])
        except Exception:
            return
        if blocking:
            notice(
                f"waiting for the lock on {where} held by PostgreSQL backend pid "
                f"{', '.join(str(p) for p in blocking)}; giving up after "
                f"{lock_policy.timeout:g} s (--lock-timeout)"
            )

    return job


@contextmanager
def _faults(engine: Engine) -> Iterator[None]:
    """Turn the database exceptions raised inside the block into registre errors."""
    try:
        yield
    except Exception as exc:
        fault = database_fault(exc, engine.url.render_as_string(hide_password=True))
        if fault is None:
            raise
        raise fault from exc


@contextmanager
def write_transaction(engine: Engine) -> Iterator[Connection]:
    """A connection inside one write transaction: committed when the block ends normally,
    rolled back (nothing written) when it raises. SQLite: ``BEGIN IMMEDIATE``. Database faults
    raise the errors of :mod:`registre.ledger.store.faults`."""
    with _faults(engine), engine.connect() as conn:
        conn.execution_options(**{_WRITE: True})
        job = _postgres_waiting(engine, conn)
        if job is not None:
            _WATCH.arm(LOCK_NOTICE_S, job)
        try:
            with conn.begin():
                yield conn
        finally:
            if job is not None:
                _WATCH.disarm()


@contextmanager
def read_transaction(engine: Engine, *, snapshot: bool = False) -> Iterator[Connection]:
    """A connection inside one read transaction. With ``snapshot`` every statement sees the
    same database state (SQLite: any transaction; PostgreSQL: REPEATABLE READ). Database
    faults raise the errors of :mod:`registre.ledger.store.faults`."""
    with _faults(engine), engine.connect() as conn:
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
    older one is upgraded through :data:`MIGRATIONS`, one committed step per version. A
    database already at the current version is only read (so a read-only ledger opens).
    """
    with read_transaction(engine) as conn:
        current = schema_version(conn)
    if current == SCHEMA_VERSION:
        return current
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
            create_search(conn)
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
