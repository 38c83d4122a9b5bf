"""ledger.proof_text: the C2SP tlog-proof text and registre's consistency proof text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from registre.ledger.exchange.proof_text import (
    ProofTextError,
    format_consistency_proof,
    format_inclusion_proof,
    parse_consistency_proof,
    parse_inclusion_proof,
)

VECTORS = Path(__file__).resolve().parents[3] / "specs" / "vectors" / "signed-note.json"


def vector() -> dict[str, str]:
    data: dict[str, dict[str, str]] = json.loads(VECTORS.read_text(encoding="utf-8"))
    return data["checkpoint_with_cosignature"]


def test_public_tlog_proof_example_round_trips() -> None:
    example = vector()
    proof = parse_inclusion_proof(example["tlog_proof"])
    assert proof.number == 5 and len(proof.hashes) == 3
    assert proof.checkpoint == example["signed_checkpoint"]
    assert format_inclusion_proof(5, proof.hashes, proof.checkpoint) == example["tlog_proof"]


C2SP_EXTRA = "YWdlLXYxLjIuMS1kYXJ3aW4tYXJtNjQudGFyLmd6kYXJ3aW4tYXJ"  # the C2SP page's example


def with_extra(text: str, value: str = C2SP_EXTRA) -> str:
    header, rest = text.split("\n", 1)
    return f"{header}\nextra {value}\n{rest}"


def test_tlog_proof_with_extra_line_read() -> None:
    example = vector()
    proof = parse_inclusion_proof(with_extra(example["tlog_proof"]))
    assert (proof.number, proof.checkpoint) == (5, example["signed_checkpoint"])
    assert proof.hashes == parse_inclusion_proof(example["tlog_proof"]).hashes
    assert proof.extra is not None and proof.extra.startswith(b"age-v1.2.1-darwin-arm64.tar.gz")
    assert parse_inclusion_proof(example["tlog_proof"]).extra is None


@pytest.mark.parametrize("value", ["", "not base64!", "YWJj=", "YWJjZA", "YWJjZB=="])
def test_malformed_extra_line_fail(value: str) -> None:
    with pytest.raises(ProofTextError, match="line 2: the 'extra' data"):
        parse_inclusion_proof(with_extra(vector()["tlog_proof"], value))


def test_extra_line_out_of_place_fail() -> None:
    lines = vector()["tlog_proof"].split("\n")
    lines.insert(2, f"extra {C2SP_EXTRA}")  # after the index line
    with pytest.raises(ProofTextError, match="line 3"):
        parse_inclusion_proof("\n".join(lines))
    # the consistency text has no extra line
    text = format_consistency_proof(3, [], vector()["signed_checkpoint"])
    with pytest.raises(ProofTextError, match="line 2 must be 'old N'"):
        parse_consistency_proof(with_extra(text))


def test_consistency_text_round_trips() -> None:
    checkpoint = vector()["signed_checkpoint"]
    text = format_consistency_proof(3, [b"\x01" * 32, b"\x02" * 32], checkpoint)
    assert text.splitlines()[:2] == ["registre/tlog-consistency-proof@v1", "old 3"]
    proof = parse_consistency_proof(text)
    assert (proof.number, proof.hashes, proof.checkpoint) == (
        3,
        [b"\x01" * 32, b"\x02" * 32],
        checkpoint,
    )
    assert parse_consistency_proof(format_consistency_proof(0, [], checkpoint)).hashes == []


@pytest.mark.parametrize(
    "mutate",
    [
        lambda t: t.replace("c2sp.org/tlog-proof@v1", "c2sp.org/tlog-proof@v2"),
        lambda t: t.replace("index 5", "index 05"),
        lambda t: t.replace("index 5", "index -5"),
        lambda t: t.replace("index 5", "idx 5"),
        lambda t: t.replace("vBoGQ7EuTS18d5GPROD095qDi2z57FtcKD4fTYhZnms=", "vBoGQ7Eu"),
        lambda t: t.replace(
            "vBoGQ7EuTS18d5GPROD095qDi2z57FtcKD4fTYhZnms=",
            "vBoGQ7EuTS18d5GPROD095qDi2z57FtcKD4fTYhZnmt=",
        ),
        lambda t: t.split("\n\n")[0],
    ],
)
def test_malformed_proof_text_fail(mutate: object) -> None:
    assert callable(mutate)
    with pytest.raises(ProofTextError):
        parse_inclusion_proof(mutate(vector()["tlog_proof"]))


def test_too_many_hashes_fail() -> None:
    text = format_inclusion_proof(0, [b"\x00" * 32] * 64, vector()["signed_checkpoint"])
    with pytest.raises(ProofTextError, match="more than 63"):
        parse_inclusion_proof(text)


def test_spec_example_is_the_vector() -> None:
    spec = (VECTORS.parents[1] / "proof-format.md").read_text(encoding="utf-8")
    example = spec.split("Example (the public test vector", 1)[1].split("```text\n", 1)[1]
    assert example.split("```", 1)[0] == vector()["tlog_proof"]
