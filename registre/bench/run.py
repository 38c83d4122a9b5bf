"""The benchmark harness behind ``registre bench``: investigations on a real ledger, measured.

:func:`run_bench` first measures appends beside their raw floors
(:mod:`registre.bench.raw`), then for each size and each budget records one investigation
(:mod:`registre.bench.investigation`, the same one for every budget of a size) on its own
thread of one ledger (a fresh embedded SQLite file by default, or the database ``db``
names), through the real API, with a :class:`~registre.bench.measure.RunRecorder` watching
every step; with ``jobs`` above 1 the runs go to worker processes
(:mod:`registre.bench.parallel`), each on a SQLite file of its own unless ``db`` is named.
After the investigation it checks the summary pointers it can afford (``Thread.expand``: the
entry and its verified inclusion proof), projects at the head, signs a checkpoint, proves
inclusion and consistency at seeded positions, exports the signed bundle and verifies it
offline with only the verifier key, each of these in a child process of its own
(:mod:`registre.bench.stepproc`), with the signature checks alone timed on the same bundle,
and builds the thread's Merkle tree beside pymerkle (:mod:`registre.bench.merkle_side`).
Every step is timed with its peak resident memory (:mod:`registre.bench.memory`). Runs above
``lean_above`` entries are lean (:data:`LEAN_ABOVE`). The results are plain JSON data
(schema ``registre-bench/5``, ``specs/bench.md``); :func:`write_outputs` writes
``results.json``, ``report.md`` and the plots.
"""

from __future__ import annotations

import importlib
import json
import os
import platform
import random
import re
import secrets
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

from registre.attest.notes import Signer
from registre.bench.agent import InvestigationConfig
from registre.bench.generate import investigation_steps, policy_for
from registre.bench.measure import RunRecorder, even_points, sample_points
from registre.bench.memory import StepMeter
from registre.bench.merkle_side import compare_trees
from registre.bench.parallel import map_in_processes
from registre.bench.plots import write_plots
from registre.bench.raw import measure_appends
from registre.bench.report import render_report
from registre.bench.schema import SCHEMA, check_results
from registre.bench.stepproc import bundle_leaves, run_export, run_verify
from registre.bench.summary import summarize_run
from registre.context import ExtractiveSummarizer, Summarizer, default_counter
from registre.errors import MalformedError, RegistreError
from registre.ledger import Ledger, Thread

__all__ = [
    "DEFAULT_SUMMARIZER",
    "LEAN_ABOVE",
    "BenchConfig",
    "UnknownSummarizerError",
    "parse_quantity",
    "resolve_summarizer",
    "results_document",
    "run_bench",
    "run_in_worker",
    "run_investigation",
    "write_outputs",
]

DEFAULT_SUMMARIZER = "registre.extractive"
LOG_NAME = "bench.registre.example"
LEAN_ABOVE = 200_000
"""Runs of more entries than this are *lean*: the investigation, its projections at the
sample points, checkpoint, proofs, export and verify run for real, but the working-context
quality tallies, the context baselines, the naive re-folds and the pymerkle comparison are
skipped (they hold the history in memory, which would hide what registre itself uses)."""


class UnknownSummarizerError(MalformedError):
    """A ``--summarizer`` that names no summarizer registre knows and imports none."""


@dataclass(frozen=True)
class BenchConfig:
    """One ``registre bench`` invocation. ``db``: a database URL (default: a fresh SQLite file
    ``bench.db`` in ``out``); the sample counts bound the harness's own work per run. ``jobs``:
    worker processes for the (size, budget) runs (1: all in this process, one after the
    other; more: :func:`run_bench` runs each on a SQLite file of its own, or on ``db``)."""

    out: Path
    sizes: tuple[int, ...] = (1000, 10000)
    budgets: tuple[int, ...] = (8000, 32000, 128000)
    summarizer: str = DEFAULT_SUMMARIZER
    db: str | None = None
    seed: int = 0
    quality_samples: int = 60
    naive_samples: int = 12
    pointer_samples: int = 1000
    projection_samples: int = 90
    prove_samples: int = 200
    head_projections: int = 10
    lean_above: int = LEAN_ABOVE
    verify_jobs: int = 1
    jobs: int = 1
    raw_appends: int = 400
    keep_bundles: bool = False
    model: str = "bench/analyst-1"
    tag: str = field(default_factory=lambda: _run_tag())


def _run_tag() -> str:
    """A suffix that keeps the thread ids of runs on a shared database apart."""
    return datetime.now(UTC).strftime("%Y%m%dT%H%M%S") + "-" + secrets.token_hex(3)


