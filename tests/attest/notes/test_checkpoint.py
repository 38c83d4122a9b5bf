"""C2SP checkpoints: body format, signing, opening with origin and witness quorum."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registre.attest.errors import (
    CheckpointFormatError,
    CosignatureError,
    KnownSignerFailedError,
    NoteFormatError,
    NoTrustedSignatureError,
    OriginMismatchError,
    QuorumNotMetError,
)
from registre.attest.notes import (
    MAX_CHECKPOINT_SIZE,
    Checkpoint,
    CosignatureSigner,
    CosignatureVerifier,
    DuplicateSignatureError,
    NoteSignature,
    Signer,
    Verifier,
    WitnessCosignature,
    WitnessPolicyError,
    check_origin,
    cosign_checkpoint,
    cosigned_message,
    open_checkpoint,
    parse_note,
    sign_checkpoint,
    sign_note,
)

ROOT_DIR = Path(__file__).parents[3]
VECTORS = json.loads((ROOT_DIR / "specs" / "vectors" / "signed-note.json").read_text("utf-8"))
MERKLE = json.loads((ROOT_DIR / "specs" / "vectors" / "merkle-rfc9162.json").read_text("utf-8"))
CKPT = VECTORS["checkpoint_with_cosignature"]
ORIGIN = "example.com/agent-ledger-test"

LOG = Signer.from_seed(ORIGIN, bytes.fromhex(CKPT["log_ed25519_seed_hex"]))
W1 = CosignatureSigner.from_seed(
    "witness.example/w1", bytes.fromhex(CKPT["witness_ed25519_seed_hex"])
)
W2 = CosignatureSigner.from_seed("witness.example/w2", bytes(range(32)))
W3 = CosignatureSigner.from_seed("witness.example/w3", bytes(range(1, 33)))
THREAD_CKPT = Checkpoint(origin=f"{ORIGIN}/thread-1", size=3, root=bytes(range(32)))


def _witnessed(checkpoint: Checkpoint, *witnesses: CosignatureSigner, time: int = 1) -> str:
    note = sign_checkpoint(checkpoint, LOG)
    for witness in witnesses:
        note = cosign_checkpoint(note, LOG.verifier(), witness, time)
    return note


# --- vector ----------------------------------------------------------------------------


def test_vector_signed_checkpoint_reproduced_byte_for_byte() -> None:
    checkpoint = Checkpoint.parse(CKPT["checkpoint_body"])
    note = sign_checkpoint(checkpoint, LOG)
    assert note == CKPT["signed_checkpoint"].rsplit("— witness", 1)[0]
    assert (
        cosign_checkpoint(note, LOG.verifier(), W1, CKPT["cosignature_timestamp"])
        == (CKPT["signed_checkpoint"])
    )


def test_vector_opens_with_log_key_and_witness_quorum_1() -> None:
    verified = open_checkpoint(
        CKPT["signed_checkpoint"],
        Verifier.from_vkey(CKPT["log_vkey"]),
        origin=ORIGIN,
        witnesses=[CosignatureVerifier.from_vkey(CKPT["witness_vkey"])],
        quorum=1,
    )
    assert verified.cosignatures == [WitnessCosignature("witness.example/w1", 1700000000)]
    assert verified.checkpoint.size == 8
    assert verified.checkpoint.body() == CKPT["checkpoint_body"]


def test_vector_root_is_the_8_leaf_merkle_root() -> None:
    root = Checkpoint.parse(CKPT["checkpoint_body"]).root
    assert root.hex() == MERKLE["roots_hex_by_size"]["8"]


def test_vector_tlog_proof_carries_the_signed_checkpoint() -> None:
    assert CKPT["tlog_proof"].endswith("\n\n" + CKPT["signed_checkpoint"])


def test_spec_page_examples_are_the_vectors() -> None:
    spec = (ROOT_DIR / "specs" / "checkpoint.md").read_text("utf-8")
    go, c2sp = VECTORS["go_sumdb_note_example"], VECTORS["c2sp_signed_note_example"]
    message = cosigned_message(CKPT["checkpoint_body"], CKPT["cosignature_timestamp"])
    assert f"these {len(message)} bytes" in spec
    for value in (
        CKPT["signed_checkpoint"],
        CKPT["log_vkey"],
        CKPT["witness_vkey"],
        message.decode(),
        go["skey"],
        go["vkey"],
        c2sp["note"],
        c2sp["vkey"],
    ):
        assert value.strip() in spec


# --- body format -----------------------------------------------------------------------

checkpoints = st.builds(
    Checkpoint,
    origin=st.text(
        st.characters(exclude_categories=("Cc", "Cs", "Zs", "Zl", "Zp")), min_size=1, max_size=30
    ).filter(lambda text: not any(c.isspace() for c in text)),
    size=st.integers(0, MAX_CHECKPOINT_SIZE),
    root=st.binary(min_size=32, max_size=32),
    extensions=st.lists(
        st.text(st.characters(exclude_categories=("Cc", "Cs")), min_size=1, max_size=20),
        max_size=3,
    ).map(tuple),
)


@given(checkpoint=checkpoints)
def test_body_parse_round_trip(checkpoint: Checkpoint) -> None:
    assert Checkpoint.parse(checkpoint.body()) == checkpoint


def test_body_layout() -> None:
    checkpoint = Checkpoint("example.com/log", 0, bytes(32), ("ext one",))
    assert (
        checkpoint.body()
        == f"example.com/log\n0\n{base64.b64encode(bytes(32)).decode()}\next one\n"
    )


ROOT_B64 = base64.b64encode(bytes(32)).decode()


@pytest.mark.parametrize(
    ("text", "message", "position"),
    [
        (f"\n5\n{ROOT_B64}\n", r"line 1 \(origin\) is empty", 0),
        (f"a b\n5\n{ROOT_B64}\n", r"line 1 \(origin\).*whitespace", 0),
        (f"a\u3000b\n5\n{ROOT_B64}\n", r"line 1 \(origin\).*whitespace", 0),
        (f"log\n05\n{ROOT_B64}\n", r"line 2 \(tree size\)", 4),
        (f"log\n\n{ROOT_B64}\n", r"line 2 \(tree size\)", 4),
        (f"log\n-1\n{ROOT_B64}\n", r"line 2 \(tree size\)", 4),
        (f"log\n+1\n{ROOT_B64}\n", r"line 2 \(tree size\)", 4),
        (f"log\n 1\n{ROOT_B64}\n", r"line 2 \(tree size\)", 4),
        (f"log\n1_000\n{ROOT_B64}\n", r"line 2 \(tree size\)", 4),
        (f"log\n\u0661\n{ROOT_B64}\n", r"line 2 \(tree size\)", 4),  # Arabic-Indic one
        (f"log\n{2**64}\n{ROOT_B64}\n", "does not fit in 64 bits", 4),
        ("log\n5\nnot base64!\n", r"line 3 \(root hash\) is not standard", 6),
        (f"log\n5\n{ROOT_B64[:-1]}\n", r"line 3 \(root hash\) is not standard", 6),
        (f"log\n5\n{base64.b64encode(bytes(31)).decode()}\n", "decodes to 31 bytes", 6),
        (f"log\n5\n{base64.b64encode(bytes(33)).decode()}\n", "decodes to 33 bytes", 6),
        (f"log\n5\n{ROOT_B64[:-2]}B=\n", "not canonical", 6),
        (f"log\n5\n{ROOT_B64}\n\n", r"line 4 \(extension\) is empty", 51),
        (f"log\n5\n{ROOT_B64}\nok\n\n", r"line 5 \(extension\) is empty", 54),
        (f"log\n5\n{ROOT_B64}\na\tb\n", r"line 4 \(extension\).*control", 51),
    ],
)
def test_malformed_checkpoint_fail(text: str, message: str, position: int) -> None:
    with pytest.raises(CheckpointFormatError, match=message) as caught:
        Checkpoint.parse(text)
    assert caught.value.position == position


@pytest.mark.parametrize("text", ["", "log\n5\n", f"log\n5\n{ROOT_B64}"])
def test_truncated_checkpoint_fail(text: str) -> None:
    with pytest.raises(CheckpointFormatError):
        Checkpoint.parse(text)


@pytest.mark.parametrize(
    "text",
    [
        f"log\n5\n{ROOT_B64}",
        # without the check, the last character would be cut and "ex" read as an extension
        f"log\n5\n{ROOT_B64}\next",
        f"log\n5\n{ROOT_B64}\r",
    ],
)
def test_checkpoint_without_its_final_newline_fail(text: str) -> None:
    with pytest.raises(CheckpointFormatError, match="must end with a newline"):
        Checkpoint.parse(text)


@pytest.mark.parametrize(
    "fields",
    [
        {"origin": "", "size": 1, "root": bytes(32)},
        {"origin": "a\nb", "size": 1, "root": bytes(32)},
        {"origin": "log", "size": -1, "root": bytes(32)},
        {"origin": "log", "size": 2**64, "root": bytes(32)},
        {"origin": "log", "size": True, "root": bytes(32)},
        {"origin": "log", "size": 1, "root": bytes(31)},
        {"origin": "log", "size": 1, "root": bytes(32), "extensions": ("",)},
        {"origin": "log", "size": 1, "root": bytes(32), "extensions": ("a\nb",)},
    ],
)
def test_invalid_checkpoint_fields_refused(fields: dict[str, object]) -> None:
    with pytest.raises(CheckpointFormatError):
        Checkpoint(**fields)  # type: ignore[arg-type]


# --- opening: the log's signature and the origin ---------------------------------------


def test_open_without_witnesses() -> None:
    verified = open_checkpoint(sign_checkpoint(THREAD_CKPT, LOG), LOG.verifier())
    assert verified.checkpoint == THREAD_CKPT
    assert verified.cosignatures == []
    assert verified.note.verified[0].name == LOG.name


def test_open_from_bytes() -> None:
    note = sign_checkpoint(THREAD_CKPT, LOG).encode()
    assert open_checkpoint(note, LOG.verifier()).checkpoint == THREAD_CKPT


def test_checkpoint_signed_by_other_log_fail() -> None:
    impostor = Signer.generate(LOG.name)
    with pytest.raises(NoTrustedSignatureError):
        open_checkpoint(sign_checkpoint(THREAD_CKPT, impostor), LOG.verifier())


def test_tampered_tree_size_fail() -> None:
    note = sign_checkpoint(THREAD_CKPT, LOG).replace("\n3\n", "\n4\n", 1)
    with pytest.raises(KnownSignerFailedError):
        open_checkpoint(note, LOG.verifier())


def test_witness_only_checkpoint_fail() -> None:
    # A checkpoint carrying only witness cosignatures, no log signature, is not trusted.
    line = W1.cosign(THREAD_CKPT.body(), 5)
    note = THREAD_CKPT.body() + "\n" + line
    with pytest.raises(NoTrustedSignatureError):
        open_checkpoint(note, LOG.verifier(), witnesses=[W1.verifier()], quorum=1)


def test_signed_text_not_a_checkpoint_fail() -> None:
    note = sign_note("just a note\n", [LOG])
    with pytest.raises(CheckpointFormatError):
        open_checkpoint(note, LOG.verifier())


def test_origin_mismatch_fail() -> None:
    note = sign_checkpoint(THREAD_CKPT, LOG)
    with pytest.raises(OriginMismatchError, match="thread-2"):
        open_checkpoint(note, LOG.verifier(), origin=f"{ORIGIN}/thread-2")
    assert open_checkpoint(note, LOG.verifier(), origin=f"{ORIGIN}/thread-1")


def test_check_origin_returns_thread() -> None:
    assert check_origin(THREAD_CKPT, ORIGIN) == "thread-1"
    nested = Checkpoint(f"{ORIGIN}/a/b", 0, bytes(32))
    assert check_origin(nested, ORIGIN) == "a/b"


@pytest.mark.parametrize(
    "origin", [ORIGIN, f"{ORIGIN}/", f"{ORIGIN}x/thread", "other.example/thread", "example.com"]
)
def test_origin_of_other_log_fail(origin: str) -> None:
    with pytest.raises(OriginMismatchError):
        check_origin(Checkpoint(origin, 0, bytes(32)), ORIGIN)


# --- opening: witnesses and quorum -----------------------------------------------------


def test_quorum_two_of_three() -> None:
    note = _witnessed(THREAD_CKPT, W1, W3, time=1700000000)
    pinned = [W1.verifier(), W2.verifier(), W3.verifier()]
    verified = open_checkpoint(note, LOG.verifier(), witnesses=pinned, quorum=2)
    assert verified.cosignatures == [
        WitnessCosignature(W1.name, 1700000000),
        WitnessCosignature(W3.name, 1700000000),
    ]
    with pytest.raises(QuorumNotMetError, match=r"2 valid cosignature\(s\).*3 needed"):
        open_checkpoint(note, LOG.verifier(), witnesses=pinned, quorum=3)


def test_quorum_not_met_fail() -> None:
    note = _witnessed(THREAD_CKPT, W1)
    with pytest.raises(QuorumNotMetError, match=r"1 valid .* 2 needed"):
        open_checkpoint(note, LOG.verifier(), witnesses=[W1.verifier(), W2.verifier()], quorum=2)


def test_unknown_witness_ignored() -> None:
    stranger = CosignatureSigner.generate("witness.example/stranger")
    note = _witnessed(THREAD_CKPT, stranger, W1)
    verified = open_checkpoint(note, LOG.verifier(), witnesses=[W1.verifier()], quorum=1)
    assert [c.name for c in verified.cosignatures] == [W1.name]
    with pytest.raises(QuorumNotMetError, match="0 valid"):
        open_checkpoint(
            _witnessed(THREAD_CKPT, stranger), LOG.verifier(), witnesses=[W1.verifier()], quorum=1
        )


def test_forged_cosignature_from_pinned_witness_fail() -> None:
    # W1's cosignature of another checkpoint, pasted onto this one: a pinned witness whose
    # line fails rejects the checkpoint even though the quorum needs no witness.
    other = Checkpoint(THREAD_CKPT.origin, 4, bytes(32))
    replayed = W1.cosign(other.body(), 7)
    note = sign_checkpoint(THREAD_CKPT, LOG) + replayed
    with pytest.raises(CosignatureError, match=W1.name):
        open_checkpoint(note, LOG.verifier(), witnesses=[W1.verifier()], quorum=0)
    assert open_checkpoint(note, LOG.verifier()).cosignatures == []  # not pinned: ignored


def test_tampered_cosignature_timestamp_fail() -> None:
    note = _witnessed(THREAD_CKPT, W1, time=100)
    text, signatures = parse_note(note)
    witness_line = signatures[1]
    moved = NoteSignature(
        witness_line.name,
        witness_line.key_id,
        (200).to_bytes(8, "big") + witness_line.signature[8:],
    )
    forged = text + "\n" + signatures[0].line() + moved.line()
    with pytest.raises(CosignatureError, match="time 200"):
        open_checkpoint(forged, LOG.verifier(), witnesses=[W1.verifier()], quorum=1)


def test_duplicate_cosignature_fail() -> None:
    note = _witnessed(THREAD_CKPT, W1)
    with pytest.raises(DuplicateSignatureError):
        cosign_checkpoint(note, LOG.verifier(), W1, 2)
    with pytest.raises(NoteFormatError):
        open_checkpoint(note + note.split("\n")[-2] + "\n", LOG.verifier())


def test_quorum_larger_than_witness_set_refused() -> None:
    note = _witnessed(THREAD_CKPT, W1)
    with pytest.raises(WitnessPolicyError, match="quorum 2"):
        open_checkpoint(note, LOG.verifier(), witnesses=[W1.verifier()], quorum=2)
    with pytest.raises(WitnessPolicyError):
        open_checkpoint(note, LOG.verifier(), witnesses=[], quorum=-1)


def test_witness_sharing_a_key_refused() -> None:
    # cosignature/v1 does not sign the witness name: one key under two names would count
    # twice toward the quorum.
    alias = CosignatureVerifier("witness.example/alias", W1.public_key)
    with pytest.raises(WitnessPolicyError, match="shares its public key"):
        open_checkpoint(
            _witnessed(THREAD_CKPT, W1), LOG.verifier(), witnesses=[W1.verifier(), alias], quorum=2
        )


def test_log_key_as_witness_refused() -> None:
    as_witness = CosignatureVerifier(LOG.name, LOG.public_key)
    with pytest.raises(WitnessPolicyError):
        open_checkpoint(
            sign_checkpoint(THREAD_CKPT, LOG), LOG.verifier(), witnesses=[as_witness], quorum=1
        )


def test_witness_refuses_to_cosign_unsigned_checkpoint() -> None:
    forged = sign_checkpoint(THREAD_CKPT, Signer.generate(LOG.name))
    with pytest.raises(NoTrustedSignatureError):
        cosign_checkpoint(forged, LOG.verifier(), W1, 1)


@given(
    checkpoint=checkpoints,
    chosen=st.lists(st.sampled_from([W1, W2, W3]), unique_by=lambda w: w.name),
    time=st.integers(0, 2**63 - 1),
)
def test_witnessed_checkpoint_round_trip(
    checkpoint: Checkpoint, chosen: list[CosignatureSigner], time: int
) -> None:
    note = _witnessed(checkpoint, *chosen, time=time)
    pinned = [W1.verifier(), W2.verifier(), W3.verifier()]
    verified = open_checkpoint(
        note, LOG.verifier(), origin=checkpoint.origin, witnesses=pinned, quorum=len(chosen)
    )
    assert verified.checkpoint == checkpoint
    assert verified.cosignatures == [WitnessCosignature(w.name, time) for w in chosen]
