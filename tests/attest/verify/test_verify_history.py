"""attest.verify_history: the verifier's state file and the rollback/fork rules (step 5).
The attacks themselves are in tests/tamper/test_history.py."""

from __future__ import annotations

import base64
import json
import os
from pathlib import Path

import pytest

from registre.attest.tree import consistency_proof, empty_root, root_at
from registre.attest.verify import (
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


KEY = "log+01020304+AQ"
OTHER = "log+01020304+AR"  # another operator's key with the same name and key id


def test_state_round_trips_and_is_written_atomically(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    assert load_state(path) == TrustedState()  # no file yet: nothing trusted
    state = (
        TrustedState()
        .updated(KEY, "log/t2", TrustedHead(3, ROOT))
        .updated(KEY, "log/t1", TrustedHead(0, ROOT))
    )
    save_state(path, state)
    assert load_state(path) == state
    assert list(load_state(path).heads) == [(KEY, "log/t1"), (KEY, "log/t2")]
    assert os.listdir(tmp_path) == ["state.json"]
    save_state(path, state.updated(KEY, "log/t1", TrustedHead(9, ROOT)))
    assert load_state(path).heads[(KEY, "log/t1")].size == 9


def test_state_is_keyed_by_log_key_and_origin(tmp_path: Path) -> None:
    """Two operators with the same log name (the default) no longer share a head."""
    state = TrustedState().updated(KEY, "log/t1", TrustedHead(30, ROOT))
    assert state.trusted(KEY, "log/t1") == TrustedHead(30, ROOT)
    assert state.trusted(OTHER, "log/t1") is None


def test_version_1_state_is_read_and_migrated(tmp_path: Path) -> None:
    """A /1 file's heads bind every key for their origin until one key records its own."""
    path = tmp_path / "state.json"
    root = base64.b64encode(ROOT).decode()
    path.write_text(
        f'{{"format":"registre-verifier-state/1","origins":{{"log/t1":{{"root":"{root}",'
        '"size":4}}}'
    )
    state = load_state(path)
    assert state.trusted(KEY, "log/t1") == state.trusted(OTHER, "log/t1") == TrustedHead(4, ROOT)
    moved = state.updated(KEY, "log/t1", TrustedHead(5, ROOT))
    assert moved.unkeyed == {} and moved.trusted(OTHER, "log/t1") is None
    save_state(path, moved)
    assert load_state(path) == moved
    assert json.loads(path.read_text())["format"] == "registre-verifier-state/2"


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (b"{", "strict JSON"),
        (b'{"format":"registre-verifier-state/1","format":"x","origins":{}}', "strict JSON"),
        (b'{"format":"other","origins":{}}', "must be"),
        (b'{"format":"registre-verifier-state/2","origins":{}}', "must be"),
        (b'{"format":"registre-verifier-state/2","logs":[]}', "logs must be"),
        (b'{"format":"registre-verifier-state/2","logs":{"k":{"o":{"size":1}}}}', "size"),
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
    assert "empty head" in check_history(empty, head, origin="o", root_at=root, proofs={})
    with pytest.raises(ForkError, match="empty-tree hash"):
        check_history(TrustedHead(0, ROOT), head, origin="o", root_at=root, proofs={})
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
    save_state(path, TrustedState({(KEY, "o"): TrustedHead(1, ROOT)}))
    assert base64.b64encode(ROOT).decode() in path.read_text()
