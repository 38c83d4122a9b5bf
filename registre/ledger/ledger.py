"""The ledger facade: open a database, create, list and look up its threads.

``Ledger.open(url, signer)`` opens (by default creating) the database at ``url`` --
``sqlite:///path`` or ``postgresql+psycopg://...`` -- brings its schema to the current
version. The signer's verifier key is stored only when it signs something the ledger accepts
(a thread it creates, or the first append to an older unbound thread). Without a signer the
ledger is read-only: reads, proofs and stored checkpoints work; appends and new checkpoints
raise NoSignerError.

Each thread's origin is ``LOGNAME/ID`` where LOGNAME is the name of the key that created it,
and the thread is bound to that key (``thread.vkey``): another key, even with the same name,
cannot append to it or sign its checkpoints (ThreadKeyError).
"""

from __future__ import annotations

from collections.abc import Sequence

from sqlalchemy import bindparam, select
from sqlalchemy.exc import IntegrityError

from registre.attest.entries import check_thread_id
from registre.attest.notes import Signer, Verifier
from registre.attest.tree import empty_root
from registre.ledger.core.append import store_public_key
from registre.ledger.core.database import Database, utc_now
from registre.ledger.errors import ThreadExistsError, UnknownThreadError
from registre.ledger.store.engine import (
    database_url,
    make_engine,
    prepare_schema,
    read_transaction,
    write_transaction,
)
from registre.ledger.store.schema import tables
from registre.ledger.thread import Thread

__all__ = ["Ledger"]

_thread = tables.thread
_THREAD = select(_thread.c.origin).where(_thread.c.id == bindparam("thread"))


class Ledger(Database):
    """An open ledger database and its threads. Use :meth:`open`; close with :meth:`close`
    or ``with``. Keys and the writer's caches are those of :class:`Database`."""

    @classmethod
    def open(
        cls,
        url: str,
        signer: Signer | None = None,
        *,
        create: bool = True,
        trusted: Sequence[Verifier] = (),
    ) -> Ledger:
        """Open the ledger at ``url`` (a URL or a SQLite file path).

        ``create``: make the database and schema if absent (else LedgerNotFoundError).
        ``trusted``: extra verifier keys to accept when reading entries, besides those stored.
        Raises SchemaVersionError for a database written by a newer registre.
        """
        engine = make_engine(database_url(url), create=create)
        try:
            prepare_schema(engine, create=create)
            ledger = cls(engine, signer, trusted)
        except BaseException:
            engine.dispose()
            raise
        return ledger

    def create_thread(self, thread_id: str) -> Thread:
        """Create an empty thread with origin ``SIGNERNAME/thread_id``.

        Raises InvalidThreadIdError, NoSignerError, ThreadExistsError.
        """
        check_thread_id(thread_id)
        signer = self.require_signer()
        origin = f"{signer.name}/{thread_id}"
        try:
            with write_transaction(self.engine) as conn:
                if conn.execute(_THREAD.with_for_update(), {"thread": thread_id}).first():
                    raise ThreadExistsError(f"thread {thread_id!r} already exists")
                conn.execute(
                    _thread.insert().values(
                        id=thread_id,
                        origin=origin,
                        size=0,
                        root=empty_root(),
                        frontier=b"",
                        created=utc_now(),
                        vkey=signer.vkey(),
                    )
                )
                store_public_key(conn, signer.verifier())
        except IntegrityError:
            raise ThreadExistsError(f"thread {thread_id!r} already exists") from None
        return Thread(self, thread_id, origin)

    def threads(self) -> list[Thread]:
        """Every thread, ordered by id."""
        with read_transaction(self.engine) as conn:
            rows = conn.execute(select(_thread.c.id, _thread.c.origin).order_by(_thread.c.id))
            return [Thread(self, str(row.id), str(row.origin)) for row in rows]

    def thread(self, thread_id: str) -> Thread:
        """The thread ``thread_id``; UnknownThreadError if there is none."""
        with read_transaction(self.engine) as conn:
            origin = conn.execute(_THREAD, {"thread": thread_id}).scalar()
        if origin is None:
            raise UnknownThreadError(f"no thread {thread_id!r}")
        return Thread(self, thread_id, str(origin))
