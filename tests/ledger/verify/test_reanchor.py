"""``registre reanchor`` (:mod:`registre.ledger.verify.reanchor`): the explicit, recorded way
back for a SQLite database whose ``.published`` record was lost -- never a way around the
rollback defence: a restored database is refused by the witnesses, a record never lowered."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from registre.attest.notes import Signer
from registre.ledger.ledger import Ledger
from registre.ledger.store.published import PublishedRecordMissingError
from registre.ledger.verify.database import verify_database
from registre.ledger.verify.errors import BehindWitnessError, RolledBackError
from registre.ledger.verify.reanchor import ReanchorRefusedError, reanchor
from registre.ledger.witnessing import witness_checkpoint
from registre.witness.client import WitnessEndpoint
from tests.ledger.verify.witness_helpers import WITNESS_KEY, grow, publish, restored

pytestmark = pytest.mark.usefixtures("fixed_time")


def test_record_lost_reanchored_with_witness(
    tmp_path: Path, signer: Signer, served: WitnessEndpoint
) -> None:
    """The record alone was lost: the witness confirms the database, the record is written
    again with the decision noted in it, and the ledger goes on."""
    path = tmp_path / "registre.db"
    published = tmp_path / "registre.db.published"
    with Ledger.open(str(path), signer) as ledger:
        thread = ledger.create_thread("t1")
        grow(thread, 3)
        witness_checkpoint(thread, [served], 1)
        ledger.create_thread("t2")
    published.unlink()
    with Ledger.open(str(path), signer, create=False) as ledger:
        with pytest.raises(PublishedRecordMissingError):
            ledger.thread("t1").append_many([("turn", {"role": "user", "text": "x"}, "a")])
        done = reanchor(ledger, [served], 1)
        assert [(h.origin, h.size) for h in done.recorded] == [(thread.origin, 3)]
        assert [c.verdict for c in done.checks] == ["confirmed", "confirmed"]
        record = json.loads(published.read_text())
        assert record["threads"][thread.origin]["size"] == 3
        (event,) = record["reanchored"]
        assert event["witnesses"] == [WITNESS_KEY.name]
        assert event["threads"] == {thread.origin: 3}
        grow(ledger.thread("t1"), 1)
        assert ledger.thread("t1").checkpoint().size == 4
        verify_database(ledger)
        # a second run finds nothing to do, and the noted decision is kept
        assert reanchor(ledger, [served], 1).recorded == []
        assert len(json.loads(published.read_text())["reanchored"]) == 1


def test_restored_database_reanchored_behind_witness_fail(
    tmp_path: Path, signer: Signer, served: WitnessEndpoint
) -> None:
    """The attack, tried through the way back: yesterday's database without its record,
    re-anchored -- the witness holds a larger tree, so nothing is recorded."""
    publish(tmp_path / "published.db", signer, served)
    path = tmp_path / "registre.db"
    with Ledger.open(str(path), signer) as ledger:
        restored(ledger)
    (tmp_path / "registre.db.published").unlink()
    with (
        Ledger.open(str(path), signer, create=False) as ledger,
        pytest.raises(BehindWitnessError, match="cosigned size 5"),
    ):
        reanchor(ledger, [served], 1)
    assert not (tmp_path / "registre.db.published").exists()


def test_reanchor_unwitnessed_noted(tmp_path: Path, signer: Signer) -> None:
    path = tmp_path / "registre.db"
    with Ledger.open(str(path), signer) as ledger:
        grow(ledger.create_thread("t1"), 2)
        ledger.thread("t1").checkpoint()
    (tmp_path / "registre.db.published").unlink()
    with Ledger.open(str(path), signer, create=False) as ledger:
        done = reanchor(ledger, [], 0)
        assert [h.size for h in done.recorded] == [2] and done.checks == []
    (event,) = json.loads((tmp_path / "registre.db.published").read_text())["reanchored"]
    assert event["witnesses"] == []


def test_reanchor_never_lowers_record_fail(tmp_path: Path, signer: Signer) -> None:
    """A database behind the record that is there stays refused: re-anchoring raises a
    record, never lowers it."""
    path = tmp_path / "registre.db"
    with Ledger.open(str(path), signer) as ledger:
        grow(ledger.create_thread("t1"), 3)
        ledger.thread("t1").checkpoint()
    (tmp_path / "old").mkdir()
    shutil.copy(path, tmp_path / "old" / "registre.db")
    with Ledger.open(str(path), signer) as ledger:
        grow(ledger.thread("t1"), 2)
        ledger.thread("t1").checkpoint()
    shutil.copy(tmp_path / "old" / "registre.db", path)
    record = (tmp_path / "registre.db.published").read_bytes()
    with (
        Ledger.open(str(path), signer, create=False) as ledger,
        pytest.raises(RolledBackError, match="restored from an older copy"),
    ):
        reanchor(ledger, [], 0)
    assert (tmp_path / "registre.db.published").read_bytes() == record


def test_reanchor_postgres_refused(ledger: Ledger) -> None:
    """PostgreSQL keeps no record (the witnesses defend it); SQLite with nothing missing has
    nothing to re-anchor."""
    if ledger.engine.dialect.name == "sqlite":
        assert reanchor(ledger, [], 0).recorded == []
        return
    with pytest.raises(ReanchorRefusedError) as caught:
        reanchor(ledger, [], 0)
    assert "verify --db" in (caught.value.hint or "")
