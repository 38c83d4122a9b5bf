"""An open ledger database: its engine, its operator key, the verifier keys it trusts.

:class:`Database` is what every part of the ledger below the :class:`~registre.ledger.ledger.Ledger`
facade works with: the thread core and its wings take one, never the facade, so nothing below
the facade needs to know how threads are created or listed. Without a signer the database is
read-only: reads, proofs and stored checkpoints work; appends and new checkpoints raise
NoSignerError.
"""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from types import TracebackType
from typing import Self

from sqlalchemy import Engine, select

from registre.attest.keys import Signer, Verifier
from registre.ledger.errors import NoSignerError
from registre.ledger.store.engine import read_transaction
from registre.ledger.store.lifecycle_cache import LifecycleCache
from registre.ledger.store.schema import tables

__all__ = ["Database", "utc_now"]

_public_key = tables.public_key


class Database:
    """An open ledger database. ``lifecycle`` is the writer's cache of per-thread lifecycle
    folds (:mod:`registre.ledger.store.lifecycle_cache`); close with :meth:`close` or ``with``."""

    def __init__(self, engine: Engine, signer: Signer | None, trusted: Sequence[Verifier]):
        self.engine = engine
        self.signer = signer
        self._trusted = list(trusted)
        self._stored_keys: list[Verifier] | None = None
        self.lifecycle = LifecycleCache()

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

    def thread_ids(self) -> list[str]:
        """Every thread id, in order."""
        with read_transaction(self.engine) as conn:
            ids = conn.execute(select(tables.thread.c.id).order_by(tables.thread.c.id))
            return [str(thread_id) for thread_id in ids.scalars()]


def utc_now() -> str:
    """The current time as stored in the database's ``created``/``added`` columns."""
    return datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")
