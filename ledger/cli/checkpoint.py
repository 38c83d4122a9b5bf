"""`registre checkpoint THREAD [--size N]`: sign (or fetch) and print a C2SP checkpoint."""

from __future__ import annotations

from pathlib import Path

import click

from ledger.cli import cli
from ledger.cli.options import ledger_options, open_ledger

__all__ = ["checkpoint_command"]


@cli.command("checkpoint")
@click.argument("thread_id", metavar="THREAD")
@click.option("--size", type=int, default=None, help="Tree size (default: the head).")
@ledger_options
def checkpoint_command(
    thread_id: str, size: int | None, db: str | None, key_file: Path | None
) -> None:
    """Print the signed checkpoint of THREAD, signing and storing it if new."""
    with open_ledger(db, key_file) as ledger:
        stored = ledger.thread(thread_id).checkpoint(size)
    click.echo(stored.note, nl=False)
