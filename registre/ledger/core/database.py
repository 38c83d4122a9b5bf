"""An open ledger database: its engine, its operator key, the verifier keys it trusts.

:class:`Database` is what every part of the ledger below the :class:`~registre.ledger.ledger.Ledger`
facade works with: the thread core and its wings take one, never the facade, so nothing below
the facade needs to know how threads are created or listed. Without a signer the database is
read-only: reads, proofs and stored checkpoints work; appends and new checkpoints raise
NoSignerError.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from types import TracebackType
from typing import Self

from sqlalchemy import Engine, func, select

from registre.attest.notes import Signer, Verifier
from registre.ledger.core.tool_calls import ToolCallCache
from registre.ledger.errors import NoSignerError
from registre.ledger.store.engine import read_transaction
from registre.ledger.store.lifecycle_cache import LifecycleCache
from registre.ledger.store.schema import tables

__all__ = ["Database", "ThreadSummary", "utc_now"]

_public_key = tables.public_key
_thread = tables.thread


@dataclass(frozen=True)
class ThreadSummary:
    """A thread as listed: its ``id``, ``origin`` (``LOGNAME/id``) and ``size`` (entries)."""

    id: str
    origin: str
    size: int


class Database:
    """An open ledger database. ``lifecycle`` is the writer's cache of per-thread lifecycle
    folds (:mod:`registre.ledger.store.lifecycle_cache`), ``tool_calls`` the call keys a
    ``tool.result`` is checked against (:mod:`registre.ledger.core.tool_calls`); close with
    :meth:`close` or ``with``."""

    def __init__(self, engine: Engine, signer: Signer | None, trusted: Sequence[Verifier]):
        self.engine = engine
        self.signer = signer
        self._trusted = list(trusted)
        self._stored_keys: list[Verifier] | None = None
        self.lifecycle = LifecycleCache()
        self.tool_calls = ToolCallCache()

    def close(self) -> None:
        """Release the database connections."""
        self.engine.dispose()

    def __enter__(self) -> Self:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    def require_signer(self) -> Signer:
        """The operator key, or NoSignerError if the ledger was opened without one."""
        if self.signer is None:
            raise NoSignerError(
                "this needs the operator key, and the ledger was opened without one"
            ).with_hint(
                "pass --key-file (or REGISTRE_KEY; an encrypted key also needs "
                "REGISTRE_KEY_PASSPHRASE), or run `registre init` to create one"
            )
        return self.signer

    def keys(self) -> list[Verifier]:
        """Verifier keys entries are checked against: the stored ones (read once), the
        ``trusted`` keys given when opening, and the signer's."""
        if self._stored_keys is None:
            self._stored_keys = self.stored_keys()
        keys = [*self._stored_keys, *self._trusted]
        if self.signer is not None:
            keys.append(self.signer.verifier())
        return keys

    def stored_keys(self) -> list[Verifier]:
        """The verifier keys recorded in the database. They are informational: whoever can
        write the database can add one, so an auditor pins the keys to trust instead."""
        with read_transaction(self.engine) as conn:
            rows = conn.execute(select(_public_key.c.vkey).order_by(_public_key.c.added))
            return [Verifier.from_vkey(str(vkey)) for vkey in rows.scalars()]

    def thread_page(
        self, *, after: str | None = None, limit: int | None = None
    ) -> tuple[list[ThreadSummary], str | None]:
        """One page of threads in id order: those whose id sorts after ``after`` (all when
        None), at most ``limit`` of them (all when None), each with its size; and the cursor
        of the next page -- the last id listed, or None when no thread follows. One indexed
        query, whatever the number of threads; pages do not overlap or skip a thread that
        existed while they were read (threads are never deleted, and ids never change)."""
        if limit is not None and limit < 1:
            raise ValueError("a page holds at least one thread")
        query = select(_thread.c.id, _thread.c.origin, _thread.c.size).order_by(_thread.c.id)
        if after is not None:
            query = query.where(_thread.c.id > after)
        if limit is not None:
            query = query.limit(limit + 1)
        with read_transaction(self.engine) as conn:
            rows = conn.execute(query).all()
        page = [ThreadSummary(str(r.id), str(r.origin), int(r.size)) for r in rows[:limit]]
        more = limit is not None and len(rows) > limit
        return page, page[-1].id if more else None

    def entry_count(self, threads: Sequence[str] | None = None) -> int:
        """The number of entries of ``threads`` (every thread when None; unknown ids count
        nothing), from the thread heads: one query."""
        query = select(func.coalesce(func.sum(_thread.c.size), 0))
        with read_transaction(self.engine) as conn:
            if threads is None:
                return int(conn.execute(query).scalar_one())
            wanted = sorted(set(threads))
            return sum(
                int(conn.execute(query.where(_thread.c.id.in_(wanted[i : i + 500]))).scalar_one())
                for i in range(0, len(wanted), 500)
            )

    def thread_ids(self) -> list[str]:
        """Every thread id, in order."""
        with read_transaction(self.engine) as conn:
            ids = conn.execute(select(tables.thread.c.id).order_by(tables.thread.c.id))
            return [str(thread_id) for thread_id in ids.scalars()]


def utc_now() -> str:
    """The current time as stored in the database's ``created``/``added`` columns."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
