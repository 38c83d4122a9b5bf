"""The monitoring view of C2SP tlog-witness: ``GET <prefix>/<hex sha256(origin)>/checkpoint``
answers the latest checkpoint cosigned for the origin, with the log signature the witness
verified and its own cosignature, or 404 if it never cosigned one."""

from __future__ import annotations

import hashlib
from collections.abc import Iterator
from pathlib import Path

import pytest

from registre.attest.notes import CosignatureSigner, Signer, open_checkpoint, parse_note
from registre.ledger.ledger import Ledger
from registre.ledger.thread import Thread
from registre.witness.protocol import (
    AddCheckpointRequest,
    monitor_path,
    parse_monitor_path,
)
from registre.witness.state import WitnessState
from registre.witness.witness import Witness
from tests.witness.conftest import grow, http_request, request_body, serving_witness

WITNESS_KEY = CosignatureSigner.from_seed("witness.test/m", bytes([6]) * 32)


@pytest.fixture
def witness(tmp_path: Path, signer: Signer) -> Iterator[Witness]:
    state = WitnessState.create(tmp_path / "witness.db")
    state.follow(signer.vkey(), f"{signer.name}/")
    yield Witness(WITNESS_KEY, state, clock=lambda: 1_750_000_000)
    state.close()


@pytest.fixture
def thread(log_ledger: Ledger) -> Thread:
    created = log_ledger.create_thread("t1")
    grow(created, 5)
    return created


def origin_hash(origin: str) -> bytes:
    return hashlib.sha256(origin.encode()).digest()


def test_monitor_path_is_lowercase_hex_sha256_of_origin() -> None:
    path = monitor_path("example.com/log")
    digest = hashlib.sha256(b"example.com/log").hexdigest()
    assert path == f"/{digest}/checkpoint"
    assert parse_monitor_path(path) == bytes.fromhex(digest)
    for other in (path.upper(), f"/{digest[:-1]}/checkpoint", f"/{digest}/checkpoint/", "/x"):
        assert parse_monitor_path(other) is None


def test_latest_cosigned_checkpoint_served(
    witness: Witness, thread: Thread, signer: Signer
) -> None:
    assert witness.handle(request_body(thread, 0)).status == 200
    grow(thread, 2)
    assert witness.handle(request_body(thread, 5)).status == 200
    answer = witness.monitor(origin_hash(thread.origin))
    assert answer.status == 200
    opened = open_checkpoint(
        answer.body.decode(), signer.verifier(), witnesses=[WITNESS_KEY.verifier()], quorum=1
    )
    assert (opened.checkpoint.size, opened.checkpoint.root) == (7, thread.head().root)
    # exactly the log's signature and the witness's cosignature returned by add-checkpoint
    _text, lines = parse_note(answer.body.decode())
    assert [line.name for line in lines] == [signer.name, WITNESS_KEY.name]
    assert lines[1].line() == witness.state.latest(thread.origin).cosignature


def test_never_cosigned_origin_is_404(witness: Witness, thread: Thread) -> None:
    assert witness.monitor(origin_hash(thread.origin)).status == 404
    # a refused checkpoint is not "cosigned"
    body = AddCheckpointRequest.build(0, [bytes(32)], thread.checkpoint().note).encode()
    assert witness.handle(body).status == 422
    assert witness.monitor(origin_hash(thread.origin)).status == 404


def test_unverified_signatures_of_the_note_left_out(witness: Witness, thread: Thread) -> None:
    note = thread.checkpoint().note
    stranger = CosignatureSigner.from_seed("someone.else/w", bytes([8]) * 32)
    cosigned = note + stranger.cosign(note[: note.index("\n\n") + 1], 1)
    assert witness.handle(AddCheckpointRequest.build(0, [], cosigned).encode()).status == 200
    _text, lines = parse_note(witness.monitor(origin_hash(thread.origin)).body.decode())
    assert stranger.name not in [line.name for line in lines]


def test_origin_cosigned_by_another_process_found(
    witness: Witness, thread: Thread, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # another WitnessState on the same file (another server process) cosigns the origin;
    # this one finds it at its next rescan (at most once a second; here at once)
    other = WitnessState.open(witness.state.path)
    try:
        assert witness.monitor(origin_hash(thread.origin)).status == 404
        assert Witness(WITNESS_KEY, other).handle(request_body(thread, 0)).status == 200
    finally:
        other.close()
    monkeypatch.setattr("registre.witness.state.ORIGIN_RESCAN_SECONDS", 0.0)
    assert witness.monitor(origin_hash(thread.origin)).status == 200


def test_monitor_over_http(witness: Witness, thread: Thread) -> None:
    with serving_witness(witness) as url:
        path = monitor_path(thread.origin)
        assert http_request(url, b"", path=path, method="GET").status == 404
        assert http_request(url, request_body(thread, 0)).status == 200
        answer = http_request(url, b"", path=path, method="GET")
        assert (answer.status, answer.content_type) == (200, "text/plain; charset=utf-8")
        assert answer.body.startswith(thread.checkpoint().note.split("\n\n")[0].encode())
        head = http_request(url, b"", path=path, method="HEAD")
        assert (head.status, head.body) == (200, b"")
        assert http_request(url, b"", path=path, method="POST").status == 405
        assert http_request(url, b"", path=path.upper(), method="GET").status == 404
        assert http_request(url, b"", path="/add-checkpoint", method="GET").status == 405
