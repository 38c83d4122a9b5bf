"""`registre witness init|follow|show|serve`: run a C2SP tlog-witness for registre logs.

State lives in one directory (``--state-dir``, env ``REGISTRE_WITNESS_DIR``, default
``.registre/witness``): ``witness.key`` (the Ed25519 ``cosignature/v1`` key, mode 0600,
encrypted if ``REGISTRE_WITNESS_KEY_PASSPHRASE`` is set) and ``witness.db`` (SQLite; see
:mod:`registre.witness.state`). ``specs/witness.md`` describes the protocol.
"""

from __future__ import annotations

import base64
import logging
import os
import sys
from pathlib import Path

import click

from registre.attest.errors import CheckpointFormatError
from registre.attest.notes import Checkpoint, CosignatureSigner, Verifier
from registre.attest.tree import empty_root
from registre.witness.errors import WitnessStateError
from registre.witness.state import WitnessState
from registre.witness.witness import Witness

__all__ = ["DEFAULT_STATE_DIR", "STATE_DIR_ENV", "WITNESS_PASSPHRASE_ENV", "witness_group"]

DEFAULT_STATE_DIR = Path(".registre") / "witness"
STATE_DIR_ENV = "REGISTRE_WITNESS_DIR"
WITNESS_PASSPHRASE_ENV = "REGISTRE_WITNESS_KEY_PASSPHRASE"
DEFAULT_WITNESS_NAME = "registre.local/witness"
KEY_FILE = "witness.key"
STATE_FILE = "witness.db"

state_dir_option = click.option(
    "--state-dir",
    envvar=STATE_DIR_ENV,
    default=DEFAULT_STATE_DIR,
    show_default=True,
    type=click.Path(file_okay=False, path_type=Path),
    help="Witness state directory (env REGISTRE_WITNESS_DIR).",
)


def _passphrase() -> bytes | None:
    value = os.environ.get(WITNESS_PASSPHRASE_ENV)
    return value.encode("utf-8") if value else None


def _open(state_dir: Path, *, read_only: bool = False) -> tuple[CosignatureSigner, WitnessState]:
    """The witness key and state; the state opened read-only for commands that only read
    (they work on read-only media), else checked writable first (WitnessStateError, exit 2)."""
    key_path = state_dir / KEY_FILE
    if not key_path.exists():
        raise WitnessStateError(f"no witness key at {key_path}").with_hint(
            "run `registre witness init` (or pass --state-dir)"
        )
    signer = CosignatureSigner.load(key_path, _passphrase())
    return signer, WitnessState.open(state_dir / STATE_FILE, read_only=read_only)


@click.group("witness")
def witness_group() -> None:
    """Run a witness: cosign checkpoints of followed logs after checking consistency."""


@witness_group.command("init")
@state_dir_option
@click.option(
    "--name",
    default=DEFAULT_WITNESS_NAME,
    show_default=True,
    help="Witness name, the name of its cosigner key (e.g. witness.example.com/w1).",
)
def init_command(state_dir: Path, name: str) -> None:
    """Create the witness's cosigner key and its state file."""
    key_path, state_path = state_dir / KEY_FILE, state_dir / STATE_FILE
    for path in (key_path, state_path):
        if path.exists():
            raise WitnessStateError(
                f"{path} exists: this directory already holds a witness"
            ).with_hint("see `registre witness show`; choose another --state-dir")
    signer = CosignatureSigner.generate(name)  # checks the name first
    state_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    WitnessState.create(state_path).close()
    signer.save(key_path, _passphrase())
    click.echo(f"witness state: {state_dir}")
    click.echo(f"cosigner key (logs and verifiers pin this): {signer.vkey()}")


