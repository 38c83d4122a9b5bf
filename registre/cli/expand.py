"""`registre expand THREAD SEQ [--size N]`: the entry behind a summary pointer, with its proof.

Prints the entry's signed leaf (one line of canonical JSON, byte for byte as stored), then its
inclusion proof in the C2SP ``tlog-proof`` form (``specs/proof-format.md``): ``index SEQ``,
the proof hashes, a blank line and the signed checkpoint of the tree of ``--size`` entries
(default: the head). The checkpoint is the stored one at that size; a size with none is
refused (reads never write: ``registre checkpoint THREAD --size N`` signs one). Before
printing, the proof is checked against the signed checkpoint under a key named like the log,
so the command never prints a proof that does not verify.
"""

from __future__ import annotations

import json
from pathlib import Path

import click

from registre.attest.errors import NoTrustedSignatureError, RootMismatchError
from registre.attest.notes import open_checkpoint
from registre.attest.tree import verify_inclusion
from registre.cli.options import (
    b64,
    echo_json,
    json_option,
    ledger_options,
    open_ledger,
    stored_checkpoint,
)
from registre.errors import RegistreError
from registre.ledger import format_inclusion_proof

__all__ = ["expand_command"]


@click.command("expand")
@click.argument("thread_id", metavar="THREAD")
@click.argument("seq", type=int)
@click.option("--size", type=int, default=None, help="Tree size to prove in (default: head).")
@json_option
@ledger_options
def expand_command(
    thread_id: str,
    seq: int,
    size: int | None,
    as_json: bool,
    db: str | None,
    key_file: Path | None,
) -> None:
    """Print entry SEQ of THREAD and its inclusion proof (C2SP tlog-proof)."""
    with open_ledger(db, key_file) as ledger:
        thread = ledger.thread(thread_id)
        entry, proof = thread.expand(seq, size)
        stored = stored_checkpoint(thread, proof.size)
        keys = ledger.keys()
    name = thread.origin.rsplit("/", 1)[0]
    failure: RegistreError = NoTrustedSignatureError(f"no verifier key named {name!r} is known")
    for key in (key for key in keys if key.name == name):
        try:
            checkpoint = open_checkpoint(stored.note, key, origin=thread.origin).checkpoint
        except RegistreError as exc:
            failure = exc
            continue
        if checkpoint.size != proof.size:
            raise RootMismatchError(f"checkpoint is for size {checkpoint.size}, not {proof.size}")
        verify_inclusion(entry.leaf_hash, seq, proof.size, proof.hashes, checkpoint.root)
        break
    else:
        raise failure
    if as_json:
        echo_json(
            {
                "thread": thread_id,
                "seq": seq,
                "size": proof.size,
                "leaf": json.loads(entry.leaf),
                "hashes": [b64(h) for h in proof.hashes],
                "checkpoint": stored.note,
            }
        )
        return
    click.echo(entry.leaf.decode("utf-8"))
    click.echo(format_inclusion_proof(seq, proof.hashes, stored.note), nl=False)
