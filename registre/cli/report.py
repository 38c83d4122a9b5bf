"""`registre report BUNDLE.zip -o FILE [--slides FILE] [--notebook FILE]` with every option
of ``registre verify``.

Verifies the bundle exactly as ``registre verify`` does -- the same options (keys,
witnesses, quorum, ``--state``, ``--require-full``, ``--max-age``, ``--max-ratio``,
``--json``, ``--jobs``), one verification whose report is printed as ``verify`` prints it,
so the verdict line in the terminal is the page's (issue 29 item 9) -- and writes the audit
report (:mod:`registre.report`) as one self-contained HTML file, through a temporary file
and a rename. Exit 0 when the bundle verified, 1 when a check failed (the report is still
written, and says so on its first screen), 2 for unusable input (nothing written).
"""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import click

from registre.attest.__main__ import ReportedFailure, pinned_log_key
from registre.attest.bundles import DEFAULT_LIMITS
from registre.attest.notes import CosignatureVerifier
from registre.attest.verify import TrustPolicy, plural
from registre.cli.bundle_options import verify_options
from registre.cli.files import write_atomically
from registre.report import gather, render_report

__all__ = ["relative_to", "report_command"]


@click.command("report")
@click.argument("bundle", metavar="BUNDLE.zip", type=click.Path(dir_okay=False, path_type=Path))
@click.option(
    "-o",
    "--output",
    type=click.Path(dir_okay=False, path_type=Path),
    required=True,
    help="The HTML file to write.",
)
@click.option(
    "--slides",
    "slides_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write the investigation as an HTML slide deck, with the verdict.",
)
@click.option(
    "--notebook",
    "notebook_path",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="Also write it as a Jupyter notebook (needs registre[notebook]), with the verdict.",
)
@verify_options
def report_command(
    bundle: Path,
    output: Path,
    slides_path: Path | None,
    notebook_path: Path | None,
    key_text: str | None,
    key_file: Path | None,
    witness_keys: tuple[str, ...],
    quorum: int | None,
    state_file: Path | None,
    require_full: bool,
    max_age: int | None,
    as_json: bool,
    jobs: int,
    max_ratio: int,
) -> None:
    """Verify BUNDLE.zip as `registre verify` does (the same options) and write its audit
    report as one self-contained HTML file."""
    policy = TrustPolicy(
        log_key=pinned_log_key(key_text, key_file),
        witnesses=tuple(CosignatureVerifier.from_vkey(text) for text in witness_keys),
        quorum=len(witness_keys) if quorum is None else quorum,
        require_full=require_full,
        max_age=max_age,
    )
    limits = replace(DEFAULT_LIMITS, max_ratio=max_ratio)
    data = gather(bundle, policy, jobs=jobs, state_file=state_file, limits=limits)
    write_atomically(output, render_report(data))
    if slides_path is not None:
        from registre.report.slides import render_slides

        write_atomically(slides_path, render_slides(data))
    if notebook_path is not None:
        from registre.report.notebook import render_notebook

        write_atomically(
            notebook_path, [render_notebook(data, bundle=relative_to(bundle, notebook_path))]
        )
    report = data.verification
    # the terminal shows the verifier's own report: the same verdict line as the page's
    if as_json:
        click.echo(json.dumps(report.to_json(), indent=2, ensure_ascii=False))
    else:
        click.echo(report.render(), nl=False)
    if data.verified:
        click.echo(
            f"wrote {output}: {plural(len(data.entries), 'entry')}, "
            f"{plural(len(data.contexts), 'model-call context')} rebuilt, "
            f"{plural(len(data.chains), 'final conclusion')}",
            err=True,
        )
        return
    failure = report.failure.sentence() if report.failure is not None else "not verified"
    click.echo(f"wrote {output}: NOT VERIFIED", err=True)
    raise ReportedFailure(failure, 1 if report.failure is None else report.failure.exit_code)


def relative_to(path: Path, beside: Path) -> str:
    """``path`` as seen from the folder of ``beside`` (absolute if there is no such path)."""
    try:
        return os.path.relpath(path, beside.parent)
    except ValueError:  # another drive
        return str(path.resolve())
