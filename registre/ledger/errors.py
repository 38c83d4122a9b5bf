"""Errors of the ledger store and thread API (subclasses of the attest hierarchy).

Refusals (exit 2) leave the database exactly as it was. :class:`StoreCorruptError` is a
failed check (exit 1): the store holds something its own invariants forbid.
"""

from __future__ import annotations

from registre.errors import RefusedError, VerificationError

__all__ = [
    "EntryNotFoundError",
    "ForeignThreadError",
    "LedgerNotFoundError",
    "NoSignerError",
    "SchemaVersionError",
    "StoreCorruptError",
    "StrayRowError",
    "ThreadExistsError",
    "ThreadKeyError",
    "UnknownThreadError",
    "rebuild_hint",
]


class LedgerNotFoundError(RefusedError):
    """No ledger database at the given place (or one without registre's schema)."""


class SchemaVersionError(RefusedError):
    """A database written by a newer registre, whose schema this version does not know."""


class UnknownThreadError(RefusedError):
    """A thread id that the ledger does not hold."""

    hint = "list threads with `registre thread list`; create one with `registre thread create`"


class ThreadExistsError(RefusedError):
    """Creating a thread whose id is already taken."""


class EntryNotFoundError(RefusedError):
    """A sequence number (or size) outside the thread's current tree."""


class NoSignerError(RefusedError):
    """A write (append, checkpoint) on a ledger opened without the operator key."""


class ForeignThreadError(RefusedError):
    """Appending with a key whose name is not the thread's log name."""


class ThreadKeyError(RefusedError):
    """Signing for a thread with a key other than the one it is bound to (the key that created
    it): same log name, another key. Nothing is written and the key is not stored."""


class StoreCorruptError(VerificationError):
    """A stored row that the store's own invariants forbid (a missing subtree hash, ...)."""

    hint = "run `registre verify --db` to find what else differs"


class StrayRowError(StoreCorruptError):
    """A row stored past a thread's head, where the next append must write: registre never
    writes one (schema version 8 refuses them); nothing was written."""


def rebuild_hint(thread: str) -> str:
    """The advice for derived state (lifecycle tables, context snapshots) that is not the fold
    of the entries: it is a cache, rebuilt from the signed record."""
    return f"run `registre rebuild --thread {thread}` to rebuild it from the entries"
