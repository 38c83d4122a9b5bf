"""`registre bench`: long synthetic investigations through the real ledger, measured; or, with
``--suite locomo PATH`` / ``--transcripts FILE...``, the working context on data the user
brings (``registre.bench.real``: LoCoMo conversations, agent transcripts), registre beside
truncation, observation masking, the rolling summary and BM25 retrieval alone; it writes
``report-SUITE.md`` and ``results-SUITE.json`` into ``--out`` (``--json``: the results on
standard output).

For each size and budget it records one investigation (``registre.bench.investigation``) on a fresh
embedded SQLite ledger in ``--out`` (or on the database ``--db`` names), projecting the
context at every model call and compacting as the policy says, then exports and verifies a
signed bundle, each step timed with its peak resident memory. It writes ``report.md``
(tables), ``results.json`` (schema ``registre-bench/5``, ``specs/bench.md``) and PNG plots
into ``--out``. ``--jobs N`` runs the (size, budget) runs in N worker processes, each on a
SQLite file of its own (``bench-SIZE-BUDGET.db``) unless ``--db`` is given; the progress bar
advances as they report. Nothing is asserted:
figures and ratios are reported. The ``bench`` package is imported only when the command
runs.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import click

__all__ = ["bench_command"]

MAX_SIZE = 2_000_000
"""The largest investigation bench records (entries): a few GB of memory and database."""
MAX_BUDGET = 10_000_000
"""The largest context budget bench accepts (tokens)."""
SYNTHETIC_BUDGETS = "8k,32k,128k"
REAL_BUDGETS = "4k,8k,16k"


def _quantities(text: str, what: str, option: str, limit: int) -> tuple[int, ...]:
    from registre.bench import parse_quantity

    try:
        values = tuple(parse_quantity(part, what) for part in text.split(",") if part.strip())
    except OverflowError:
        values = (limit + 1,)
    if not values:
        raise click.BadParameter(f"give at least one {what} (e.g. 1e3,1e4)", param_hint=option)
    if max(values) > limit:
        raise click.BadParameter(f"{what}s are at most {limit:,}", param_hint=option)
    return values


def _budgets(text: str | None, default: str) -> tuple[int, ...]:
    """``--budgets`` (``default`` when not given), in tokens."""
    return _quantities(default if text is None else text, "budget", "--budgets", MAX_BUDGET)


def _echo_written(written: Mapping[str, Path], *, err: bool = False) -> None:
    for name, path in written.items():
        click.echo(f"  {name:>8}: {path}", err=err)


def _refuse_used_database(url: str) -> None:
    """RefusedError if the database ``--db`` names holds any thread: bench writes threads and
    a key of its own, for ever (a ledger is append-only), so it runs on an empty one only."""
    from registre.errors import RefusedError
    from registre.ledger import Ledger, LedgerNotFoundError

    try:
        with Ledger.open(url, create=False) as ledger:
            threads = ledger.thread_ids()
    except LedgerNotFoundError:
        return  # bench creates it
    if threads:
        raise RefusedError(
            f"--db holds {len(threads)} thread(s) already; bench writes only to an empty "
            f"database (its threads and key would stay in this ledger for ever)"
        ).with_hint("create an empty database for the benchmark and name it with --db")


@click.command("bench")
@click.argument("paths", nargs=-1, type=click.Path(exists=True, dir_okay=True, path_type=Path))
@click.option(
    "--suite",
    type=click.Choice(["locomo"]),
    default=None,
    help="A public benchmark on data you bring: locomo PATH (locomo10.json, a sample, the zip, "
    "or a directory of per-conversation files).",
)
@click.option(
    "--transcripts",
    is_flag=True,
    help="Replay each transcript PATH (any format `registre import` reads) as an agent loop "
    "and score the probes the agent reuses.",
)
@click.option(
    "--questions",
    type=click.IntRange(min=1, max=10_000),
    default=30,
    show_default=True,
    help="--suite locomo: questions per conversation (categories 1-4).",
)
@click.option(
    "--conversations",
    type=click.IntRange(min=1),
    default=None,
    help="--suite locomo: only the first N conversations.",
)
@click.option(
    "--format",
    "fmt",
    default="auto",
    show_default=True,
    help="--transcripts: the transcripts' format (auto: detected).",
)
@click.option("--json", "as_json", is_flag=True, help="Real-data suites: print the results JSON.")
@click.option(
    "--baselines-full-budget",
    "baselines_full",
    is_flag=True,
    help="Real-data suites: give the baselines the whole budget, not the room registre's "
    "policy leaves beside its output reserve.",
)
@click.option(
    "--sizes",
    default="1e3,1e4",
    show_default=True,
    help=f"Investigation sizes in entries, comma separated (1e3, 5000, 20k; at least 100, "
    f"at most {MAX_SIZE:,}).",
)
@click.option(
    "--budgets",
    default=None,
    help=f"Context budgets in tokens, comma separated (k = 1000; at most {MAX_BUDGET:,}); "
    f"default {SYNTHETIC_BUDGETS} (synthetic), {REAL_BUDGETS} (--suite, --transcripts).",
)
@click.option(
    "--summarizer",
    default="registre.extractive",
    show_default=True,
    help="registre.extractive, or package.module:callable returning a summarizer.",
)
@click.option(
    "--db",
    "db",
    default=None,
    metavar="URL",
    help="Database URL (e.g. postgresql+psycopg://...), empty (no thread); default: a fresh "
    "SQLite file in --out.",
)
@click.option(
    "--out",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(".registre/bench"),
    show_default=True,
    help="Folder for report.md, results.json, the plots and the SQLite ledger.",
)
@click.option("--seed", type=int, default=0, show_default=True, help="The investigations' seed.")
@click.option("--keep-bundles", is_flag=True, help="Keep the exported bundles in --out/bundles.")
@click.option(
    "--lean-above",
    default="200k",
    show_default=True,
    help="Sizes above this many entries run lean: every step for real, but no quality "
    "tallies, context baselines, naive re-folds or pymerkle comparison.",
)
@click.option(
    "--verify-jobs",
    type=click.IntRange(min=1, max=64),
    default=1,
    show_default=True,
    help="Processes the bundle verifier uses (the signature checks alone use one).",
)
@click.option(
    "--jobs",
    type=click.IntRange(min=1, max=64),
    default=1,
    show_default=True,
    help="Worker processes for the (size, budget) runs, each on a SQLite file of its own "
    "(bench-SIZE-BUDGET.db in --out) unless --db is given; concurrent runs share the cores.",
)
@click.option(
    "--raw-appends",
    type=click.IntRange(min=0, max=100_000),
    default=400,
    show_default=True,
    help="Entries per measure of appends beside raw durable transactions (0: not measured).",
)
def bench_command(
    paths: tuple[Path, ...],
    suite: str | None,
    transcripts: bool,
    questions: int,
    conversations: int | None,
    fmt: str,
    as_json: bool,
    baselines_full: bool,
    sizes: str,
    budgets: str | None,
    summarizer: str,
    db: str | None,
    out: Path,
    seed: int,
    keep_bundles: bool,
    lean_above: str,
    verify_jobs: int,
    jobs: int,
    raw_appends: int,
) -> None:
    """Benchmark registre on long synthetic investigations, or on data you bring (--suite
    locomo PATH, --transcripts FILE...); write a report."""
    if suite is not None or transcripts or paths:
        real = _RealOptions(questions, conversations, fmt, as_json, baselines_full)
        _real(paths, suite, transcripts, real, budgets, out)
        return
    from registre.bench import (
        MIN_ENTRIES,
        BatchedProgress,
        BenchConfig,
        resolve_summarizer,
        run_bench,
        write_outputs,
    )

    size_list = _quantities(sizes, "size", "--sizes", MAX_SIZE)
    if min(size_list) < MIN_ENTRIES:
        raise click.BadParameter(
            f"sizes must be at least {MIN_ENTRIES} entries", param_hint="--sizes"
        )
    budget_list = _budgets(budgets, SYNTHETIC_BUDGETS)
    (lean,) = _quantities(lean_above, "size", "--lean-above", 10 * MAX_SIZE)[:1]
    resolve_summarizer(summarizer)  # a bad name fails before anything runs
    if db is not None:
        _refuse_used_database(db)
    config = BenchConfig(
        out=out,
        sizes=size_list,
        budgets=budget_list,
        summarizer=summarizer,
        db=db,
        seed=seed,
        keep_bundles=keep_bundles,
        lean_above=lean,
        verify_jobs=verify_jobs,
        jobs=jobs,
        raw_appends=raw_appends,
    )
    total = sum(size_list) * len(budget_list)
    with click.progressbar(length=total, label="registre bench", show_pos=True) as bar:
        advance = BatchedProgress(bar.update)
        results = run_bench(config, advance)
        advance.flush()
    written = write_outputs(results, out)
    click.echo(f"{len(results['runs'])} run(s) in {results['seconds']:.0f} s")
    _echo_written(written)


@dataclass(frozen=True)
class _RealOptions:
    questions: int
    conversations: int | None
    fmt: str
    as_json: bool
    baselines_full: bool


def _real(
    paths: tuple[Path, ...],
    suite: str | None,
    transcripts: bool,
    options: _RealOptions,
    budgets: str | None,
    out: Path,
) -> None:
    """``--suite locomo PATH...`` or ``--transcripts FILE...`` (module docstring)."""
    import json

    from registre.bench.real import (
        LocomoConfig,
        TranscriptConfig,
        load_locomo,
        run_locomo,
        run_transcripts,
        write_real_outputs,
    )

    if suite is not None and transcripts:
        raise click.UsageError("give --suite locomo PATH or --transcripts FILE..., not both")
    if suite is None and not transcripts:
        raise click.UsageError("PATH given without --suite locomo or --transcripts")
    if not paths:
        what = "the LoCoMo file or folder" if suite else "at least one transcript file"
        raise click.UsageError(f"give {what} after the options")
    budget_list = _budgets(budgets, REAL_BUDGETS)

    def progress(text: str) -> None:
        click.echo(f"  {text}", err=True)

    if suite == "locomo":
        found = [conversation for path in paths for conversation in load_locomo(path)]
        config = LocomoConfig(
            budget_list,
            options.questions,
            options.conversations,
            baselines_full=options.baselines_full,
        )
        results = run_locomo(found, config, out, progress)
    else:
        fmt = options.fmt
        if fmt != "auto":
            from registre.importers import FORMAT_NAMES

            if fmt not in FORMAT_NAMES:
                raise click.BadParameter(
                    f"expected auto or one of {', '.join(FORMAT_NAMES)}", param_hint="--format"
                )
        tconfig = TranscriptConfig(budget_list, fmt, baselines_full=options.baselines_full)
        results = run_transcripts(paths, tconfig, out, progress)
    written = write_real_outputs(results, out)
    if options.as_json:
        click.echo(json.dumps(results, indent=1, ensure_ascii=False))
        return
    click.echo(written["report"].read_text(encoding="utf-8"))
    _echo_written(written, err=True)
