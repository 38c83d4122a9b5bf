"""Group commit (issue 17, item 4): concurrent appenders of one process share transactions,
and each still gets its own entries, durable, or its own error; on PostgreSQL writers to
different threads never wait for each other's locks."""

from __future__ import annotations

import sqlite3
import threading
from pathlib import Path

import pytest
from sqlalchemy import text

from registre.attest.entries import BodySchemaError, Entry, InvalidActorError
from registre.attest.notes import Signer
from registre.ledger.core.group_commit import GroupCommit, _Request, queue_for
from registre.ledger.errors import ThreadKeyError, UnknownThreadError
from registre.ledger.ledger import Ledger
from registre.ledger.store.engine import lock_policy, write_transaction
from registre.ledger.store.faults import DatabaseLockedError
from registre.ledger.verify.database import verify_database
from tests.ledger.helpers import turn

WRITERS = 4
EACH = 15


def _sqlite(tmp_path: Path, signer: Signer) -> Ledger:
    return Ledger.open(f"sqlite:///{tmp_path / 'group.db'}", signer)


def _run_all(jobs: list[threading.Thread]) -> None:
    for job in jobs:
        job.start()
    for job in jobs:
        job.join(timeout=120)
    assert not any(job.is_alive() for job in jobs)


def test_concurrent_single_appends_are_all_stored_gap_free(tmp_path: Path, signer: Signer) -> None:
    with _sqlite(tmp_path, signer) as ledger:
        threads = [ledger.create_thread(f"w{k}") for k in range(WRITERS)]
        shared = ledger.create_thread("shared")
        got: dict[str, list[Entry]] = {}
        start = threading.Barrier(WRITERS * 2)

        def writer(name: str, target_id: str) -> None:
            target = ledger.thread(target_id)
            start.wait()
            got[name] = [target.append(*turn(f"{name} {i}")) for i in range(EACH)]

        jobs = [
            threading.Thread(target=writer, args=(f"own{k}", t.id)) for k, t in enumerate(threads)
        ]
        jobs += [
            threading.Thread(target=writer, args=(f"sh{k}", shared.id)) for k in range(WRITERS)
        ]
        _run_all(jobs)
        for k, thread in enumerate(threads):
            entries = got[f"own{k}"]
            assert [e.seq for e in entries] == list(range(EACH))
            assert [e.body["text"] for e in entries] == [f"own{k} {i}" for i in range(EACH)]
            assert [e.leaf for e in thread.entries()] == [e.leaf for e in entries]
        stored = {e.seq: e for e in shared.entries()}
        assert sorted(stored) == list(range(WRITERS * EACH))
        for k in range(WRITERS):
            mine = got[f"sh{k}"]
            assert [e.seq for e in mine] == sorted(e.seq for e in mine)  # each caller's order
            assert all(stored[e.seq].leaf == e.leaf for e in mine)  # what it got is stored
        queue = queue_for(ledger)
        assert queue is not None and queue.groups <= WRITERS * 2 * EACH
        assert len(verify_database(ledger)) == WRITERS + 1


def test_a_bad_caller_fails_alone(tmp_path: Path, signer: Signer) -> None:
    with _sqlite(tmp_path, signer) as ledger:
        thread = ledger.create_thread("t1")
        errors: list[BaseException] = []
        stored: list[Entry] = []
        start = threading.Barrier(WRITERS)

        def good(i: int) -> None:
            start.wait()
            stored.extend(thread.append(*turn(f"good {i} {n}")) for n in range(5))

        def bad() -> None:
            start.wait()
            for actor, body in (("", {"role": "user", "text": "x"}), ("agent", {"role": 3})):
                try:
                    thread.append("turn", body, actor)
                except (InvalidActorError, BodySchemaError) as exc:
                    errors.append(exc)

        jobs = [threading.Thread(target=good, args=(i,)) for i in range(WRITERS - 1)]
        _run_all([*jobs, threading.Thread(target=bad)])
        assert [type(e) for e in errors] == [InvalidActorError, BodySchemaError]
        assert thread.head().size == len(stored) == 5 * (WRITERS - 1)


