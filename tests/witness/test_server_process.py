"""Real witness servers (subprocesses) over real HTTP on loopback: the issue's scenarios.

THREATS row 4 (split view: a fork is refused by a witness that saw the other history), row 6
(rollback refused), row 7 (old checkpoints replayed are refused), row 14 (hostile sizes and
garbage get 4xx, never a 500, and the server keeps serving).
"""

from __future__ import annotations

import base64
import signal
import socket
import subprocess
import sys
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from registre.attest.bundles import write_bundle
from registre.attest.notes import CosignatureSigner, Signer, open_checkpoint, sign_note
from registre.ledger.ledger import Ledger
from registre.ledger.witnessing import witness_checkpoint
from registre.witness.client import WitnessEndpoint, collect_cosignatures
from registre.witness.errors import WitnessQuorumError
from registre.witness.protocol import (
    MAX_REQUEST_BYTES,
    SIZE_CONTENT_TYPE,
    AddCheckpointRequest,
)
from registre.witness.state import WitnessState
from tests.witness.conftest import StartWitness, grow, http_request, request_body


def test_two_witnesses_cosign_and_quorum_2_of_2_verifies(
    ledger: Ledger, signer: Signer, start_witness: StartWitness
) -> None:
    w1, w2 = start_witness("w1"), start_witness("w2")
    thread = ledger.create_thread("t1")
    grow(thread, 5)
    first = witness_checkpoint(thread, [w1.endpoint, w2.endpoint], 2)
    assert [o.problem for o in first.outcomes] == [None, None]
    grow(thread, 4)
    second = witness_checkpoint(thread, [w1.endpoint, w2.endpoint], 2)
    # each witness was asked from the size it held (5), known from the stored cosignature:
    # no request needed a retry
    assert [o.old_size for o in second.outcomes] == [5, 5]
    for witness in (w1, w2):
        assert [line.split()[-2] for line in witness.log_lines(2)] == ["status=200"] * 2
    stored = thread.checkpoint()
    assert stored.note == second.checkpoint.note  # the cosigned note is what is stored
    verified = open_checkpoint(
        stored.note,
        signer.verifier(),
        origin=thread.origin,
        witnesses=[w1.signer.verifier(), w2.signer.verifier()],
        quorum=2,
    )
    assert verified.checkpoint.size == 9
    assert {c.name for c in verified.cosignatures} == {w1.signer.name, w2.signer.name}
    # both witnesses remember every checkpoint they cosigned
    for witness in (w1, w2):
        assert witness.stop() == 0
        state = WitnessState.open(witness.state_dir / "witness.db")
        assert [r.size for r in state.history(thread.origin)] == [5, 9]
        state.close()


