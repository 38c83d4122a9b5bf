"""Issue 13 item 15: a backup of a live ledger loses nothing (the WAL is part of it)."""

from __future__ import annotations

import shutil
import sqlite3
from pathlib import Path

import pytest

from registre.cli import main
from registre.ledger.ledger import Ledger
from registre.ledger.store.backup import BackupNotSupportedError, BackupRefusedError, backup_sqlite
from registre.ledger.thread import Thread
from registre.ledger.verify.database import verify_database
from tests.ledger.helpers import dump, turn


def _entries(path: Path) -> int:
    connection = sqlite3.connect(path)
    try:
        return int(connection.execute("SELECT count(*) FROM entry").fetchone()[0])
    except sqlite3.DatabaseError:
        return 0
    finally:
        connection.close()


def test_backup_without_the_wal_fail(
    ledger: Ledger, thread: Thread, db_url: str, tmp_path: Path, signer: object
) -> None:
    if ledger.engine.dialect.name != "sqlite":
        with pytest.raises(BackupNotSupportedError) as refused:
            backup_sqlite(db_url, tmp_path / "copy.db")
        assert "pg_dump" in (refused.value.hint or "")
        return
    thread.append_many([turn(f"entry {i}") for i in range(20)])
    live = Path(db_url.removeprefix("sqlite:///"))
    assert Path(f"{live}-wal").stat().st_size > 0  # the appends are still in the WAL
    shutil.copy(live, tmp_path / "cp.db")  # what `cp registre.db` gives while registre runs
    assert _entries(tmp_path / "cp.db") < 20
    size = backup_sqlite(db_url, tmp_path / "backup.db")
    assert size == (tmp_path / "backup.db").stat().st_size
    assert _entries(tmp_path / "backup.db") == 20
    assert not Path(f"{tmp_path / 'backup.db'}-wal").exists()
    with Ledger.open(str(tmp_path / "backup.db"), create=False) as copy:
        assert dump(copy.engine) == dump(ledger.engine)
        assert [r.size for r in verify_database(copy)] == [20]
    with pytest.raises(BackupRefusedError, match="exists"):
        backup_sqlite(db_url, tmp_path / "backup.db")


def test_backup_command(
    ledger: Ledger,
    thread: Thread,
    db_url: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    thread.append(*turn("hello"))
    capsys.readouterr()
    out = tmp_path / "backup.db"
    sqlite = ledger.engine.dialect.name == "sqlite"
    try:
        main(["backup", "--db", db_url, str(out)])
        code = 0
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    if sqlite:
        assert code == 0 and f"wrote {out}" in captured.out
        assert _entries(out) == 1
    else:
        assert code == 2 and "pg_dump" in captured.err and "Traceback" not in captured.err
