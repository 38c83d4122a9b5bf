"""`registre verify --db [URL] [--thread T] [--vkey KEY ...]`: check a ledger database.

Recomputes every leaf hash, signature, prev binding, stored subtree hash, thread head and
stored checkpoint (:mod:`ledger.verify_db`), streaming the entries. Exit 0 when everything
checks out, 1 at the first failure (the message names the thread and the seq), 2 for bad
input. Without ``--vkey`` the keys recorded in the database are trusted, which shows the
database is consistent with itself; pin the operator's key with ``--vkey`` to show it was
written by that key.
"""

from __future__ import annotations

import base64

import click

from attest.keys import Verifier
from ledger.cli import cli
from ledger.cli.options import db_option, resolve_db
from ledger.ledger import Ledger
from ledger.verify_db import verify_database

__all__ = ["verify_command"]


@cli.command("verify")
@db_option
@click.option("--thread", "thread_id", default=None, help="Verify only this thread.")
@click.option(
    "--vkey",
    "vkeys",
    multiple=True,
    help="Verifier key to trust (NAME+KEYID+BASE64); repeatable. Default: the stored keys.",
)
def verify_command(db: str | None, thread_id: str | None, vkeys: tuple[str, ...]) -> None:
    """Verify a ledger database (--db): every entry, hash, head and checkpoint."""
    if db is None:
        raise click.UsageError("say what to verify: --db [URL|PATH] for a ledger database")
    keys = [Verifier.from_vkey(text) for text in vkeys] or None
    with Ledger.open(resolve_db(db), create=False) as ledger:
        reports = verify_database(ledger, thread=thread_id, keys=keys)
    for report in reports:
        root = base64.b64encode(report.root).decode("ascii")
        click.echo(
            f"ok {report.thread}: {report.size} entries, root {root}, "
            f"{report.checkpoints} checkpoint(s)"
        )
    trust = "pinned key(s)" if keys else "the keys stored in the database"
    click.echo(f"verified {len(reports)} thread(s) against {trust}")
