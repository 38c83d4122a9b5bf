"""Group commit across the ledgers of one process: every :class:`Ledger` open on one SQLite
file with one key appends through one queue (so writers that each opened the ledger share
transactions and fsyncs), and never through the queue of another file, another key or an
in-memory database; each writer still gets its own entries, durable, or its own error."""

from __future__ import annotations

import os
import signal
import threading
import time
from pathlib import Path

import pytest

from registre.attest.entries import Entry
from registre.attest.notes import Signer
from registre.ledger.core.group_commit import _Request, queue_for
from registre.ledger.errors import UnknownThreadError
from registre.ledger.ledger import Ledger
from registre.ledger.verify.database import verify_database
from tests.ledger.helpers import turn

WRITERS = 4
EACH = 12


def _open(path: Path, signer: Signer) -> Ledger:
    return Ledger.open(f"sqlite:///{path}", signer)


def test_ledgers_on_one_file_and_key_share_one_queue(tmp_path: Path, signer: Signer) -> None:
    with _open(tmp_path / "a.db", signer) as one, _open(tmp_path / "a.db", signer) as two:
        with Ledger.open(f"sqlite:///{tmp_path}/./a.db", signer) as three:
            assert queue_for(one) is queue_for(two) is queue_for(three)
        with _open(tmp_path / "b.db", signer) as other_file:
            assert queue_for(other_file) is not queue_for(one)
        other_key = Signer.from_seed(signer.name, bytes(range(1, 33)))
        with _open(tmp_path / "a.db", other_key) as keyed:
            assert queue_for(keyed) is not queue_for(one)


def test_in_memory_databases_never_share(signer: Signer) -> None:
    with Ledger.open("sqlite://", signer) as one, Ledger.open("sqlite://", signer) as two:
        assert queue_for(one) is not queue_for(two)
        one.create_thread("t").append(*turn("only in one"))
        two.create_thread("t").append(*turn("only in two"))
        assert [e.body["text"] for e in one.thread("t").entries()] == ["only in one"]
        assert [e.body["text"] for e in two.thread("t").entries()] == ["only in two"]