def test_a_failed_group_is_retried_member_by_member(tmp_path: Path, signer: Signer) -> None:
    """A member the transaction refuses (here: an unknown thread) gets its own error; the
    others their entries, as if each had appended alone."""
    with _sqlite(tmp_path, signer) as ledger:
        first, second = ledger.create_thread("a"), ledger.create_thread("b")
        queue = GroupCommit(ledger.engine, signer)
        group = [
            _Request("a", [turn("one")], 0),
            _Request("nope", [turn("lost")], 0),
            _Request("b", [turn("two"), turn("three")], 0),
            _Request("a", [turn("four")], 0),
        ]
        queue._lead(group)
        assert isinstance(group[1].error, UnknownThreadError)
        assert [e.seq for e in group[0].entries] == [0] and [e.seq for e in group[3].entries] == [1]
        assert [e.body["text"] for e in group[2].entries] == ["two", "three"]
        assert first.head().size == 2 and second.head().size == 2
        verify_database(ledger)


def test_another_key_is_refused_through_the_queue(tmp_path: Path, signer: Signer) -> None:
    with _sqlite(tmp_path, signer) as ledger:
        ledger.create_thread("t1")
    other = Signer.from_seed(signer.name, bytes(range(1, 33)))
    with Ledger.open(f"sqlite:///{tmp_path / 'group.db'}", other) as ledger:
        with pytest.raises(ThreadKeyError):
            ledger.thread("t1").append(*turn("x"))
        assert ledger.thread("t1").head().size == 0


@pytest.mark.postgres
def test_postgres_writers_to_other_threads_do_not_wait(db_url: str, signer: Signer) -> None:
    """The append path locks the thread row only: with thread a's row locked by an open
    transaction, an append to thread b commits at once (a lock timeout of 0.5 s would
    otherwise refuse it)."""
    if not db_url.startswith("postgresql"):
        pytest.skip("PostgreSQL only")
    saved = lock_policy.timeout
    with Ledger.open(db_url, signer) as ledger:
        ledger.create_thread("a").append(*turn("first"))
        b = ledger.create_thread("b")
        lock_policy.timeout = 0.5
        try:
            with Ledger.open(db_url, signer) as other, other.engine.connect() as holder:
                holder.begin()
                holder.execute(text("SELECT size FROM thread WHERE id = 'a' FOR UPDATE"))
                assert b.append(*turn("not blocked")).seq == 0
                holder.rollback()
        finally:
            lock_policy.timeout = saved


def test_a_lock_held_past_the_timeout_fails_every_member(tmp_path: Path, signer: Signer) -> None:
    """Another process's lock: every waiting caller gets its own DatabaseLockedError (its own
    copy, the usual message), once, and nothing is written."""
    saved = lock_policy.timeout
    with _sqlite(tmp_path, signer) as ledger:
        thread = ledger.create_thread("t1")
        holder = sqlite3.connect(tmp_path / "group.db", isolation_level=None)
        holder.execute("BEGIN IMMEDIATE")
        lock_policy.timeout = 0.3
        errors: list[BaseException] = []

        def writer(i: int) -> None:
            try:
                thread.append(*turn(f"blocked {i}"))
            except DatabaseLockedError as exc:
                errors.append(exc)

        try:
            _run_all([threading.Thread(target=writer, args=(i,)) for i in range(3)])
        finally:
            lock_policy.timeout = saved
            holder.execute("ROLLBACK")
            holder.close()
        assert len(errors) == 3 and len({id(e) for e in errors}) == 3
        assert all("locked by another writer" in str(e) for e in errors)
        assert thread.head().size == 0
        assert thread.append(*turn("after")).seq == 0


def test_a_writer_gets_the_lock_once_released(tmp_path: Path, signer: Signer) -> None:
    with _sqlite(tmp_path, signer) as ledger:
        thread = ledger.create_thread("t1")
        holder = sqlite3.connect(
            tmp_path / "group.db", isolation_level=None, check_same_thread=False
        )
        holder.execute("BEGIN IMMEDIATE")
        release = threading.Timer(0.3, lambda: holder.execute("ROLLBACK"))
        release.start()
        assert thread.append(*turn("waited")).seq == 0
        release.join()
        holder.close()
        with write_transaction(ledger.engine) as conn:  # the busy timeout is set back
            timeout = conn.exec_driver_sql("PRAGMA busy_timeout").scalar()
        assert timeout == int(lock_policy.timeout * 1000)
