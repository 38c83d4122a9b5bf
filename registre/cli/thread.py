"""`registre thread create|list|show`."""

from __future__ import annotations

import base64
from pathlib import Path

import click

from registre.cli.options import ledger_options, open_ledger

__all__ = ["thread_group"]


@click.group("thread")
def thread_group() -> None:
    """Create and inspect threads."""


@thread_group.command("create")
@click.argument("thread_id", metavar="THREAD")
@ledger_options
def create(thread_id: str, db: str | None, key_file: Path | None) -> None:
    """Create an empty thread; prints its origin (LOGNAME/THREAD)."""
    with open_ledger(db, key_file, need_key=True) as ledger:
        click.echo(ledger.create_thread(thread_id).origin)


@thread_group.command("list")
@ledger_options
def list_threads(db: str | None, key_file: Path | None) -> None:
    """One line per thread: id, number of entries, origin."""
    with open_ledger(db, key_file) as ledger:
        for thread in ledger.threads():
            click.echo(f"{thread.id}\t{thread.head().size}\t{thread.origin}")


@thread_group.command("show")
@click.argument("thread_id", metavar="THREAD")
@ledger_options
def show(thread_id: str, db: str | None, key_file: Path | None) -> None:
    """The thread's origin, size, root and latest checkpoint."""
    with open_ledger(db, key_file) as ledger:
        thread = ledger.thread(thread_id)
        head = thread.head()
        latest = thread.latest_checkpoint()
        click.echo(f"thread: {thread.id}")
        click.echo(f"origin: {thread.origin}")
        click.echo(f"size: {head.size}")
        click.echo(f"root: {base64.b64encode(head.root).decode('ascii')}")
        click.echo(f"checkpoint: {'none' if latest is None else f'size {latest.size}'}")
