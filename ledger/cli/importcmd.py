"""`registre import THREAD FILE --format openai|anthropic`: record an agent transcript.

The whole file is parsed and every entry checked first (:mod:`ledger.importers`), before the
ledger is even opened; a bad file is refused with one line naming the file, the line or JSON
path, and the reason (exit 2), and the ledger is not touched. Then every entry is signed and
appended in ONE transaction: the thread gets all of the transcript or none of it.
"""

from __future__ import annotations

from pathlib import Path

import click

from attest.keys import Signer
from ledger.cli import cli
from ledger.importers import FORMATS, TranscriptError
from ledger.ledger import Ledger

__all__ = ["import_transcript"]


@cli.command("import")
@click.argument("thread")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--format",
    "shape",
    type=click.Choice(sorted(FORMATS)),
    required=True,
    help="openai: chat-completions messages, one per line; anthropic: {system, messages}.",
)
@click.option(
    "--db",
    envvar="REGISTRE_DB",
    required=True,
    help="Ledger database: a SQLite file path or a database URL (env REGISTRE_DB).",
)
@click.option(
    "--key-file",
    envvar="REGISTRE_KEY",
    type=click.Path(exists=True, dir_okay=False, path_type=Path),
    required=True,
    help="Operator key file that signs the entries (env REGISTRE_KEY).",
)
def import_transcript(thread: str, file: Path, shape: str, db: str, key_file: Path) -> None:
    """Append the conversation in FILE to THREAD as turn, tool.call and tool.result entries."""
    try:
        entries = FORMATS[shape](file.read_bytes())
    except TranscriptError as exc:
        raise TranscriptError(f"{file}: {exc.where}", exc.reason, exc.line) from None
    if not entries:
        click.echo(f"{file} holds no messages to import; {thread} is unchanged")
        return
    signer = Signer.load(key_file)
    with Ledger.open(db, signer, create=False) as ledger:
        appended = ledger.thread(thread).append_many(entries)
    first, last = appended[0].seq, appended[-1].seq
    click.echo(f"imported {len(appended)} entries from {file} into {thread} (seq {first}..{last})")
