"""registre.witness.witness: the checks of C2SP tlog-witness add-checkpoint, in order, in-process.

Attack cases are named after THREATS rows: split view / fork (4), rollback (6), replay of an
old checkpoint (7), hostile input (14).
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registre.attest.notes import (
    Checkpoint,
    CosignatureSigner,
    Signer,
    open_checkpoint,
    sign_checkpoint,
    sign_note,
)
from registre.attest.tree import MemoryHashSource, consistency_proof, empty_root, leaf_hash
from registre.ledger.ledger import Ledger
from registre.ledger.thread import Thread
from registre.witness.errors import (
    EmptyTreeRootError,
    InconsistentCheckpointError,
    LogSignatureError,
    OldSizeConflictError,
    OldSizeTooLargeError,
    SplitViewError,
    UnknownLogError,
)
from registre.witness.protocol import SIZE_CONTENT_TYPE, AddCheckpointRequest
from registre.witness.state import WitnessState
from registre.witness.witness import Witness
from tests.witness.conftest import grow, request_body

WITNESS_KEY = CosignatureSigner.from_seed("witness.test/w", bytes([5]) * 32)
NOW = 1_750_000_000


@pytest.fixture
def witness(tmp_path: Path, signer: Signer) -> Iterator[Witness]:
    state = WitnessState.create(tmp_path / "witness.db")
    state.follow(signer.vkey(), f"{signer.name}/")
    yield Witness(WITNESS_KEY, state, clock=lambda: NOW)
    state.close()


@pytest.fixture
def thread(log_ledger: Ledger) -> Thread:
    created = log_ledger.create_thread("t1")
    grow(created, 5)
    return created


def add(witness: Witness, body: bytes) -> str:
    return witness.add_checkpoint(AddCheckpointRequest.parse(body))


def test_first_checkpoint_cosigned_and_stored(
    witness: Witness, thread: Thread, signer: Signer
) -> None:
    line = add(witness, request_body(thread, 0))
    note = thread.checkpoint().note + line
    verified = open_checkpoint(
        note, signer.verifier(), witnesses=[WITNESS_KEY.verifier()], quorum=1
    )
    assert verified.cosignatures[0].timestamp == NOW
    held = witness.state.latest(thread.origin)
    assert (held.size, held.root, held.cosignature) == (5, thread.head().root, line)


def test_consistent_growth_cosigned_from_held_size(witness: Witness, thread: Thread) -> None:
    add(witness, request_body(thread, 0))
    for count in (1, 2, 7):
        old = thread.head().size
        grow(thread, count)
        add(witness, request_body(thread, old))
    assert [r.size for r in witness.state.history(thread.origin)] == [5, 6, 8, 15]


def test_same_checkpoint_again_cosigned_once_in_history(witness: Witness, thread: Thread) -> None:
    add(witness, request_body(thread, 0))
    add(witness, request_body(thread, 5))  # old == new, same root: a fresh cosignature
    assert len(witness.state.history(thread.origin)) == 1


def test_unknown_origin_fail(witness: Witness, tmp_path: Path) -> None:
    other = Signer.from_seed("other.log", bytes([3]) * 32)
    with Ledger.open(str(tmp_path / "o.db"), other) as ledger:
        stranger = ledger.create_thread("t1")
        grow(stranger, 1)
        with pytest.raises(UnknownLogError) as info:
            add(witness, request_body(stranger, 0))
    assert info.value.http_status == 404


def test_origin_prefix_alone_is_not_covered(witness: Witness, signer: Signer) -> None:
    note = sign_checkpoint(Checkpoint(f"{signer.name}/", 0, bytes(32)), signer)
    with pytest.raises(UnknownLogError):
        add(witness, AddCheckpointRequest.build(0, [], note).encode())


def test_checkpoint_signed_by_impostor_key_fail(witness: Witness, thread: Thread) -> None:
    note = thread.checkpoint().note
    impostor = Signer.from_seed(thread.origin.split("/t1")[0], bytes([9]) * 32)
    forged = sign_note(note[: note.index("\n\n") + 1], [impostor])
    with pytest.raises(LogSignatureError) as info:
        add(witness, AddCheckpointRequest.build(0, [], forged).encode())
    assert info.value.http_status == 403


def test_altered_checkpoint_under_log_signature_fail(witness: Witness, thread: Thread) -> None:
    note = thread.checkpoint().note
    altered = note.replace("\n5\n", "\n6\n", 1)  # the size changed, the signature kept
    with pytest.raises(LogSignatureError, match="does not verify"):
        add(witness, AddCheckpointRequest.build(0, [], altered).encode())
    assert witness.state.latest(thread.origin).note is None


def test_other_signatures_on_the_note_ignored(
    witness: Witness, thread: Thread, signer: Signer
) -> None:
    note = thread.checkpoint().note
    extra = CosignatureSigner.from_seed("someone.else/w", bytes([8]) * 32)
    cosigned = note + extra.cosign(note[: note.index("\n\n") + 1], 1)
    line = add(witness, AddCheckpointRequest.build(0, [], cosigned).encode())
    # the witness cosigned the log's checkpoint: its line verifies on the log-signed note
    verified = open_checkpoint(
        note + line, signer.verifier(), witnesses=[WITNESS_KEY.verifier()], quorum=1
    )
    assert [(c.name, c.timestamp) for c in verified.cosignatures] == [(WITNESS_KEY.name, NOW)]
    held = witness.state.latest(thread.origin)
    assert (held.size, held.root, held.cosignature) == (5, thread.head().root, line)


def test_old_larger_than_checkpoint_fail(witness: Witness, thread: Thread) -> None:
    note = thread.checkpoint().note
    with pytest.raises(OldSizeTooLargeError) as info:
        add(witness, AddCheckpointRequest.build(6, [], note).encode())
    assert info.value.http_status == 400


def test_stale_old_size_gets_held_size(witness: Witness, thread: Thread) -> None:
    add(witness, request_body(thread, 0))
    grow(thread, 2)
    with pytest.raises(OldSizeConflictError) as info:
        add(witness, request_body(thread, 3))
    assert (info.value.http_status, info.value.stored_size) == (409, 5)
    answer = witness.handle(request_body(thread, 3))
    assert (answer.status, answer.body, answer.content_type) == (409, b"5\n", SIZE_CONTENT_TYPE)


def test_rollback_replay_of_older_checkpoint_fail(witness: Witness, thread: Thread) -> None:
    older = thread.checkpoint().note
    grow(thread, 3)
    add(witness, request_body(thread, 0))
    with pytest.raises(OldSizeTooLargeError):
        add(witness, AddCheckpointRequest.build(8, [], older).encode())
    with pytest.raises(OldSizeConflictError):
        add(witness, AddCheckpointRequest.build(5, [], older).encode())
    assert witness.state.latest(thread.origin).size == 8


def test_split_view_same_size_other_root_fail(
    witness: Witness, thread: Thread, tmp_path: Path, signer: Signer
) -> None:
    add(witness, request_body(thread, 0))
    with Ledger.open(str(tmp_path / "fork.db"), signer) as other:
        fork = other.create_thread("t1")
        grow(fork, 5, "rewritten")
        body = request_body(fork, 5)
    with pytest.raises(SplitViewError) as info:
        add(witness, body)
    assert info.value.http_status == 422  # C2SP tlog-witness: 422, no longer 409
    answer = witness.handle(body)
    assert (answer.status, answer.content_type) == (422, "text/plain; charset=utf-8")
    assert b"another root" in answer.body
    (evidence,) = witness.state.evidence(thread.origin)  # kept once, though sent twice
    assert evidence.kind == "split-view" and evidence.root != thread.head().root
    assert witness.state.latest(thread.origin).root == thread.head().root


def test_empty_tree_with_other_root_fail(witness: Witness, signer: Signer) -> None:
    origin = f"{signer.name}/t0"
    forged = sign_checkpoint(Checkpoint(origin, 0, bytes([1]) * 32), signer)
    body = AddCheckpointRequest.build(0, [], forged).encode()
    with pytest.raises(EmptyTreeRootError, match="empty tree's root"):
        add(witness, body)
    answer = witness.handle(body)  # C2SP tlog-witness: 422 (it was a 409 split view)
    assert (answer.status, answer.content_type) == (422, "text/plain; charset=utf-8")
    (evidence,) = witness.state.evidence(origin)
    assert evidence.kind == "split-view"
    assert witness.state.latest(origin).note is None  # nothing cosigned or stored
    # the true empty tree is cosigned
    honest = sign_checkpoint(Checkpoint(origin, 0, empty_root()), signer)
    assert witness.handle(AddCheckpointRequest.build(0, [], honest).encode()).status == 200


def test_fork_extending_other_history_fail(
    witness: Witness, thread: Thread, tmp_path: Path, signer: Signer
) -> None:
    add(witness, request_body(thread, 0))
    with Ledger.open(str(tmp_path / "fork.db"), signer) as other:
        fork = other.create_thread("t1")
        grow(fork, 9, "rewritten")
        # the fork's own proof from 5 is valid for the fork, not for what the witness saw
        body = request_body(fork, 5)
    with pytest.raises(InconsistentCheckpointError) as info:
        add(witness, body)
    assert info.value.http_status == 422
    assert [e.kind for e in witness.state.evidence()] == ["bad-proof"]


def test_first_contact_with_nonempty_proof_fail(witness: Witness, thread: Thread) -> None:
    note = thread.checkpoint().note
    with pytest.raises(InconsistentCheckpointError):
        add(witness, AddCheckpointRequest.build(0, [bytes(32)], note).encode())


def test_proof_for_other_sizes_fail(witness: Witness, thread: Thread) -> None:
    add(witness, request_body(thread, 0))
    grow(thread, 6)
    stored = thread.checkpoint()
    wrong = thread.prove_consistency(4, stored.size).hashes
    with pytest.raises(InconsistentCheckpointError):
        add(witness, AddCheckpointRequest.build(5, wrong, stored.note).encode())


def test_concurrent_advances_from_one_size_exactly_one_wins(
    witness: Witness, thread: Thread
) -> None:
    add(witness, request_body(thread, 0))
    bodies = []
    for _ in range(8):
        grow(thread, 1)
        bodies.append(request_body(thread, 5))
    statuses: list[int] = []
    barrier = threading.Barrier(len(bodies))

    def send(body: bytes) -> None:
        barrier.wait(timeout=10)
        statuses.append(witness.handle(body).status)

    workers = [threading.Thread(target=send, args=(body,)) for body in bodies]
    for worker in workers:
        worker.start()
    for worker in workers:
        worker.join(timeout=30)
    assert sorted(statuses) == [200] + [409] * (len(bodies) - 1)
    assert len(witness.state.history(thread.origin)) == 2


# The witness fixture is shared by the examples on purpose: a refused request changes nothing.
SHARED_WITNESS = settings(suppress_health_check=[HealthCheck.function_scoped_fixture])


@SHARED_WITNESS
@given(st.binary(max_size=300))
def test_garbage_body_answered_4xx(witness: Witness, body: bytes) -> None:
    assert 400 <= witness.handle(body).status < 500


@SHARED_WITNESS
@given(st.data())
def test_mangled_valid_request_answered_4xx_or_200(
    witness: Witness, thread: Thread, data: st.DataObject
) -> None:
    body = bytearray(request_body(thread, 0))
    for _ in range(data.draw(st.integers(1, 4))):
        position = data.draw(st.integers(0, len(body) - 1))
        body[position] = data.draw(st.integers(0, 255))
    status = witness.handle(bytes(body)).status
    assert status == 200 or 400 <= status < 500


@SHARED_WITNESS
@given(st.lists(st.integers(0, 40), min_size=1, max_size=6))
def test_any_consistent_sequence_cosigned_and_held(
    tmp_path_factory: pytest.TempPathFactory, signer: Signer, growth: list[int]
) -> None:
    state = WitnessState.create(tmp_path_factory.mktemp("w") / "witness.db")
    state.follow(signer.vkey(), f"{signer.name}/")
    witness = Witness(WITNESS_KEY, state, clock=lambda: NOW)
    tree = MemoryHashSource()
    held = 0
    for step, count in enumerate(growth):
        tree.extend(leaf_hash(f"{step}.{i}".encode()) for i in range(count))
        checkpoint = Checkpoint(f"{signer.name}/p", tree.size, tree.root())
        note = sign_checkpoint(checkpoint, signer)
        proof = consistency_proof(tree, held, tree.size) if held else []
        add(witness, AddCheckpointRequest.build(held, proof, note).encode())
        held = tree.size
        assert state.latest(checkpoint.origin).root == tree.root()
    state.close()


def test_bad_proof_evidence_spam_fail(witness: Witness, thread: Thread) -> None:
    """A log-signed checkpoint posted again and again with a bad proof and random extra
    signature lines: kept once, in its smallest form (no line the log did not sign), and at
    most MAX_BAD_PROOFS such rows per origin, however many are sent."""
    import base64
    import os

    from registre.witness.state import MAX_BAD_PROOFS

    add(witness, request_body(thread, 0))
    grow(thread, 3)
    note = thread.checkpoint().note
    for _ in range(20):
        junk = "".join(
            f"— spam{i}.example {base64.b64encode(os.urandom(68)).decode()}\n" for i in range(40)
        )
        with pytest.raises(InconsistentCheckpointError):
            add(witness, AddCheckpointRequest.build(5, [bytes(32)], note + junk).encode())
    (evidence,) = witness.state.evidence(thread.origin)
    assert evidence.note == note and "spam" not in evidence.note
    for size in range(9, 9 + MAX_BAD_PROOFS + 5):  # other checkpoints the log signed
        grow(thread, 1)
        signed = thread.checkpoint().note
        with pytest.raises(InconsistentCheckpointError):
            add(witness, AddCheckpointRequest.build(5, [bytes(32)], signed).encode())
        assert thread.head().size == size
    assert len(witness.state.evidence(thread.origin)) == MAX_BAD_PROOFS
