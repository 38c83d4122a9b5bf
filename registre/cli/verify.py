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
* ``registre verify --db [URL] --witness VKEY@URL [--witness ...] [--quorum N]`` -- then
  step 14 (:mod:`registre.ledger.verify.witnesses`): no thread is behind, or forks from,
  what each witness last cosigned for its origin (exit 1, BehindWitnessError or
  ForkedFromWitnessError), and each thread is confirmed by ``--quorum`` witnesses (default:
  every ``--witness``; WitnessQuorumError, exit 1). With ``--db`` a witness is named as for
  ``registre checkpoint``: its key, ``@``, its URL (it is asked); a bundle's ``--witness`` is a
  key alone (its cosignatures are in the bundle). Nothing is written to the database.
"""

from __future__ import annotations

import base64
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import click
from click.core import ParameterSource

from registre.attest.__main__ import run_verify
from registre.attest.notes import Verifier
from registre.cli.bundle_options import verify_options
from registre.cli.options import (
    db_option,
    echo_json,
    echo_witness_checks,
    resolve_db,
    witness_endpoints,
)
from registre.ledger import Ledger, ThreadReport, verify_database

if TYPE_CHECKING:
    from registre.ledger import WitnessCheck

__all__ = ["verify_command"]

_BUNDLE_ONLY = {
    "key_text": "--key",
    "key_file": "--key-file",
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
    quorum = bundle_options.get("quorum")
    endpoints = witness_endpoints(tuple(bundle_options.get("witness_keys") or ()), quorum)
    keys = [Verifier.from_vkey(text) for text in vkeys] or None
    threads = list(thread_ids) or None
    jobs = int(bundle_options.get("jobs") or 1)
    checks: list[WitnessCheck] = []
    with Ledger.open(resolve_db(db), create=False) as ledger:
        if bundle_options.get("as_json") or not sys.stderr.isatty():
            reports = verify_database(ledger, threads=threads, keys=keys, jobs=jobs)
        else:  # a person at a terminal: show how far it is
            total = ledger.entry_count(threads)
            with click.progressbar(length=total, label="verify", file=sys.stderr) as bar:
                reports = verify_database(
                    ledger, threads=threads, keys=keys, jobs=jobs, progress=bar.update
                )
        if endpoints:
            # 14. what the witnesses last cosigned (the HTTP client is imported only here)
            from registre.ledger import check_witnesses

            needed = len(endpoints) if quorum is None else int(quorum)
            log_keys = keys or ledger.stored_keys()
            checks = check_witnesses(ledger, reports, endpoints, needed, log_keys)
    _print(reports, checks, bool(keys), bool(bundle_options.get("as_json")))


def _print(
    reports: list[ThreadReport], checks: list[WitnessCheck], pinned: bool, as_json: bool
) -> None:
    """The result: one line per thread and per witness's answer, then the trust line; or
    the JSON of ``specs/cli.md``."""
    trust = "pinned key(s)" if pinned else "the keys stored in the database"
    if as_json:
        document: dict[str, object] = {
            "verified": True,
            "trusted": "pinned" if pinned else "stored",
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
        if checks:
            document["witnesses"] = [
                {
                    "thread": check.thread,
                    "witness": check.witness,
                    "verdict": check.verdict,
                    "size": check.size,
                    "detail": check.detail,
                }
                for check in checks
            ]
        echo_json(document)
        return
    for report in reports:
        root = base64.b64encode(report.root).decode("ascii")
        click.echo(
            f"ok {report.thread}: {report.size} entries, root {root}, "
            f"{report.checkpoints} checkpoint(s)"
        )
    echo_witness_checks(checks)
    click.echo(f"verified {len(reports)} thread(s) against {trust}")


for _param in verify_command.params:  # the bundle's options, as --db reads two of them
    if _param.name == "witness_keys" and isinstance(_param, click.Option):
        _param.help = (
            "A witness verifier key to pin (cosignature/v1); repeatable. With --db: "
            "VKEY@URL, a witness asked what it last cosigned."
        )
    elif _param.name == "quorum" and isinstance(_param, click.Option):
        _param.help = (
            "Cosignatures from pinned witnesses the head needs; with --db, witnesses that "
            "must confirm each thread. Default: every --witness."
        )
