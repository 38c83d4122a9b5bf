"""`registre log THREAD [--from SEQ] [--to SEQ] [--json]`: list entries, verified as read."""

from __future__ import annotations

import json
from pathlib import Path

import click

from registre.attest.entries import Entry
from registre.cli.files import terminal_text
from registre.cli.options import ledger_options, open_ledger

__all__ = ["log_command"]

SUMMARY_WIDTH = 100


@click.command("log")
@click.argument("thread_id", metavar="THREAD")
@click.option("--from", "first", type=int, default=0, show_default=True, help="First seq.")
@click.option("--to", "last", type=int, default=None, help="Last seq, inclusive (default: head).")
@click.option(
    "--limit", type=click.IntRange(min=0), default=None, help="At most N entries from --from."
)
@click.option(
    "--tail", type=click.IntRange(min=0), default=None, help="Only the last N entries (to --to)."
)
@click.option("--json", "as_json", is_flag=True, help="Print the leaves verbatim, one per line.")
@ledger_options
def log_command(
    thread_id: str,
    first: int,
    last: int | None,
    limit: int | None,
    tail: int | None,
    as_json: bool,
    db: str | None,
    key_file: Path | None,
) -> None:
    """List THREAD's entries (each re-verified against the ledger's keys)."""
    if limit is not None and tail is not None:
        raise click.UsageError("give --limit or --tail, not both")
    with open_ledger(db, key_file) as ledger:
        thread = ledger.thread(thread_id)
        stop = None if last is None else last + 1
        if tail is not None:
            end = thread.head().size if stop is None else stop
            first = max(first, end - tail)
            stop = end
        elif limit is not None:
            end = thread.head().size if stop is None else stop
            stop = min(end, first + limit)
            first = min(first, stop)
        for entry in thread.entries(first, stop):
            click.echo(entry.leaf.decode("utf-8") if as_json else terminal_text(_line(entry)))


def _line(entry: Entry) -> str:
    body = json.dumps(entry.body, ensure_ascii=False, separators=(",", ":"))
    if len(body) > SUMMARY_WIDTH:
        body = body[: SUMMARY_WIDTH - 1] + "…"
    return f"{entry.seq}\t{entry.time}\t{entry.kind}\t{entry.actor}\t{body}"
