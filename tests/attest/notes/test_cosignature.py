"""Witness cosignatures (C2SP tlog-cosignature, cosignature/v1)."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registre.attest.errors import BadKeyError, CosignatureError, NoteFormatError
from registre.attest.notes import (
    ALG_COSIGNATURE_V1,
    COSIGNATURE_SIZE,
    MAX_TIMESTAMP,
    CosignatureSigner,
    CosignatureVerifier,
    SignatureInvalidError,
    Signer,
    Verifier,
    cosigned_message,
    key_id,
    parse_note,
)

VECTORS = json.loads(
    (Path(__file__).parents[3] / "specs" / "vectors" / "signed-note.json").read_text("utf-8")
)
CKPT = VECTORS["checkpoint_with_cosignature"]
BODY = CKPT["checkpoint_body"]
WITNESS = CosignatureSigner.from_seed(
    "witness.example/w1", bytes.fromhex(CKPT["witness_ed25519_seed_hex"])
)


def _payload(line: str) -> bytes:
    return base64.b64decode(line.rstrip("\n").split(" ")[-1])[4:]


def test_witness_seed_vector_gives_witness_vkey() -> None:
    assert WITNESS.vkey() == CKPT["witness_vkey"]
    assert CosignatureVerifier.from_vkey(CKPT["witness_vkey"]).key_id == WITNESS.key_id
    assert WITNESS.key_id == key_id(WITNESS.name, ALG_COSIGNATURE_V1, WITNESS.public_key)


def test_cosignature_line_matches_vector() -> None:
    line = WITNESS.cosign(BODY, CKPT["cosignature_timestamp"])
    assert line == CKPT["signed_checkpoint"].split("\n")[-2] + "\n"


def test_cosigned_message_layout() -> None:
    assert cosigned_message(BODY, 1700000000) == (
        b"cosignature/v1\ntime 1700000000\n" + BODY.encode()
    )
    assert cosigned_message(BODY, 0).startswith(b"cosignature/v1\ntime 0\n")


def test_vector_cosignature_verifies_with_timestamp() -> None:
    _, signatures = parse_note(CKPT["signed_checkpoint"])
    witness_line = signatures[1]
    assert witness_line.signature[:8] == (1700000000).to_bytes(8, "big")
    verifier = CosignatureVerifier.from_vkey(CKPT["witness_vkey"])
    assert verifier.verify(BODY.encode(), witness_line.signature) == 1700000000


@given(
    body=st.text(st.characters(exclude_categories=("Cc", "Cs")), max_size=80).map(
        lambda text: text + "\n"
    ),
    timestamp=st.integers(0, MAX_TIMESTAMP),
)
def test_cosign_verify_round_trip(body: str, timestamp: int) -> None:
    payload = _payload(WITNESS.cosign(body, timestamp))
    assert len(payload) == COSIGNATURE_SIZE
    assert WITNESS.verifier().verify(body.encode(), payload) == timestamp


def test_tampered_timestamp_fail() -> None:
    payload = _payload(WITNESS.cosign(BODY, 1700000000))
    later = (1700000001).to_bytes(8, "big") + payload[8:]
    with pytest.raises(CosignatureError, match="time 1700000001"):
        WITNESS.verifier().verify(BODY.encode(), later)


def test_cosignature_of_other_checkpoint_fail() -> None:
    payload = _payload(WITNESS.cosign(BODY, 1700000000))
    other = BODY.replace("\n8\n", "\n9\n")
    with pytest.raises(CosignatureError, match="does not verify"):
        WITNESS.verifier().verify(other.encode(), payload)


def test_cosignature_by_other_witness_fail() -> None:
    other = CosignatureSigner.generate(WITNESS.name)
    with pytest.raises(CosignatureError):
        WITNESS.verifier().verify(BODY.encode(), _payload(other.cosign(BODY, 1)))


@pytest.mark.parametrize("length", [0, 64, 71, 73])
def test_cosignature_wrong_length_fail(length: int) -> None:
    with pytest.raises(CosignatureError, match="72"):
        WITNESS.verifier().verify(BODY.encode(), bytes(length))


def test_timestamp_above_2_63_fail() -> None:
    payload = _payload(WITNESS.cosign(BODY, 1))
    with pytest.raises(CosignatureError, match="2\\^63"):
        WITNESS.verifier().verify(BODY.encode(), (2**63).to_bytes(8, "big") + payload[8:])


@pytest.mark.parametrize("timestamp", [-1, MAX_TIMESTAMP + 1])
def test_cosign_timestamp_out_of_range_refused(timestamp: int) -> None:
    with pytest.raises(CosignatureError):
        WITNESS.cosign(BODY, timestamp)


def test_cosign_malformed_body_refused() -> None:
    with pytest.raises(NoteFormatError):
        WITNESS.cosign("no final newline", 1)


def test_cosignature_is_not_a_log_signature_fail() -> None:
    # Domain separation: the witness's Ed25519 signature covers "cosignature/v1\ntime T\n" +
    # body, so it never verifies as a plain note signature by the same public key.
    payload = _payload(WITNESS.cosign(BODY, 1700000000))
    as_log_key = Verifier(WITNESS.name, WITNESS.public_key)
    assert as_log_key.key_id != WITNESS.key_id
    with pytest.raises(SignatureInvalidError):
        as_log_key.verify(BODY.encode(), payload[8:])


def test_log_signature_is_not_a_cosignature_fail() -> None:
    log = Signer.from_seed("w", bytes.fromhex(CKPT["witness_ed25519_seed_hex"]))
    payload = (0).to_bytes(8, "big") + log.sign(BODY.encode())
    with pytest.raises(CosignatureError):
        CosignatureVerifier("w", log.public_key).verify(BODY.encode(), payload)


def test_witness_key_offered_as_log_key_fail() -> None:
    """A cosignature/v1 key string is never read as a log key, nor a log key as a witness's:
    the key type is part of the key id, and each verifier reads only its own type."""
    with pytest.raises(BadKeyError):
        Verifier.from_vkey(CKPT["witness_vkey"])
    with pytest.raises(BadKeyError):
        CosignatureVerifier.from_vkey(CKPT["log_vkey"])
