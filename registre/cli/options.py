"""Options every ledger command shares, and opening the ledger they name.

* ``--db [URL|PATH]`` (env ``REGISTRE_DB``): the database. Default ``.registre/registre.db``
  under the current directory. A value without ``://`` is a SQLite file path. The value may
  be left out (``registre verify --db``), which means the default.
* ``--key-file PATH`` (env ``REGISTRE_KEY``): the operator key file, default
  ``.registre/operator.key``. Its passphrase, if it has one, comes from the environment
  variable ``REGISTRE_KEY_PASSPHRASE`` (never from the command line, where it would show up
  in process lists and shell history).

Commands that only read use the key if it is there; commands that write need it.
"""

from __future__ import annotations

import os
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from registre.attest.errors import BadKeyError
from registre.attest.keys import Signer
from registre.ledger.ledger import Ledger
from registre.ledger.store.engine import database_url

__all__ = [
    "DB_ENV",
    "DEFAULT_DB_FILE",
    "DEFAULT_HOME",
    "DEFAULT_KEY_FILE",
    "DEFAULT_LOG_NAME",
    "KEY_ENV",
    "KEY_PASSPHRASE_ENV",
    "db_option",
    "key_file_option",
    "key_passphrase",
    "ledger_options",
    "load_signer",
    "open_ledger",
    "resolve_db",
    "resolve_key_file",
]

DEFAULT_HOME = Path(".registre")
DEFAULT_DB_FILE = DEFAULT_HOME / "registre.db"
DEFAULT_KEY_FILE = DEFAULT_HOME / "operator.key"
DEFAULT_LOG_NAME = "registre.local/log"
KEY_PASSPHRASE_ENV = "REGISTRE_KEY_PASSPHRASE"
DB_ENV = "REGISTRE_DB"
KEY_ENV = "REGISTRE_KEY"

F = TypeVar("F", bound=Callable[..., Any])

db_option = click.option(
    "--db",
    "db",
    envvar=DB_ENV,
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[URL|PATH]",
    help=f"Ledger database (env REGISTRE_DB; default {DEFAULT_DB_FILE}).",
)
key_file_option = click.option(
    "--key-file",
    "key_file",
    envvar=KEY_ENV,
    default=None,
    type=click.Path(dir_okay=False, path_type=Path),
    help=f"Operator key file (env REGISTRE_KEY; default {DEFAULT_KEY_FILE}).",
)


def ledger_options(command: F) -> F:
    """Add ``--db`` and ``--key-file`` to a command."""
    return db_option(key_file_option(command))


def resolve_db(value: str | None) -> str:
    """The database URL for a ``--db`` value. ``--db`` given without a value means
    REGISTRE_DB if set; no database named at all means the default file."""
    if not value:
        value = os.environ.get(DB_ENV) or None
    return database_url(value if value else DEFAULT_DB_FILE)


def resolve_key_file(value: Path | None) -> Path:
    """The key file for a ``--key-file`` value (None: the default file)."""
    return value if value is not None else DEFAULT_KEY_FILE


def key_passphrase() -> bytes | None:
    """The key file passphrase from REGISTRE_KEY_PASSPHRASE, or None."""
    value = os.environ.get(KEY_PASSPHRASE_ENV)
    return value.encode("utf-8") if value else None


def load_signer(key_file: Path | None, *, required: bool) -> Signer | None:
    """The operator key. A missing default key file is None unless ``required``; a key file
    named explicitly must exist. Raises BadKeyError for a missing or unreadable key."""
    path = resolve_key_file(key_file)
    if not path.exists():
        if required or key_file is not None:
            raise BadKeyError(
                f"no operator key at {path}: run `registre init`, or pass --key-file "
                "(env REGISTRE_KEY)"
            )
        return None
    return Signer.load(path, key_passphrase())


def open_ledger(db: str | None, key_file: Path | None, *, need_key: bool = False) -> Ledger:
    """Open the existing ledger named by the options (never creates one)."""
    signer = load_signer(key_file, required=need_key)
    return Ledger.open(resolve_db(db), signer, create=False)
