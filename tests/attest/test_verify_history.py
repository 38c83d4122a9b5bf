"""attest.verify_history: the verifier's state file and the rollback/fork rules (step 5).
The attacks themselves are in tests/tamper/test_history.py."""

from __future__ import annotations

import base64
import os
from pathlib import Path

import pytest

from registre.attest.merkle import empty_root, root_at
from registre.attest.proofs import consistency_proof
from registre.attest.verify_history import (
    ForkError,
    MissingProofError,
    RollbackError,
    StateFileError,
    TrustedHead,
    TrustedState,
    check_history,
    load_state,
    save_state,
)
from tests.bundles import build_thread

ROOT = bytes(range(32))


def test_state_round_trips_and_is_written_atomically(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    assert load_state(path) == TrustedState()  # no file yet: nothing trusted
    state = (
        TrustedState()
        .updated("log/t2", TrustedHead(3, ROOT))
        .updated("log/t1", TrustedHead(0, ROOT))
    )
    save_state(path, state)
    assert load_state(path) == state
    assert list(load_state(path).origins) == ["log/t1", "log/t2"]
    assert os.listdir(tmp_path) == ["state.json"]
    save_state(path, state.updated("log/t1", TrustedHead(9, ROOT)))
    assert load_state(path).origins["log/t1"].size == 9


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"{", "strict JSON"),
        (b'{"format":"registre-verifier-state/1","format":"x","origins":{}}', "strict JSON"),
        (b'{"format":"other","origins":{}}', "must be"),
        (b'{"format":"registre-verifier-state/1","origins":[]}', "object"),
        (b'{"format":"registre-verifier-state/1","origins":{"o":{"size":1}}}', "size"),
        (b'{"format":"registre-verifier-state/1","origins":{"o":{"size":-1,"root":""}}}', ">= 0"),
        (
            b'{"format":"registre-verifier-state/1","origins":{"o":{"size":1,"root":"AA=="}}}',
            "32-byte",
        ),
    ],
)
def test_malformed_state_files_are_refused(tmp_path: Path, text: bytes, message: str) -> None:
    path = tmp_path / "state.json"
    path.write_bytes(text)
    with pytest.raises(StateFileError, match=message):
        load_state(path)


def test_unreadable_state_file_is_refused(tmp_path: Path) -> None:
    with pytest.raises(StateFileError, match="cannot read"):
        load_state(tmp_path)  # a directory
    with pytest.raises(StateFileError, match="folder does not exist"):
        load_state(tmp_path / "missing" / "state.json")


def test_history_rules() -> None:
    thread = build_thread(20, story=False)
    head = TrustedHead(20, root_at(thread.tree, 20))

    def root(size: int) -> bytes:
        return root_at(thread.tree, size)

    assert "first use" in check_history(None, head, origin="o", root_at=root, proofs={})
    assert "already trusted" in check_history(head, head, origin="o", root_at=root, proofs={})
    older = TrustedHead(12, root(12))
    assert "recomputed" in check_history(older, head, origin="o", root_at=root, proofs={})
    proof = tuple(consistency_proof(thread.tree, 12, 20))
    assert "consistency proof" in check_history(
        older, head, origin="o", root_at=None, proofs={(12, 20): proof}
    )
    empty = TrustedHead(0, empty_root())
    assert "recomputed" in check_history(empty, head, origin="o", root_at=root, proofs={})
    with pytest.raises(RollbackError):
        check_history(head, older, origin="o", root_at=root, proofs={})
    with pytest.raises(ForkError):
        check_history(TrustedHead(20, ROOT), head, origin="o", root_at=root, proofs={})
    with pytest.raises(ForkError):
        check_history(TrustedHead(12, ROOT), head, origin="o", root_at=root, proofs={})
    with pytest.raises(ForkError):
        check_history(
            TrustedHead(12, ROOT), head, origin="o", root_at=None, proofs={(12, 20): proof}
        )
    with pytest.raises(MissingProofError):
        check_history(older, head, origin="o", root_at=None, proofs={})


def test_state_file_stores_roots_in_base64(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    save_state(path, TrustedState({"o": TrustedHead(1, ROOT)}))
    assert base64.b64encode(ROOT).decode() in path.read_text()
