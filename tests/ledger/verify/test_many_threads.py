"""`verify --db` over many threads (issue 17, item 5): ``threads`` picks some, ``jobs`` shares
them among processes with the same reports in thread order, and a failure found in a child
process is raised as the same error, naming the same thread and seq."""

from __future__ import annotations

import pytest

from registre.ledger.errors import UnknownThreadError
from registre.ledger.ledger import Ledger
from registre.ledger.verify.database import verify_database
from registre.ledger.verify.errors import LeafHashMismatchError
from tests.ledger.helpers import drop_triggers, execute, turn

THREADS = 12


@pytest.fixture
def many(ledger: Ledger) -> Ledger:
    for k in range(THREADS):
        ledger.create_thread(f"t{k:02d}").append_many([turn(f"{k} {i}") for i in range(k % 3)])
    return ledger


def test_jobs_give_the_same_reports_in_thread_order(many: Ledger) -> None:
    alone = verify_database(many)
    assert [r.thread for r in alone] == [f"t{k:02d}" for k in range(THREADS)]
    assert verify_database(many, jobs=2) == alone


def test_threads_picks_some_in_order(many: Ledger) -> None:
    picked = verify_database(many, threads=["t07", "t02", "t07"], jobs=2)
    assert [r.thread for r in picked] == ["t02", "t07"]
    assert [r.size for r in picked] == [2, 1]
    with pytest.raises(UnknownThreadError, match="t99"):
        verify_database(many, threads=["t01", "t99"])


def test_a_failure_in_a_child_names_the_thread_and_seq(many: Ledger) -> None:
    drop_triggers(many.engine)
    other = "(SELECT e.leaf_hash FROM entry e WHERE e.thread = 't01' AND e.seq = 0)"
    for thread, seq in (("t10", 0), ("t05", 1)):
        execute(
            many.engine,
            f"UPDATE entry SET leaf_hash = {other} WHERE thread = '{thread}' AND seq = {seq}",
        )
    for jobs in (1, 2):
        with pytest.raises(LeafHashMismatchError) as caught:
            verify_database(many, jobs=jobs)
        assert (caught.value.thread, caught.value.seq) == ("t05", 1)
        assert str(caught.value).startswith("thread t05 seq 1:")


def test_thread_pages_and_entry_count(many: Ledger) -> None:
    seen: list[str] = []
    cursor = None
    while True:
        page, cursor = many.thread_page(after=cursor, limit=5)
        seen += [t.id for t in page]
        if cursor is None:
            break
    assert seen == [f"t{k:02d}" for k in range(THREADS)]
    assert many.thread_page(after="t10")[0][0].id == "t11"
    assert many.thread_page(limit=THREADS)[1] is None
    assert many.entry_count() == sum(k % 3 for k in range(THREADS))
    assert many.entry_count(["t02", "t05", "absent"]) == 4
