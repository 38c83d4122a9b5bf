"""Helpers of the rollback tests of issue 29 item 4 (here and in tests/cli): a registre
witness served in-process on loopback, with its monitoring view or behind a server without
one; entry times fixed, so that two databases fed the same turns hold the same leaves (Ed25519
signatures are deterministic); and the histories the tests publish and restore.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from aiohttp import web

import registre.attest.entries.batch
import registre.attest.entries.entry
from registre.attest.notes import CosignatureSigner, Signer
from registre.ledger.ledger import Ledger
from registre.ledger.thread import Thread
from registre.ledger.witnessing import witness_checkpoint
from registre.witness.client import WitnessEndpoint
from registre.witness.state import WitnessState
from registre.witness.witness import Witness
from tests.ledger.helpers import turn
from tests.witness.conftest import serving_witness
from tests.witness.test_client import serving

__all__ = [
    "WITNESS_KEY",
    "fix_times",
    "grow",
    "make_witness",
    "publish",
    "restored",
    "served_endpoint",
    "viewless_endpoint",
]

WITNESS_KEY = CosignatureSigner.from_seed("witness.test/rollback", bytes([21]) * 32)


def fix_times(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every entry signed at the same instant: two databases fed the same turns agree."""

    def fixed(moment: object = None) -> str:
        return "2026-07-01T12:00:00.000000Z"

    monkeypatch.setattr(registre.attest.entries.entry, "format_time", fixed)
    monkeypatch.setattr(registre.attest.entries.batch, "format_time", fixed)


@contextmanager
def make_witness(state_file: Path, signer: Signer) -> Iterator[Witness]:
    """A witness following the test log, its state in ``state_file``; closed on exit."""
    state = WitnessState.create(state_file)
    state.follow(signer.vkey(), f"{signer.name}/")
    try:
        yield Witness(WITNESS_KEY, state)
    finally:
        state.close()


@contextmanager
def served_endpoint(witness: Witness) -> Iterator[WitnessEndpoint]:
    """The witness with its monitoring view (a registre witness)."""
    with serving_witness(witness) as url:
        yield WitnessEndpoint(WITNESS_KEY.verifier(), url)


@contextmanager
def viewless_endpoint(witness: Witness) -> Iterator[WitnessEndpoint]:
    """The same witness behind a server with no monitoring view (GET answers 404), as a
    witness may be: what it holds is learned from its answer to add-checkpoint."""

    async def add_checkpoint(request: web.Request) -> web.Response:
        body = await request.read()
        answer = await asyncio.get_running_loop().run_in_executor(None, witness.handle, body)
        return web.Response(
            status=answer.status, body=answer.body, headers={"Content-Type": answer.content_type}
        )

    app = web.Application()
    app.router.add_post("/add-checkpoint", add_checkpoint)
    with serving(app) as url:
        yield WitnessEndpoint(WITNESS_KEY.verifier(), url)


def grow(thread: Thread, count: int, tag: str = "entry") -> None:
    """Append ``count`` turns, numbered from the head."""
    start = thread.head().size
    thread.append_many([turn(f"{tag} {start + i}") for i in range(count)])


def publish(path: Path, signer: Signer, endpoint: WitnessEndpoint) -> Thread:
    """The history as published, in the SQLite file ``path``: 3 entries cosigned, then 5
    cosigned (the witness holds 5)."""
    ledger = Ledger.open(f"sqlite:///{path}", signer)
    thread = ledger.create_thread("t1")
    grow(thread, 3)
    witness_checkpoint(thread, [endpoint], 1)
    grow(thread, 2)
    witness_checkpoint(thread, [endpoint], 1)
    ledger.close()
    return thread


def restored(ledger: Ledger, extra: int = 0, tag: str = "other") -> Thread:
    """The database as restored: the published history's first 3 entries and its checkpoint
    at 3 (its record beside it, on SQLite), then ``extra`` entries of another history and a
    checkpoint at its head."""
    thread = ledger.create_thread("t1")
    grow(thread, 3)
    thread.checkpoint()
    if extra:
        grow(thread, extra, tag)
        thread.checkpoint()
    return thread
