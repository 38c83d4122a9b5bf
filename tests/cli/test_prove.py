"""`registre prove inclusion|consistency`: proofs an auditor checks with the pinned key only."""

from __future__ import annotations

import json
from pathlib import Path

from registre.attest.notes import Verifier, open_checkpoint
from registre.attest.tree import leaf_hash, verify_consistency, verify_inclusion
from registre.ledger.exchange.proof_text import parse_consistency_proof, parse_inclusion_proof
from tests.cli.conftest import Run, error_and_hint, one_line_error


def test_inclusion_proof_verifies_against_its_checkpoint(initialised: str, run: Run) -> None:
    leaf = run("log", "t1", "--from", "1", "--to", "1", "--json").out.strip().encode()
    assert run("checkpoint", "t1").code == 0
    text = run("prove", "inclusion", "t1", "1").out
    assert text.startswith("c2sp.org/tlog-proof@v1\nindex 1\n")
    proof = parse_inclusion_proof(text)
    checkpoint = open_checkpoint(proof.checkpoint, Verifier.from_vkey(initialised)).checkpoint
    assert checkpoint.size == 3
    verify_inclusion(leaf_hash(leaf), proof.number, checkpoint.size, proof.hashes, checkpoint.root)


def test_inclusion_proof_in_older_tree(initialised: str, run: Run) -> None:
    assert run("checkpoint", "t1", "--size", "2").code == 0
    proof = parse_inclusion_proof(run("prove", "inclusion", "t1", "0", "--size", "2").out)
    checkpoint = open_checkpoint(proof.checkpoint, Verifier.from_vkey(initialised)).checkpoint
    assert checkpoint.size == 2 and len(proof.hashes) == 1


def test_consistency_proof_between_checkpoints(initialised: str, run: Run) -> None:
    vkey = Verifier.from_vkey(initialised)
    old = open_checkpoint(run("checkpoint", "t1", "--size", "1").out, vkey).checkpoint
    for text in ("five", "six"):
        body = json.dumps({"role": "user", "text": text})
        run("append", "t1", "--kind", "turn", "--body", body)
    assert run("checkpoint", "t1").code == 0
    output = run("prove", "consistency", "t1", "1", "5").out
    assert output.startswith("registre/tlog-consistency-proof@v1\nold 1\n")
    proof = parse_consistency_proof(output)
    new = open_checkpoint(proof.checkpoint, vkey).checkpoint
    verify_consistency(old.size, new.size, proof.hashes, old.root, new.root)


def test_bad_proof_requests_fail(initialised: str, run: Run) -> None:
    one_line_error(run("prove", "inclusion", "t1", "3"))
    one_line_error(run("prove", "inclusion", "t1", "-1"))
    one_line_error(run("prove", "inclusion", "t1", "x"))
    one_line_error(run("prove", "inclusion", "t1", "0", "--size", "9"))
    one_line_error(run("prove", "consistency", "t1", "3", "2"))
    one_line_error(run("prove", "inclusion", "t9", "0"))


def test_proof_never_signs_a_checkpoint(initialised: str, run: Run, workdir: Path) -> None:
    """A proof is a read: at a size with no signed checkpoint it is refused, naming the
    command that signs one, and nothing is stored; the stored checkpoint then suffices."""
    (workdir / ".registre" / "operator.key").rename(workdir / "moved.key")
    for command in (
        ("prove", "inclusion", "t1", "0"),
        ("prove", "inclusion", "t1", "0", "--size", "2"),
        ("prove", "consistency", "t1", "1", "3"),
        ("expand", "t1", "0"),
    ):
        error, hint = error_and_hint(run(*command))
        assert "no signed checkpoint" in error and "registre checkpoint t1 --size" in str(hint)
    assert run("checkpoint", "t1", "--key-file", "moved.key").code == 0
    assert run("prove", "inclusion", "t1", "0").code == 0  # the stored checkpoint suffices
