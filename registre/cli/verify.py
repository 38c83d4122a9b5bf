"""`registre verify`: check an audit bundle, or a ledger database.

* ``registre verify FILE.zip (--key VKEY | --key-file F) [--witness VKEY ... --quorum N]
  [--state STATE.json] [--require-full] [--max-age DURATION] [--json] [--jobs N]
  [--max-ratio R]`` -- the regulator's offline check of a bundle, in the numbered steps of
  ``specs/verify.md``. It is ``python -m registre.attest verify``
  (:func:`registre.attest.__main__.run_verify`, the same options, report and exit codes): 0
  verified, 1 a check failed (the report is printed, then the first failure as one line on
  stderr), 2 unusable input or a refused bundle.
* ``registre verify --db [URL] [--thread T ...] [--vkey KEY ...] [--jobs N]`` -- recomputes
  every leaf hash, signature, prev binding, stored subtree hash, thread head and stored checkpoint
  (:mod:`registre.ledger.verify.database`), streaming the entries. Exit 0 when everything checks
  out, 1 at the first failure (the message names the thread and the seq), 2 for bad input. Without
  ``--vkey`` the keys recorded in the database are trusted, which shows the database is
  consistent with itself; pin the operator's key with ``--vkey`` to show it was written by
  that key. ``--thread`` (repeatable) verifies only those threads; ``--jobs N`` shares the
  threads among N processes. The result lines come in thread id order either way.
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import Any

import click
from click.core import ParameterSource

from registre.attest.__main__ import run_verify, verify_options
from registre.attest.notes import Verifier
from registre.cli.options import db_option, echo_json, resolve_db
from registre.ledger import Ledger, verify_database

__all__ = ["verify_command"]

_BUNDLE_ONLY = {
    "key_text": "--key",
    "key_file": "--key-file",
    "witness_keys": "--witness",
    "quorum": "--quorum",
    "state_file": "--state",
    "require_full": "--require-full",
    "max_age": "--max-age",
}


@click.command("verify")
@click.argument(
    "bundle", required=False, metavar="[FILE.zip]", type=click.Path(dir_okay=False, path_type=Path)
)
@db_option
@click.option(
    "--thread",
    "thread_ids",
    multiple=True,
    help="With --db: verify only this thread; repeatable.",
)
@click.option(
    "--vkey",
    "vkeys",
    multiple=True,
    help="With --db: verifier key to trust (NAME+KEYID+BASE64); repeatable. Default: the "
    "stored keys.",
)
@verify_options
def verify_command(
    bundle: Path | None,
    db: str | None,
    thread_ids: tuple[str, ...],
    vkeys: tuple[str, ...],
    **bundle_options: Any,
) -> None:
    """Verify an audit bundle FILE.zip against pinned keys (offline), or a ledger database
    (--db): every entry, hash, head and checkpoint."""
    if bundle is not None:
        db_given = click.get_current_context().get_parameter_source("db")
        if db_given is ParameterSource.COMMANDLINE or thread_ids or vkeys:
            raise click.UsageError(
                "verify either a bundle (FILE.zip --key VKEY) or a database (--db), not both; "
                "--thread and --vkey apply to --db"
            )
        run_verify(bundle, **bundle_options)
        return
    if db is None:
        raise click.UsageError(
            "say what to verify: an audit bundle (FILE.zip --key VKEY) or a ledger database "
            "(--db [URL|PATH])"
        )
    given = [
        flag
        for name, flag in _BUNDLE_ONLY.items()
        if bundle_options.get(name) not in (None, ()) and bundle_options.get(name) is not False
    ]
    if given:
        raise click.UsageError(
            f"{given[0]} applies to a bundle (FILE.zip); with --db pin keys with --vkey"
        )
    keys = [Verifier.from_vkey(text) for text in vkeys] or None
    threads = list(thread_ids) or None
    jobs = int(bundle_options.get("jobs") or 1)
    with Ledger.open(resolve_db(db), create=False) as ledger:
        if bundle_options.get("as_json") or not sys.stderr.isatty():
            reports = verify_database(ledger, threads=threads, keys=keys, jobs=jobs)
        else:  # a person at a terminal: show how far it is
            total = ledger.entry_count(threads)
            with click.progressbar(length=total, label="verify", file=sys.stderr) as bar:
                reports = verify_database(
                    ledger, threads=threads, keys=keys, jobs=jobs, progress=bar.update
                )
    trust = "pinned key(s)" if keys else "the keys stored in the database"
    if bundle_options.get("as_json"):
        echo_json(
            {
                "verified": True,
                "trusted": "pinned" if keys else "stored",
                "threads": [
                    {
                        "thread": report.thread,
                        "size": report.size,
                        "root": base64.b64encode(report.root).decode("ascii"),
                        "checkpoints": report.checkpoints,
                    }
                    for report in reports
                ],
            }
        )
        return
    for report in reports:
        root = base64.b64encode(report.root).decode("ascii")
        click.echo(
            f"ok {report.thread}: {report.size} entries, root {root}, "
            f"{report.checkpoints} checkpoint(s)"
        )
    click.echo(f"verified {len(reports)} thread(s) against {trust}")
