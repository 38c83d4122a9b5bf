"""Thread.add_cosignatures and schema version 2: a stored checkpoint note may grow by witness
cosignature lines, and nothing else about a checkpoint may change (THREATS rows 4, 17)."""

from __future__ import annotations

import base64

import pytest
from sqlalchemy.exc import DBAPIError

from registre.attest.errors import NoteFormatError
from registre.attest.notes import CosignatureSigner, Signer, open_checkpoint
from registre.ledger.errors import EntryNotFoundError
from registre.ledger.ledger import Ledger
from registre.ledger.store import engine as engine_module
from registre.ledger.store.engine import make_engine, read_transaction, schema_version
from registre.ledger.store.schema import SCHEMA_VERSION
from registre.ledger.store.triggers import REFUSAL_MARK, trigger_ddl
from registre.ledger.thread import Thread
from tests.ledger.helpers import dump, execute, turn

W1 = CosignatureSigner.from_seed("witness.test/w1", bytes([1]) * 32)
W2 = CosignatureSigner.from_seed("witness.test/w2", bytes([2]) * 32)


def cosignature(witness: CosignatureSigner, note: str, timestamp: int = 1_700_000_000) -> str:
    text = note[: note.index("\n\n") + 1]
    return witness.cosign(text, timestamp)


@pytest.fixture
def checkpointed(thread: Thread) -> Thread:
    thread.append_many([turn(f"entry {i}") for i in range(5)])
    thread.checkpoint()
    return thread


def test_cosignatures_appended_and_verifiable(checkpointed: Thread, signer: Signer) -> None:
    stored = checkpointed.checkpoint()
    lines = [cosignature(W1, stored.note), cosignature(W2, stored.note)]
    cosigned = checkpointed.add_cosignatures(stored.size, lines)
    assert cosigned.note == stored.note + "".join(lines)
    assert checkpointed.checkpoint().note == cosigned.note  # stored, not only returned
    verified = open_checkpoint(
        cosigned.note, signer.verifier(), witnesses=[W1.verifier(), W2.verifier()], quorum=2
    )
    assert [c.name for c in verified.cosignatures] == [W1.name, W2.name]


def test_second_cosignature_of_one_witness_skipped(checkpointed: Thread) -> None:
    stored = checkpointed.checkpoint()
    first = checkpointed.add_cosignatures(stored.size, [cosignature(W1, stored.note, 1)])
    again = checkpointed.add_cosignatures(stored.size, [cosignature(W1, stored.note, 2)])
    assert again.note == first.note


def test_malformed_cosignature_line_refused_and_nothing_written(
    checkpointed: Thread, ledger: Ledger
) -> None:
    stored = checkpointed.checkpoint()
    before = dump(ledger.engine)
    with pytest.raises(NoteFormatError):
        checkpointed.add_cosignatures(stored.size, [cosignature(W1, stored.note), "garbage\n"])
    assert dump(ledger.engine) == before


def test_cosignatures_without_checkpoint_refused(checkpointed: Thread) -> None:
    with pytest.raises(EntryNotFoundError, match="no checkpoint at size 3"):
        checkpointed.add_cosignatures(3, [])


@pytest.mark.parametrize(
    "statement",
    [
        "UPDATE checkpoint SET note = 'forged'",
        "UPDATE checkpoint SET note = 'x' || note",
        "UPDATE checkpoint SET size = size + 1",
        "UPDATE checkpoint SET root = (SELECT leaf_hash FROM entry WHERE seq = 0)",
        "UPDATE checkpoint SET created = 'then', note = note || 'x'",
    ],
)
def test_checkpoint_rewrite_fail(checkpointed: Thread, ledger: Ledger, statement: str) -> None:
    before = dump(ledger.engine)
    with pytest.raises(DBAPIError, match=REFUSAL_MARK):
        execute(ledger.engine, statement)
    assert dump(ledger.engine) == before


def test_checkpoint_note_may_grow_in_sql(checkpointed: Thread, ledger: Ledger) -> None:
    """Whole signature lines may be appended in SQL (schema version 8: nothing else); one
    from an unknown key is kept and ignored, as C2SP notes ignore unknown signers."""
    line = "— w.example " + base64.b64encode(bytes(76)).decode() + "\n"
    execute(ledger.engine, f"UPDATE checkpoint SET note = note || '{line}'")
    assert checkpointed.checkpoint().note.endswith(line)


def test_checkpoint_delete_still_fail(checkpointed: Thread, ledger: Ledger) -> None:
    with pytest.raises(DBAPIError, match=REFUSAL_MARK):
        execute(ledger.engine, "DELETE FROM checkpoint WHERE 1 = 1")


def test_version_1_database_upgraded(
    db_url: str, signer: Signer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A database as registre wrote it at schema version 1: every checkpoint UPDATE refused.
    with monkeypatch.context() as patch:
        patch.setattr(engine_module, "SCHEMA_VERSION", 1)
        with Ledger.open(db_url, signer) as old:
            thread = old.create_thread("t1")
            thread.append(*turn("hello"))
            stored = thread.checkpoint()
            with pytest.raises(DBAPIError, match=REFUSAL_MARK):
                thread.add_cosignatures(1, [cosignature(W1, stored.note)])
    assert SCHEMA_VERSION >= 2  # upgraded through every later version too
    assert trigger_ddl("sqlite", version=1) != trigger_ddl("sqlite", version=2)
    with Ledger.open(db_url, signer) as upgraded:
        thread = upgraded.thread("t1")
        cosigned = thread.add_cosignatures(1, [cosignature(W1, stored.note)])
        assert cosigned.note.startswith(stored.note)
        with pytest.raises(DBAPIError, match=REFUSAL_MARK):
            execute(upgraded.engine, "UPDATE checkpoint SET note = 'forged'")
        with pytest.raises(DBAPIError, match=REFUSAL_MARK):
            execute(upgraded.engine, "DELETE FROM checkpoint")
    engine = make_engine(db_url)
    with read_transaction(engine) as conn:
        assert schema_version(conn) == SCHEMA_VERSION
    engine.dispose()
