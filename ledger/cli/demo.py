"""`registre demo`: the main job, end to end, on files under one folder.

Today it walks through the attest layer the way a log operator and an auditor use it: create
an operator key, build a tree over a few signed entries, sign a checkpoint, prove inclusion
and consistency, and verify both against the signed checkpoint only. Each step prints what
it did; any failed check stops the demo with the check's own error and a non-zero exit.
"""

from __future__ import annotations

from pathlib import Path

import click

from attest.canonical import canonical_bytes
from attest.checkpoint import Checkpoint, open_checkpoint, sign_checkpoint
from attest.keys import Signer
from attest.merkle import CompactRange, MemoryHashSource, leaf_hash, root_at
from attest.proofs import (
    consistency_proof,
    inclusion_proof,
    verify_consistency,
    verify_inclusion,
)
from ledger.cli import cli

LOG_NAME = "demo.registre.example"
THREAD = "q3-impairment-review"

_SCRIPT = [
    ("turn", "user", {"role": "user", "text": "Reconcile the Q3 impairment figures."}),
    ("turn", "assistant", {"role": "assistant", "text": "Reading the portfolio extract."}),
    ("tool.call", "assistant", {"name": "sql", "arguments": {"q": "select 1"}, "call_id": "c1"}),
    ("tool.result", "tool:sql", {"call_id": "c1", "content": "1 row"}),
    ("decision", "user", {"text": "Use the IFRS 9 stage definitions."}),
    ("turn", "assistant", {"role": "assistant", "text": "All segments reconcile."}),
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
    help="Folder for the demo's key and outputs.",
)
def demo(workdir: Path) -> None:
    """Run the main job: sign, checkpoint, prove and verify a short thread."""
    workdir.mkdir(parents=True, exist_ok=True)
    key_path = workdir / "operator.key"
    if key_path.exists():
        signer = Signer.load(key_path)
        _step(1, f"loaded operator key {signer.vkey()}")
    else:
        signer = Signer.generate(LOG_NAME)
        signer.save(key_path)
        _step(1, f"created operator key {key_path} (mode 0600)")
    vkey = signer.vkey()
    (workdir / "operator.vkey").write_text(vkey + "\n")
    click.echo(f"    verifier key: {vkey}")

    origin = f"{signer.name}/{THREAD}"
    frontier = CompactRange()
    source = MemoryHashSource()
    for seq, (kind, actor, body) in enumerate(_SCRIPT):
        envelope = {"v": 1, "log": origin, "seq": seq, "kind": kind, "actor": actor, "body": body}
        leaf = canonical_bytes(envelope)
        digest = leaf_hash(leaf)
        frontier.append(digest)
        source.append(digest)
    _step(2, f"built the RFC 9162 tree over {frontier.size} canonical entries")
    click.echo(f"    root: {frontier.root().hex()}")

    old_size = 4
    old_note = sign_checkpoint(Checkpoint(origin, old_size, root_at(source, old_size)), signer)
    new_note = sign_checkpoint(Checkpoint(origin, frontier.size, frontier.root()), signer)
    (workdir / "checkpoint.txt").write_text(new_note)
    _step(3, f"signed checkpoints at sizes {old_size} and {frontier.size} (C2SP signed note)")
    click.echo("    " + new_note.replace("\n", "\n    ").rstrip())

    verifier = signer.verifier()
    old = open_checkpoint(old_note, verifier, origin=origin).checkpoint
    new = open_checkpoint(new_note, verifier, origin=origin).checkpoint
    _step(4, "opened both checkpoints with the pinned verifier key only")

    index = 2
    proof = inclusion_proof(source, index, new.size)
    verify_inclusion(source.node(0, index), index, new.size, proof, new.root)
    _step(5, f"inclusion of entry {index} in tree size {new.size}: {len(proof)} hash(es), verified")

    proof = consistency_proof(source, old.size, new.size)
    verify_consistency(old.size, new.size, proof, old.root, new.root)
    _step(6, f"consistency {old.size} -> {new.size}: {len(proof)} hash(es), verified")

    click.echo(f"done: key, verifier key and checkpoint are in {workdir}/")