@witness_group.command("follow")
@state_dir_option
@click.argument("vkey")
@click.option(
    "--origin-prefix",
    default=None,
    help="Origins this log key signs for: every origin PREFIX + something (default: the "
    "key's name and '/', i.e. every thread of a registre log).",
)
def follow_command(state_dir: Path, vkey: str, origin_prefix: str | None) -> None:
    """Follow the log whose verifier key is VKEY (NAME+KEYID+BASE64)."""
    verifier = Verifier.from_vkey(vkey)
    prefix = origin_prefix if origin_prefix is not None else f"{verifier.name}/"
    try:
        Checkpoint(prefix, 0, empty_root())  # an origin prefix follows the origin rules
    except CheckpointFormatError as exc:
        raise click.BadParameter(str(exc), param_hint="--origin-prefix") from None
    _signer, state = _open(state_dir)
    try:
        added = state.follow(verifier.vkey(), prefix)
    finally:
        state.close()
    verb = "now follows" if added else "already follows"
    click.echo(f"witness {verb} {verifier.vkey()} for origins {prefix}*")


@witness_group.command("show")
@state_dir_option
@click.option(
    "--origin",
    default=None,
    help="Print every checkpoint cosigned for ORIGIN (note and cosignature), oldest first.",
)
def show_command(state_dir: Path, origin: str | None) -> None:
    """Print the cosigner key, the logs followed and the latest checkpoint of each origin."""
    signer, state = _open(state_dir, read_only=True)
    try:
        if origin is not None:
            for record in state.history(origin):
                click.echo(f"# size {record.size}, cosigned at {record.timestamp}")
                click.echo(record.note + record.cosignature, nl=False)
            for evidence in state.evidence(origin):
                click.echo(f"# REFUSED ({evidence.kind}) size {evidence.size}: {evidence.reason}")
                click.echo(evidence.note, nl=False)
            return
        click.echo(f"witness: {signer.name}")
        click.echo(f"cosigner key: {signer.vkey()}")
        followed = state.followed()
        if not followed:
            click.echo("follows: nothing yet (add a log with `registre witness follow VKEY`)")
        for log in followed:
            click.echo(f"follows: {log.vkey} for origins {log.origin_prefix}*")
        for latest in state.origins():
            root = base64.b64encode(latest.root).decode("ascii")
            click.echo(f"origin {latest.origin}: size {latest.size}, root {root}")
        refused = state.evidence()
        for kind, meaning in (
            ("split-view", "another root at a held size"),
            ("bad-proof", "a consistency proof that did not verify"),
        ):
            count = sum(1 for e in refused if e.kind == kind)
            if count:
                click.echo(f"refused, log-signed: {count} checkpoint(s) with {meaning} ({kind})")
    finally:
        state.close()


@witness_group.command("serve")
@state_dir_option
@click.option(
    "--listen",
    default="127.0.0.1:7380",
    show_default=True,
    help="HOST:PORT to listen on (port 0: any free port, printed at start).",
)
@click.option("--workers", default=4, show_default=True, type=click.IntRange(1, 64))
def serve_command(state_dir: Path, listen: str, workers: int) -> None:
    """Serve C2SP tlog-witness POST /add-checkpoint until SIGTERM or SIGINT."""
    # The HTTP stack (aiohttp) is imported only by the command that serves.
    from registre.witness.server import ACCESS_LOGGER, parse_listen, serve

    try:
        host, port = parse_listen(listen)
    except ValueError as exc:
        raise click.BadParameter(str(exc), param_hint="--listen") from None
    signer, state = _open(state_dir)
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("%(asctime)s witness %(message)s"))
    ACCESS_LOGGER.addHandler(handler)
    ACCESS_LOGGER.setLevel(logging.INFO)
    ACCESS_LOGGER.propagate = False

    def announce(url: str) -> None:
        click.echo(f"witness {signer.name} listening on {url}")
        click.echo(f"cosigner key: {signer.vkey()}")
        sys.stdout.flush()

    try:
        serve(Witness(signer, state), host, port, announce=announce, workers=workers)
    finally:
        state.close()
        ACCESS_LOGGER.removeHandler(handler)
    click.echo("witness stopped", err=True)
