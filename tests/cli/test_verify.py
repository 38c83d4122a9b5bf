"""`registre verify --db`: exit 0 when clean, 1 naming the first bad seq, 2 on bad input."""

from __future__ import annotations

from pathlib import Path

from sqlalchemy import text

from registre.attest.notes import Signer
from registre.ledger.ledger import Ledger
from tests.cli.conftest import Run, one_line_error
from tests.ledger.helpers import drop_triggers


def test_clean_ledger_verifies(initialised: str, run: Run) -> None:
    run("checkpoint", "t1")
    result = run("verify", "--db")
    assert result.code == 0, result.err
    assert result.out.splitlines()[0].startswith("ok t1: 3 entries, root ")
    assert run("verify", "--db", "--thread", "t1", "--vkey", initialised).code == 0


def test_edited_entry_fail(initialised: str, run: Run, db_url: str) -> None:
    with Ledger.open(db_url) as ledger:
        drop_triggers(ledger.engine)
        with ledger.engine.connect() as conn:
            leaf = conn.execute(text("SELECT leaf FROM entry WHERE seq = 1")).scalar_one()
            forged = bytes(leaf).replace(b'"two"', b'"2"')
            conn.execute(text("UPDATE entry SET leaf = :l WHERE seq = 1"), {"l": forged})
            conn.commit()
    message = one_line_error(run("verify", "--db"), code=1)
    assert "thread t1 seq 1" in message


def test_other_pinned_key_fail(initialised: str, run: Run) -> None:
    other = Signer.generate("registre.local/log").vkey()
    assert "which is not trusted" in one_line_error(run("verify", "--db", "--vkey", other), code=1)


def test_verify_bad_input_fail(initialised: str, run: Run, workdir: Path) -> None:
    one_line_error(run("verify", "--db", str(workdir / "absent.db")))
    one_line_error(run("verify", "--db", "--thread", "t9"))
    one_line_error(run("verify", "--db", "--vkey", "not-a-key"))


def test_verify_needs_db(workdir: Path, run: Run) -> None:
    assert "--db" in one_line_error(run("verify"))
