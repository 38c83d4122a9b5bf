"""`registre transcript THREAD --format md|html [-o FILE]`: the whole ledger, readable.

Every entry in seq order (``registre.ledger.exchange.transcript``): messages, tool calls and
results, pins and lifecycle transitions highlighted, each compaction as a marker with its range and
summary,
model calls with their context digest. Entry text is escaped for the format. With ``-o`` the
transcript is written to a temporary file beside FILE, flushed and renamed, so FILE is either
the whole transcript or untouched; an existing FILE is refused unless ``--force`` (and only a
regular file is ever replaced); control characters are escaped on a terminal; bad input (an
unknown thread, an unknown format) writes nothing.
"""

from __future__ import annotations

from pathlib import Path

import click

from registre.cli.files import check_output, terminal_text, write_atomically
from registre.cli.options import ledger_options, open_ledger
from registre.ledger.exchange.transcript import FORMATS, render_transcript

__all__ = ["transcript_command"]


@click.command("transcript")
@click.argument("thread_id", metavar="THREAD")
@click.option("--format", "fmt", type=click.Choice(FORMATS), required=True, help="md or html.")
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write to FILE instead of standard output (refused if it exists, unless --force).",
)
@click.option("--force", is_flag=True, help="Replace FILE if it is an existing regular file.")
@ledger_options
def transcript_command(
    thread_id: str,
    fmt: str,
    output: Path | None,
    force: bool,
    db: str | None,
    key_file: Path | None,
) -> None:
    """Print THREAD's whole ledger as a readable transcript."""
    if output is not None:
        check_output(output, force=force)
    with open_ledger(db, key_file) as ledger:
        thread = ledger.thread(thread_id)
        chunks = render_transcript(thread, fmt)
        if output is None:
            for chunk in chunks:
                click.echo(terminal_text(chunk), nl=False)
            return
        write_atomically(output, chunks)
    click.echo(f"wrote {output}", err=True)