def parse_quantity(text: str, what: str) -> int:
    """``"8k"`` -> 8000, ``"1e4"`` -> 10000, ``"128000"`` -> 128000 (k = 1000, m = 10^6).
    Raises MalformedError naming ``what`` for anything else."""
    match = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?(?:e[0-9]+)?)\s*([km]?)\s*", text.lower())
    if match is None:
        raise MalformedError(f"{what}: {text!r} is not a number such as 8k, 1e4 or 32000")
    value = float(match.group(1)) * {"": 1, "k": 1000, "m": 1_000_000}[match.group(2)]
    if value != int(value) or value < 1:
        raise MalformedError(f"{what}: {text!r} is not a whole positive number")
    return int(value)


def resolve_summarizer(name: str) -> Summarizer:
    """``registre.extractive`` (the default), or ``package.module:callable`` returning a
    summarizer (an LLM summarizer is one callable away). UnknownSummarizerError otherwise."""
    if name == DEFAULT_SUMMARIZER:
        return ExtractiveSummarizer()
    module_name, _, attribute = name.partition(":")
    if not attribute:
        raise UnknownSummarizerError(
            f"unknown summarizer {name!r}: use {DEFAULT_SUMMARIZER} or package.module:callable"
        )
    try:
        factory = getattr(importlib.import_module(module_name), attribute)
        summarizer = factory()
    except (ImportError, AttributeError, TypeError) as exc:
        raise UnknownSummarizerError(f"summarizer {name!r} cannot be loaded: {exc}") from None
    for member in ("name", "version", "summarize"):
        if not hasattr(summarizer, member):
            raise UnknownSummarizerError(f"{name!r} gave an object without {member!r}")
    return summarizer  # type: ignore[no-any-return]


def run_bench(config: BenchConfig, progress: Callable[[int], None] | None = None) -> dict[str, Any]:
    """Run every (size, budget) of ``config``; return the results (``specs/bench.md``).
    ``progress`` is called with the number of planned entries each step advanced (with
    ``jobs`` above 1: in this process, in batches, as the workers report). Appends beside
    their raw floors are measured first, alone, in this process; then the runs, one after
    the other (``jobs`` 1) or in ``jobs`` worker processes (:func:`run_in_worker`), their
    results in the same (size, budget) order either way."""
    summarizer = resolve_summarizer(config.summarizer)
    config.out.mkdir(parents=True, exist_ok=True)
    signer = Signer.generate(LOG_NAME)
    (config.out / "operator.vkey").write_text(signer.vkey() + "\n", encoding="utf-8")
    url = config.db or _fresh_sqlite(config.out / "bench.db")
    started = time.perf_counter()
    runs = []
    pairs = [(size, budget) for size in config.sizes for budget in config.budgets]
    with Ledger.open(url, signer) as ledger:
        appends = None
        if config.raw_appends:
            appends = measure_appends(
                ledger, signer, url, config.out, config.tag, count=config.raw_appends
            )
        if config.jobs == 1:
            for size, budget in pairs:
                runs.append(
                    run_investigation(
                        ledger, signer, config, summarizer, size, budget, progress=progress
                    )
                )
    if config.jobs > 1:
        tasks = [(config, signer.skey(), size, budget) for size, budget in pairs]
        runs = map_in_processes(run_in_worker, tasks, config.jobs, progress)
    database = "postgresql" if url.startswith("postgresql") else "sqlite"
    return results_document(
        config, summarizer, runs, database, time.perf_counter() - started, appends=appends
    )


def results_document(
    config: BenchConfig,
    summarizer: Summarizer,
    runs: Sequence[dict[str, Any]],
    database: str,
    seconds: float,
    *,
    appends: dict[str, Any] | None = None,
) -> dict[str, Any]:
    """The ``registre-bench/5`` document holding ``runs`` (as :func:`run_investigation`
    returns them), with the configuration and the machine they ran on, and ``appends``
    beside their raw floors (:func:`registre.bench.raw.measure_appends`; None when not
    measured)."""
    return {
        "schema": SCHEMA,
        "registre": version("registre"),
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count() or 1,
            "memory_mb": _memory_mb(),
        },
        "config": {
            "seed": config.seed,
            "sizes": sorted({run["size"] for run in runs}),
            "budgets": sorted({run["budget"] for run in runs}),
            "summarizer": {"name": summarizer.name, "version": summarizer.version},
            "token_counter": default_counter().name,
            "database": database,
            "model": config.model,
            "quality_samples": config.quality_samples,
            "naive_samples": config.naive_samples,
            "pointer_samples": config.pointer_samples,
            "projection_samples": config.projection_samples,
            "prove_samples": config.prove_samples,
            "lean_above": config.lean_above,
            "verify_jobs": config.verify_jobs,
            "jobs": config.jobs,
        },
        "appends": appends,
        "runs": list(runs),
        "seconds": seconds,
    }


