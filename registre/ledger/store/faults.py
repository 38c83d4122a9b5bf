"""What went wrong with the database, as registre errors: the store's one translation table.

Every way the ledger touches its database (:mod:`registre.ledger.store.engine`) passes the
driver's and SQLAlchemy's exceptions through :func:`database_fault`, so a Python caller and
the command line see a registre error naming the database and the problem, never a raw
``sqlite3``/``psycopg``/SQLAlchemy exception. Integrity errors (a unique key taken by a
concurrent writer) are not faults: the code that expects them catches them itself.

Two families, by what the user can do about it:

* the database named is not something registre can use -- a file that is not SQLite or is
  damaged, a directory, a malformed URL, an engine registre does not support, a PostgreSQL
  database that does not exist: :class:`NotALedgerError` and its kin (exit code 2);
* the database is right but out of reach now -- a server that does not answer or refuses the
  role, the write lock held past the timeout, a read-only file or medium for a write, a full
  disk, an I/O error: :class:`DatabaseUnavailableError` and its kin (exit code 3).

In every case the transaction that met the fault was rolled back: nothing was written.
"""

from __future__ import annotations

import re
from pathlib import Path
from urllib.parse import unquote

from registre.errors import MalformedError, RegistreError, UnavailableError
from registre.ledger.errors import LedgerNotFoundError

__all__ = [
    "DamagedDatabaseError",
    "DatabaseFullError",
    "DatabaseLockedError",
    "DatabaseReadOnlyError",
    "DatabaseUnavailableError",
    "DatabaseUrlError",
    "NotALedgerError",
    "TextNulError",
    "UnsupportedDatabaseError",
    "database_fault",
    "describe_url",
]


class NotALedgerError(MalformedError):
    """The database named is not one registre can open: not a SQLite file, a directory."""


class DamagedDatabaseError(MalformedError):
    """A SQLite file whose pages do not read back (truncated or overwritten)."""

    hint = "restore the ledger from a backup; `registre verify --db` checks a copy"


class DatabaseUrlError(MalformedError):
    """A ``--db`` URL that cannot be parsed."""

    hint = "use a file path, sqlite:///PATH or postgresql+psycopg://USER@HOST/DB"


class UnsupportedDatabaseError(MalformedError):
    """A URL naming an engine registre does not run on (only SQLite and PostgreSQL)."""

    hint = "use a file path, sqlite:///PATH or postgresql+psycopg://USER@HOST/DB"


class TextNulError(MalformedError):
    """A text holding the NUL character (U+0000), which PostgreSQL cannot store in a text
    column; refused on every engine so that the same body behaves the same everywhere."""


class DatabaseUnavailableError(UnavailableError):
    """The database is out of reach: the server does not answer, refuses the role or the
    password, or the file cannot be opened."""


class DatabaseLockedError(DatabaseUnavailableError):
    """Another writer held the database lock past the lock timeout."""

    hint = "retry, or wait longer with --lock-timeout SECONDS (env REGISTRE_LOCK_TIMEOUT)"


class DatabaseReadOnlyError(DatabaseUnavailableError):
    """A write on a database opened read-only (a read-only file, folder or medium)."""

    hint = "reads work on a read-only ledger; copy it to writable storage to write"


class DatabaseFullError(DatabaseUnavailableError):
    """The disk (or quota) is full, or the storage failed an I/O; the write was rolled back."""

    hint = "free disk space and retry; nothing was written"


# SQLite primary result codes (sqlite3 exceptions carry them as ``sqlite_errorname``).
_SQLITE_LOCKED = ("SQLITE_BUSY", "SQLITE_LOCKED")
_PG_LOCKED = ("55P03", "57014", "40P01")  # lock_not_available, query_canceled, deadlock


def describe_url(url: str) -> str:
    """A database URL as the user should see it: a SQLite path as the path, a URL without
    its password."""
    if url.startswith("sqlite:///"):
        path = unquote(url[len("sqlite:///") :].split("?", 1)[0])
        if path.startswith("file:"):
            path = unquote(path[len("file:") :])
        return path or ":memory:"
    return re.sub(r"://([^:/@]*):[^@/]*@", r"://\1:***@", url)


