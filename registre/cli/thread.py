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
@click.option(
    "--limit",
    type=click.IntRange(min=1),
    default=None,
    help="List at most this many threads (a page); the next page starts --after the last.",
)
@click.option(
    "--after",
    metavar="THREAD",
    default=None,
    help="List the threads whose id sorts after THREAD (the cursor a page ends with).",
)
@json_option
@ledger_options
def list_threads(
    limit: int | None,
    after: str | None,
    as_json: bool,
    db: str | None,
    key_file: Path | None,
) -> None:
    """One line per thread, by id: id, number of entries, origin. With --limit, a page; when
    more threads follow, a last line `next: THREAD` names the cursor for --after (with --json:
    {"threads": [...], "next": THREAD or null})."""
    with open_ledger(db, key_file) as ledger:
        page, cursor = ledger.thread_page(after=after, limit=limit)
    rows = [{"id": t.id, "size": t.size, "origin": t.origin} for t in page]
    if as_json:
        echo_json(rows if limit is None else {"threads": rows, "next": cursor})
        return
    for thread in page:
        click.echo(f"{thread.id}\t{thread.size}\t{thread.origin}")
    if cursor is not None:
        click.echo(f"next: {cursor}")


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
