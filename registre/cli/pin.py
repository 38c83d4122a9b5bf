"""`registre pin THREAD --kind K --text T --seq S` and `registre unpin THREAD ID --reason R`.

Each records ONE ``context.pin`` / ``context.unpin`` entry holding the request and the rules'
decision (``Thread.pin`` / ``Thread.unpin``). A pinned text is carried verbatim in every
projection until it is unpinned. A refusal (blank text, unknown or already unpinned pin,
blank reason) is recorded too and exits 2 naming the seq; a pin of an entry that is not
earlier (``--seq`` at or beyond the head) is refused with nothing written.
"""

from __future__ import annotations

from pathlib import Path

import click

from registre.cli.options import (
    actor_option,
    dry_run_option,
    echo_json,
    json_option,
    ledger_options,
    open_ledger,
    preview,
    read_text,
    refusal,
)
from registre.kinds import CONTEXT_PIN, CONTEXT_UNPIN
from registre.ledger import LifecycleRefusedError
from registre.lifecycle.model import PIN_KINDS

__all__ = ["pin_command", "unpin_command"]


@click.command("pin")
@click.argument("thread_id", metavar="THREAD")
@click.option("--kind", type=click.Choice(PIN_KINDS), required=True, help="What is pinned.")
@click.option(
    "--text", "text", required=True, help="The text to carry verbatim (or @FILE, - for stdin)."
)
@click.option("--seq", type=click.IntRange(min=0), required=True, help="Entry it comes from.")
@actor_option()
@dry_run_option
@json_option
@ledger_options
def pin_command(
    thread_id: str,
    kind: str,
    text: str,
    seq: int,
    actor: str,
    dry_run: bool,
    as_json: bool,
    db: str | None,
    key_file: Path | None,
) -> None:
    """Pin TEXT (from entry --seq) so that every projection of THREAD carries it."""
    text = read_text(text, "--text")
    if dry_run:
        value = {"kind": kind, "text": text, "seq": seq}
        return preview(db, key_file, thread_id, CONTEXT_PIN, value, "--text")
    with open_ledger(db, key_file, need_key=True) as ledger:
        try:
            result = ledger.thread(thread_id).pin(kind, text, seq, actor=actor)
        except LifecycleRefusedError as exc:
            raise refusal(exc) from None
    if as_json:
        echo_json({"seq": result.seq, "id": result.id, "status": "pinned"})
    else:
        click.echo(f"seq {result.seq}\t{result.id}\tpinned")


@click.command("unpin")
@click.argument("thread_id", metavar="THREAD")
@click.argument("pin_id", metavar="ID")
@click.option("--reason", required=True, help="Why it is no longer carried.")
@actor_option()
@dry_run_option
@json_option
@ledger_options
def unpin_command(
    thread_id: str,
    pin_id: str,
    reason: str,
    actor: str,
    dry_run: bool,
    as_json: bool,
    db: str | None,
    key_file: Path | None,
) -> None:
    """Stop carrying pin ID in THREAD's projections, saying why."""
    if dry_run:
        value = {"id": pin_id, "reason": reason}
        return preview(db, key_file, thread_id, CONTEXT_UNPIN, value, "ID")
    with open_ledger(db, key_file, need_key=True) as ledger:
        try:
            result = ledger.thread(thread_id).unpin(pin_id, reason, actor=actor)
        except LifecycleRefusedError as exc:
            raise refusal(exc) from None
    if as_json:
        echo_json({"seq": result.seq, "id": result.id, "status": "unpinned"})
    else:
        click.echo(f"seq {result.seq}\t{result.id}\tunpinned")
