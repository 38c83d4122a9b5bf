"""ledger: persistence and the thread API on top of attest and lifecycle.

``Ledger.open(url, signer)`` opens a SQLite file or a PostgreSQL URL; ``registre.ledger.thread(id)``
gives a :class:`Thread` that appends signed entries, records lifecycle decisions, projects
and compacts the working context, checkpoints and proves. ``export_thread`` and
``export_claim`` write audit bundles. The names are loaded on first use, so importing a
submodule does not import the whole package.
"""

from __future__ import annotations

from importlib import import_module
from typing import Any

__all__ = ["Ledger", "Thread", "export_claim", "export_thread", "verify_database"]

_HOMES = {
    "Ledger": "registre.ledger.ledger",
    "Thread": "registre.ledger.thread",
    "export_claim": "registre.ledger.exchange.export",
    "export_thread": "registre.ledger.exchange.export",
    "verify_database": "registre.ledger.verify.database",
}


def __getattr__(name: str) -> Any:
    home = _HOMES.get(name)
    if home is None:
        raise AttributeError(f"module 'registre.ledger' has no attribute {name!r}")
    return getattr(import_module(home), name)
