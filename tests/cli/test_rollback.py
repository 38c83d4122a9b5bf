"""Issue 29 item 4 at the command line: the ``.published`` record deleted, a restored database
compared with a witness (``registre verify --db --witness VKEY@URL``), and ``registre
reanchor``. Each failure is one error line and one hint, the exit code of specs/cli.md, no
traceback, and the ledger unchanged."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from registre.attest.notes import Signer
from registre.ledger.ledger import Ledger
from registre.ledger.witnessing import witness_checkpoint
from registre.witness.client import WitnessEndpoint
from tests.cli.conftest import Run, error_and_hint
from tests.ledger.helpers import dump
from tests.ledger.verify.witness_helpers import (
    WITNESS_KEY,
    fix_times,
    grow,
    make_witness,
    publish,
    restored,
    served_endpoint,
)


@pytest.fixture
def endpoint(
    tmp_path: Path, signer: Signer, monkeypatch: pytest.MonkeyPatch
) -> Iterator[WitnessEndpoint]:
    """A registre witness following the test log, served on loopback; entry times fixed."""
    fix_times(monkeypatch)
    with make_witness(tmp_path / "witness.db", signer) as witness, served_endpoint(witness) as up:
        yield up


def spec(endpoint: WitnessEndpoint) -> str:
    return f"{WITNESS_KEY.vkey()}@{endpoint.url}"


def rows(path: Path) -> object:
    ledger = Ledger.open(str(path), create=False)
    try:
        return dump(ledger.engine)
    finally:
        ledger.close()


def test_published_record_deleted_checkpoint_fail(workdir: Path, run: Run) -> None:
    db = workdir / "registre.db"
    assert run("init", "--db", str(db)).code == 0
    assert run("thread", "create", "t1", "--db", str(db)).code == 0
    for text in ("one", "two", "three"):
        body = '{"role":"user","text":"' + text + '"}'
        assert run("append", "t1", "--kind", "turn", "--body", body, "--db", str(db)).code == 0
    assert run("checkpoint", "t1", "--db", str(db)).code == 0  # creates the record
    (workdir / "registre.db.published").unlink()
    before = rows(db)
    error, hint = error_and_hint(run("checkpoint", "t1", "--size", "2", "--db", str(db)), 1)
    assert error == (
        "registre: error: thread t1: the database holds a checkpoint signed at size 3, but "
        "registre.db.published beside it has no record: the record was deleted or rolled back, "
        "or the database was copied or restored without it; nothing was written"
    )
    assert hint is not None and "registre reanchor --witness VKEY@URL" in hint
    error, hint = error_and_hint(run("verify", "--db", str(db)), 1)
    assert error.startswith("registre: error: thread t1: the database holds a checkpoint signed")
    assert hint is not None and "registre reanchor" in hint
    assert rows(db) == before
    assert not (workdir / "registre.db.published").exists()
    # the way back, explicit and noted: no witness was ever asked here
    error, _hint = error_and_hint(run("reanchor", "--db", str(db)), 2)
    assert "--unwitnessed" in error
    result = run("reanchor", "--db", str(db), "--unwitnessed")
    assert result.code == 0, result.err
    assert result.out.splitlines()[-1].endswith(", on your word (--unwitnessed)")
    assert run("checkpoint", "t1", "--size", "2", "--db", str(db)).code == 0


def test_restored_database_and_record_behind_witness_fail(
    workdir: Path, run: Run, signer: Signer, endpoint: WitnessEndpoint
) -> None:
    publish(workdir / "published.db", signer, endpoint)
    db = workdir / "registre.db"
    with Ledger.open(str(db), signer) as ledger:
        restored(ledger)  # the pair as it was yesterday: it verifies alone
    assert run("verify", "--db", str(db)).code == 0
    before = rows(db)
    error, hint = error_and_hint(run("verify", "--db", str(db), "--witness", spec(endpoint)), 1)
    assert error.startswith(
        f"registre: error: thread t1: witness {WITNESS_KEY.name} cosigned size 5 of "
        "registre.test/log/t1 at "
    )
    assert error.endswith("but the database holds 3 entries: it is behind what was published")
    assert hint == (
        "registre: hint: restore the newest copy of the database (its -wal file too) and do not "
        "extend this one: its next checkpoint would fork the history the witnesses cosigned"
    )
    assert rows(db) == before


def test_restored_database_forked_from_witness_fail(
    workdir: Path, run: Run, signer: Signer, endpoint: WitnessEndpoint
) -> None:
    publish(workdir / "published.db", signer, endpoint)
    db = workdir / "registre.db"
    with Ledger.open(str(db), signer) as ledger:
        restored(ledger, extra=2)  # a second checkpoint at size 5, another root
    before = rows(db)
    error, hint = error_and_hint(run("verify", "--db", str(db), "--witness", spec(endpoint)), 1)
    assert error.startswith(f"registre: error: thread t1: witness {WITNESS_KEY.name} cosigned")
    assert error.endswith(": it holds another history")
    assert hint is not None and "restore the copy they saw" in hint
    assert rows(db) == before


def test_witnessed_database_verifies_against_witness(
    workdir: Path, run: Run, signer: Signer, endpoint: WitnessEndpoint
) -> None:
    db = workdir / "registre.db"
    with Ledger.open(str(db), signer) as ledger:
        thread = ledger.create_thread("t1")
        grow(thread, 3)
        witness_checkpoint(thread, [endpoint], 1)
    result = run("verify", "--db", str(db), "--witness", spec(endpoint))
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[1].startswith(f"witness ok t1: {WITNESS_KEY.name} cosigned size 3 of ")
    assert lines[1].endswith("; the database holds it")
    assert lines[2] == "verified 1 thread(s) against the keys stored in the database"
    result = run("verify", "--db", str(db), "--witness", spec(endpoint), "--json")
    assert result.code == 0, result.err
    (check,) = json.loads(result.out)["witnesses"]
    assert list(check) == ["thread", "witness", "verdict", "size", "detail"]
    assert (check["thread"], check["verdict"], check["size"]) == ("t1", "confirmed", 3)


def test_verify_db_witness_key_alone_refused(workdir: Path, run: Run) -> None:
    db = workdir / "registre.db"
    assert run("init", "--db", str(db)).code == 0
    error, _hint = error_and_hint(run("verify", "--db", str(db), "--witness", WITNESS_KEY.vkey()))
    assert "name the witness as VKEY@URL" in error
    error, _hint = error_and_hint(run("verify", "--db", str(db), "--quorum", "1"))
    assert "--quorum needs at least one --witness" in error


def test_record_lost_reanchored_against_witness(
    workdir: Path, run: Run, signer: Signer, endpoint: WitnessEndpoint
) -> None:
    db = workdir / "registre.db"
    with Ledger.open(str(db), signer) as ledger:
        thread = ledger.create_thread("t1")
        grow(thread, 3)
        witness_checkpoint(thread, [endpoint], 1)
    (workdir / "registre.db.published").unlink()
    result = run("reanchor", "--db", str(db), "--witness", spec(endpoint))
    assert result.code == 0, result.err
    assert result.out.splitlines()[-2:] == [
        "reanchored registre.test/log/t1 at size 3",
        f"recorded 1 thread(s) in {workdir / 'registre.db.published'}, confirmed by 1 witness(es)",
    ]
    assert run("verify", "--db", str(db)).code == 0
