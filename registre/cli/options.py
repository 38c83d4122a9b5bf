"""What the command modules share: options, opening the ledger, reading bodies, refusals.

Every helper that more than one command module uses lives here, so no command module imports
another.

* ``--db [URL|PATH]`` (env ``REGISTRE_DB``): the database. Default ``.registre/registre.db``
  under the current directory. A value without ``://`` is a SQLite file path. The value may
  be left out (``registre verify --db``), which means the default.
* ``--lock-timeout SECONDS`` (env ``REGISTRE_LOCK_TIMEOUT``): how long a write waits for
  another writer's lock before it gives up with exit code 3 (default 60); after a second of
  waiting it says what it waits for.
* ``--key-file PATH`` (env ``REGISTRE_KEY``): the operator key file, default
  ``.registre/operator.key``. Its passphrase, if it has one, comes from the environment
  variable ``REGISTRE_KEY_PASSPHRASE`` (never from the command line, where it would show up
  in process lists and shell history).

Commands that only read use the key if it is there; commands that write need it.

* ``--actor`` (:func:`actor_option`): who acts, recorded in the entry.
* :func:`read_body`: the JSON of a ``--body`` (or ``--policy``, ``--replacement``): inline,
  ``@FILE`` or ``-`` for stdin, read strictly; errors name the option typed.
* :func:`read_text`: a long ``--text``: inline, ``@FILE`` or ``-`` (``@@`` for a literal ``@``).
* :func:`refusal` and :func:`report_batch`: the error for a request the rules refused (the
  refusal is on the ledger), and the report of a batch.
* :func:`witness_endpoints` and :func:`echo_witness_checks`: the ``--witness VKEY@URL``
  witnesses asked by ``verify --db`` and ``reanchor``, and one line per answer.
"""

from __future__ import annotations

import base64
import json
import math
import os
import sys
import warnings
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeVar

import click

from registre.attest.canonical_json import parse_strict
from registre.attest.entries import MAX_BODY_BYTES
from registre.attest.errors import BadKeyError
from registre.attest.notes import KeyPassphraseError, LegacyKeyFileWarning, Signer
from registre.errors import MalformedError, RefusedError
from registre.ledger import (
    LOCK_TIMEOUT_S,
    BatchResult,
    Ledger,
    LifecycleRefusedError,
    StoredCheckpoint,
    Thread,
    database_url,
    lock_policy,
)

if TYPE_CHECKING:
    from registre.ledger import WitnessCheck
    from registre.witness.client import WitnessEndpoint

__all__ = [
    "ACTOR_HELP",
    "DB_ENV",
    "DEFAULT_DB_FILE",
    "DEFAULT_HOME",
    "DEFAULT_KEY_FILE",
    "DEFAULT_LOG_NAME",
    "KEY_ENV",
    "KEY_PASSPHRASE_ENV",
    "LOCK_TIMEOUT_ENV",
    "MAX_BODY_INPUT",
    "MAX_LOCK_TIMEOUT_S",
    "BodyInputError",
    "DryRunRefusedError",
    "NoCheckpointError",
    "RecordedRefusalError",
    "actor_option",
    "b64",
    "db_option",
    "dry_run_option",
    "echo_json",
    "echo_witness_checks",
    "json_option",
    "key_file_option",
    "key_passphrase",
    "ledger_options",
    "load_signer",
    "open_ledger",
    "preview",
    "read_body",
    "read_input",
    "read_text",
    "refusal",
    "report_batch",
    "resolve_db",
    "resolve_key_file",
    "stored_checkpoint",
    "witness_endpoints",
]

DEFAULT_HOME = Path(".registre")
DEFAULT_DB_FILE = DEFAULT_HOME / "registre.db"
DEFAULT_KEY_FILE = DEFAULT_HOME / "operator.key"
DEFAULT_LOG_NAME = "registre.local/log"
KEY_PASSPHRASE_ENV = "REGISTRE_KEY_PASSPHRASE"
DB_ENV = "REGISTRE_DB"
KEY_ENV = "REGISTRE_KEY"
LOCK_TIMEOUT_ENV = "REGISTRE_LOCK_TIMEOUT"
MAX_LOCK_TIMEOUT_S = 86_400.0
ACTOR_HELP = "Who acts."
MAX_BODY_INPUT = 2 * MAX_BODY_BYTES  # room for whitespace; the schema caps the body itself

F = TypeVar("F", bound=Callable[..., Any])

_db_value_option = click.option(
    "--db",
    "db",
    envvar=DB_ENV,
    is_flag=False,
    flag_value="",
    default=None,
    metavar="[URL|PATH]",
    help=f"Ledger database (env REGISTRE_DB; default {DEFAULT_DB_FILE}).",
)


