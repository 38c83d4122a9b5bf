"""`registre demo`: the main job, end to end, on an embedded SQLite ledger.

It plays one long synthetic investigation (``registre.bench.investigation``: a supervisor's request
answered with queries, document reads, evidence, hypotheses, committee detours, decisions
and a final answer) the way an agent platform records it, then does what an auditor does:

1. create (or load) the operator key, and write the verifier key an auditor pins;
2. record the investigation on a fresh SQLite ledger through the thread API, compacting the
   working context as the policy says before every model call, with signed checkpoints;
3. replay the context of the last model call from the ledger and prove its digest;
4. expand a summary pointer to its entry, with an inclusion proof checked against the
   signed checkpoint using the pinned verifier key only;
5. export the signed audit bundle and verify it offline (``registre.attest.verify.verifier``);
6. write the benchmark report of the run (``report.md``, ``results.json``, plots);
7. write the audit report of the bundle (``audit.html``), and the investigation as slides
   (``slides.html``) and as a notebook (``thread.ipynb``), all three read from the verified
   bundle and opening with its verdict line.

Each step prints what it did; a failed check stops the demo with that check's own error and
a non-zero exit. Running it again starts from a fresh database in the same folder (the key
is kept) -- but only when the database there is the demo's own (it holds the demo's thread
alone): any other file named ``ledger.db`` in ``--dir`` is refused, never deleted.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import click

from registre.attest.notes import Signer, open_checkpoint
from registre.attest.tree import verify_inclusion
from registre.attest.verify import TrustPolicy, verify_bundle
from registre.cli.files import write_atomically
from registre.errors import RefusedError, RegistreError
from registre.kinds import CONTEXT_COMPACTION, MODEL_CALL, TOOL_CALL
from registre.ledger import Ledger, Thread
from registre.report import gather, render_report
from registre.report.notebook import render_notebook
from registre.report.slides import render_slides

__all__ = ["demo"]

LOG_NAME = "demo.registre.example"
THREAD = "q3-impairment-review"
MAX_DEMO_ENTRIES = 1_000_000
"""The largest investigation the demo records (about an hour on a laptop, a few GB)."""
MAX_DEMO_BUDGET = 10_000_000


def _step(number: int, text: str) -> None:
    click.echo(f"[{number}] {text}")


@click.command()
@click.option(
    "--dir",
    "workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(".registre/demo"),
    show_default=True,
    help="Folder for the demo's key, database, bundle and report.",
)
@click.option(
    "--entries",
    type=click.IntRange(min=100, max=MAX_DEMO_ENTRIES),
    default=3000,
    show_default=True,
    help="Size of the investigation, in entries (compactions come on top).",
)
@click.option(
    "--budget",
    type=click.IntRange(min=1000, max=MAX_DEMO_BUDGET),
    default=8000,
    show_default=True,
    help="Context budget of every model call, in tokens.",
)
def demo(workdir: Path, entries: int, budget: int) -> None:
    """Run the main job: record a long investigation, export, verify, report."""
    from registre.bench import (
        BenchConfig,
        resolve_summarizer,
        results_document,
        run_investigation,
        write_outputs,
    )

    db_path = workdir / "ledger.db"
    _refuse_foreign_database(db_path)
    workdir.mkdir(parents=True, exist_ok=True)
    signer = _operator_key(workdir)
    vkey_path = workdir / "operator.vkey"
    vkey_path.write_text(signer.vkey() + "\n", encoding="utf-8")
    click.echo(f"    verifier key (what an auditor pins): {signer.vkey()}")

    for stale in (db_path, *(Path(f"{db_path}{end}") for end in ("-wal", "-shm", ".published"))):
        stale.unlink(missing_ok=True)
    bundle_path = workdir / "bundle.zip"
    config = BenchConfig(out=workdir, quality_samples=30, naive_samples=6, pointer_samples=200)
    summarizer = resolve_summarizer(config.summarizer)
    started = time.perf_counter()
    with Ledger.open(str(db_path), signer) as ledger:
        with click.progressbar(length=entries, label="    recording") as bar:
            run = run_investigation(
                ledger,
                signer,
                config,
                summarizer,
                entries,
                budget,
                thread_id=THREAD,
                bundle=bundle_path,
                progress=bar.update,
            )
        thread = ledger.thread(THREAD)
        _recorded(run, db_path, thread)
        _replayed(run, thread)
        _expanded(run, thread, signer)
    _exported(run, bundle_path, signer)
    # the report, the slides and the notebook are all read from the verified bundle, and
    # open with its verdict
    audit_path = workdir / "audit.html"
    notebook_path, slides_path = workdir / "thread.ipynb", workdir / "slides.html"
    audit = gather(bundle_path, TrustPolicy(log_key=signer.verifier()))
    write_atomically(audit_path, render_report(audit))
    write_atomically(slides_path, render_slides(audit))
    write_atomically(notebook_path, [render_notebook(audit, bundle=bundle_path.name)])
    results = results_document(config, summarizer, [run], "sqlite", time.perf_counter() - started)
    paths = write_outputs(results, workdir)
    _step(
        7,
        f"benchmark report of this run: {paths['report']} "
        f"(+ results.json and {len(paths) - 2} plots)",
    )
    _step(
        8,
        f"audit report {audit_path} ({len(audit.contexts)} model-call contexts rebuilt), the "
        f"investigation as slides {slides_path} and as a notebook {notebook_path}, each "
        f"opening with the verdict: {audit.verification.verdict()}",
    )
    click.echo("done:")
    click.echo(f"    audit report: {audit_path} (open it in a browser)")
    click.echo(f"    notebook:     {notebook_path}")
    click.echo(f"    slides:       {slides_path}")
    click.echo(f"    bench report: {paths['report']}")
    click.echo(f"    bundle:       {bundle_path}")
    click.echo(f"    verifier key: {vkey_path}")
    click.echo(f"try: registre verify {bundle_path} --key-file {vkey_path}")


def _refuse_foreign_database(db_path: Path) -> None:
    """RefusedError unless ``db_path`` is absent or a ledger holding the demo's thread alone
    (a previous demo run, which the demo replaces)."""
    if not db_path.exists() and not db_path.is_symlink():
        return
    refused = RefusedError(
        f"{db_path} exists and is not a previous demo's ledger; the demo never deletes it"
    ).with_hint("choose another --dir (the demo writes a fresh ledger.db there)")
    if not db_path.is_file() or db_path.is_symlink():
        raise refused
    try:
        with Ledger.open(str(db_path), create=False) as ledger:
            threads = ledger.threads()
    except RegistreError:
        raise refused from None
    if [(t.id, t.origin) for t in threads] not in ([], [(THREAD, f"{LOG_NAME}/{THREAD}")]):
        raise refused


def _operator_key(workdir: Path) -> Signer:
    key_path = workdir / "operator.key"
    if key_path.exists():
        signer = Signer.load(key_path)
        _step(1, f"loaded the operator key {key_path}")
    else:
        signer = Signer.generate(LOG_NAME)
        signer.save(key_path)
        _step(1, f"created the operator key {key_path} (mode 0600)")
    return signer


def _recorded(run: dict[str, Any], db_path: Path, thread: Thread) -> None:
    kinds = run["kinds"]
    story = run["storyline"]
    _step(
        2,
        f"recorded thread {thread.origin} on {db_path}: {run['entries']} signed entries in "
        f"{run['wall_s']:.0f} s ({kinds.get(MODEL_CALL, 0)} model calls, "
        f"{kinds.get(TOOL_CALL, 0)} tool calls, {kinds.get(CONTEXT_COMPACTION, 0)} "
        f"compactions, {story['evidence_admitted']} evidence admitted, "
        f"{story['hypotheses']} hypotheses, {story['committee_detours']} committee detours, "
        f"{story['pins']} pins)",
    )
    checkpoints = thread.checkpoints()
    _step(3, f"signed {len(checkpoints)} C2SP checkpoints, the last at size {checkpoints[-1].size}")
    click.echo("    " + checkpoints[-1].note.replace("\n", "\n    ").rstrip())


def _replayed(run: dict[str, Any], thread: Thread) -> None:
    call_seq = run["context"]["series"][-1][0]
    projection = thread.replay_context(call_seq)
    statuses = ", ".join(f"{n} {s}" for s, n in run["context"]["final_status"].items())
    _step(
        4,
        f"replayed the context of the last model call (entry {call_seq}) from the ledger: "
        f"digest proved, {projection.tokens} of {projection.budget} tokens, "
        f"{len(projection.messages)} messages; entries {statuses}",
    )


def _expanded(run: dict[str, Any], thread: Thread, signer: Signer) -> None:
    compaction, pointers = None, []
    for seq in reversed(run["compaction"]["seqs"]):  # the latest compaction with a summary
        compaction = thread.entry(seq)
        pointers = [
            line["pointers"][0][0]
            for line in compaction.body.get("summary") or []
            if line.get("pointers")
        ]
        if pointers:
            break
    if compaction is None or not pointers:
        _step(5, "no summary pointer to expand: the context never needed compacting "
                 "(lower --budget or raise --entries to see one)")  # fmt: skip
        return
    seq = int(pointers[0])
    stored = thread.latest_checkpoint()
    assert stored is not None
    checkpoint = open_checkpoint(stored.note, signer.verifier(), origin=thread.origin).checkpoint
    entry, proof = thread.expand(seq, checkpoint.size)
    verify_inclusion(proof.leaf_hash, seq, checkpoint.size, proof.hashes, checkpoint.root)
    _step(
        5,
        f"expanded the pointer (seq {seq}) of a summary line of compaction {compaction.seq}: "
        f"a {entry.kind} entry, its inclusion proof ({len(proof.hashes)} hashes) checked "
        f"against the signed checkpoint of size {checkpoint.size} with the pinned key",
    )


def _exported(run: dict[str, Any], bundle_path: Path, signer: Signer) -> None:
    bundle = run["bundle"]
    report = verify_bundle(bundle_path, TrustPolicy(log_key=signer.verifier()))
    steps = ", ".join(f"{step.name} {step.status}" for step in report.steps)
    _step(
        6,
        f"exported the signed bundle {bundle_path} ({bundle['bytes'] / 1e6:.1f} MB, "
        f"{bundle['entries']} entries, {bundle['checkpoints']} checkpoints) in "
        f"{bundle['export_s']:.1f} s and verified it offline with the verifier key only "
        f"({steps})",
    )
