"""`registre log THREAD [--from SEQ] [--to SEQ] [--limit N | --tail N] [--width N] [--json]`:
list entries, verified as read.

One line per entry: ``SEQ  TIME  KIND  ACTOR  TEXT`` (tab-separated), the entry's own text
first -- a turn's ``user: ...``, a tool call's name, id and arguments, a lifecycle request and
what the rules made of it -- never the body's import metadata; newlines show as ``⏎`` and the
text is cut only past ``--width`` characters (default 2,000; 0 never cuts), saying how many
more there are. ``--json`` prints the signed leaves verbatim.
"""

from __future__ import annotations

from pathlib import Path

import click

from registre.cli.files import terminal_text
from registre.cli.options import ledger_options, open_ledger
from registre.ledger import LOG_WIDTH, entry_line

__all__ = ["log_command"]


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
@click.option(
    "--width",
    type=click.IntRange(min=0),
    default=LOG_WIDTH,
    show_default=True,
    help="Cut each entry's text past N characters (0: never).",
)
@click.option("--json", "as_json", is_flag=True, help="Print the leaves verbatim, one per line.")
@ledger_options
def log_command(
    thread_id: str,
    first: int,
    last: int | None,
    limit: int | None,
    tail: int | None,
    width: int,
    as_json: bool,
    db: str | None,
    key_file: Path | None,
) -> None:
    """List THREAD's entries, each re-verified against the ledger's keys: one line each,
    its text first."""
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
            click.echo(
                entry.leaf.decode("utf-8") if as_json else terminal_text(entry_line(entry, width))
            )
