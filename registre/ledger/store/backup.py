"""A consistent copy of a live SQLite ledger, through SQLite's online backup API.

Copying ``registre.db`` with ``cp`` while registre runs loses what is still in the
write-ahead log (``registre.db-wal``): acknowledged appends that are not yet checkpointed into
the main file. :func:`backup_sqlite` asks SQLite for the copy instead: it reads the database
as one transaction sees it (main file and WAL together), page by page, and writes a single
self-contained file; writers may go on meanwhile (the copy restarts on a page a writer
changed). The copy is written under a temporary name, checked (``PRAGMA integrity_check``),
fsynced and renamed into place: the target is the whole backup or nothing.

PostgreSQL is backed up with its own tools (``pg_dump``): :class:`BackupNotSupportedError`.
The ``<database>.published`` record (:mod:`registre.ledger.store.published`) is deliberately
not copied: it belongs to the live database, and a restored backup older than it is refused
until the operator decides (that is the protection).
"""

from __future__ import annotations

import os
import sqlite3
import tempfile
from pathlib import Path

from sqlalchemy.engine import make_url

from registre.attest.errors import output_error
from registre.errors import RefusedError
from registre.ledger.errors import LedgerNotFoundError

__all__ = ["BackupNotSupportedError", "BackupRefusedError", "backup_sqlite"]

_PAGES_PER_STEP = 1024


class BackupNotSupportedError(RefusedError):
    """A database that registre does not back up itself (PostgreSQL)."""

    hint = (
        "back PostgreSQL up with `pg_dump --format=custom` (a consistent snapshot of a live "
        "database), or with continuous archiving"
    )


class BackupRefusedError(RefusedError):
    """A backup target that exists, or a copy that does not check."""


def backup_sqlite(url: str, target: Path) -> int:
    """Copy the SQLite ledger at ``url`` to the new file ``target``; return its size in bytes.

    Raises LedgerNotFoundError (no database there), BackupNotSupportedError (not SQLite),
    BackupRefusedError (``target`` exists; the copy fails its integrity check),
    OutputFolderError and OutputWriteError (naming ``target``, never the temporary file).
    """
    parsed = make_url(url)
    if parsed.get_backend_name() != "sqlite":
        raise BackupNotSupportedError(
            f"registre backup copies SQLite ledgers; {parsed.get_backend_name()} has its own tools"
        )
    source = Path(parsed.database or "")
    if not parsed.database or parsed.database == ":memory:" or not source.is_file():
        raise LedgerNotFoundError(f"no ledger database at {source}")
    if target.exists() or target.is_symlink():
        raise BackupRefusedError(f"{target} exists; refusing to overwrite it").with_hint(
            "name a new file"
        )
    folder = target.parent if str(target.parent) else Path(".")
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=folder)
    except OSError as error:
        raise output_error(target, error) from None
    os.close(handle)
    try:
        _copy(source, Path(temporary))
        os.replace(temporary, target)
    except OSError as error:  # it names the temporary file: name the backup instead
        Path(temporary).unlink(missing_ok=True)
        raise output_error(target, error) from None
    except BaseException:
        Path(temporary).unlink(missing_ok=True)
        raise
    return target.stat().st_size


def _copy(source: Path, temporary: Path) -> None:
    reader = sqlite3.connect(f"file:{source}?mode=ro", uri=True)
    try:
        writer = sqlite3.connect(temporary)
        try:
            reader.backup(writer, pages=_PAGES_PER_STEP)
            # one self-contained file: no -wal beside the copy
            writer.execute("PRAGMA journal_mode=DELETE")
            verdict = writer.execute("PRAGMA integrity_check").fetchone()
            has_schema = writer.execute(
                "SELECT count(*) FROM sqlite_master "
                "WHERE type = 'table' AND name = 'schema_version'"
            ).fetchone()
        finally:
            writer.close()
    finally:
        reader.close()
    if verdict != ("ok",):
        raise BackupRefusedError(f"the copy of {source} fails SQLite's integrity check")
    if has_schema != (1,):
        raise BackupRefusedError(f"{source} holds no registre ledger")
    with open(temporary, "rb") as copy:
        os.fsync(copy.fileno())
