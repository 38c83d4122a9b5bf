"""`registre import THREAD FILE --format openai|anthropic`: record an agent transcript.

The whole file is parsed and every entry checked first (:mod:`registre.ledger.exchange.importers`),
before the ledger is even opened; a bad file is refused with one line naming the file, the line or
JSON path, and the reason (exit 2), and the ledger is not touched. Then every entry is signed and
appended in ONE transaction: the thread gets all of the transcript or none of it.
"""

from __future__ import annotations

from pathlib import Path

import click

from registre.cli.options import echo_json, json_option, ledger_options, open_ledger
from registre.ledger.exchange.importers import FORMATS, TranscriptError

__all__ = ["import_transcript"]


@click.command("import")
@click.argument("thread")
@click.argument("file", type=click.Path(exists=True, dir_okay=False, path_type=Path))
@click.option(
    "--format",
    "shape",
    type=click.Choice(sorted(FORMATS)),
    required=True,
    help="openai: chat-completions messages, one per line; anthropic: {system, messages}.",
)
@json_option
@ledger_options
def import_transcript(
    thread: str, file: Path, shape: str, as_json: bool, db: str | None, key_file: Path | None
) -> None:
    """Append the conversation in FILE to THREAD as turn, tool.call and tool.result entries."""
    try:
        entries = FORMATS[shape](file.read_bytes())
    except TranscriptError as exc:
        error = TranscriptError(f"{file}: {exc.where}", exc.reason, exc.line)
        raise error.with_hint(exc.hint) from None
    if not entries:
        if as_json:
            echo_json({"thread": thread, "imported": 0, "first": None, "last": None})
        else:
            click.echo(f"{file} holds no messages to import; {thread} is unchanged")
        return
    with open_ledger(db, key_file, need_key=True) as ledger:
        appended = ledger.thread(thread).append_many(entries)
    first, last = appended[0].seq, appended[-1].seq
    if as_json:
        echo_json({"thread": thread, "imported": len(appended), "first": first, "last": last})
        return
    click.echo(f"imported {len(appended)} entries from {file} into {thread} (seq {first}..{last})")
