"""`registre demo`: the main job, end to end, on an embedded SQLite ledger.

It plays a short scripted investigation the way an agent platform and an auditor use
registre: create an operator key and a ledger, record signed entries on a thread, sign
checkpoints, prove inclusion and consistency from stored subtree hashes, check both proofs
against the signed checkpoints with the pinned verifier key only, and re-verify the whole
database. Each step prints what it did; a failed check stops the demo with that check's own
error and a non-zero exit. Running it again starts from a fresh database in the same folder.
"""

from __future__ import annotations

from pathlib import Path

import click

from attest.checkpoint import open_checkpoint
from attest.keys import Signer
from attest.proofs import verify_consistency, verify_inclusion
from ledger.cli import cli
from ledger.ledger import Ledger
from ledger.verify_db import verify_database

LOG_NAME = "demo.registre.example"
THREAD = "q3-impairment-review"

# (kind, body, actor): a supervisor's request answered with a query and a decision.
_SCRIPT: list[tuple[str, dict[str, object], str]] = [
    ("turn", {"role": "user", "text": "Reconcile the Q3 impairment figures by segment."}, "user"),
    ("turn", {"role": "assistant", "text": "Reading the portfolio extract first."}, "assistant"),
    (
        "tool.call",
        {
            "call_id": "c1",
            "name": "sql",
            "arguments": {"query": "select segment, sum(ecl) from book group by segment"},
        },
        "assistant",
    ),
    ("tool.result", {"call_id": "c1", "content": "Retail 41.2\nOffices 17.9"}, "tool:sql"),
    ("decision", {"text": "Use the IFRS 9 stage definitions of the 2025 policy."}, "user"),
    ("turn", {"role": "assistant", "text": "Retail reconciles; Offices is 0.4 off."}, "assistant"),
]


def _step(number: int, text: str) -> None:
    click.echo(f"[{number}] {text}")


@cli.command()
@click.option(
    "--dir",
    "workdir",
    type=click.Path(file_okay=False, path_type=Path),
    default=Path(".registre/demo"),
    show_default=True,
    help="Folder for the demo's key, database and outputs.",
)
def demo(workdir: Path) -> None:
    """Run the main job: record, checkpoint, prove and verify a short thread."""
    workdir.mkdir(parents=True, exist_ok=True)
    key_path = workdir / "operator.key"
    if key_path.exists():
        signer = Signer.load(key_path)
        _step(1, f"loaded the operator key {key_path}")
    else:
        signer = Signer.generate(LOG_NAME)
        signer.save(key_path)
        _step(1, f"created the operator key {key_path} (mode 0600)")
    vkey_path = workdir / "operator.vkey"
    vkey_path.write_text(signer.vkey() + "\n", encoding="utf-8")
    click.echo(f"    verifier key (what an auditor pins): {signer.vkey()}")

    db_path = workdir / "ledger.db"
    for stale in (db_path, Path(f"{db_path}-wal"), Path(f"{db_path}-shm")):
        stale.unlink(missing_ok=True)
    with Ledger.open(str(db_path), signer) as ledger:
        thread = ledger.create_thread(THREAD)
        first = thread.append_many(_SCRIPT[:4])
        _step(2, f"SQLite ledger {db_path}: thread {thread.origin}, {len(first)} signed entries")
        old = thread.checkpoint()
        for kind, body, actor in _SCRIPT[4:]:
            thread.append(kind, body, actor)
        new = thread.checkpoint()
        _step(3, f"signed C2SP checkpoints at sizes {old.size} and {new.size}")
        click.echo("    " + new.note.replace("\n", "\n    ").rstrip())

        # An auditor trusts nothing but the pinned verifier key and the signed checkpoints.
        pinned = signer.verifier()
        old_cp = open_checkpoint(old.note, pinned, origin=thread.origin).checkpoint
        new_cp = open_checkpoint(new.note, pinned, origin=thread.origin).checkpoint
        _step(4, "opened both checkpoints with the pinned verifier key")

        seq = 2
        inclusion = thread.prove_inclusion(seq, new_cp.size)
        verify_inclusion(inclusion.leaf_hash, seq, new_cp.size, inclusion.hashes, new_cp.root)
        _step(
            5,
            f"entry {seq} is in the tree of {new_cp.size}: {len(inclusion.hashes)} hash(es), "
            f"{inclusion.reads} stored hash read(s), verified against the checkpoint",
        )
        consistency = thread.prove_consistency(old_cp.size, new_cp.size)
        verify_consistency(old_cp.size, new_cp.size, consistency.hashes, old_cp.root, new_cp.root)
        _step(
            6,
            f"checkpoint {old_cp.size} is a prefix of checkpoint {new_cp.size}: "
            f"{len(consistency.hashes)} hash(es), verified",
        )

        reports = verify_database(ledger, keys=[pinned])
        checked = sum(report.size for report in reports)
        _step(
            7,
            f"verify --db: {checked} entries re-checked (leaf hashes, signatures, prev "
            "bindings, subtrees, heads, checkpoints): clean",
        )

    click.echo(f"done: ledger, key and verifier key are in {workdir}/")
    click.echo(f"try: registre log {THREAD} --db {db_path}")
