"""`registre rebuild [--thread T]`: drop and rebuild the derived tables.

The derived tables (evidence, references, conclusions, pins, transitions; the context
snapshots) are caches of the fold of each thread's entries. ``rebuild`` recomputes them from
the entries, one transaction per thread under its write lock; ``registre verify --db`` says
when one is needed. A thread whose history does not replay (or fold) is reported (exit 1) and
left as it was.
"""

from __future__ import annotations

from pathlib import Path

import click

from registre.cli.options import echo_json, json_option, ledger_options, open_ledger
from registre.ledger import rebuild, rebuild_context

__all__ = ["rebuild_command"]


@click.command("rebuild")
@click.option("--thread", "thread_id", default=None, help="Rebuild only this thread.")
@json_option
@ledger_options
def rebuild_command(
    thread_id: str | None, as_json: bool, db: str | None, key_file: Path | None
) -> None:
    """Drop and rebuild the derived tables (lifecycle, context snapshots) from the entries."""
    with open_ledger(db, key_file) as ledger:
        reports = rebuild(ledger, thread_id)
        snapshots = {
            report.thread: report.snapshots for report in rebuild_context(ledger, thread_id)
        }
    if as_json:
        rows = [
            {
                "thread": r.thread,
                "size": r.size,
                "lifecycle_entries": r.events,
                "snapshots": snapshots.get(r.thread, 0),
            }
            for r in reports
        ]
        echo_json(rows)
        return
    for report in reports:
        click.echo(f"rebuilt {report.thread}: {report.events} lifecycle entries of {report.size}")
        if snapshots.get(report.thread):
            click.echo(f"rebuilt {report.thread}: {snapshots[report.thread]} context snapshot(s)")
