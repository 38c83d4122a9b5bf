"""Which parts of registre this install holds: the auditor's or the engineer's.

``pip install registre`` installs the offline verifier alone (``python -m registre.attest
verify``: cryptography and rfc8785, nothing else). The ledger's database stack, the
``registre`` command line and the witness's HTTP are the ``ledger`` extra
(``pip install 'registre[ledger]'``). :func:`require_extra` turns the absence of an extra's
modules into one :class:`MissingExtraError` saying what to install, instead of an
ImportError from deep inside an import.
"""

from __future__ import annotations

import importlib.util
from typing import Final

from registre.errors import UnavailableError

__all__ = ["EXTRAS", "MissingExtraError", "missing_modules", "require_extra"]

EXTRAS: Final = {"ledger": ("click", "sqlmodel", "sqlalchemy", "psycopg", "aiohttp")}
"""The modules each extra brings, by the name they are imported as."""

_VERIFIER = "python -m registre.attest verify BUNDLE.zip --key-file operator.vkey"


class MissingExtraError(UnavailableError):
    """A part of registre whose extra this install lacks (exit 3): the auditor's install
    (``pip install registre``) has the offline verifier only."""


def missing_modules(extra: str) -> list[str]:
    """The modules of ``extra`` (a key of :data:`EXTRAS`) that cannot be imported here."""
    return [name for name in EXTRAS[extra] if importlib.util.find_spec(name) is None]


def require_extra(extra: str, what: str) -> None:
    """Raise MissingExtraError unless every module of ``extra`` can be imported; ``what``
    names what needs it (``the registre command``)."""
    missing = missing_modules(extra)
    if missing:
        hint = f"pip install 'registre[{extra}]'"
        if extra == "ledger":
            hint += f"; to verify a bundle, this install has all it needs: {_VERIFIER}"
        raise MissingExtraError(
            f"{what} needs the '{extra}' extra, which this install lacks "
            f"(no module {', '.join(missing)})"
        ).with_hint(hint)
