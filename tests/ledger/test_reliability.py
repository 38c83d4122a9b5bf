"""THREATS rows 16 and 18 on both engines: concurrent writers and writers killed mid-append.

* 4 processes x 500 appends to one thread: seq 0..1999 exactly once each, every signature
  valid, the root recomputed equal (``verify_database`` checks all of it).
* A writer process killed with SIGKILL at random points, at least 50 times: after each kill
  the database verifies and its head is exactly the last committed append -- everything the
  writer saw acknowledged is there, and at most the one transaction in flight besides.

Writers are forked from the test process (no interpreter start-up per kill), after the
parent has closed its own connections, and open their own ledger.
"""

from __future__ import annotations

import os
import random
import select
import signal
import time
from collections.abc import Callable

import pytest
from sqlalchemy import text

from registre.attest.notes import Signer
from registre.ledger.ledger import Ledger
from registre.ledger.thread import Thread
from registre.ledger.verify.database import verify_database
from tests.ledger.helpers import turn

pytestmark = pytest.mark.slow

WRITERS = 4
APPENDS_EACH = 500
KILLS = 50


def _fork(work: Callable[[int], None]) -> tuple[int, int]:
    """Run ``work(write_fd)`` in a child process; return (pid, read end of its pipe)."""
    read_fd, write_fd = os.pipe()
    pid = os.fork()
    if pid == 0:  # child: never returns into pytest
        os.close(read_fd)
        status = 0
        try:
            work(write_fd)
        except BaseException:
            status = 1
        finally:
            os._exit(status)
    os.close(write_fd)
    return pid, read_fd


def _named_url(db_url: str, name: str) -> str:
    """``db_url`` whose PostgreSQL sessions carry ``application_name`` ``name`` (SQLite: as is)."""
    if not db_url.startswith("postgresql"):
        return db_url
    return f"{db_url}{'&' if '?' in db_url else '?'}application_name={name}"


def _await_sessions_closed(ledger: Ledger, name: str) -> None:
    """Return once no PostgreSQL session named ``name`` is left (SQLite: at once).

    A client killed right after sending COMMIT leaves the message in its server process's
    socket; that process runs it before it sees the connection closed. So the thread's state
    is final only once the killed writer's sessions have ended."""
    if ledger.engine.dialect.name != "postgresql":
        return
    deadline = time.monotonic() + 30
    query = text("SELECT count(*) FROM pg_stat_activity WHERE application_name = :name")
    while True:
        with ledger.engine.connect() as connection:
            if not connection.execute(query, {"name": name}).scalar():
                return
        assert time.monotonic() < deadline, f"the killed writer's session {name} never ended"
        time.sleep(0.01)


def _read_all(fd: int) -> str:
    chunks = []
    while chunk := os.read(fd, 65536):
        chunks.append(chunk)
    os.close(fd)
    return b"".join(chunks).decode()


def test_concurrent_writers_gap_free(db_url: str, signer: Signer, ledger: Ledger) -> None:
    ledger.create_thread("t1")
    ledger.engine.dispose()  # children must not inherit open connections

    def writer(fd: int) -> None:
        with Ledger.open(db_url, signer, create=False) as mine:
            thread = mine.thread("t1")
            for i in range(APPENDS_EACH):
                entry = thread.append(*turn(f"writer {os.getpid()} append {i}"))
                os.write(fd, f"{entry.seq}\n".encode())

    children = [_fork(writer) for _ in range(WRITERS)]
    seen: list[int] = []
    for pid, fd in children:
        seen += [int(line) for line in _read_all(fd).split()]
        assert os.waitpid(pid, 0)[1] == 0
    total = WRITERS * APPENDS_EACH
    assert sorted(seen) == list(range(total))  # each acknowledged seq exactly once, no gap
    (report,) = verify_database(ledger, keys=[signer.verifier()])
    assert report.size == total
    assert ledger.thread("t1").head().root == report.root


def test_writer_killed_mid_append(db_url: str, signer: Signer, ledger: Ledger) -> None:
    thread: Thread = ledger.create_thread("t1")
    rng = random.Random(1618)
    acknowledged = 0
    interrupted = 0  # kills that landed with a transaction begun and not acknowledged
    for kill in range(KILLS):
        ledger.engine.dispose()
        batch_sizes = [rng.choice([1, 1, 1, 2, 7, 25]) for _ in range(1000)]

        name = f"registre-killed-writer-{os.getpid()}-{kill}"

        def writer(
            fd: int, batch_sizes: list[int] = batch_sizes, kill: int = kill, name: str = name
        ) -> None:
            with Ledger.open(_named_url(db_url, name), signer, create=False) as mine:
                target = mine.thread("t1")
                for number, size in enumerate(batch_sizes):
                    os.write(fd, f"begin {size}\n".encode())
                    items = [turn(f"kill {kill} batch {number} item {i}") for i in range(size)]
                    last = target.append_many(items)[-1]
                    os.write(fd, f"ack {last.seq + 1}\n".encode())

        pid, fd = _fork(writer)
        ready, _, _ = select.select([fd], [], [], 30)
        assert ready, "writer did not start"
        time.sleep(rng.uniform(0, 0.03))
        os.kill(pid, signal.SIGKILL)
        _, status = os.waitpid(pid, 0)
        assert os.WIFSIGNALED(status), "the writer must have been killed, not finished"
        _await_sessions_closed(ledger, name)
        messages = _read_all(fd).split("\n")
        in_flight = 0
        for message in messages:
            if message.startswith("ack "):
                acknowledged = int(message.split()[1])
                in_flight = 0
            elif message.startswith("begin "):
                in_flight = int(message.split()[1])
        # Acknowledged means durable; the transaction in flight is all there or not at all.
        interrupted += in_flight > 0
        size = thread.head().size
        assert size in {acknowledged, acknowledged + in_flight}, (size, acknowledged, in_flight)
        acknowledged = size
        (report,) = verify_database(ledger, keys=[signer.verifier()])
        assert report.size == size and report.root == thread.head().root
    assert acknowledged > 0
    assert interrupted >= KILLS // 2, "kills should mostly land inside an append"
