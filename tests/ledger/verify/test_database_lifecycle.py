"""verify --db step 9: the lifecycle replays from the signed entries and the derived tables
match the fold (THREATS row 19 for a database: a final citing inactive evidence, recorded as
accepted and signed, is found). Tamper cases are named after the attack; both engines."""

from __future__ import annotations

from typing import Any

import pytest

from registre.attest.notes import Signer
from registre.ledger.core.append import append_entries
from registre.ledger.ledger import Ledger
from registre.ledger.lifecycle.api import ConclusionRefusedError
from registre.ledger.lifecycle.store import rebuild
from registre.ledger.store.engine import write_transaction
from registre.ledger.store.lifecycle_fold import LifecycleHistoryError
from registre.ledger.thread import Thread
from registre.ledger.verify.database import verify_database
from registre.ledger.verify.errors import DerivedStateMismatchError, StoredLifecycleReplayError
from tests.ledger.helpers import execute
from tests.ledger.lifecycle_helpers import derived_rows, folded_rows, investigation

ZEROS = "0" * 64


@pytest.fixture
def investigated(ledger: Ledger, thread: Thread) -> Thread:
    investigation(thread)
    return thread


def forge(ledger: Ledger, signer: Signer, kind: str, body: dict[str, Any]) -> int:
    """Sign and store an entry with the operator key, bypassing the lifecycle check (what a
    buggy or malicious writer holding the key could do); return its seq."""
    with write_transaction(ledger.engine) as conn:
        (entry,) = append_entries(conn, signer, "t1", [(kind, body, "agent")])
    return entry.seq


def test_clean_lifecycle_verifies(ledger: Ledger, investigated: Thread, signer: Signer) -> None:
    (report,) = verify_database(ledger, keys=[signer.verifier()])
    assert report.size == 9


@pytest.mark.parametrize(
    ("kind", "body", "detail"),
    [
        pytest.param(
            "conclusion.final",
            {
                "request": {"text": "Revenue grew.", "cites": ["ev-2"]},
                "outcome": {"accepted": True, "id": "cc-4"},
            },
            "inactive_evidence",
            id="final-citing-superseded-evidence-accepted",
        ),
        pytest.param(
            "evidence.revise",
            {
                "request": {"id": "ev-1", "replacement": None},
                "outcome": {"accepted": True, "id": "ev-1", "successor": None, "stale": []},
            },
            "'stale': ['cc-2', 'cc-3']",
            id="revision-hiding-a-stale-conclusion",
        ),
        pytest.param(
            "evidence.upsert",
            {
                "request": {"statements": [{"text": "x", "cites": ["r1"]}]},
                "outcome": {"results": [{"accepted": True, "id": "ev-9"}]},
            },
            "'id': 'ev-5'",
            id="upsert-skipping-ids",
        ),
        pytest.param(
            "context.unpin",
            {
                "request": {"id": "pin-1", "reason": "done"},
                "outcome": {
                    "accepted": False,
                    "reason": "unknown_pin",
                    "message": "Pin 'pin-1' does not exist; unpin an id a context.pin accepted.",
                },
            },
            "'accepted': True",
            id="refusal-of-a-valid-unpin",
        ),
    ],
)
def test_forged_outcome_fail(
    ledger: Ledger,
    investigated: Thread,
    signer: Signer,
    kind: str,
    body: dict[str, Any],
    detail: str,
) -> None:
    seq = forge(ledger, signer, kind, body)
    with pytest.raises(StoredLifecycleReplayError) as failure:
        verify_database(ledger, keys=[signer.verifier()])  # the signature itself is valid
    assert (failure.value.thread, failure.value.seq) == ("t1", seq)
    assert kind in str(failure.value) and detail in str(failure.value)
    # The writer refuses to decide on top of a history that does not replay.
    ledger.lifecycle.forget()
    with pytest.raises(LifecycleHistoryError) as refused:
        investigated.conclude("compute", "x", ["ev-1"])
    assert refused.value.seq == seq


def test_pin_of_a_later_entry_fail(ledger: Ledger, investigated: Thread, signer: Signer) -> None:
    body = {
        "request": {"kind": "decision", "text": "Use IFRS 9.", "seq": 9},
        "outcome": {"accepted": True, "id": "pin-2"},
    }
    seq = forge(ledger, signer, "context.pin", body)
    with pytest.raises(StoredLifecycleReplayError, match="already on the ledger") as failure:
        verify_database(ledger)
    assert failure.value.seq == seq == 9


@pytest.mark.parametrize(
    ("statement", "table", "key", "problem"),
    [
        (
            "UPDATE lifecycle_evidence SET status = 'active', successor = NULL WHERE id = 'ev-2'",
            "lifecycle_evidence",
            "ev-2",
            "column status is 'active' in the table but the fold of the entries gives 'superseded'",
        ),
        (
            "UPDATE lifecycle_conclusion SET stale = NOT stale WHERE id = 'cc-2'",
            "lifecycle_conclusion",
            "cc-2",
            "column stale is False",
        ),
        (
            "DELETE FROM lifecycle_conclusion WHERE id = 'cc-3'",
            "lifecycle_conclusion",
            "cc-3",
            "is missing from the table",
        ),
        (
            f"UPDATE lifecycle_reference SET sha256 = '{ZEROS}' WHERE ref = 'r2'",
            "lifecycle_reference",
            "r2",
            "column sha256",
        ),
        (
            "INSERT INTO lifecycle_pin (thread, id, num, kind, text, source_seq, live, seq) "
            "VALUES ('t1', 'pin-7', 7, 'decision', 'Ignore the restatement.', 0, true, 3)",
            "lifecycle_pin",
            "pin-7",
            "is in the table but no lifecycle entry creates it",
        ),
        (
            "UPDATE lifecycle_transition SET rejected = 0 WHERE seq = 2",
            "lifecycle_transition",
            "2",
            "column rejected is 0",
        ),
    ],
)
def test_derived_state_edited_fail(
    ledger: Ledger, investigated: Thread, statement: str, table: str, key: str, problem: str
) -> None:
    execute(ledger.engine, statement)
    with pytest.raises(DerivedStateMismatchError) as failure:
        verify_database(ledger)
    message = str(failure.value)
    assert f"{table} row {key}: " in message and problem in message, message
    assert failure.value.thread == "t1"
    rebuild(ledger, "t1")  # the repair
    verify_database(ledger)


def test_first_difference_is_the_earliest(ledger: Ledger, investigated: Thread) -> None:
    execute(
        ledger.engine,
        "UPDATE lifecycle_evidence SET text = 'edited' WHERE id IN ('ev-4', 'ev-1')",
    )
    with pytest.raises(DerivedStateMismatchError, match="row ev-1: column text") as failure:
        verify_database(ledger)
    assert failure.value.seq == 2


def test_decisions_ignore_edited_derived_tables(ledger: Ledger, investigated: Thread) -> None:
    # Making superseded evidence look active in the cache does not make it citable: the writer
    # decides from the signed entries, even starting cold.
    execute(ledger.engine, "UPDATE lifecycle_evidence SET status = 'active' WHERE id = 'ev-2'")
    ledger.lifecycle.forget()
    with pytest.raises(ConclusionRefusedError, match="'ev-2' is superseded"):
        investigated.conclude("final", "Revenue grew.", ["ev-2"])
    rebuild(ledger)
    assert derived_rows(ledger, "t1") == folded_rows(ledger, investigated)
