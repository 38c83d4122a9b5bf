"""`registre reanchor [--db URL] (--witness VKEY@URL ... [--quorum N] | --unwitnessed)
[--vkey KEY ...]`: write again the ``.published`` record of a SQLite ledger that lost it
(:mod:`registre.ledger.verify.reanchor`, ``specs/storage.md`` 3.2).

The database is verified (everything ``verify --db`` checks but the record itself), then
compared with the witnesses as ``verify --db --witness`` does; only then is each thread's
largest signed checkpoint recorded, and the re-anchoring noted in the record. Without
witnesses the operator must say ``--unwitnessed``: the record then rests on their word alone.
Exit 0 when recorded (or nothing was missing), 1 when a check fails, 2 for bad input or a
database that keeps no record (PostgreSQL).
"""

from __future__ import annotations

import click

from registre.attest.notes import Verifier
from registre.cli.options import db_option, echo_witness_checks, resolve_db, witness_endpoints
from registre.ledger import Ledger

__all__ = ["reanchor_command"]


@click.command("reanchor")
@db_option
@click.option(
    "--witness",
    "witnesses",
    multiple=True,
    metavar="VKEY@URL",
    help="A witness to compare with (its verifier key, '@', its URL); repeatable.",
)
@click.option(
    "--quorum",
    type=click.IntRange(min=0),
    default=None,
    help="Witnesses that must confirm each thread. Default: every --witness.",
)
@click.option(
    "--unwitnessed",
    is_flag=True,
    help="Ask no witness: you vouch that this database is the newest copy (noted in the record).",
)
@click.option(
    "--vkey",
    "vkeys",
    multiple=True,
    help="Verifier key to trust (NAME+KEYID+BASE64); repeatable. Default: the stored keys.",
)
def reanchor_command(
    db: str | None,
    witnesses: tuple[str, ...],
    quorum: int | None,
    unwitnessed: bool,
    vkeys: tuple[str, ...],
) -> None:
    """Record again the .published file of a SQLite ledger that lost it, once the database
    verifies and the witnesses confirm it is not behind what they cosigned."""
    if bool(witnesses) == unwitnessed:
        raise click.UsageError(
            "say what vouches for this database: --witness VKEY@URL (repeatable) or "
            "--unwitnessed (your word alone), one of the two"
        )
    endpoints = witness_endpoints(witnesses, quorum)
    keys = [Verifier.from_vkey(text) for text in vkeys] or None
    # the HTTP client (aiohttp) comes with the module that asks the witnesses
    from registre.ledger import reanchor

    with Ledger.open(resolve_db(db), create=False) as ledger:
        needed = len(endpoints) if quorum is None else quorum
        done = reanchor(ledger, endpoints, needed, keys=keys)
    echo_witness_checks(done.checks)
    if not done.recorded:
        click.echo(f"nothing to re-anchor: {done.path} reaches every signed checkpoint")
        return
    for head in done.recorded:
        click.echo(f"reanchored {head.origin} at size {head.size}")
    how = (
        f"confirmed by {len(endpoints)} witness(es)"
        if endpoints
        else "on your word (--unwitnessed)"
    )
    click.echo(f"recorded {len(done.recorded)} thread(s) in {done.path}, {how}")
