"""``registre reanchor``: write again the ``.published`` record of a SQLite database that lost
it, once the database verifies and (unless the operator says otherwise) the witnesses
confirm it is not behind what they cosigned.

A SQLite database holding a signed checkpoint its record does not reach is refused by every
writer (PublishedRecordMissingError) and by ``verify --db`` (RecordRolledBackError): the
record was deleted or rolled back, or the database was moved or restored without it, and the
database alone cannot tell a lost record from a rollback. Re-anchoring is the operator's
explicit decision that this database is the one to keep (``specs/storage.md`` 3.2):

1. **A record to write**: the database is a SQLite file (PostgreSQL and in-memory
   databases keep none: ReanchorRefusedError).
2. **Verify**: :func:`registre.ledger.verify.database.verify_database` over every thread,
   except the one check that the record reaches the stored checkpoints; a thread behind the
   record that exists still fails (RolledBackError): re-anchoring never lowers a record.
3. **Witnesses** (when named): step 14 of ``verify --db``
   (:func:`registre.ledger.verify.witnesses.check_witnesses`): no thread behind or forked
   from what they last cosigned, each confirmed by ``quorum`` of them.
4. **Record**, in a write transaction (serialised with the writers of the record): each
   thread's largest stored checkpoint that goes beyond the record, and one line in the
   record's ``reanchored`` list -- the time, the witnesses that were asked (none: the
   operator re-anchored without them), the sizes -- so the decision stays visible.

Nothing in the database is written.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from sqlalchemy import func, select

from registre.attest.notes import Verifier
from registre.errors import RefusedError
from registre.ledger.core.database import Database, utc_now
from registre.ledger.store.engine import read_transaction, write_transaction
from registre.ledger.store.published import (
    PublishedHead,
    published_file,
    reanchor_published,
)
from registre.ledger.store.schema import tables
from registre.ledger.verify.database import verify_database
from registre.ledger.verify.witnesses import WitnessCheck, check_witnesses
from registre.witness.client import WitnessEndpoint

__all__ = ["ReanchorRefusedError", "Reanchored", "reanchor"]

_thread = tables.thread
_checkpoint = tables.checkpoint
_other = tables.checkpoint.alias("other")
_LARGEST = (
    select(_thread.c.origin, _checkpoint.c.size, _checkpoint.c.root)
    .join(_checkpoint, _checkpoint.c.thread == _thread.c.id)
    .where(
        _checkpoint.c.size
        == select(func.max(_other.c.size))
        .where(_other.c.thread == _checkpoint.c.thread)
        .scalar_subquery()
    )
    .order_by(_thread.c.origin)
)
"""Each thread's largest stored checkpoint: its origin, size and root."""


class ReanchorRefusedError(RefusedError):
    """A database whose record cannot be written again: it keeps none (PostgreSQL, in-memory
    SQLite)."""

    hint = (
        "a PostgreSQL database has no .published record; compare it with the witnesses "
        "instead: `registre verify --db URL --witness VKEY@URL`"
    )


@dataclass(frozen=True)
class Reanchored:
    """What :func:`reanchor` did: the record's path, the heads it recorded (none: the record
    already reached every checkpoint), and each witness's answer (none when none was asked)."""

    path: Path
    recorded: list[PublishedHead]
    checks: list[WitnessCheck]


def reanchor(
    db: Database,
    witnesses: Sequence[WitnessEndpoint],
    quorum: int,
    *,
    keys: Sequence[Verifier] | None = None,
    timeout: float = 10.0,
) -> Reanchored:
    """Steps 1-4 of the module docstring. ``witnesses`` empty: re-anchor without asking any
    (the caller made sure the operator said so). ``keys``: verifier keys to trust (default:
    those stored). Raises ReanchorRefusedError, what ``verify_database`` raises, what
    ``check_witnesses`` raises; nothing is written unless all pass."""
    # 1. a record to write
    with read_transaction(db.engine) as conn:
        path = published_file(conn)
    if path is None:
        raise ReanchorRefusedError("this database keeps no .published record to re-anchor")
    # 2. verify, all but the record
    reports = verify_database(db, keys=keys, published_record=False)
    # 3. the witnesses
    checks: list[WitnessCheck] = []
    if witnesses:
        log_keys = list(keys) if keys is not None else db.stored_keys()
        checks = check_witnesses(db, reports, witnesses, quorum, log_keys, timeout)
    # 4. the record, and the decision noted in it
    with write_transaction(db.engine) as conn:
        found = [
            PublishedHead(str(row.origin), int(row.size), bytes(row.root))
            for row in conn.execute(_LARGEST)
        ]
        names = [witness.name for witness in witnesses]
        recorded = reanchor_published(conn, found, names, utc_now())
    return Reanchored(path, recorded, checks)
