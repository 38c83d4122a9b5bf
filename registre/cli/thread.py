"""`registre thread create|list|show`."""

from __future__ import annotations

from pathlib import Path

import click

from registre.cli.options import b64, echo_json, json_option, ledger_options, open_ledger

__all__ = ["thread_group"]


@click.group("thread")
def thread_group() -> None:
    """Create and inspect threads."""


@thread_group.command("create")
@click.argument("thread_id", metavar="THREAD")
@json_option
@ledger_options
def create(thread_id: str, as_json: bool, db: str | None, key_file: Path | None) -> None:
    """Create an empty thread; prints its origin (LOGNAME/THREAD)."""
    with open_ledger(db, key_file, need_key=True) as ledger:
        origin = ledger.create_thread(thread_id).origin
    if as_json:
        echo_json({"id": thread_id, "origin": origin})
    else:
        click.echo(origin)


@thread_group.command("list")
@json_option
@ledger_options
def list_threads(as_json: bool, db: str | None, key_file: Path | None) -> None:
    """One line per thread: id, number of entries, origin."""
    with open_ledger(db, key_file) as ledger:
        rows = [(t.id, t.head().size, t.origin) for t in ledger.threads()]
    if as_json:
        echo_json([{"id": i, "size": size, "origin": origin} for i, size, origin in rows])
        return
    for thread_id, size, origin in rows:
        click.echo(f"{thread_id}\t{size}\t{origin}")


@thread_group.command("show")
@click.argument("thread_id", metavar="THREAD")
@json_option
@ledger_options
def show(thread_id: str, as_json: bool, db: str | None, key_file: Path | None) -> None:
    """The thread's origin, size, root and latest checkpoint."""
    with open_ledger(db, key_file) as ledger:
        thread = ledger.thread(thread_id)
        head = thread.head()
        latest = thread.latest_checkpoint()
    if as_json:
        echo_json(
            {
                "id": thread.id,
                "origin": thread.origin,
                "size": head.size,
                "root": b64(head.root),
                "checkpoint": None if latest is None else latest.size,
            }
        )
        return
    click.echo(f"thread: {thread.id}")
    click.echo(f"origin: {thread.origin}")
    click.echo(f"size: {head.size}")
    click.echo(f"root: {b64(head.root)}")
    click.echo(f"checkpoint: {'none' if latest is None else f'size {latest.size}'}")