def test_cli_checkpoint_through_two_witnesses(
    tmp_path: Path,
    signer: Signer,
    start_witness: StartWitness,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    from registre.cli import main

    w1, w2 = start_witness("w1"), start_witness("w2")
    key_file = tmp_path / "operator.key"
    signer.save(key_file)
    db = tmp_path / "cli.db"
    with Ledger.open(str(db), signer) as ledger:
        grow(ledger.create_thread("t1"), 3)
    monkeypatch.delenv("REGISTRE_DB", raising=False)
    args = ["checkpoint", "t1", "--db", str(db), "--key-file", str(key_file)]
    main([*args, "--witness", w1.spec, "--witness", w2.spec, "--quorum", "2"])
    captured = capsys.readouterr()
    assert f"cosigned by {w1.signer.name}" in captured.err
    assert f"cosigned by {w2.signer.name}" in captured.err
    open_checkpoint(
        captured.out,
        signer.verifier(),
        witnesses=[w1.signer.verifier(), w2.signer.verifier()],
        quorum=2,
    )
    # a witness that is down is reported by name; the quorum is not met: exit 1, one line
    assert w2.stop() == 0
    with Ledger.open(str(db), signer) as ledger:
        grow(ledger.thread("t1"), 1)
    with pytest.raises(SystemExit) as exit_info:
        main([*args, "--witness", w1.spec, "--witness", w2.spec])
    captured = capsys.readouterr()
    assert exit_info.value.code == 1
    assert f"cosigned by {w1.signer.name}" in captured.err
    assert f"no cosignature from {w2.signer.name} ({w2.url}): unreachable" in captured.err
    assert captured.err.strip().splitlines()[-1].startswith("registre: error: 1 of 2 witness")
    # what was obtained is stored all the same
    with Ledger.open(str(db), signer) as ledger:
        note = ledger.thread("t1").checkpoint().note
    open_checkpoint(note, signer.verifier(), witnesses=[w1.signer.verifier()], quorum=1)


def test_fork_with_same_key_and_origin_fail(
    tmp_path: Path, log_ledger: Ledger, signer: Signer, start_witness: StartWitness
) -> None:
    w1 = start_witness("w1")
    honest = log_ledger.create_thread("t1")
    grow(honest, 4, "honest")
    witness_checkpoint(honest, [w1.endpoint], 1)
    # the operator keeps a second ledger: same key, same origin, another history
    with Ledger.open(str(tmp_path / "fork.db"), signer) as other:
        forked = other.create_thread("t1")
        assert forked.origin == honest.origin
        grow(forked, 4, "rewritten")  # same size, different root
        with pytest.raises(WitnessQuorumError) as same_size:
            witness_checkpoint(forked, [w1.endpoint], 1)
        grow(forked, 3, "rewritten")  # longer, but not an extension of what w1 saw
        with pytest.raises(WitnessQuorumError) as longer:
            witness_checkpoint(forked, [w1.endpoint], 1)
        assert open_checkpoint(forked.checkpoint().note, signer.verifier()).cosignatures == []
    (problem,) = [o.problem for o in same_size.value.result.outcomes]  # type: ignore[attr-defined]
    assert "another checkpoint of size 4 for registre.test/log/t1 (422)" in str(problem)
    (problem,) = [o.problem for o in longer.value.result.outcomes]  # type: ignore[attr-defined]
    assert "HTTP 422" in str(problem)
    # the witness still holds the honest history, and kept the fork as evidence
    assert w1.stop() == 0
    state = WitnessState.open(w1.state_dir / "witness.db")
    assert state.latest(honest.origin).root == honest.head().root
    assert {(e.size, e.kind) for e in state.evidence(honest.origin)} == {
        (4, "split-view"),
        (7, "bad-proof"),
    }
    state.close()


def test_rollback_to_older_checkpoint_fail(log_ledger: Ledger, start_witness: StartWitness) -> None:
    w1 = start_witness("w1")
    thread = log_ledger.create_thread("t1")
    grow(thread, 3)
    old_note = thread.checkpoint().note
    grow(thread, 3)
    witness_checkpoint(thread, [w1.endpoint], 1)
    # replaying the genuinely signed size-3 checkpoint: from 6 it is 400 (old larger than
    # the checkpoint); from 3 it is 409 with the size the witness holds
    assert w1.post(_body(6, [], old_note)).status == 400
    answer = w1.post(_body(3, [], old_note))
    assert (answer.status, answer.body, answer.content_type) == (409, b"6\n", SIZE_CONTENT_TYPE)


def _body(old: int, proof: list[bytes], note: str) -> bytes:
    lines = [f"old {old}", *(base64.b64encode(h).decode() for h in proof), ""]
    return ("\n".join(lines) + "\n" + note).encode()


def test_wrong_old_size_gets_409_and_one_retry_succeeds(
    log_ledger: Ledger, start_witness: StartWitness
) -> None:
    w1 = start_witness("w1")
    thread = log_ledger.create_thread("t1")
    grow(thread, 5)
    assert w1.post(request_body(thread, 0)).status == 200
    grow(thread, 2)
    # raw: the protocol's 409 carries the held size
    answer = w1.post(request_body(thread, 2))
    assert (answer.status, answer.body, answer.content_type) == (409, b"5\n", SIZE_CONTENT_TYPE)
    # the client believes the witness holds 0 (nothing stored): 409, then from 5
    stored = thread.checkpoint()
    collected = collect_cosignatures(
        stored.note,
        lambda old: thread.prove_consistency(old, stored.size).hashes,
        [w1.endpoint],
        quorum=1,
    )
    (outcome,) = collected.outcomes
    assert outcome.problem is None and outcome.old_size == 5
    assert [line.split(" status=")[1].split()[0] for line in w1.log_lines(4)] == [
        "200",
        "409",
        "409",
        "200",
    ]


def test_concurrent_requests_from_one_old_size_exactly_one_wins(
    log_ledger: Ledger, start_witness: StartWitness
) -> None:
    w1 = start_witness("w1")
    thread = log_ledger.create_thread("t1")
    grow(thread, 2)
    assert w1.post(request_body(thread, 0)).status == 200
    bodies = []
    for _ in range(12):
        grow(thread, 1)
        bodies.append(request_body(thread, 2))  # every one from old size 2, each a new size
    bodies += bodies[:4]  # and some sent twice
    with ThreadPoolExecutor(max_workers=8) as pool:
        answers = list(pool.map(w1.post, bodies))
    statuses = [a.status for a in answers]
    assert statuses.count(200) == 1, statuses
    assert statuses.count(409) == len(bodies) - 1
    winner = AddCheckpointRequest.parse(bodies[statuses.index(200)]).checkpoint
    # every 409 names the winner's size; the state holds the winner, history has it once more
    assert {a.body for a in answers if a.status == 409} == {f"{winner.size}\n".encode()}
    assert w1.stop() == 0
    state = WitnessState.open(w1.state_dir / "witness.db")
    held = state.latest(thread.origin)
    assert (held.size, held.root) == (winner.size, winner.root)
    assert [r.size for r in state.history(thread.origin)] == [2, winner.size]
    state.close()


def forged_signature(note: str) -> str:
    """``note`` with the last byte of its (only) signature flipped, still canonical base64."""
    head, _, line = note[:-1].rpartition("\n")
    prefix, _, blob = line.rpartition(" ")
    raw = bytearray(base64.b64decode(blob))
    raw[-1] ^= 1
    return f"{head}\n{prefix} {base64.b64encode(bytes(raw)).decode()}\n"


def test_hostile_input_gets_4xx_and_server_keeps_serving(
    log_ledger: Ledger, signer: Signer, start_witness: StartWitness
) -> None:
    w1 = start_witness("w1")
    thread = log_ledger.create_thread("t1")
    grow(thread, 3)
    note = thread.checkpoint().note
    text = note[: note.index("\n\n") + 1]
    impostor = sign_note(text, [Signer.from_seed(signer.name, bytes([9]) * 32)])
    hash_line = base64.b64encode(bytes(32)).decode()
    cases: list[tuple[bytes, int]] = [
        (b"x" * (MAX_REQUEST_BYTES + 1), 413),  # oversized
        (b"old 0\n\n" + b"A" * (2 * MAX_REQUEST_BYTES), 413),
        (b"", 400),
        (b"\x00\xff garbage \xfe", 400),
        (b"old -1\n\n" + note.encode(), 400),
        (b"old 01\n\n" + note.encode(), 400),
        (b"old 0\n" + note.encode(), 400),  # no empty line before the note
        (("old 0\n" + (hash_line + "\n") * 64 + "\n" + note).encode(), 400),  # 64 proof lines
        (("old 0\nnot base64!\n\n" + note).encode(), 400),
        (b"old 0\n\nregistre.test/log/t1\n3\nnot-a-root\n\n\xe2\x80\x94 x AAAAAAA=\n", 400),
        (b"old 0\n\n" + note.encode().replace(b"\n\n", b"\n"), 400),  # malformed note
        (b"old 0\n\n" + note.encode().replace(b"registre.test/log", b"other.log"), 404),
        (b"old 0\n\n" + forged_signature(note).encode(), 403),  # the log's key fails
        (b"old 0\n\n" + impostor.encode(), 403),  # signed by another key of the same name
        (b"old 4\n\n" + note.encode(), 400),  # old larger than the checkpoint
        (("old 0\n" + hash_line + "\n\n" + note).encode(), 422),  # proof from 0 must be empty
        (b"old 99999999999999999999999\n\n" + note.encode(), 400),
        (b"old 18446744073709551615\n\n" + note.encode(), 400),  # beyond 2^62
    ]
    for body, status in cases:
        answer = w1.post(body)
        assert answer.status == status, (body[:80], answer)
    assert w1.post(b"", method="GET").status == 405
    assert w1.post(b"old 0\n\n", path="/nope").status == 404
    # a proof of 63 lines is read (and refused as a proof: 422), not cut
    answer = w1.post(("old 0\n" + (hash_line + "\n") * 63 + "\n" + note).encode())
    assert answer.status == 422
    # bytes that are not HTTP at all: aiohttp answers 400 and closes the connection
    host, port = w1.url.removeprefix("http://").split(":")
    with socket.create_connection((host, int(port)), timeout=10) as raw:
        raw.sendall(b"\x00\x01 not http \xff\r\n\r\n")
        assert raw.recv(100).split(b" ", 2)[1] == b"400"
    # still serving: a valid request is cosigned
    assert w1.post(request_body(thread, 0)).status == 200
    assert w1.process.poll() is None
    lines = w1.log_lines(len(cases) + 5)
    assert not [line for line in lines if "status=5" in line]
    assert len(lines) == len(cases) + 5  # one line per request, the non-HTTP one included


def test_restart_keeps_state_and_cosigning_continues(
    log_ledger: Ledger, start_witness: StartWitness
) -> None:
    w1 = start_witness("w1")
    thread = log_ledger.create_thread("t1")
    grow(thread, 4)
    witness_checkpoint(thread, [w1.endpoint], 1)
    # SIGTERM: a clean stop, exit code 0
    w1.process.send_signal(signal.SIGTERM)
    assert w1.process.wait(timeout=10) == 0
    assert "witness stopped" in w1.stderr_path.read_text()
    restarted = start_witness("w1", state_dir=w1.state_dir)
    assert restarted.url != "" and restarted.signer.vkey() == w1.signer.vkey()
    grow(thread, 3)
    # it remembers size 4: a request from 0 is told so, a request from 4 is cosigned
    answer = restarted.post(request_body(thread, 0))
    assert (answer.status, answer.body) == (409, b"4\n")
    assert restarted.post(request_body(thread, 4)).status == 200
    assert restarted.stop() == 0
    state = WitnessState.open(w1.state_dir / "witness.db")
    assert [r.size for r in state.history(thread.origin)] == [4, 7]
    state.close()


def test_witness_refuses_log_it_does_not_follow(
    tmp_path: Path, start_witness: StartWitness
) -> None:
    w1 = start_witness("w1")
    stranger = Signer.from_seed("stranger.log", bytes([7]) * 32)
    with Ledger.open(str(tmp_path / "stranger.db"), stranger) as other:
        thread = other.create_thread("t1")
        grow(thread, 2)
        with pytest.raises(WitnessQuorumError, match="HTTP 404"):
            witness_checkpoint(thread, [w1.endpoint], 1)


def test_endpoint_spec_round_trip(start_witness: StartWitness) -> None:
    w1 = start_witness("w1")
    parsed = WitnessEndpoint.parse(w1.spec)
    assert parsed.verifier.vkey() == w1.signer.vkey() and parsed.url == w1.url
    assert http_request(w1.url, b"").status == 400


def test_bundle_with_cosigned_head_verifies_offline_with_pinned_quorum(
    tmp_path: Path, log_ledger: Ledger, signer: Signer, start_witness: StartWitness
) -> None:
    w1, w2 = start_witness("w1"), start_witness("w2")
    thread = log_ledger.create_thread("t1")
    grow(thread, 6)
    witness_checkpoint(thread, [w1.endpoint, w2.endpoint], 2)
    bundle = tmp_path / "t1.zip"
    write_bundle(
        bundle,
        origin=thread.origin,
        leaves=[entry.leaf for entry in thread.entries()],
        checkpoints=[thread.checkpoint().note],
    )
    verify = [
        sys.executable,
        "-m",
        "registre.attest",
        "verify",
        str(bundle),
        "--key",
        signer.vkey(),
    ]
    pins = ["--witness", w1.signer.vkey(), "--witness", w2.signer.vkey()]
    passed = subprocess.run([*verify, *pins, "--quorum", "2"], capture_output=True, timeout=60)
    assert passed.returncode == 0, passed.stderr
    # a pinned witness that never cosigned cannot be counted: 2 of 3 fails the check
    stranger = CosignatureSigner.from_seed("witness.test/w3", bytes([3]) * 32).vkey()
    failed = subprocess.run(
        [*verify, *pins, "--witness", stranger, "--quorum", "3"], capture_output=True, timeout=60
    )
    assert failed.returncode == 1, failed.stderr
    assert b"2 valid cosignature(s) from pinned witnesses; 3 needed" in failed.stderr