def database_fault(exc: BaseException, url: str) -> RegistreError | None:
    """The registre error for a database exception ``exc`` met on the database ``url``, or
    None when ``exc`` is not a database fault (an integrity error, a registre error, a bug)."""
    if isinstance(exc, RegistreError):
        return None
    original = getattr(exc, "orig", None) or exc
    module = type(original).__module__.split(".", 1)[0]
    if type(original).__name__ == "IntegrityError" or type(exc).__name__ == "IntegrityError":
        return None
    where = describe_url(url)
    if module in ("sqlite3", "_sqlite3"):
        return _sqlite_fault(original, where)
    if module == "psycopg":
        return _postgres_fault(original, where)
    if module == "sqlalchemy":
        return _sqlalchemy_fault(original, url)
    if isinstance(original, OSError):
        reason = original.strerror or str(original)
        return DatabaseUnavailableError(f"cannot use the ledger database {where}: {reason}")
    return None


def _sqlite_fault(exc: BaseException, where: str) -> RegistreError | None:
    name = str(getattr(exc, "sqlite_errorname", ""))
    message = str(exc)
    if name in _SQLITE_LOCKED or "database is locked" in message:
        return DatabaseLockedError(f"the ledger database {where} is locked by another writer")
    if name.startswith("SQLITE_READONLY") or "readonly database" in message:
        return DatabaseReadOnlyError(
            f"the ledger database {where} is read-only, and this command writes"
        )
    if name == "SQLITE_FULL" or "disk is full" in message:
        return DatabaseFullError(f"the disk holding the ledger database {where} is full")
    if name.startswith("SQLITE_IOERR") or "disk I/O error" in message:
        return DatabaseFullError(f"I/O error on the ledger database {where} ({message})")
    if name == "SQLITE_NOTADB" or "file is not a database" in message:
        return NotALedgerError(f"{where} is not a SQLite database").with_hint(
            "name the ledger with --db (a file made by `registre init`)"
        )
    if name == "SQLITE_CORRUPT" or "malformed" in message:
        return DamagedDatabaseError(f"the ledger database {where} is damaged ({message})")
    if name.startswith("SQLITE_CANTOPEN") or "unable to open" in message:
        path = Path(where)
        if path.is_dir():
            return NotALedgerError(f"{where} is a directory, not a ledger database")
        return DatabaseUnavailableError(
            f"cannot open the ledger database {where} (its file or folder is not accessible)"
        )
    if name in ("SQLITE_PERM", "SQLITE_AUTH"):
        return DatabaseUnavailableError(f"access to the ledger database {where} was denied")
    if name == "SQLITE_TOOBIG":
        return MalformedError(f"a value is too large for the ledger database {where}")
    if type(exc).__name__ in ("OperationalError", "DatabaseError"):
        return DatabaseUnavailableError(f"the ledger database {where} failed: {message}")
    return None


def _postgres_fault(exc: BaseException, where: str) -> RegistreError | None:
    state = str(getattr(exc, "sqlstate", "") or "")
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    if "NUL (0x00)" in str(exc):
        return TextNulError("a text holds the NUL character (U+0000), which is not stored")
    if state in _PG_LOCKED:
        return DatabaseLockedError(f"the ledger database {where} is locked by another writer")
    if state == "25006":
        return DatabaseReadOnlyError(
            f"the ledger database {where} is read-only, and this command writes"
        )
    if state in ("53100", "53200", "53300"):
        return DatabaseFullError(f"the database server of {where} is out of resources: {first}")
    if state == "3D000" or ("does not exist" in first and "database" in first):
        return LedgerNotFoundError(f"no database at {where}").with_hint(
            "create the database (createdb), then run `registre init --db URL`"
        )
    if state == "42501":
        return DatabaseUnavailableError(f"the role has no access to {where}: {first}")
    if type(exc).__name__ in ("OperationalError", "InterfaceError", "DatabaseError"):
        return DatabaseUnavailableError(f"cannot reach the ledger database {where}: {first}")
    return None


def _sqlalchemy_fault(exc: BaseException, url: str) -> RegistreError | None:
    kind = type(exc).__name__
    if kind == "ArgumentError":
        return DatabaseUrlError(f"--db {url!r} is not a database URL")
    if kind == "NoSuchModuleError":
        scheme = url.split("://", 1)[0]
        return UnsupportedDatabaseError(f"registre does not run on {scheme}:// databases")
    if kind in ("OperationalError", "DatabaseError", "InterfaceError", "TimeoutError"):
        return DatabaseUnavailableError(f"cannot use the ledger database {describe_url(url)}")
    return None