def test_one_relative_url_for_two_files_never_shares(
    tmp_path: Path, signer: Signer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``sqlite:///rel.db`` opened from two working folders names two files: two queues, and
    each ledger's entries land in its own file."""
    (tmp_path / "x").mkdir()
    (tmp_path / "y").mkdir()
    monkeypatch.chdir(tmp_path / "x")
    with Ledger.open("sqlite:///rel.db", signer) as in_x:
        in_x.create_thread("t")
        queue_x = queue_for(in_x)
        monkeypatch.chdir(tmp_path / "y")
        with Ledger.open("sqlite:///rel.db", signer) as in_y:
            in_y.create_thread("t")
            assert queue_for(in_y) is not queue_x
            in_y.thread("t").append(*turn("in y"))
            assert in_x.thread("t").head().size == 0
            assert in_y.thread("t").head().size == 1


def test_writers_of_their_own_ledgers_share_groups(tmp_path: Path, signer: Signer) -> None:
    """Four writers, each with its own Ledger on the file and its own thread, plus four on one
    shared thread: all stored gap-free, each caller's entries its own and stored as it got
    them; fewer transactions than appends is allowed, never required."""
    path = tmp_path / "w.db"
    with _open(path, signer) as setup:
        for k in range(WRITERS):
            setup.create_thread(f"w{k}")
        setup.create_thread("shared")
    ledgers = [_open(path, signer) for _ in range(WRITERS * 2)]
    got: dict[str, list[Entry]] = {}
    start = threading.Barrier(len(ledgers))

    def writer(ledger: Ledger, name: str, thread_id: str) -> None:
        target = ledger.thread(thread_id)
        start.wait()
        got[name] = [target.append(*turn(f"{name} {i}")) for i in range(EACH)]

    jobs = [
        threading.Thread(target=writer, args=(ledgers[k], f"own{k}", f"w{k}"))
        for k in range(WRITERS)
    ]
    jobs += [
        threading.Thread(target=writer, args=(ledgers[WRITERS + k], f"sh{k}", "shared"))
        for k in range(WRITERS)
    ]
    try:
        for job in jobs:
            job.start()
        for job in jobs:
            job.join(timeout=120)
        assert not any(job.is_alive() for job in jobs)
        queue = queue_for(ledgers[0])
        assert all(queue_for(ledger) is queue for ledger in ledgers)
        assert queue is not None and queue.groups <= WRITERS * 2 * EACH
    finally:
        for ledger in ledgers:
            ledger.close()
    with _open(path, signer) as check:
        for k in range(WRITERS):
            entries = got[f"own{k}"]
            assert [e.seq for e in entries] == list(range(EACH))
            assert [e.leaf for e in check.thread(f"w{k}").entries()] == [e.leaf for e in entries]
        stored = {e.seq: e for e in check.thread("shared").entries()}
        assert sorted(stored) == list(range(WRITERS * EACH))
        for k in range(WRITERS):
            mine = got[f"sh{k}"]
            assert [e.seq for e in mine] == sorted(e.seq for e in mine)
            assert all(stored[e.seq].leaf == e.leaf for e in mine)
        assert len(verify_database(check)) == WRITERS + 1


def test_a_group_of_two_ledgers_and_a_closed_one(tmp_path: Path, signer: Signer) -> None:
    """One group holding requests of two ledgers is written through the leader's engine;
    a member the transaction refuses is retried alone through its own engine and gets its
    own error. A closed ledger leaves the shared queue working for the others."""
    path = tmp_path / "g.db"
    with _open(path, signer) as one, _open(path, signer) as two:
        one.create_thread("a")
        two.create_thread("b")
        queue = queue_for(one)
        assert queue is not None and queue is queue_for(two)
        group = [
            _Request("a", [turn("from one")], 0, one.engine),
            _Request("b", [turn("from two")], 0, two.engine),
            _Request("nope", [turn("lost")], 0, two.engine),
        ]
        queue._lead(group, one.engine)
        assert isinstance(group[2].error, UnknownThreadError)
        assert [e.seq for e in group[0].entries] == [0] == [e.seq for e in group[1].entries]
        one.close()
        assert two.thread("a").append(*turn("after the close")).seq == 1
        assert two.thread("b").head().size == 1
        verify_database(two)


def test_a_forked_child_never_shares_its_parents_queue(tmp_path: Path, signer: Signer) -> None:
    """A child forked while a thread of the parent leads a group inherits a queue whose
    leader it does not have: a ledger the child opens gets a queue of its own and appends."""
    path = tmp_path / "fork.db"
    with _open(path, signer) as parent:
        parent.create_thread("t")
        queue = queue_for(parent)
        assert queue is not None
        parent.engine.dispose()  # the child must not inherit open connections
        queue._leading = True  # as if a parent thread were leading a group at the fork
        try:
            pid = os.fork()
            if pid == 0:  # child: never returns into pytest
                status = 1
                try:
                    with _open(path, signer) as child:
                        status = 0 if child.thread("t").append(*turn("child")).seq == 0 else 1
                finally:
                    os._exit(status)
            deadline = time.monotonic() + 60
            while (done := os.waitpid(pid, os.WNOHANG))[0] == 0 and time.monotonic() < deadline:
                time.sleep(0.01)
            if done[0] == 0:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                pytest.fail("the child waited for its parent's leader")
            assert os.waitstatus_to_exitcode(done[1]) == 0
        finally:
            queue._leading = False
        assert [e.body["text"] for e in parent.thread("t").entries()] == ["child"]


class _Interrupted:
    """A request's wake lock whose wait is interrupted (a signal in the waiting thread)."""

    def acquire(self) -> bool:
        raise KeyboardInterrupt

    def release(self) -> None:
        raise AssertionError("nobody wakes a caller that is gone")


def test_an_interrupted_follower_leaves_and_passes_the_lead(tmp_path: Path, signer: Signer) -> None:
    """A follower interrupted while it waits: its request leaves the queue (nothing of it is
    written), and a lead it was handed goes to the next queued request, which is woken."""
    with _open(tmp_path / "i.db", signer) as ledger:
        ledger.create_thread("t")
        queue = queue_for(ledger)
        assert queue is not None
        gone, handed, next_one = (_Request("t", [turn(n)], 0) for n in ("gone", "h", "n"))
        queue._leading = True
        queue._queue = [gone, next_one]
        gone.wake = _Interrupted()  # type: ignore[assignment]
        with pytest.raises(KeyboardInterrupt):
            queue._await(gone)
        assert queue._queue == [next_one] and not next_one.leads and queue._leading
        handed.leads = True  # the lead was handed to it just before the signal
        handed.wake = _Interrupted()  # type: ignore[assignment]
        with pytest.raises(KeyboardInterrupt):
            queue._await(handed)
        assert next_one.leads and next_one.wake.acquire(blocking=False)
        queue._queue, queue._leading = [], False
        assert ledger.thread("t").append(*turn("after")).seq == 0


def test_an_interrupted_leader_frees_the_queue(
    tmp_path: Path, signer: Signer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """An interrupt in the leader fails its group and ends its lead: the next caller leads
    and appends."""
    with _open(tmp_path / "l.db", signer) as ledger:
        thread = ledger.create_thread("t")
        queue = queue_for(ledger)
        assert queue is not None

        def interrupted(group: list[_Request], engine: object = None) -> None:
            for member in group:
                member.error = KeyboardInterrupt()
            raise KeyboardInterrupt

        with monkeypatch.context() as patch:
            patch.setattr(queue, "_lead", interrupted)
            with pytest.raises(KeyboardInterrupt):
                thread.append(*turn("lost"))
        assert not queue._leading and not queue._queue
        assert thread.append(*turn("after")).seq == 0
        assert [e.body["text"] for e in thread.entries()] == ["after"]


def test_a_leader_waits_only_for_writers_still_running(tmp_path: Path, signer: Signer) -> None:
    """The leader gathers for the writers of the last two groups, but not for one whose
    thread has ended: a burst of writers ends one by one, and the last ones do not wait for
    the first."""
    with _open(tmp_path / "g.db", signer) as ledger:
        queue = queue_for(ledger)
        assert queue is not None
        ended = threading.Thread(target=lambda: None)
        ended.start()
        ended.join()
        hold = threading.Event()
        running = threading.Thread(target=hold.wait)
        running.start()
        waits: list[float] = []

        def wait(timeout: float | None = None) -> bool:
            waits.append(0.0 if timeout is None else timeout)
            return False

        try:
            queue._commit_s = 1.0
            queue._queued.wait = wait  # type: ignore[method-assign]
            queue._queue = [_Request("t", [turn("mine")], 0, worker=threading.current_thread())]
            queue._writers = (frozenset({ended}), frozenset({threading.current_thread()}))
            with queue._lock:
                queue._gather()
            assert waits == []  # the ended writer is not waited for
            queue._writers = (frozenset({running}), frozenset({threading.current_thread()}))
            with queue._lock:
                queue._gather()
            assert waits  # the running one is, a little
        finally:
            hold.set()
            running.join()
            queue._queue = []
            del queue._queued.wait
