"""`registre transcript THREAD [--format chat|md|html|ipynb|slides|openai|anthropic|claude-code]`.

``chat`` (the default): the conversation as plain text, one block per entry, for a terminal;
``md`` / ``html``: the whole ledger, readable (below); ``ipynb``: a Jupyter notebook
(:mod:`registre.report.notebook`); ``slides``: a self-contained HTML deck
(:mod:`registre.report.slides`) -- both read from the database, so they say that no bundle
was verified; ``registre report BUNDLE.zip --slides F --notebook F`` writes them from a
verified bundle, with its verdict. ``openai`` (chat JSONL), ``anthropic``
(a Messages document) and ``claude-code`` (session JSONL): the conversation written back in
that provider's shape (``registre.ledger.exchange.writeback``): messages imported from that
format come out exactly as they went in; other entries are converted, and the count of
entries with no counterpart in the format is reported on standard error.

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

from collections.abc import Iterable
from pathlib import Path

import click

from registre.cli.files import check_output, terminal_text, write_atomically
from registre.cli.options import ledger_options, open_ledger
from registre.ledger import WRITEBACK_FORMATS, render_transcript, write_chunks
from registre.ledger.exchange.transcript import FORMATS

_PROJECTIONS = ("ipynb", "slides")

__all__ = ["transcript_command"]


@click.command("transcript")
@click.argument("thread_id", metavar="THREAD")
@click.option(
    "--format",
    "fmt",
    type=click.Choice((*FORMATS, *_PROJECTIONS, *WRITEBACK_FORMATS)),
    default=FORMATS[0],
    show_default=True,
    help="chat (the conversation as plain text), md or html (every entry, readable); ipynb "
    "(a Jupyter notebook, needs registre[notebook]); slides (an HTML deck: task, findings, "
    "compactions, finals); or openai, anthropic, claude-code (a provider transcript). For "
    "slides and a notebook with a bundle's verdict: registre report BUNDLE.zip --slides F "
    "--notebook F.",
)
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
        if fmt == "ipynb":
            from registre.report.notebook import render_notebook

            chunks: Iterable[str] = [render_notebook(thread)]
        elif fmt == "slides":
            from registre.report.slides import render_slides

            chunks = list(render_slides(thread))
        elif fmt in WRITEBACK_FORMATS:
            chunks = write_chunks(((e.kind, e.body) for e in thread.entries()), fmt, thread.id)
        else:
            chunks = render_transcript(thread, fmt)
        if output is None:
            for chunk in chunks:
                click.echo(terminal_text(chunk), nl=False)
            return
        write_atomically(output, chunks)
    click.echo(f"wrote {output}", err=True)