def _notice(text: str) -> None:
    click.echo(f"registre: {text}", err=True)


def _set_lock_timeout(_ctx: click.Context, _param: click.Parameter, value: float | None) -> None:
    lock_policy.on_wait = _notice  # a person waiting for a lock is told what for
    if value is None:
        return
    if not math.isfinite(value) or value < 0 or value > MAX_LOCK_TIMEOUT_S:
        raise click.BadParameter(
            f"{value:g} is not a number of seconds from 0 to {MAX_LOCK_TIMEOUT_S:g}"
        )
    lock_policy.timeout = value


_lock_timeout_option = click.option(
    "--lock-timeout",
    envvar=LOCK_TIMEOUT_ENV,
    type=float,
    default=None,
    expose_value=False,
    callback=_set_lock_timeout,
    metavar="SECONDS",
    help=f"Wait at most this long for another writer's lock, then exit 3 "
    f"(env {LOCK_TIMEOUT_ENV}; default {LOCK_TIMEOUT_S:g}).",
)


def db_option(command: F) -> F:
    """Add ``--db`` and ``--lock-timeout`` to a command."""
    return _db_value_option(_lock_timeout_option(command))


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


class NoCheckpointError(RefusedError):
    """A read (a proof, an expansion) at a tree size that has no signed checkpoint yet:
    reads never sign; ``registre checkpoint`` does."""


def stored_checkpoint(thread: Thread, size: int) -> StoredCheckpoint:
    """The stored signed checkpoint of ``thread`` at ``size``, read only (never signed here).
    Raises NoCheckpointError naming the command that signs one."""
    for stored in thread.checkpoints():
        if stored.size == size:
            return stored
    raise NoCheckpointError(
        f"thread {thread.id} has no signed checkpoint at size {size}"
    ).with_hint(f"sign one with `registre checkpoint {thread.id} --size {size}`, then retry")


# --- bodies --------------------------------------------------------------------------------


class BodyInputError(MalformedError):
    """A --body argument that cannot be read: missing file, too large, not strict JSON
    (the parser's own error is chained as the cause)."""


def read_body(value: str, option: str = "--body") -> object:
    """The JSON value of a ``--body`` (or the ``option`` named): inline JSON, ``@path`` for a
    file, ``-`` for stdin.

    Read strictly: duplicate keys, NaN, lone surrogates, ... are refused. Raises
    BodyInputError, naming the option and where the body came from and what is wrong.
    """
    data, where = read_input(value, option, MAX_BODY_INPUT)
    try:
        return parse_strict(data)
    except MalformedError as exc:
        raise BodyInputError(f"{where} is not strict JSON: {exc}") from exc


def read_input(value: str, option: str, limit: int) -> tuple[bytes, str]:
    """The bytes of an option's value -- inline, ``@path`` for a file, ``-`` for standard
    input -- and how to name where they came from. BodyInputError for an unreadable file or
    more than ``limit`` bytes."""
    if value == "-":
        data = sys.stdin.buffer.read(limit + 1)
        where = f"{option} (standard input)"
    elif value.startswith("@"):
        path = value[1:]
        where = f"{option} file {path}"
        try:
            with open(path, "rb") as handle:
                data = handle.read(limit + 1)
        except OSError as exc:
            raise BodyInputError(f"cannot read {where}: {exc.strerror}") from None
    else:
        data = value.encode("utf-8", "surrogatepass")
        where = option
    if len(data) > limit:
        raise BodyInputError(f"{where} is larger than {limit} bytes")
    return data, where


def read_text(value: str, option: str) -> str:
    """An option's text: inline, ``@path`` for a file (UTF-8), ``-`` for standard input; a
    value starting with ``@@`` is the literal text starting with ``@``. BodyInputError for an
    unreadable file, invalid UTF-8 or more than :data:`MAX_BODY_INPUT` bytes."""
    if value.startswith("@@"):
        return value[1:]
    if not (value == "-" or value.startswith("@")):
        return value
    data, where = read_input(value, option, MAX_BODY_INPUT)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BodyInputError(f"{where} is not UTF-8 text (at byte {exc.start})") from None


# --- output for scripts ------------------------------------------------------------------

json_option = click.option(
    "--json", "as_json", is_flag=True, help="Print the result as one JSON line (specs/cli.md)."
)


def echo_json(value: object) -> None:
    """Print ``value`` as one line of JSON (UTF-8, keys in the order given)."""
    click.echo(json.dumps(value, ensure_ascii=False, separators=(",", ":")))


def b64(data: bytes) -> str:
    """Standard base64, as every hash and root is printed."""
    return base64.b64encode(data).decode("ascii")


# --- dry runs ------------------------------------------------------------------------------

