"""`registre report BUNDLE.zip (--key VKEY | --key-file F) [--witness VKEY ...] -o FILE`.

Verifies the bundle exactly as ``registre verify`` does (the same keys, witnesses and quorum
pinned) and writes the audit report (:mod:`registre.report`) as one self-contained HTML file,
through a temporary file and a rename. Exit 0 when the bundle verified, 1 when a check failed
(the report is still written, and says so on its first screen), 2 for unusable input (nothing
written).
"""

from __future__ import annotations

from pathlib import Path

import click

from registre.attest.__main__ import ReportedFailure, pinned_log_key
from registre.attest.notes import CosignatureVerifier
from registre.attest.verify import TrustPolicy
from registre.cli.files import write_atomically
from registre.report import gather, render_report

__all__ = ["report_command"]


@click.command("report")
@click.argument("bundle", metavar="BUNDLE.zip", type=click.Path(dir_okay=False, path_type=Path))
@click.option("--key", "key_text", default=None, help="The log's verifier key (NAME+ID+KEY).")
@click.option(
    "--key-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="A file holding the log's verifier key.",
)
@click.option(
    "--witness", "witness_keys", multiple=True, help="A witness verifier key to pin; repeatable."
)
@click.option(
    "--quorum",
    type=click.IntRange(min=0),
    default=None,
    help="Cosignatures required from pinned witnesses (default: all of them).",
)
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="The HTML file to write.",
)
@click.option("--jobs", type=click.IntRange(min=1), default=1, help="Processes for signatures.")
def report_command(
    bundle: Path,
    key_text: str | None,
    key_file: Path | None,
    witness_keys: tuple[str, ...],
    quorum: int | None,
    output: Path,
    jobs: int,
) -> None:
    """Verify BUNDLE.zip and write its audit report as one self-contained HTML file."""
    policy = TrustPolicy(
        log_key=pinned_log_key(key_text, key_file),
        witnesses=tuple(CosignatureVerifier.from_vkey(text) for text in witness_keys),
        quorum=len(witness_keys) if quorum is None else quorum,
    )
    data = gather(bundle, policy, jobs=jobs)
    write_atomically(output, render_report(data))
    report = data.verification
    if data.verified:
        click.echo(
            f"wrote {output}: VERIFIED, {len(data.entries)} entries, "
            f"{len(data.contexts)} model-call context(s) rebuilt, {len(data.chains)} final "
            "conclusion(s)",
            err=True,
        )
        return
    failure = report.failure.sentence() if report.failure is not None else "not verified"
    click.echo(f"wrote {output}: NOT VERIFIED", err=True)
    raise ReportedFailure(failure, 1 if report.failure is None else report.failure.exit_code)
