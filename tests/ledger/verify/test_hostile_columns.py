"""Issue 13 item 17 (part): columns holding a value of another type -- a TEXT root, a TEXT seq
(SQLite takes any type in any column; on PostgreSQL the column type itself is changed) --
make ``verify --db`` fail with one line and exit 1, never a traceback."""

from __future__ import annotations

from pathlib import Path

import pytest

from registre.cli import main
from registre.errors import VerificationError
from registre.ledger.ledger import Ledger
from registre.ledger.thread import Thread
from registre.ledger.verify.database import verify_database
from tests.ledger.helpers import drop_row_checks, drop_triggers, execute, turn

HOSTILE = {
    "text-head-root": (
        "UPDATE thread SET root = 'not a hash'",
        "ALTER TABLE thread ALTER COLUMN root TYPE text USING encode(root, 'hex')",
    ),
    "text-head-size": (
        "UPDATE thread SET size = 'three'",
        "ALTER TABLE thread ALTER COLUMN size TYPE text USING size::text",
    ),
    "text-entry-seq": (
        "INSERT INTO entry (thread, seq, leaf, leaf_hash, kind, time) "
        "SELECT thread, 'one', leaf, leaf_hash, kind, time FROM entry WHERE seq = 0",
        "ALTER TABLE entry ALTER COLUMN seq TYPE text USING seq::text",
    ),
    "text-checkpoint-root": (
        "UPDATE checkpoint SET root = 'not a hash'",
        "ALTER TABLE checkpoint ALTER COLUMN root TYPE text USING encode(root, 'hex')",
    ),
    "text-subtree-hash": (
        "UPDATE subtree SET hash = 'x' WHERE level = 4 AND idx = 0",
        "ALTER TABLE subtree ALTER COLUMN hash TYPE text USING encode(hash, 'hex')",
    ),
}


@pytest.fixture
def hostile(ledger: Ledger, thread: Thread, request: pytest.FixtureRequest) -> Ledger:
    thread.append_many([turn(f"entry {i}") for i in range(17)])  # a level-4 subtree row
    thread.checkpoint()
    drop_triggers(ledger.engine)
    drop_row_checks(ledger.engine)
    sqlite, postgresql = HOSTILE[request.param]
    execute(ledger.engine, sqlite if ledger.engine.dialect.name == "sqlite" else postgresql)
    return ledger


@pytest.mark.parametrize("hostile", list(HOSTILE), indirect=True)
def test_hostile_column_type_fail(
    hostile: Ledger, db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(VerificationError):
        verify_database(hostile)
    capsys.readouterr()
    with pytest.raises(SystemExit) as exit_:
        main(["verify", "--db", db_url])
    err = capsys.readouterr().err
    assert exit_.value.code == 1, err
    assert "Traceback" not in err
    assert err.startswith("registre: error: ") and err.count("registre: error:") == 1
