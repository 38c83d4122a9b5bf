"""Signing rates: raw Ed25519, signed notes, checkpoints with a cosignature, key loading.

All in group "signing". The cost of a signature does not depend on the ledger's size, so
these take no size from ``bench_sizes()``; the messages are typical of what registre signs:
a 300-byte entry, and a checkpoint body (~100 bytes) for notes.

- ed25519 sign / verify: one raw signature (the per-entry cost of the ledger);
- note sign / open: a checkpoint body with one log signature;
- checkpoint open+witness: ``open_checkpoint`` with one pinned witness and quorum 1;
- verifier from vkey: parsing a vkey, which includes the pure-Python small-order check
  (paid once per key load, never per signature).
"""

from __future__ import annotations

from typing import Any

import pytest

from registre.attest.notes import (
    Checkpoint,
    CosignatureSigner,
    Signer,
    Verifier,
    cosign_checkpoint,
    open_checkpoint,
    open_note,
    sign_checkpoint,
    sign_note,
)

LOG = Signer.from_seed("example.com/bench-log", bytes(range(32)))
WITNESS = CosignatureSigner.from_seed("witness.example/bench", bytes(range(1, 33)))
ENTRY = b"registre/entry/v1\n" + b"x" * 282  # 300 bytes
CHECKPOINT = Checkpoint("example.com/bench-log/thread-1", 1_000_000, bytes(range(32)))


@pytest.fixture(autouse=True)
def _group(benchmark: Any) -> None:
    benchmark.group = "signing"


def test_ed25519_sign(benchmark: Any) -> None:
    signature = benchmark(LOG.sign, ENTRY)
    assert len(signature) == 64


def test_ed25519_verify(benchmark: Any) -> None:
    verifier, signature = LOG.verifier(), LOG.sign(ENTRY)
    benchmark(verifier.verify, ENTRY, signature)


def test_note_sign(benchmark: Any) -> None:
    note = benchmark(sign_note, CHECKPOINT.body(), [LOG])
    assert note.startswith(CHECKPOINT.body())


def test_note_open(benchmark: Any) -> None:
    note, verifiers = sign_checkpoint(CHECKPOINT, LOG), [LOG.verifier()]
    opened = benchmark(open_note, note, verifiers)
    assert opened.text == CHECKPOINT.body()


def test_checkpoint_open_with_witness(benchmark: Any) -> None:
    log_key, witness = LOG.verifier(), WITNESS.verifier()
    note = cosign_checkpoint(sign_checkpoint(CHECKPOINT, LOG), log_key, WITNESS, 1700000000)
    verified = benchmark(lambda: open_checkpoint(note, log_key, witnesses=[witness], quorum=1))
    assert len(verified.cosignatures) == 1


def test_verifier_from_vkey(benchmark: Any) -> None:
    vkey = LOG.vkey()
    assert benchmark(Verifier.from_vkey, vkey).public_key == LOG.public_key