dry_run_option = click.option(
    "--dry-run",
    is_flag=True,
    help="Decide the request against THREAD's state and print the outcome; record nothing.",
)


class DryRunRefusedError(RefusedError):
    """A request that ``--dry-run`` shows the rules would refuse; nothing was recorded."""


def preview(
    db: str | None, key_file: Path | None, thread_id: str, kind: str, value: object, path: str
) -> None:
    """``--dry-run``: decide the lifecycle request ``kind``/``value`` as the real command would,
    at THREAD's head, and print ``dry run: <outcome JSON>`` -- writing nothing (no entry, no
    key). Raises DryRunRefusedError when the rules would refuse it (exit 2)."""
    from registre.ledger import check_pin_source
    from registre.lifecycle import decide, normalize_request, outcome_to_json, parse_request

    request = normalize_request(parse_request(kind, value, path))
    signer = load_signer(key_file, required=False)
    with Ledger.open(resolve_db(db), None, create=False) as ledger:
        thread = ledger.thread(thread_id)
        size = thread.head().size
        if signer is not None and not thread.origin.startswith(f"{signer.name}/"):
            raise RefusedError(f"thread {thread_id} belongs to another log than the key's")
        check_pin_source(request, size)
        outcome = outcome_to_json(decide(thread.lifecycle_state(), request))
    click.echo(f"dry run (nothing recorded): {json.dumps(outcome, ensure_ascii=False)}")
    results = outcome.get("results")
    items = results if isinstance(results, list) else [outcome]
    refused = [item for item in items if isinstance(item, dict) and not item.get("accepted")]
    if refused:
        first = refused[0]
        raise DryRunRefusedError(
            f"the rules would refuse {kind} ({first.get('reason')}): {first.get('message')}"
        ).with_hint("without --dry-run the refusal is recorded as a signed entry")


# --- refusals ------------------------------------------------------------------------------


class RecordedRefusalError(RefusedError):
    """A request (or batch items) the rules refused; the refusal is on the ledger."""


def refusal(exc: LifecycleRefusedError) -> RecordedRefusalError:
    """The CLI's error for a refused single request, naming the seq; keeps the hint."""
    error = RecordedRefusalError(f"{exc} (refused {exc.reason}; recorded as seq {exc.seq})")
    error.with_hint(exc.hint)
    return error


def report_batch(result: BatchResult, what: str, *, as_json: bool = False) -> None:
    """Print one line per item of a batch (or, ``as_json``, one JSON object: ``{"seq",
    "results": [{"index", "accepted", "id" | "reason"}]}``); raise RecordedRefusalError if
    any was rejected."""
    accepted = iter(result.accepted)
    rejected = dict(result.rejected)
    rows: list[dict[str, object]] = []
    for index in range(len(result.outcome.results)):
        if index in rejected:
            item = rejected[index]
            rows.append({"index": index, "accepted": False, "reason": item.reason})
            if not as_json:
                click.echo(f"seq {result.seq}\t{what} {index}\trejected\t{item.reason}")
        else:
            item_id = next(accepted)
            rows.append({"index": index, "accepted": True, "id": item_id})
            if not as_json:
                click.echo(f"seq {result.seq}\t{what} {index}\taccepted\t{item_id}")
    if as_json:
        echo_json({"seq": result.seq, "results": rows})
    if rejected:
        first_index, first = result.rejected[0]
        total = len(result.outcome.results)
        raise RecordedRefusalError(
            f"{len(rejected)} of {total} {what}s rejected (recorded as seq {result.seq}); "
            f"{what} {first_index}: {first.message}"
        )


def witness_endpoints(specs: tuple[str, ...], quorum: int | None) -> list[WitnessEndpoint]:
    """The witnesses ``verify --db`` and ``reanchor`` ask (``--witness VKEY@URL``); UsageError
    for a key without a URL or a ``--quorum`` without a witness, WitnessSpecError for a
    malformed one."""
    if quorum is not None and not specs:
        raise click.UsageError("--quorum needs at least one --witness")
    if not specs:
        return []
    from registre.witness.client import WitnessEndpoint

    for spec in specs:
        if "@" not in spec:
            raise click.UsageError(
                f"--witness {spec[:80]!r} is a key alone; name the witness as VKEY@URL: it "
                "is asked what it last cosigned"
            )
    return [WitnessEndpoint.parse(spec) for spec in specs]


def echo_witness_checks(checks: Sequence[WitnessCheck]) -> None:
    """One line per witness's answer about a thread (``registre verify --db --witness``,
    ``registre reanchor``): ``witness ok THREAD: ...`` or ``witness unconfirmed THREAD: ...``."""
    for check in checks:
        word = "witness ok" if check.confirmed else "witness unconfirmed"
        click.echo(f"{word} {check.thread}: {check.detail}")
