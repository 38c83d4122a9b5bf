"""specs/witness.md: the worked example is recomputed from the published test keys and tree
and found on the page byte for byte; the witness answers it exactly as the page says."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from registre.attest.notes import Checkpoint, CosignatureSigner, Signer, sign_checkpoint
from registre.attest.tree import MemoryHashSource, consistency_proof, root_at
from registre.witness.protocol import (
    SIZE_CONTENT_TYPE,
    AddCheckpointRequest,
    monitor_path,
    parse_monitor_path,
)
from registre.witness.state import WitnessState
from registre.witness.witness import Witness

SPECS = Path(__file__).resolve().parents[2] / "specs"
PAGE = (SPECS / "witness.md").read_text(encoding="utf-8")
KEYS = json.loads((SPECS / "vectors" / "signed-note.json").read_text())[
    "checkpoint_with_cosignature"
]
TREE = json.loads((SPECS / "vectors" / "merkle-rfc9162.json").read_text())
ORIGIN = "example.com/agent-ledger-test"
TIME = 1700000000


def block(text: str) -> str:
    """``text`` as a fenced block of the page."""
    return "```\n" + text + "```\n"


@pytest.fixture
def example(tmp_path: Path) -> tuple[Witness, bytes, str]:
    log = Signer.from_seed(ORIGIN, bytes.fromhex(KEYS["log_ed25519_seed_hex"]))
    cosigner = CosignatureSigner.from_seed(
        "witness.example/w1", bytes.fromhex(KEYS["witness_ed25519_seed_hex"])
    )
    assert (log.vkey(), cosigner.vkey()) == (KEYS["log_vkey"], KEYS["witness_vkey"])
    tree = MemoryHashSource(bytes.fromhex(h) for h in TREE["leaf_hashes_hex"])
    state = WitnessState.create(tmp_path / "witness.db")
    state.follow(log.vkey(), "example.com/")
    witness = Witness(cosigner, state, clock=lambda: TIME)
    first = sign_checkpoint(Checkpoint(ORIGIN, 4, root_at(tree, 4)), log)
    witness.add_checkpoint(AddCheckpointRequest.build(0, [], first))
    note = sign_checkpoint(Checkpoint(ORIGIN, 8, tree.root()), log)
    body = AddCheckpointRequest.build(4, consistency_proof(tree, 4, 8), note).encode()
    return witness, body, note


def test_worked_example_request_and_answers_on_the_page(
    example: tuple[Witness, bytes, str],
) -> None:
    witness, body, note = example
    assert block(body.decode()) in PAGE
    answer = witness.handle(body)
    assert answer.status == 200
    assert block(answer.body.decode()) in PAGE
    assert answer.body.decode() in (SPECS / "checkpoint.md").read_text(encoding="utf-8")
    path = monitor_path(ORIGIN)
    assert f"`GET {path}`" in PAGE
    origin_hash = parse_monitor_path(path)
    assert origin_hash is not None
    view = witness.monitor(origin_hash)
    assert view.status == 200 and block(view.body.decode()) in PAGE
    again = witness.handle(body)
    assert (again.status, again.content_type) == (409, SIZE_CONTENT_TYPE)
    assert block(again.body.decode()) in PAGE
    same = witness.handle(AddCheckpointRequest.build(8, [], note).encode())
    assert same.status == 200