def _memory_mb() -> int | None:
    """The machine's physical memory (MiB), where the platform says."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES") / 2**20)
    except (ValueError, OSError, AttributeError):
        return None


def _fresh_sqlite(path: Path) -> str:
    for stale in (path, *(Path(f"{path}{end}") for end in ("-wal", "-shm", ".published"))):
        stale.unlink(missing_ok=True)
    return str(path)


def run_in_worker(
    config: BenchConfig,
    skey: str,
    size: int,
    budget: int,
    *,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """One (size, budget) run of ``registre bench --jobs N`` in a worker process: on a fresh
    SQLite file of its own, ``bench-SIZE-BUDGET.db`` in ``out`` (so its durable commits and
    write lock queue behind no other run's), or on ``db`` when one is named; signed with the
    key ``skey`` holds (the invocation's operator key)."""
    signer = Signer.from_skey(skey)
    summarizer = resolve_summarizer(config.summarizer)
    url = config.db or _fresh_sqlite(config.out / f"bench-{size}-{budget}.db")
    with Ledger.open(url, signer) as ledger:
        return run_investigation(
            ledger, signer, config, summarizer, size, budget, progress=progress
        )


def run_investigation(
    ledger: Ledger,
    signer: Signer,
    config: BenchConfig,
    summarizer: Summarizer,
    size: int,
    budget: int,
    *,
    thread_id: str | None = None,
    bundle: Path | None = None,
    progress: Callable[[int], None] | None = None,
) -> dict[str, Any]:
    """Record one investigation of ``size`` entries at ``budget`` tokens on a new thread of
    ``ledger`` (``thread_id``, default ``bench-nSIZE-bBUDGET-sSEED``), measure it, export
    its bundle (to ``bundle``, kept; default: a file in ``out/bundles``, removed unless
    ``keep_bundles``) and verify it with ``signer``'s verifier key. Returns the run's entry
    of ``results.json``."""
    if thread_id is None:
        thread_id = f"bench-n{size}-b{budget}-s{config.seed}"
        if config.db is not None:
            thread_id += f"-{config.tag}"
    run_started = time.perf_counter()
    thread = ledger.create_thread(thread_id)
    policy = policy_for(budget)
    counter = default_counter()
    lean = size > config.lean_above
    recorder = RunRecorder(
        ledger,
        thread,
        policy,
        counter,
        quality_points=sample_points(size, config.quality_samples),
        naive_points=[] if lean else sample_points(size, config.naive_samples, start=100),
        checkpoint_every=max(1000, size // 8),
        projection_points=even_points(size, config.projection_samples),
        lean=lean,
        pointer_capacity=config.pointer_samples,
    )
    investigation, steps = investigation_steps(
        InvestigationConfig(size, config.seed, policy, summarizer, counter, config.model)
    )
    with StepMeter() as appending:
        for step in steps:
            recorder.on_step(step, step.run(thread))
            if progress is not None:
                progress(step.plans)
    recorder.flush()  # the steps after the last model call
    assert appending.measure is not None
    measured = {"append": appending.measure.to_json()}
    pointers_started = time.perf_counter()
    extra: dict[str, Any] = {
        "wall_s": appending.measure.seconds,
        "lean": lean,
        "storyline": asdict(investigation.stats),
        "pointers": _check_pointers(thread, recorder, config),
        "stale_at_end": sum(1 for c in thread.conclusions.list(stale=True) if c.status == "active"),
        "facts": investigation.facts,
    }
    harness = {"pointers_s": time.perf_counter() - pointers_started}
    measured["project"] = _head_projections(thread, recorder, config)
    with StepMeter() as checkpointing:
        thread.checkpoint()
    assert checkpointing.measure is not None
    measured["checkpoint"] = checkpointing.measure.to_json()
    measured["prove"] = _proofs(thread, config)
    url = ledger.engine.url.render_as_string(hide_password=False)
    extra["bundle"] = _bundle(url, signer, thread, config, bundle, measured)
    extra["steps"] = measured
    started = time.perf_counter()
    path = Path(extra["bundle"].pop("file"))
    if not lean:
        # the leaves of the exported (and verified) bundle; both roots are checked against
        # the thread's signed head, so reading them again with signatures is not needed
        batches = _leaf_batches(bundle_leaves(path))
        extra["merkle"] = compare_trees(thread, batches, seed=config.seed)
    if extra["bundle"]["path"] is None:
        path.unlink()
    harness["merkle_s"] = time.perf_counter() - started
    harness["signatures_s"] = extra["bundle"]["signatures_s"]
    extra["harness"] = {name: round(value, 3) for name, value in harness.items()}
    extra["run_s"] = time.perf_counter() - run_started
    return summarize_run(recorder, size=size, budget=budget, origin=thread.origin, extra=extra)


def _head_projections(thread: Thread, recorder: RunRecorder, config: BenchConfig) -> dict[str, Any]:
    """``thread.project`` at the head ``head_projections`` times, as one step; the step's
    ``seconds`` is the median call."""
    policy = recorder.policy
    times: list[float] = []
    with StepMeter() as meter:
        for _ in range(max(1, config.head_projections)):
            start = time.perf_counter()
            thread.project(budget=policy.budget_tokens, policy=policy, counter=recorder.counter)
            times.append(time.perf_counter() - start)
    assert meter.measure is not None
    step = meter.measure.to_json()
    step["seconds"] = round(sorted(times)[len(times) // 2], 6)
    step["count"] = len(times)
    return step


def _proofs(thread: Thread, config: BenchConfig) -> dict[str, Any]:
    """Inclusion proofs of ``prove_samples`` seeded entries, and consistency proofs from as
    many seeded earlier sizes, all to the head: one step; ``seconds`` is the whole step."""
    size = thread.head().size
    rng = random.Random(config.seed)
    count = min(size, config.prove_samples)
    seqs = rng.sample(range(size), count)
    olds = [rng.randint(1, size) for _ in range(count)]
    with StepMeter() as meter:
        for seq in seqs:
            thread.prove_inclusion(seq)
        for old in olds:
            thread.prove_consistency(old)
    assert meter.measure is not None
    step = meter.measure.to_json()
    step["count"] = 2 * count
    return step


def _check_pointers(thread: Thread, recorder: RunRecorder, config: BenchConfig) -> dict[str, int]:
    """Expand both ends of every summary pointer span (or of a seeded sample of at most
    ``pointer_samples`` spans, then at most ``pointer_samples`` of their ends)."""
    spans = recorder.pointers
    ends = sorted({seq for span in spans for seq in span})
    if len(ends) > config.pointer_samples:
        ends = sorted(random.Random(config.seed).sample(ends, config.pointer_samples))
    resolved = 0
    for seq in ends:
        try:
            entry, _proof = thread.expand(seq)
        except RegistreError:
            continue
        if entry.seq == seq:
            resolved += 1
    return {"spans": recorder.pointer_spans, "checked": len(ends), "resolved": resolved}


def _bundle(
    url: str,
    signer: Signer,
    thread: Thread,
    config: BenchConfig,
    path: Path | None,
    steps: dict[str, Any],
) -> dict[str, Any]:
    """Export the thread's bundle and verify it, each in a child process of its own
    (:mod:`registre.bench.stepproc`: their peak memory is theirs alone), recording both
    steps in ``steps``; the signature checks alone are timed on the same bundle."""
    keep = config.keep_bundles or path is not None
    if path is None:
        folder = config.out / "bundles"
        folder.mkdir(exist_ok=True)
        path = folder / f"{thread.id}.zip"
    exported = run_export(url, thread.id, path)
    steps["export"] = _child_step(exported)
    vkey = path.with_name(path.name + ".vkey")
    vkey.write_text(signer.vkey() + "\n", encoding="utf-8")
    try:
        verified = run_verify(path, vkey, config.verify_jobs)
    finally:
        vkey.unlink(missing_ok=True)
    steps["verify"] = _child_step(verified)
    return {
        "bytes": exported["bytes"],
        "entries": exported["entries"],
        "checkpoints": exported["checkpoints"],
        "export_s": exported["seconds"],
        "verify_s": verified["seconds"],
        "verify_jobs": config.verify_jobs,
        "signatures": verified["signatures"],
        "signatures_s": verified["signatures_s"],
        "verified": verified["verified"],
        "path": str(path) if keep else None,
        "file": str(path),  # removed by the caller once read, unless kept
    }


def _child_step(figures: dict[str, Any]) -> dict[str, Any]:
    return {
        "seconds": round(figures["seconds"], 6),
        "peak_rss_mb": figures["peak_rss_mb"],
        "start_rss_mb": figures["start_rss_mb"],
        "how": "subprocess",
    }


def _leaf_batches(leaves: Iterable[bytes], batch: int = 2000) -> Iterator[list[bytes]]:
    chunk: list[bytes] = []
    for leaf in leaves:
        chunk.append(leaf)
        if len(chunk) == batch:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


def write_outputs(results: dict[str, Any], out: Path) -> dict[str, Path]:
    """Write ``results.json``, ``report.md`` and the PNG plots into ``out``; return their
    paths by name. The JSON is checked against the schema first (``registre.bench.schema``)."""
    check_results(results)
    out.mkdir(parents=True, exist_ok=True)
    paths = {"results": out / "results.json", "report": out / "report.md"}
    paths["results"].write_text(json.dumps(results, indent=1) + "\n", encoding="utf-8")
    plots = write_plots(results, out)
    paths.update(plots)
    paths["report"].write_text(render_report(results, plots), encoding="utf-8")
    return paths
