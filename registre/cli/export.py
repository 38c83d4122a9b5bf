"""`registre export THREAD -o FILE.zip [--checkpoint N] [--claim CONCLUSION] [--force]`: write
an audit bundle (:mod:`registre.ledger.exchange.export`, ``specs/bundle.md`` section 7).

Without ``--claim``: the whole thread up to the signed checkpoint (default: the latest stored
one, which must cover the head -- run ``registre checkpoint THREAD`` first). With ``--claim``:
only the chain of that conclusion, with inclusion and consistency proofs. Export never signs,
so it needs no operator key. Prints one line saying what was written, and the command a
regulator runs to verify it. A failed export leaves no file behind (exit 2 for a refused
request or bad input, 1 if the store fails its own checks).
"""

from __future__ import annotations

from pathlib import Path

import click

from registre.cli.files import check_output
from registre.cli.options import db_option, echo_json, json_option, resolve_db
from registre.ledger import Ledger, export_claim, export_thread

__all__ = ["export_command"]


@click.command("export")
@click.argument("thread_id", metavar="THREAD")
@click.option(
    "-o",
    "--output",
    required=True,
    metavar="FILE.zip",
    type=click.Path(dir_okay=False, path_type=Path),
    help="The bundle to write (refused if it exists, unless --force).",
)
@click.option(
    "--checkpoint",
    "checkpoint_size",
    type=click.IntRange(min=0),
    default=None,
    metavar="N",
    help="Export up to the stored checkpoint of size N (default: the latest, covering the head).",
)
@click.option(
    "--claim",
    "conclusion_id",
    default=None,
    metavar="CONCLUSION",
    help="Disclose only this conclusion's chain (a partial bundle with proofs).",
)
@click.option("--force", is_flag=True, help="Replace FILE.zip if it is an existing regular file.")
@json_option
@db_option
def export_command(
    thread_id: str,
    output: Path,
    checkpoint_size: int | None,
    conclusion_id: str | None,
    force: bool,
    as_json: bool,
    db: str | None,
) -> None:
    """Write THREAD (or one claim of it) as an audit bundle a regulator verifies offline."""
    check_output(output, force=force)
    with Ledger.open(resolve_db(db), create=False) as ledger:
        if conclusion_id is None:
            result = export_thread(
                ledger, thread_id, output, checkpoint=checkpoint_size, overwrite=force
            )
        else:
            result = export_claim(
                ledger,
                thread_id,
                conclusion_id,
                output,
                checkpoint=checkpoint_size,
                overwrite=force,
            )
    if as_json:
        echo_json(
            {
                "path": str(result.path),
                "thread": result.thread,
                "origin": result.origin,
                "disclosure": result.disclosure,
                "tree_size": result.tree_size,
                "entries": result.entries,
                "checkpoints": list(result.checkpoints),
                "bytes": result.bytes,
                "log_key": result.log_key,
            }
        )
        return
    click.echo(result.describe())
    if result.log_key is not None:
        click.echo(f"verify with: registre verify {output} --key {result.log_key}")
