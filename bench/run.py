"""The benchmark harness behind ``registre bench``: investigations on a real ledger, measured.

For each size and each budget, :func:`run_bench` records one investigation
(:mod:`registre.bench.investigation`, the same one for every budget of a size) on its own thread of
one ledger (a fresh embedded SQLite file by default, or the database ``db`` names), through the
real API, with a :class:`~registre.bench.measure.RunRecorder` watching every step. After the
investigation it checks every summary pointer it can afford (``Thread.expand``: the entry
and its verified inclusion proof), signs a checkpoint, exports the signed bundle
(:func:`registre.ledger.exchange.export.export_thread`), verifies it offline with only the verifier
key (:func:`registre.attest.verifier.verify_bundle`), and builds the thread's Merkle tree beside
pymerkle (:mod:`registre.bench.merkle_side`). The results are plain JSON data (schema
``registre-bench/2``, ``specs/bench.md``); :func:`write_outputs` writes ``results.json``,
``report.md`` and the plots.
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
from collections.abc import Callable, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

from registre.attest.errors import MalformedError, RegistreError
from registre.attest.keys import Signer
from registre.attest.verifier import TrustPolicy, verify_bundle
from registre.bench.generate import investigation_steps, policy_for
from registre.bench.investigation import InvestigationConfig
from registre.bench.measure import RunRecorder, sample_points
from registre.bench.merkle_side import compare_trees
from registre.bench.plots import write_plots
from registre.bench.report import render_report
from registre.bench.schema import SCHEMA, check_results
from registre.bench.summary import summarize_run
from registre.ledger import Ledger, Thread, export_thread
from registre.lifecycle.context import ExtractiveSummarizer, Summarizer, default_counter

__all__ = [
    "DEFAULT_SUMMARIZER",
    "SCHEMA",
    "BenchConfig",
    "UnknownSummarizerError",
    "parse_quantity",
    "resolve_summarizer",
    "results_document",
    "run_bench",
    "run_investigation",
    "write_outputs",
]

DEFAULT_SUMMARIZER = "registre.extractive"
LOG_NAME = "bench.registre.example"


class UnknownSummarizerError(MalformedError):
    """A ``--summarizer`` that names no summarizer registre knows and imports none."""


@dataclass(frozen=True)
class BenchConfig:
    """One ``registre bench`` invocation. ``db``: a database URL (default: a fresh SQLite file
    ``registre.bench.db`` in ``out``); the sample counts bound the harness's own work per run."""

    out: Path
    sizes: tuple[int, ...] = (1000, 10000)
    budgets: tuple[int, ...] = (8000, 32000, 128000)
    summarizer: str = DEFAULT_SUMMARIZER
    db: str | None = None
    seed: int = 0
    quality_samples: int = 60
    naive_samples: int = 12
    pointer_samples: int = 1000
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
    ``progress`` is called with the number of planned entries each step advanced."""
    summarizer = resolve_summarizer(config.summarizer)
    config.out.mkdir(parents=True, exist_ok=True)
    signer = Signer.generate(LOG_NAME)
    (config.out / "operator.vkey").write_text(signer.vkey() + "\n", encoding="utf-8")
    url = config.db or _fresh_sqlite(config.out / "bench.db")
    started = time.perf_counter()
    runs = []
    with Ledger.open(url, signer) as ledger:
        for size in config.sizes:
            for budget in config.budgets:
                runs.append(
                    run_investigation(
                        ledger, signer, config, summarizer, size, budget, progress=progress
                    )
                )
    database = "postgresql" if url.startswith("postgresql") else "sqlite"
    return results_document(config, summarizer, runs, database, time.perf_counter() - started)


def results_document(
    config: BenchConfig,
    summarizer: Summarizer,
    runs: Sequence[dict[str, Any]],
    database: str,
    seconds: float,
) -> dict[str, Any]:
    """The ``registre-bench/2`` document holding ``runs`` (as :func:`run_investigation`
    returns them), with the configuration and the machine they ran on."""
    return {
        "schema": SCHEMA,
        "registre": version("registre"),
        "created": datetime.now(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "machine": {
            "python": platform.python_version(),
            "platform": platform.platform(),
            "cpus": os.cpu_count() or 1,
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
        },
        "runs": list(runs),
        "seconds": seconds,
    }


def _fresh_sqlite(path: Path) -> str:
    for stale in (path, *(Path(f"{path}{end}") for end in ("-wal", "-shm", ".published"))):
        stale.unlink(missing_ok=True)
    return str(path)


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
    thread = ledger.create_thread(thread_id)
    policy = policy_for(budget)
    counter = default_counter()
    recorder = RunRecorder(
        ledger,
        thread,
        policy,
        counter,
        quality_points=sample_points(size, config.quality_samples),
        naive_points=sample_points(size, config.naive_samples, start=100),
        checkpoint_every=max(1000, size // 8),
    )
    investigation, steps = investigation_steps(
        InvestigationConfig(size, config.seed, policy, summarizer, counter, config.model)
    )
    started = time.perf_counter()
    for step in steps:
        recorder.on_step(step, step.run(thread))
        if progress is not None:
            progress(step.plans)
    wall = time.perf_counter() - started
    extra: dict[str, Any] = {
        "wall_s": wall,
        "storyline": asdict(investigation.stats),
        "pointers": _check_pointers(thread, recorder.pointers, config),
        "stale_at_end": sum(1 for c in thread.conclusions.list(stale=True) if c.status == "active"),
        "facts": investigation.facts,
    }
    extra["bundle"] = _bundle(ledger, signer, thread, config, bundle)
    extra["merkle"] = compare_trees(thread, _leaf_batches(thread), seed=config.seed)
    return summarize_run(recorder, size=size, budget=budget, origin=thread.origin, extra=extra)


def _check_pointers(
    thread: Thread, spans: Sequence[tuple[int, int]], config: BenchConfig
) -> dict[str, int]:
    """Expand both ends of every summary pointer span (or a seeded sample of them)."""
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
    return {"spans": len(spans), "checked": len(ends), "resolved": resolved}


def _bundle(
    ledger: Ledger, signer: Signer, thread: Thread, config: BenchConfig, path: Path | None
) -> dict[str, Any]:
    thread.checkpoint()
    keep = config.keep_bundles or path is not None
    if path is None:
        folder = config.out / "bundles"
        folder.mkdir(exist_ok=True)
        path = folder / f"{thread.id}.zip"
    start = time.perf_counter()
    exported = export_thread(ledger, thread.id, path, overwrite=True)
    exported_s = time.perf_counter() - start
    start = time.perf_counter()
    report = verify_bundle(path, TrustPolicy(log_key=signer.verifier()))
    verify_s = time.perf_counter() - start
    if not keep:
        path.unlink()
    return {
        "bytes": exported.bytes,
        "entries": exported.entries,
        "checkpoints": len(exported.checkpoints),
        "export_s": exported_s,
        "verify_s": verify_s,
        "verified": report.verified,
        "path": str(path) if keep else None,
    }


def _leaf_batches(thread: Thread, batch: int = 2000) -> Iterator[list[bytes]]:
    leaves: list[bytes] = []
    for entry in thread.entries(batch=batch):
        leaves.append(entry.leaf)
        if len(leaves) == batch:
            yield leaves
            leaves = []
    if leaves:
        yield leaves


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
