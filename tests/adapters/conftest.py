"""Adapter fixtures: the database fixtures of :mod:`tests.db_fixtures` (SQLite and PostgreSQL)."""

from tests.db_fixtures import db_url, ledger, signer, thread

__all__ = ["db_url", "ledger", "signer", "thread"]
