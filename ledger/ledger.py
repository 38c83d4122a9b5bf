"""A ledger database: its threads, its operator key, its trusted verifier keys.

``Ledger.open(url, signer)`` opens (by default creating) the database at ``url`` --
``sqlite:///path`` or ``postgresql+psycopg://...`` -- brings its schema to the current
version, and registers the signer's verifier key. Without a signer the ledger is read-only:
reads, proofs and stored checkpoints work; appends and new checkpoints raise NoSignerError.

Each thread's origin is ``LOGNAME/ID`` where LOGNAME is the name of the key that created it;
only a key with that name can append to it.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from types import TracebackType

from sqlalchemy import Engine, bindparam, select
from sqlalchemy.exc import IntegrityError

from registre.attest.entry import check_thread_id
from registre.attest.keys import Signer, Verifier
from registre.attest.merkle import empty_root
from registre.ledger.errors import NoSignerError, ThreadExistsError, UnknownThreadError
from registre.ledger.lifecycle.store import LifecycleCache
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
_public_key = tables.public_key
_THREAD = select(_thread.c.origin).where(_thread.c.id == bindparam("thread"))


class Ledger:
    """An open ledger database. Use :meth:`open`; close with :meth:`close` or ``with``."""

    def __init__(self, engine: Engine, signer: Signer | None, trusted: Sequence[Verifier]):
        self.engine = engine
        self.signer = signer
        self._trusted = list(trusted)
        self._stored_keys: list[Verifier] | None = None
        self.lifecycle = LifecycleCache()  # per-thread lifecycle folds (ledger.lifecycle_store)

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
            if signer is not None:
                ledger._register_key(signer.verifier())
        except BaseException:
            engine.dispose()
            raise
        return ledger

    def close(self) -> None:
        """Release the database connections."""
        self.engine.dispose()

    def __enter__(self) -> Ledger:
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()

    # --- keys -------------------------------------------------------------------------

    def require_signer(self) -> Signer:
        """The operator key, or NoSignerError if the ledger was opened without one."""
        if self.signer is None:
            raise NoSignerError(
                "this needs the operator key: pass --key-file (or REGISTRE_KEY), or run "
                "`registre init` to create one"
            )
        return self.signer

    def keys(self) -> list[Verifier]:
        """Verifier keys entries are checked against: the stored ones (read once), the
        ``trusted`` keys given to :meth:`open`, and the signer's."""
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

    def _register_key(self, verifier: Verifier) -> None:
        vkey = verifier.vkey()
        try:
            with write_transaction(self.engine) as conn:
                known = conn.execute(
                    select(_public_key.c.vkey).where(_public_key.c.vkey == vkey)
                ).first()
                if known is None:
                    conn.execute(
                        _public_key.insert().values(
                            vkey=vkey,
                            name=verifier.name,
                            key_id=verifier.key_id.hex(),
                            added=_now(),
                        )
                    )
        except IntegrityError:
            pass  # registered by a concurrent opener (PostgreSQL)

    # --- threads ----------------------------------------------------------------------

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
                        created=_now(),
                    )
                )
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
            raise UnknownThreadError(
                f"no thread {thread_id!r}; list threads with `registre thread list`"
            )
        return Thread(self, thread_id, str(origin))


def _now() -> str:
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
