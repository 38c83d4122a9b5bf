"""Step 8 of ``registre verify --db`` for one thread (module docstring of
:mod:`registre.ledger.verify.database`): every stored checkpoint verifies and states a root the
entries give (:func:`check_checkpoints`), and the thread is not behind the head recorded
outside the database (:func:`check_published`, a rollback).
"""

from __future__ import annotations

from collections.abc import Iterable

from sqlalchemy import Connection, bindparam, select

from registre.attest.notes import Verifier, open_checkpoint
from registre.attest.tree import root_at
from registre.errors import RegistreError
from registre.ledger.store.nodes import StoredHashSource
from registre.ledger.store.published import PublishedHead, published_problem, record_problem
from registre.ledger.store.schema import tables
from registre.ledger.verify.entries import blob
from registre.ledger.verify.errors import (
    CheckpointMismatchError,
    RecordRolledBackError,
    RolledBackError,
)

__all__ = ["check_checkpoints", "check_published"]

_checkpoint = tables.checkpoint
_CHECKPOINTS = (
    select(_checkpoint.c.size, _checkpoint.c.root, _checkpoint.c.note)
    .where(_checkpoint.c.thread == bindparam("thread"), _checkpoint.c.size > bindparam("after"))
    .order_by(_checkpoint.c.size)
    .limit(bindparam("batch"))
)


def check_published(
    conn: Connection,
    thread: str,
    size: int,
    published: PublishedHead | None,
    *,
    record: bool = True,
) -> None:
    """The thread (verified, of ``size`` entries) is not behind the checkpoint recorded outside
    the database (RolledBackError: a rollback), and, when ``record``, that record is there for
    every checkpoint the database holds (RecordRolledBackError: the record deleted or rolled
    back; ``registre reanchor`` asks for ``record=False``, since it writes that record)."""
    missing = record_problem(conn, thread, published) if record else None
    if missing is not None:
        raise RecordRolledBackError(thread, None, missing)
    if published is None:
        return
    at = None
    if published.size <= size:
        at = root_at(StoredHashSource(conn, thread, size), published.size)
    problem = published_problem(published, size, at)
    if problem is not None:
        raise RolledBackError(thread, None, problem)


def check_checkpoints(
    conn: Connection, thread: str, origin: str, size: int, log_keys: list[Verifier], batch: int
) -> int:
    """Step 8: every stored checkpoint of ``thread`` (read ``batch`` at a time) verifies under
    one of ``log_keys`` for ``origin``, states its row's size and root, and that root is the
    one the entries give; the number of checkpoints. CheckpointMismatchError otherwise."""
    source = StoredHashSource(conn, thread, size)  # its hashes were all checked in step 6
    count = 0
    after = -1
    while True:
        rows = conn.execute(_CHECKPOINTS, {"thread": thread, "after": after, "batch": batch}).all()
        if not rows:
            return count
        for row in rows:
            if type(row.size) is not int or not isinstance(row.note, str):
                raise CheckpointMismatchError(
                    thread, None, "a stored checkpoint row has a size or note of the wrong type"
                )
            after = row.size
            root = blob(row.root, thread, None, f"root of the checkpoint at size {after}")
            _check_checkpoint(thread, origin, size, log_keys, source, after, root, row.note)
            count += 1


def _check_checkpoint(
    thread: str,
    origin: str,
    size: int,
    log_keys: Iterable[Verifier],
    source: StoredHashSource,
    at: int,
    root: bytes,
    note: str,
) -> None:
    if at > size:
        raise CheckpointMismatchError(thread, at, f"checkpoint beyond the head size {size}")
    failure: RegistreError | None = None
    for key in log_keys:
        try:
            checkpoint = open_checkpoint(note, key, origin=origin).checkpoint
            break
        except RegistreError as exc:
            failure = exc
    else:
        raise CheckpointMismatchError(
            thread, None, f"checkpoint at size {at} does not verify: {failure}"
        ) from failure
    if checkpoint.size != at or checkpoint.root != root:
        raise CheckpointMismatchError(
            thread,
            None,
            f"checkpoint stored at size {at} states size {checkpoint.size}"
            " or a root other than its row's",
        )
    if root_at(source, at) != root:
        raise CheckpointMismatchError(
            thread, None, f"signed checkpoint at size {at} has a root the entries do not give"
        )
