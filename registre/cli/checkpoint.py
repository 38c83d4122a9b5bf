"""`registre checkpoint THREAD [--size N] [--witness VKEY@URL ... [--quorum N]]`: sign (or
fetch) and print a C2SP checkpoint, optionally cosigned by witnesses (specs/witness.md)."""

from __future__ import annotations

import math
from pathlib import Path

import click

from registre.cli.options import b64, echo_json, json_option, ledger_options, open_ledger

__all__ = ["checkpoint_command"]


MAX_TIMEOUT_S = 600.0


def _seconds(value: float) -> float:
    if not math.isfinite(value) or not 0 < value <= MAX_TIMEOUT_S:
        raise click.BadParameter(f"{value:g} is not a number of seconds in (0, {MAX_TIMEOUT_S:g}]")
    return value


@click.command("checkpoint")
@click.argument("thread_id", metavar="THREAD")
@click.option("--size", type=int, default=None, help="Tree size (default: the head).")
@click.option(
    "--witness",
    "witnesses",
    multiple=True,
    metavar="VKEY@URL",
    help="Witness to ask for a cosignature: its verifier key, '@', its URL; repeatable.",
)
@click.option(
    "--quorum",
    type=int,
    default=None,
    help="Cosignatures required (default: every --witness); fewer fails after storing them.",
)
@click.option(
    "--timeout",
    type=float,
    default=10.0,
    show_default=True,
    callback=lambda _ctx, _param, value: _seconds(value),
    help=f"Seconds per request (more than 0, at most {MAX_TIMEOUT_S:g}).",
)
@json_option
@ledger_options
def checkpoint_command(
    thread_id: str,
    size: int | None,
    witnesses: tuple[str, ...],
    quorum: int | None,
    timeout: float,
    as_json: bool,
    db: str | None,
    key_file: Path | None,
) -> None:
    """Print the signed checkpoint of THREAD, signing and storing it if new; with --witness,
    collect and store witness cosignatures first (reported on stderr, one line per witness)."""
    if quorum is not None and not witnesses:
        raise click.UsageError("--quorum needs at least one --witness")
    if not witnesses:
        with open_ledger(db, key_file) as ledger:
            stored = ledger.thread(thread_id).checkpoint(size)
        _print(stored.thread, stored.size, stored.root, stored.note, as_json)
        return
    # The HTTP client (aiohttp) is imported only when witnesses are asked.
    from registre.ledger import witness_checkpoint
    from registre.witness.client import WitnessEndpoint
    from registre.witness.errors import WitnessQuorumError

    endpoints = [WitnessEndpoint.parse(spec) for spec in witnesses]
    with open_ledger(db, key_file) as ledger:
        thread = ledger.thread(thread_id)
        try:
            witnessed = witness_checkpoint(
                thread,
                endpoints,
                len(endpoints) if quorum is None else quorum,
                size=size,
                timeout=timeout,
            )
        except WitnessQuorumError as exc:
            for outcome in getattr(exc.result, "outcomes", []):
                click.echo(outcome.describe(), err=True)
            raise
    for outcome in witnessed.outcomes:
        click.echo(outcome.describe(), err=True)
    stored = witnessed.checkpoint
    _print(thread_id, stored.size, stored.root, stored.note, as_json)


def _print(thread: str, size: int, root: bytes, note: str, as_json: bool) -> None:
    """The signed note, or ``{"thread", "size", "root", "note"}`` with ``--json``."""
    if as_json:
        echo_json({"thread": thread, "size": size, "root": b64(root), "note": note})
    else:
        click.echo(note, nl=False)
