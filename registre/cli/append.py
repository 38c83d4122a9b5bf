"""`registre append THREAD --kind K --body JSON|@FILE|-`: sign and store one entry."""

from __future__ import annotations

import base64
from pathlib import Path

import click

from registre.cli.options import actor_option, ledger_options, open_ledger, read_body

__all__ = ["append_command"]


@click.command("append")
@click.argument("thread_id", metavar="THREAD")
@click.option("--kind", required=True, help="Entry kind, e.g. turn, tool.call, decision.")
@click.option("--body", "body_text", required=True, help="Body: JSON text, @FILE, or - for stdin.")
@actor_option(help="Who acted.")
@click.option("--json", "as_json", is_flag=True, help="Print the signed leaf (one JSON line).")
@ledger_options
def append_command(
    thread_id: str,
    kind: str,
    body_text: str,
    actor: str,
    as_json: bool,
    db: str | None,
    key_file: Path | None,
) -> None:
    """Sign and append one entry to THREAD."""
    body = read_body(body_text)
    with open_ledger(db, key_file, need_key=True) as ledger:
        entry = ledger.thread(thread_id).append(kind, body, actor)
    if as_json:
        click.echo(entry.leaf.decode("utf-8"))
    else:
        digest = base64.b64encode(entry.leaf_hash).decode("ascii")
        click.echo(f"{thread_id} seq {entry.seq} leaf hash {digest}")
