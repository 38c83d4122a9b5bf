"""`registre backup OUT`: a consistent copy of a live SQLite ledger (the online backup API:
the WAL included, writers not stopped); PostgreSQL: use pg_dump (the refusal says how)."""

from __future__ import annotations

from pathlib import Path

import click

from registre.cli.options import db_option, resolve_db
from registre.ledger import backup_sqlite

__all__ = ["backup_command"]


@click.command("backup")
@db_option
@click.argument("out", type=click.Path(dir_okay=False, path_type=Path))
def backup_command(db: str | None, out: Path) -> None:
    """Copy the ledger database to the new file OUT, consistently, while it is in use."""
    size = backup_sqlite(resolve_db(db), out)
    click.echo(f"wrote {out} ({size} bytes): a complete copy, WAL included")
