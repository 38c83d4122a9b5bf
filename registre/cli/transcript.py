"""`registre transcript THREAD --format md|html|ipynb|slides [-o FILE]`: the ledger, readable.

Every entry in seq order (``registre.ledger.exchange.transcript``): messages, tool calls and
results, pins and lifecycle transitions highlighted, each compaction as a marker with its range and
summary,
model calls with their context digest. Entry text is escaped for the format. With ``-o`` the
transcript is written to a temporary file beside FILE, flushed and renamed, so FILE is either
the whole transcript or untouched; bad input (an unknown thread, an unknown format) writes
nothing.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import click

from registre.cli.files import write_atomically
from registre.cli.options import ledger_options, open_ledger
from registre.ledger.exchange.transcript import FORMATS, render_transcript

_PROJECTIONS = ("ipynb", "slides")

__all__ = ["transcript_command"]


@click.command("transcript")
@click.argument("thread_id", metavar="THREAD")
@click.option(
    "--format",
    "fmt",
    type=click.Choice((*FORMATS, *_PROJECTIONS)),
    required=True,
    help="md or html (every entry); ipynb (a Jupyter notebook, needs registre[notebook]); "
    "slides (a self-contained HTML deck: task, chapters, conclusions).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Write to FILE instead of standard output.",
)
@ledger_options
def transcript_command(
    thread_id: str, fmt: str, output: Path | None, db: str | None, key_file: Path | None
) -> None:
    """Print THREAD's whole ledger as a readable transcript."""
    with open_ledger(db, key_file) as ledger:
        thread = ledger.thread(thread_id)
        if fmt == "ipynb":
            from registre.report.notebook import render_notebook

            chunks: Iterable[str] = [render_notebook(thread)]
        elif fmt == "slides":
            from registre.report.slides import render_slides

            chunks = list(render_slides(thread))
        else:
            chunks = render_transcript(thread, fmt)
        if output is None:
            for chunk in chunks:
                click.echo(chunk, nl=False)
            return
        write_atomically(output, chunks)
    click.echo(f"wrote {output}", err=True)
