"""`registre prove inclusion|consistency`: proofs bound to a signed checkpoint.

Output formats: specs/proof-format.md (inclusion is the C2SP tlog-proof format). The
checkpoint is the stored one at the proof's tree size; a size with none is refused (a proof
is a read, and reads never write: ``registre checkpoint THREAD --size N`` signs one). Before
printing, each proof is checked against that checkpoint, so the command never prints a proof
that does not verify.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import click

from registre.attest.errors import NoTrustedSignatureError, RootMismatchError
from registre.attest.notes import Verifier, open_checkpoint
from registre.attest.tree import verify_consistency, verify_inclusion
from registre.cli.options import (
    b64,
    echo_json,
    json_option,
    ledger_options,
    open_ledger,
    stored_checkpoint,
)
from registre.errors import RegistreError
from registre.ledger import format_consistency_proof, format_inclusion_proof

__all__ = ["prove_group"]


@click.group("prove")
def prove_group() -> None:
    """Print inclusion and consistency proofs."""


@prove_group.command("inclusion")
@click.argument("thread_id", metavar="THREAD")
@click.argument("seq", type=int)
@click.option("--size", type=int, default=None, help="Tree size (default: the head).")
@json_option
@ledger_options
def inclusion(
    thread_id: str,
    seq: int,
    size: int | None,
    as_json: bool,
    db: str | None,
    key_file: Path | None,
) -> None:
    """Prove that entry SEQ is in THREAD's tree (C2SP tlog-proof)."""
    with open_ledger(db, key_file) as ledger:
        thread = ledger.thread(thread_id)
        proof = thread.prove_inclusion(seq, size)
        stored = stored_checkpoint(thread, proof.size)
        keys = ledger.keys()
    root = _signed_root(stored.note, keys, thread.origin, proof.size)
    verify_inclusion(proof.leaf_hash, seq, proof.size, proof.hashes, root)
    if as_json:
        echo_json(
            {
                "thread": thread_id,
                "seq": seq,
                "size": proof.size,
                "leaf_hash": b64(proof.leaf_hash),
                "hashes": [b64(h) for h in proof.hashes],
                "checkpoint": stored.note,
            }
        )
        return
    click.echo(format_inclusion_proof(seq, proof.hashes, stored.note), nl=False)


@prove_group.command("consistency")
@click.argument("thread_id", metavar="THREAD")
@click.argument("old_size", metavar="OLD", type=int)
@click.argument("new_size", metavar="NEW", type=int)
@json_option
@ledger_options
def consistency(
    thread_id: str,
    old_size: int,
    new_size: int,
    as_json: bool,
    db: str | None,
    key_file: Path | None,
) -> None:
    """Prove that THREAD's tree of NEW entries extends its tree of OLD entries."""
    with open_ledger(db, key_file) as ledger:
        thread = ledger.thread(thread_id)
        proof = thread.prove_consistency(old_size, new_size)
        stored = stored_checkpoint(thread, new_size)
        keys = ledger.keys()
    root = _signed_root(stored.note, keys, thread.origin, new_size)
    verify_consistency(old_size, new_size, proof.hashes, proof.old_root, root)
    if as_json:
        echo_json(
            {
                "thread": thread_id,
                "old_size": old_size,
                "new_size": new_size,
                "old_root": b64(proof.old_root),
                "hashes": [b64(h) for h in proof.hashes],
                "checkpoint": stored.note,
            }
        )
        return
    click.echo(format_consistency_proof(old_size, proof.hashes, stored.note), nl=False)


def _signed_root(note: str, keys: Sequence[Verifier], origin: str, size: int) -> bytes:
    """The root of the signed checkpoint ``note``, verified under a key named like the log."""
    name = origin.rsplit("/", 1)[0]
    failure: RegistreError = NoTrustedSignatureError(f"no verifier key named {name!r} is known")
    for key in keys:
        if key.name != name:
            continue
        try:
            checkpoint = open_checkpoint(note, key, origin=origin).checkpoint
        except RegistreError as exc:
            failure = exc
            continue
        if checkpoint.size != size:
            raise RootMismatchError(f"checkpoint is for size {checkpoint.size}, not {size}")
        return checkpoint.root
    raise failure
