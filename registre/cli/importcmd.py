"""`registre import THREAD FILE... [--format auto|NAME]`, `import --thread-per-file FILE...`.

Records agent transcripts (:mod:`registre.importers`; formats and the mapping:
``specs/entries.md`` section 6). ``--format auto`` (the default) detects each file's format
and says which it chose; a named format that the file does not look like is refused, saying
what it looks like. Several files into one THREAD are read in order, so a file may start with
the results of calls the previous one left open. ``--thread-per-file`` makes one thread per
file, named after it (tau-bench files: one per task, ``NAME-TASK``; ``--task`` picks one).

Every file is checked completely before anything is written
(:mod:`registre.ledger.exchange.import_run`): a bad line anywhere is refused with one line
naming the file, the line or JSON path and the reason (exit 2), and no thread changes. A
progress bar shows on a terminal (not with ``--quiet``, nor when standard error is piped);
``--json`` prints a summary object instead of the sentences.
"""

from __future__ import annotations

import sys
from pathlib import Path

import click

from registre.cli.options import echo_json, ledger_options, open_ledger
from registre.importers import FORMAT_NAMES
from registre.ledger import ImportJob, ImportReport, run_import

__all__ = ["import_transcript"]

_SUFFIXES = (".jsonl", ".json", ".traj")


@click.command("import")
@click.argument("arguments", metavar="THREAD FILE...", nargs=-1, required=True)
@click.option(
    "--format",
    "shape",
    type=click.Choice(["auto", *FORMAT_NAMES]),
    default="auto",
    show_default=True,
    help="The transcript format; auto detects it from the file's first value.",
)
@click.option(
    "--thread-per-file",
    is_flag=True,
    help="Every argument is a FILE; each goes to a new thread named after the file.",
)
@click.option("--task", default=None, help="tau-bench: import only this task, into THREAD.")
@click.option(
    "--batch",
    type=click.IntRange(1),
    default=10_000,
    show_default=True,
    help="Entries kept in memory and appended per transaction (bigger files: read twice).",
)
@click.option("--check", "check_only", is_flag=True, help="Only check the files: write nothing.")
@click.option("--quiet", "-q", is_flag=True, help="No progress bar.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON summary.")
@ledger_options
def import_transcript(
    arguments: tuple[str, ...],
    shape: str,
    thread_per_file: bool,
    task: str | None,
    batch: int,
    check_only: bool,
    quiet: bool,
    as_json: bool,
    db: str | None,
    key_file: Path | None,
) -> None:
    """Append the transcripts in FILE... to THREAD (turn, tool.call, tool.result and imported
    entries)."""
    if thread_per_file:
        files = [_existing(name) for name in arguments]
        jobs = [ImportJob(path, shape, _thread_name(path), task, create=True) for path in files]
    else:
        if len(arguments) < 2:
            raise click.UsageError("give THREAD and at least one FILE (or --thread-per-file)")
        files = [_existing(name) for name in arguments[1:]]
        jobs = [ImportJob(path, shape, arguments[0], task) for path in files]
    total = sum(path.stat().st_size for path in files)
    show = not quiet and not as_json and sys.stderr.isatty()
    with open_ledger(db, key_file, need_key=True) as ledger:
        if show:
            with click.progressbar(length=2 * total, label="import", file=sys.stderr) as bar:
                report = run_import(
                    ledger,
                    jobs,
                    batch=batch,
                    check_only=check_only,
                    progress=lambda _phase, size: bar.update(size),
                )
        else:
            report = run_import(ledger, jobs, batch=batch, check_only=check_only)
    _print(report, as_json, check_only)


def _existing(name: str) -> Path:
    path = Path(name)
    if not path.is_file():
        raise click.BadParameter(f"{name}: no such file", param_hint="FILE")
    return path


def _thread_name(path: Path) -> str:
    name = path.name
    for suffix in _SUFFIXES:
        name = name.removesuffix(suffix)
    cleaned = "".join(char if char.isalnum() or char in "._:-" else "_" for char in name)
    return cleaned.lstrip("._:-")[:100] or "thread"


def _print(report: ImportReport, as_json: bool, check_only: bool) -> None:
    if as_json:
        summary = {
            "checked_only": check_only,
            "entries": report.entries,
            "seconds": round(report.seconds, 3),
            "files": [vars(file) for file in report.files],
            "threads": {name: vars(thread) for name, thread in report.threads.items()},
        }
        echo_json(summary)
        return
    for file in report.files:
        click.echo(f"{file.path}: format {file.fmt} ({file.why}), {file.entries} entries", err=True)
    if not report.threads:
        click.echo("no messages to import; nothing changed")
    if check_only:
        click.echo(f"checked {report.entries} entries; nothing written (--check)")
        return
    for name, thread in report.threads.items():
        made = " (new thread)" if thread.created else ""
        click.echo(
            f"imported {thread.entries} entries into {name}{made} "
            f"(seq {thread.first_seq}..{thread.last_seq})"
        )
