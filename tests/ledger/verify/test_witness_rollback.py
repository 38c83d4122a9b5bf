"""Issue 29 item 4: what defends a database restored together with its ``.published`` record,
or a restored PostgreSQL database -- the witnesses (step 14 of ``verify --db --witness``,
:mod:`registre.ledger.verify.witnesses`), against a witness served in-process on loopback.

The restored database is built as a second database holding the same first entries as the
published history: entry times are fixed, and Ed25519 signatures are deterministic, so the
same key, thread and turns give the same leaves, on either engine.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from registre.attest.notes import CosignatureSigner, Signer
from registre.ledger.ledger import Ledger
from registre.ledger.verify.database import verify_database
from registre.ledger.verify.errors import BehindWitnessError, ForkedFromWitnessError
from registre.ledger.verify.witnesses import WitnessCheck, check_witnesses
from registre.ledger.witnessing import witness_checkpoint
from registre.witness.client import WitnessEndpoint
from registre.witness.errors import WitnessQuorumError
from registre.witness.witness import Witness
from tests.ledger.helpers import dump
from tests.ledger.verify.witness_helpers import WITNESS_KEY, grow, publish, restored

pytestmark = pytest.mark.usefixtures("fixed_time")


def compare(
    ledger: Ledger, endpoints: list[WitnessEndpoint], quorum: int = 1
) -> list[WitnessCheck]:
    reports = verify_database(ledger)  # the database agrees with itself
    return check_witnesses(ledger, reports, endpoints, quorum, ledger.stored_keys(), timeout=5)


def test_restored_database_behind_witness_fail(
    db_url: str, signer: Signer, tmp_path: Path, served: WitnessEndpoint, witness: Witness
) -> None:
    """A database and its record restored together from yesterday's pair (or a PostgreSQL
    database restored by its administrator): consistent with itself, behind the witness."""
    publish(tmp_path / "published.db", signer, served)
    with Ledger.open(db_url, signer) as ledger:
        thread = restored(ledger)
        before = dump(ledger.engine)
        with pytest.raises(BehindWitnessError) as caught:
            compare(ledger, [served])
        assert dump(ledger.engine) == before
    message = str(caught.value)
    assert message.startswith(f"thread t1: witness {WITNESS_KEY.name} cosigned size 5 of ")
    assert "but the database holds 3 entries: it is behind what was published" in message
    assert "\n" not in message and caught.value.hint and caught.value.exit_code == 1
    assert witness.state.latest(thread.origin).size == 5  # asking changed nothing there


def test_restored_database_forked_from_witness_fail(
    db_url: str, signer: Signer, tmp_path: Path, served: WitnessEndpoint
) -> None:
    """The restored pair extended with another history and a second checkpoint at size 5
    (the record beside it allowed it): another root at a size the witness cosigned."""
    publish(tmp_path / "published.db", signer, served)
    with Ledger.open(db_url, signer) as ledger:
        restored(ledger, extra=2)
        with pytest.raises(ForkedFromWitnessError, match="it holds another history") as caught:
            compare(ledger, [served])
    assert "cosigned size 5 of registre.test/log/t1 at " in str(caught.value)
    assert "with root " in str(caught.value) and "the database's root at that size is " in str(
        caught.value
    )
    assert caught.value.hint and "\n" not in str(caught.value)


def test_restored_database_forked_below_witness_head_fail(
    db_url: str, signer: Signer, tmp_path: Path, served: WitnessEndpoint
) -> None:
    """Another history grown past the witness's size: its root at 5 is not the witness's."""
    publish(tmp_path / "published.db", signer, served)
    with Ledger.open(db_url, signer) as ledger:
        restored(ledger, extra=4)
        with pytest.raises(ForkedFromWitnessError, match="cosigned size 5 of"):
            compare(ledger, [served])


def test_witnessed_database_passes(db_url: str, signer: Signer, served: WitnessEndpoint) -> None:
    with Ledger.open(db_url, signer) as ledger:
        thread = ledger.create_thread("t1")
        grow(thread, 3)
        witness_checkpoint(thread, [served], 1)
        grow(thread, 2)  # appended since: the head is past the witness's checkpoint
        ledger.create_thread("t2")  # nothing signed, nothing cosigned
        (t1, t2) = compare(ledger, [served])
    assert (t1.verdict, t1.size, t2.verdict, t2.size) == ("confirmed", 3, "confirmed", None)
    assert "the database holds it" in t1.detail
    assert "cosigned nothing" in t2.detail


def test_restored_database_behind_viewless_witness_fail(
    signer: Signer, tmp_path: Path, viewless: WitnessEndpoint, witness: Witness
) -> None:
    """A witness without a monitoring view: the database's largest checkpoint is submitted
    and the witness answers 409 with the larger size it holds."""
    publish(tmp_path / "published.db", signer, viewless)
    with Ledger.open(str(tmp_path / "registre.db"), signer) as ledger:
        restored(ledger)
        with pytest.raises(BehindWitnessError, match=r"holds size 5 of .* by its answer"):
            compare(ledger, [viewless])


def test_restored_database_forked_from_viewless_witness_fail(
    signer: Signer, tmp_path: Path, viewless: WitnessEndpoint, witness: Witness
) -> None:
    publish(tmp_path / "published.db", signer, viewless)
    with Ledger.open(str(tmp_path / "registre.db"), signer) as ledger:
        thread = restored(ledger, extra=2)
        with pytest.raises(ForkedFromWitnessError, match="refused the database's checkpoint"):
            compare(ledger, [viewless])
        assert witness.state.latest(thread.origin).root != thread.head().root


def test_witnessed_database_passes_viewless_witness(
    signer: Signer, tmp_path: Path, viewless: WitnessEndpoint
) -> None:
    with Ledger.open(str(tmp_path / "registre.db"), signer) as ledger:
        thread = ledger.create_thread("t1")
        grow(thread, 3)
        witness_checkpoint(thread, [viewless], 1)
        grow(thread, 2)
        thread.checkpoint()  # signed, not yet witnessed: submitting it is publishing it
        (check,) = compare(ledger, [viewless])
    assert (check.verdict, check.size) == ("confirmed", 5)


def test_unreachable_witness_confirms_nothing_fail(
    signer: Signer, tmp_path: Path, served: WitnessEndpoint
) -> None:
    """A witness that cannot be asked refutes nothing but confirms nothing: the quorum
    decides (every --witness by default; 0 refuses only on evidence)."""
    closed = WitnessEndpoint(
        CosignatureSigner.from_seed("witness.test/gone", bytes([22]) * 32).verifier(),
        "http://127.0.0.1:9",
    )
    with Ledger.open(str(tmp_path / "registre.db"), signer) as ledger:
        thread = ledger.create_thread("t1")
        grow(thread, 3)
        witness_checkpoint(thread, [served], 1)
        with pytest.raises(WitnessQuorumError, match=r"1 of 2 witness\(es\) confirmed"):
            compare(ledger, [served, closed], quorum=2)
        checks = compare(ledger, [served, closed], quorum=1)
    assert [check.verdict for check in checks] == ["confirmed", "unconfirmed"]
    assert "unreachable" in checks[1].detail
