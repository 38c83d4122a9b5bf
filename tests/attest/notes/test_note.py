"""C2SP signed notes: vectors, tampering of every part, limits, properties."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path

import pytest
from hypothesis import assume, event, given
from hypothesis import strategies as st

from registre.attest.errors import (
    KnownSignerFailedError,
    NoteFormatError,
    NoTrustedSignatureError,
    TooManySignaturesError,
)
from registre.attest.notes import (
    MAX_SIGNATURES,
    DuplicateSignatureError,
    NoteSignature,
    SignatureInvalidError,
    Signer,
    Verifier,
    VerifierSetError,
    append_signature,
    open_note,
    parse_note,
    sign_note,
)
from registre.errors import RegistreError

VECTORS = json.loads(
    (Path(__file__).parents[3] / "specs" / "vectors" / "signed-note.json").read_text("utf-8")
)
C2SP = VECTORS["c2sp_signed_note_example"]
GO = VECTORS["go_sumdb_note_example"]

ALICE = Signer.from_seed("example.com/alice", bytes(range(32)))
BOB = Signer.from_seed("example.com/bob", bytes(range(1, 33)))
CAROL = Signer.from_seed("example.com/carol", bytes(range(2, 34)))
TEXT = "registre test note\nsecond line\n"

# text: any lines of non-control characters; a note text may contain blank lines
line_text = st.text(st.characters(exclude_categories=("Cc", "Cs")), max_size=30)
texts = st.lists(line_text, min_size=1, max_size=5).map(lambda lines: "\n".join(lines) + "\n")


def _signed(*signers: Signer, text: str = TEXT) -> str:
    return sign_note(text, list(signers))


# --- vectors ---------------------------------------------------------------------------


def test_c2sp_example_opens() -> None:
    opened = open_note(C2SP["note"], [Verifier.from_vkey(C2SP["vkey"])])
    assert opened.text == "This is an example message.\n"
    assert [s.name for s in opened.verified] == ["example.com/foo"]
    assert opened.unverified == []


def test_go_example_signature_line_byte_for_byte() -> None:
    note = sign_note(GO["text"], [Signer.from_skey(GO["skey"])])
    assert note == GO["text"] + "\n" + GO["signature_line"] + "\n"
    assert open_note(note.encode(), [Verifier.from_vkey(GO["vkey"])]).text == GO["text"]


# --- round trips -----------------------------------------------------------------------


def test_open_reports_verified_and_unverified_in_order() -> None:
    opened = open_note(_signed(ALICE, BOB, CAROL), [CAROL.verifier(), ALICE.verifier()])
    assert [s.name for s in opened.verified] == [ALICE.name, CAROL.name]
    assert [s.name for s in opened.unverified] == [BOB.name]
    assert opened.verified[0].key_id == ALICE.key_id
    assert opened.verified[0].signature == ALICE.sign(TEXT.encode())


@pytest.mark.parametrize("text", ["\n", "a\n\nb\n", "ends with blank\n\n", "— looks like a sig\n"])
def test_unusual_texts_round_trip(text: str) -> None:
    assert open_note(_signed(ALICE, text=text), [ALICE.verifier()]).text == text


def test_note_text_signed_as_utf8_bytes() -> None:
    text = "ünïcödé — 名前\n"
    note = _signed(ALICE, text=text)
    parsed, signatures = parse_note(note)
    assert parsed == text
    signature = signatures[0].signature
    assert signature == ALICE.sign(text.encode("utf-8"))  # Ed25519 is deterministic
    ALICE.verifier().verify(text.encode("utf-8"), signature)
    with pytest.raises(SignatureInvalidError):  # not another encoding of the same text
        ALICE.verifier().verify(text.encode("utf-16-le"), signature)


@given(
    text=texts,
    seeds=st.lists(st.binary(min_size=32, max_size=32), min_size=1, max_size=6, unique=True),
    known=st.lists(st.booleans(), min_size=6, max_size=6),
)
def test_sign_open_round_trip(text: str, seeds: list[bytes], known: list[bool]) -> None:
    assume(any(known[: len(seeds)]))
    signers = [Signer.from_seed(f"example.com/k{i}", seed) for i, seed in enumerate(seeds)]
    trusted = [s.verifier() for s, k in zip(signers, known, strict=False) if k]
    opened = open_note(sign_note(text, signers), trusted)
    assert opened.text == text
    assert [s.name for s in opened.verified] == [v.name for v in trusted]
    assert len(opened.verified) + len(opened.unverified) == len(signers)


@given(
    text=texts,
    seeds=st.lists(st.binary(min_size=32, max_size=32), min_size=2, max_size=4, unique=True),
    data=st.data(),
)
def test_any_single_byte_mutation_fails_or_touches_unknown_line(
    text: str, seeds: list[bytes], data: st.DataObject
) -> None:
    signers = [Signer.from_seed(f"example.com/k{i}", seed) for i, seed in enumerate(seeds)]
    trusted = [signers[0].verifier()]  # the others are unknown signers
    note = sign_note(text, signers).encode()
    position = data.draw(st.integers(0, len(note) - 1), label="position")
    value = data.draw(st.integers(0, 255).filter(lambda v: v != note[position]), label="value")
    mutated = note[:position] + bytes([value]) + note[position + 1 :]
    try:
        opened = open_note(mutated, trusted)
    except RegistreError:
        event("refused")
        return
    event("opened: the byte was in an unknown signer's line")
    # Opening may only succeed if the byte belonged to an unknown signer's line.
    first_unknown_line = len(text.encode()) + 1 + len(NoteSignature(
        signers[0].name, signers[0].key_id, b"\0" * 64).line().encode())  # fmt: skip
    assert position >= first_unknown_line
    assert opened.text == text
    assert [s.name for s in opened.verified] == [signers[0].name]


# --- tampering, one part of the note at a time -----------------------------------------


def test_tampered_text_fail() -> None:
    note = _signed(ALICE).replace("second", "sekond")
    with pytest.raises(KnownSignerFailedError, match=re.escape(ALICE.name)):
        open_note(note, [ALICE.verifier()])


def test_tampered_signature_bytes_fail() -> None:
    text, [signature] = parse_note(_signed(ALICE))
    flipped = bytes([signature.signature[0] ^ 1]) + signature.signature[1:]
    note = text + "\n" + NoteSignature(signature.name, signature.key_id, flipped).line()
    with pytest.raises(KnownSignerFailedError):
        open_note(note, [ALICE.verifier()])


def test_truncated_signature_from_known_key_fail() -> None:
    text, [signature] = parse_note(_signed(ALICE))
    note = text + "\n" + NoteSignature(ALICE.name, ALICE.key_id, signature.signature[:63]).line()
    with pytest.raises(KnownSignerFailedError, match="64"):
        open_note(note, [ALICE.verifier()])


def test_tampered_key_name_fail() -> None:
    note = _signed(ALICE).replace("— example.com/alice ", "— example.com/alicf ")
    with pytest.raises(NoTrustedSignatureError):
        open_note(note, [ALICE.verifier()])


def test_tampered_key_id_fail() -> None:
    text, [signature] = parse_note(_signed(ALICE))
    other_id = bytes([signature.key_id[0] ^ 1]) + signature.key_id[1:]
    note = text + "\n" + NoteSignature(ALICE.name, other_id, signature.signature).line()
    with pytest.raises(NoTrustedSignatureError):
        open_note(note, [ALICE.verifier()])


def test_right_key_other_name_fail() -> None:
    # The same private key under another name has another key id: its signature does not
    # count for the name the verifier trusts, even when relabelled with the trusted name.
    impostor = Signer.from_seed("example.com/mallory", bytes(range(32)))
    assert impostor.public_key == ALICE.public_key
    with pytest.raises(NoTrustedSignatureError):
        open_note(_signed(impostor), [ALICE.verifier()])
    text, [signature] = parse_note(_signed(impostor))
    relabelled = NoteSignature(ALICE.name, signature.key_id, signature.signature)
    with pytest.raises(NoTrustedSignatureError):
        open_note(text + "\n" + relabelled.line(), [ALICE.verifier()])


def test_same_name_other_key_ignored() -> None:
    # A rotated key (same name, other key id) is an unknown signer: ignored, not a failure.
    rotated = Signer.from_seed(ALICE.name, bytes(range(3, 35)))
    opened = open_note(_signed(rotated, BOB), [ALICE.verifier(), BOB.verifier()])
    assert [s.name for s in opened.verified] == [BOB.name]
    assert opened.unverified[0].key_id == rotated.key_id


@pytest.mark.parametrize("dash", ["-", "–", "―", "—", "-- "])
def test_tampered_em_dash_fail(dash: str) -> None:
    note = _signed(ALICE).replace("— ", dash, 1)
    with pytest.raises(NoteFormatError, match="em dash"):
        open_note(note, [ALICE.verifier()])


def test_missing_blank_line_fail() -> None:
    note = _signed(ALICE).replace("line\n\n—", "line\n—")
    with pytest.raises(NoteFormatError, match="no blank line"):
        open_note(note, [ALICE.verifier()])


def test_blank_line_replaced_fail() -> None:
    note = _signed(ALICE).replace("line\n\n—", "line\n \n—")
    with pytest.raises(NoteFormatError):
        open_note(note, [ALICE.verifier()])


def test_blank_line_after_signatures_fail() -> None:
    with pytest.raises(NoteFormatError, match="no signature lines"):
        open_note(_signed(ALICE) + "\n", [ALICE.verifier()])


def test_missing_final_newline_fail() -> None:
    with pytest.raises(NoteFormatError, match="end with a newline"):
        open_note(_signed(ALICE)[:-1], [ALICE.verifier()])


ALICE_B64 = base64.b64encode(ALICE.key_id + ALICE.sign(TEXT.encode())).decode()


@pytest.mark.parametrize(
    ("line", "message"),
    [
        (f"—{ALICE.name} {ALICE_B64}", "em dash"),
        (f"— {ALICE.name}{ALICE_B64}", "base64|space"),
        (f"— {ALICE.name}", "no space"),
        (f"—  {ALICE.name} {ALICE_B64}", "empty"),
        (f"— {ALICE.name} {ALICE_B64[:-1]}", "not standard base64"),
        (f"— {ALICE.name} {ALICE_B64} ", "not standard base64"),
        (f"— {ALICE.name} {ALICE_B64} extra", "not standard base64"),
        (f"— {ALICE.name} {base64.b64encode(b'abcd').decode()}", "at least 5"),
        (f"— {ALICE.name} ", "at least 5"),
        (f"— a+b {ALICE_B64}", "'\\+'"),
        (f"— a\u00a0b {ALICE_B64}", "whitespace"),
    ],
)
def test_malformed_signature_line_fail(line: str, message: str) -> None:
    with pytest.raises(NoteFormatError, match=message):
        open_note(f"{TEXT}\n{line}\n", [ALICE.verifier()])


def test_non_canonical_base64_fail() -> None:
    # 68 bytes end in one '=': the character before it carries 2 unused bits. Setting one
    # decodes to the same bytes but spells the signature a second way, which is refused.
    alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    assert ALICE_B64.endswith("=")
    respelled = ALICE_B64[:-2] + alphabet[alphabet.index(ALICE_B64[-2]) ^ 1] + "="
    assert base64.b64decode(respelled) == base64.b64decode(ALICE_B64)
    open_note(f"{TEXT}\n— {ALICE.name} {ALICE_B64}\n", [ALICE.verifier()])
    with pytest.raises(NoteFormatError, match="canonical"):
        open_note(f"{TEXT}\n— {ALICE.name} {respelled}\n", [ALICE.verifier()])


# --- characters ------------------------------------------------------------------------


@pytest.mark.parametrize("char", ["\x00", "\t", "\r", "\x1b", "\x7f", "\x85", "\u009f"])
def test_control_character_fail(char: str) -> None:
    with pytest.raises(NoteFormatError, match="control character"):
        sign_note(f"a{char}b\n", [ALICE])
    note = _signed(ALICE, text="aXb\n").replace("aXb", f"a{char}b")
    with pytest.raises(NoteFormatError, match="control character") as caught:
        open_note(note, [ALICE.verifier()])
    assert caught.value.position == 1
    with pytest.raises(NoteFormatError):
        open_note(note.encode(), [ALICE.verifier()])


def test_invalid_utf8_fail() -> None:
    note = _signed(ALICE, text="caf\u00e9\n").encode().replace("é".encode(), b"\xe9")
    with pytest.raises(NoteFormatError, match="UTF-8") as caught:
        open_note(note, [ALICE.verifier()])
    assert caught.value.position == 3


def test_lone_surrogate_fail() -> None:
    with pytest.raises(NoteFormatError, match="surrogate"):
        sign_note("a\ud800\n", [ALICE])


@pytest.mark.parametrize("text", ["", "no newline", "\x00\n"])
def test_bad_text_refused_when_signing(text: str) -> None:
    with pytest.raises(NoteFormatError):
        sign_note(text, [ALICE])


def test_sign_without_signers_refused() -> None:
    with pytest.raises(NoteFormatError, match="at least one signer"):
        sign_note(TEXT, [])


# --- trust decisions -------------------------------------------------------------------


def test_unknown_signers_only_fail() -> None:
    with pytest.raises(NoTrustedSignatureError, match="2 signature"):
        open_note(_signed(ALICE, BOB), [CAROL.verifier()])


def test_no_verifiers_fail() -> None:
    with pytest.raises(NoTrustedSignatureError):
        open_note(_signed(ALICE), [])


def test_one_failing_known_signer_rejects_whole_note() -> None:
    forged = sign_note("other text\n", [BOB])
    _, [bob_line] = parse_note(forged)
    note = _signed(ALICE) + bob_line.line()  # Alice's valid line, Bob's line for other text
    with pytest.raises(KnownSignerFailedError, match=re.escape(BOB.name)):
        open_note(note, [ALICE.verifier(), BOB.verifier()])
    assert open_note(note, [ALICE.verifier()]).unverified[0].name == BOB.name


def test_ambiguous_verifier_set_refused() -> None:
    class Impostor:
        name = ALICE.name
        key_id = ALICE.key_id
        public_key = BOB.public_key

        def verify(self, message: bytes, signature: bytes) -> None:
            return None

    with pytest.raises(VerifierSetError, match="ambiguous"):
        open_note(_signed(ALICE), [ALICE.verifier(), Impostor()])
    assert open_note(_signed(ALICE), [ALICE.verifier(), ALICE.verifier()]).verified


# --- duplicates and limits -------------------------------------------------------------


def test_duplicate_known_signature_line_fail() -> None:
    note = _signed(ALICE)
    with pytest.raises(DuplicateSignatureError, match=re.escape(ALICE.name)):
        open_note(note + note.split("\n\n")[1], [ALICE.verifier()])


def test_duplicate_unknown_signature_line_fail() -> None:
    note = _signed(ALICE, BOB)
    bob_line = note.split("\n")[-2] + "\n"
    with pytest.raises(DuplicateSignatureError, match=re.escape(BOB.name)):
        open_note(note + bob_line, [ALICE.verifier()])


def test_second_different_signature_same_key_fail() -> None:
    # Two lines from one key, the second a valid signature of other text: still refused,
    # never "verify the first, skip the rest".
    _, [other] = parse_note(sign_note("other\n", [ALICE]))
    with pytest.raises(DuplicateSignatureError):
        open_note(_signed(ALICE) + other.line(), [ALICE.verifier()])


def test_duplicate_signer_refused_when_signing() -> None:
    with pytest.raises(DuplicateSignatureError):
        sign_note(TEXT, [ALICE, ALICE])


@pytest.mark.parametrize("count", [16, MAX_SIGNATURES])
def test_many_signatures_accepted(count: int) -> None:
    signers = [Signer.from_seed(f"k{i}", i.to_bytes(32, "big")) for i in range(count)]
    opened = open_note(sign_note(TEXT, signers), [signers[-1].verifier()])
    assert len(opened.unverified) == count - 1


def test_over_cap_note_fail() -> None:
    signers = [Signer.from_seed(f"k{i}", i.to_bytes(32, "big")) for i in range(MAX_SIGNATURES)]
    note = sign_note(TEXT, signers)
    extra = NoteSignature("k-extra", b"\0\0\0\0", bytes(64)).line()
    with pytest.raises(TooManySignaturesError, match=str(MAX_SIGNATURES + 1)):
        open_note(note + extra, [signers[0].verifier()])
    with pytest.raises(TooManySignaturesError):
        sign_note(TEXT, [*signers, ALICE])


# --- appending -------------------------------------------------------------------------


def test_append_signature_adds_a_line() -> None:
    _, [bob_line] = parse_note(_signed(BOB))
    note = append_signature(_signed(ALICE), bob_line.line())
    assert [s.name for s in open_note(note, [ALICE.verifier(), BOB.verifier()]).verified] == [
        ALICE.name,
        BOB.name,
    ]


def test_append_malformed_line_fail() -> None:
    with pytest.raises(NoteFormatError):
        append_signature(_signed(ALICE), "- not a signature line\n")
    with pytest.raises(DuplicateSignatureError):
        append_signature(_signed(ALICE), _signed(ALICE).split("\n\n")[1])
