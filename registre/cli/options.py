"""What the command modules share: options, opening the ledger, reading bodies, refusals.

Every helper that more than one command module uses lives here, so no command module imports
another.

* ``--db [URL|PATH]`` (env ``REGISTRE_DB``): the database. Default ``.registre/registre.db``
  under the current directory. A value without ``://`` is a SQLite file path. The value may
  be left out (``registre verify --db``), which means the default.
* ``--key-file PATH`` (env ``REGISTRE_KEY``): the operator key file, default
  ``.registre/operator.key``. Its passphrase, if it has one, comes from the environment
  variable ``REGISTRE_KEY_PASSPHRASE`` (never from the command line, where it would show up
  in process lists and shell history).

Commands that only read use the key if it is there; commands that write need it.

* ``--actor`` (:func:`actor_option`): who acts, recorded in the entry.
* :func:`read_body`: the JSON of a ``--body`` (or ``--policy``, ``--replacement``): inline,
  ``@FILE`` or ``-`` for stdin, read strictly.
* :func:`refusal` and :func:`report_batch`: the error for a request the rules refused (the
  refusal is on the ledger), and the report of a batch.
"""

from __future__ import annotations

import os
import sys
import warnings
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

from registre.attest.bodies import MAX_BODY_BYTES
from registre.attest.canonical import parse_strict
from registre.attest.errors import BadKeyError, MalformedError, RefusedError
from registre.attest.keys import KeyPassphraseError, LegacyKeyFileWarning, Signer
from registre.ledger.ledger import Ledger
from registre.ledger.lifecycle.api import BatchResult, LifecycleRefusedError
from registre.ledger.store.engine import database_url

__all__ = [
    "ACTOR_HELP",
    "DB_ENV",
    "DEFAULT_DB_FILE",
    "DEFAULT_HOME",
    "DEFAULT_KEY_FILE",
    "DEFAULT_LOG_NAME",
    "KEY_ENV",
    "KEY_PASSPHRASE_ENV",
    "MAX_BODY_INPUT",
    "BodyInputError",
    "RecordedRefusalError",
    "actor_option",
    "db_option",
    "key_file_option",
    "key_passphrase",
    "ledger_options",
    "load_signer",
    "open_ledger",
    "read_body",
    "refusal",
    "report_batch",
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
ACTOR_HELP = "Who acts."
MAX_BODY_INPUT = 2 * MAX_BODY_BYTES  # room for whitespace; the schema caps the body itself

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


def actor_option(default: str = "operator", help: str = ACTOR_HELP) -> Callable[[F], F]:
    """The ``--actor`` option (who acts), with its default shown."""

    def add(command: F) -> F:
        return click.option("--actor", default=default, show_default=True, help=help)(command)

    return add


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
    named explicitly must exist. An encrypted key without REGISTRE_KEY_PASSPHRASE is None
    unless ``required`` (commands that only read need no passphrase). A first-format key file
    loads with one ``registre: warning:`` line. Raises BadKeyError for a missing, unreadable,
    corrupted or world-readable key (KeyFilePermissionError: the hint gives the chmod), and
    KeyPassphraseError naming REGISTRE_KEY_PASSPHRASE."""
    path = resolve_key_file(key_file)
    if not path.exists():
        if required or key_file is not None:
            raise BadKeyError(f"no operator key at {path}").with_hint(
                "run `registre init`, or pass --key-file (env REGISTRE_KEY)"
            )
        return None
    passphrase = key_passphrase()
    try:
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always", LegacyKeyFileWarning)
            signer = Signer.load(path, passphrase)
    except KeyPassphraseError as exc:
        if passphrase is None and not required:
            return None  # a read: the key would only add its verifier key
        raise KeyPassphraseError(f"{exc} (from {KEY_PASSPHRASE_ENV})").with_hint(
            f"set {KEY_PASSPHRASE_ENV} to the key file's passphrase"
        ) from None
    for warning in caught:
        if issubclass(warning.category, LegacyKeyFileWarning):
            click.echo(f"registre: warning: {warning.message}", err=True)
    return signer


def open_ledger(db: str | None, key_file: Path | None, *, need_key: bool = False) -> Ledger:
    """Open the existing ledger named by the options (never creates one)."""
    signer = load_signer(key_file, required=need_key)
    return Ledger.open(resolve_db(db), signer, create=False)


# --- bodies --------------------------------------------------------------------------------


class BodyInputError(MalformedError):
    """A --body argument that cannot be read: missing file, too large, not strict JSON
    (the parser's own error is chained as the cause)."""


def read_body(value: str) -> object:
    """The JSON value of a ``--body``: inline JSON, ``@path`` for a file, ``-`` for stdin.

    Read strictly: duplicate keys, NaN, lone surrogates, ... are refused. Raises
    BodyInputError, naming where the body came from and what is wrong.
    """
    if value == "-":
        data = sys.stdin.buffer.read(MAX_BODY_INPUT + 1)
        where = "standard input"
    elif value.startswith("@"):
        where = value[1:]
        try:
            with open(where, "rb") as handle:
                data = handle.read(MAX_BODY_INPUT + 1)
        except OSError as exc:
            raise BodyInputError(f"cannot read body file {where}: {exc.strerror}") from None
    else:
        data = value.encode("utf-8", "surrogatepass")
        where = "--body"
    if len(data) > MAX_BODY_INPUT:
        raise BodyInputError(f"body from {where} is larger than {MAX_BODY_INPUT} bytes")
    try:
        return parse_strict(data)
    except MalformedError as exc:
        raise BodyInputError(f"body from {where} is not strict JSON: {exc}") from exc


# --- refusals ------------------------------------------------------------------------------


class RecordedRefusalError(RefusedError):
    """A request (or batch items) the rules refused; the refusal is on the ledger."""


def refusal(exc: LifecycleRefusedError) -> RecordedRefusalError:
    """The CLI's error for a refused single request, naming the seq; keeps the hint."""
    error = RecordedRefusalError(f"{exc} (refused {exc.reason}; recorded as seq {exc.seq})")
    error.with_hint(exc.hint)
    return error


def report_batch(result: BatchResult, what: str) -> None:
    """Print one line per item of a batch; raise RecordedRefusalError if any was rejected."""
    accepted = iter(result.accepted)
    rejected = dict(result.rejected)
    for index in range(len(result.outcome.results)):
        if index in rejected:
            item = rejected[index]
            click.echo(f"seq {result.seq}\t{what} {index}\trejected\t{item.reason}")
        else:
            click.echo(f"seq {result.seq}\t{what} {index}\taccepted\t{next(accepted)}")
    if rejected:
        first_index, first = result.rejected[0]
        total = len(result.outcome.results)
        raise RecordedRefusalError(
            f"{len(rejected)} of {total} {what}s rejected (recorded as seq {result.seq}); "
            f"{what} {first_index}: {first.message}"
        )
