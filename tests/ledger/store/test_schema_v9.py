"""Schema version 9 on a database written by version 8: the upgrade creates the full-text
index and fills it from the entries already there (those within the head); appends after it
keep it."""

from __future__ import annotations

from sqlalchemy import text

from registre.attest.notes import Signer
from registre.ledger.ledger import Ledger
from registre.ledger.store.engine import read_transaction
from registre.ledger.store.search import search
from registre.ledger.thread import Thread
from registre.ledger.verify.database import verify_database
from tests.ledger.helpers import mark_older, turn

DROP_V9 = {
    "sqlite": ("DROP TABLE entry_search", "DROP TABLE search_thread"),
    "postgresql": ("DROP TABLE entry_search",),
}


def found(ledger: Ledger, thread: Thread, word: str) -> list[int]:
    with read_transaction(ledger.engine) as conn:
        return search(conn, thread.id, (word,), thread.head().size, 10)


def test_upgrade_from_version_8_builds_the_index(
    db_url: str, signer: Signer, ledger: Ledger, thread: Thread
) -> None:
    thread.append_many([turn(f"entry {i} about topic{i % 3}") for i in range(12)])
    assert found(ledger, thread, "topic1") == [10, 7, 4, 1]
    mark_older(ledger.engine, 8, *DROP_V9[ledger.engine.dialect.name])
    with Ledger.open(db_url, signer) as upgraded:
        again = upgraded.thread(thread.id)
        assert sorted(found(upgraded, again, "topic1")) == [1, 4, 7, 10]
        with upgraded.engine.connect() as conn:
            description = conn.execute(
                text("SELECT description FROM schema_version WHERE version = 9")
            ).scalar()
        assert description == "full-text index of the entries' texts; 12 entries indexed"
        again.append("turn", {"role": "user", "text": "and topic1 once more"}, "alice")
        assert 12 in found(upgraded, again, "topic1")
        verify_database(upgraded, thread=thread.id)
