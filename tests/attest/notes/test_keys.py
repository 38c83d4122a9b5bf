"""Ed25519 keys: key ids, vkey/skey strings, weak-key refusal, key files."""

from __future__ import annotations

import base64
import hashlib
import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from hypothesis import given
from hypothesis import strategies as st

from registre.attest.errors import BadKeyError, WeakKeyError
from registre.attest.notes import (
    ALG_COSIGNATURE_V1,
    ALG_ED25519,
    CosignatureSigner,
    CosignatureVerifier,
    KeyFileCorruptedError,
    KeyFilePermissionError,
    KeyFileRefusedError,
    KeyPassphraseError,
    LegacyKeyFileWarning,
    SignatureInvalidError,
    Signer,
    Verifier,
    check_key_name,
    key_id,
)

VECTORS = json.loads(
    (Path(__file__).parents[3] / "specs" / "vectors" / "signed-note.json").read_text("utf-8")
)
GO = VECTORS["go_sumdb_note_example"]
CKPT = VECTORS["checkpoint_with_cosignature"]

key_names = st.text(
    st.characters(
        exclude_categories=("Cc", "Cs", "Zs", "Zl", "Zp"), exclude_characters="+\x1c\x1d\x1e\x1f"
    ),
    min_size=1,
    max_size=40,
).filter(lambda name: not any(c.isspace() for c in name))
seeds = st.binary(min_size=32, max_size=32)


def vkey_for(name: str, alg: int, public_key: bytes) -> str:
    """A vkey string built by hand from the spec, with a correct key id."""
    kid = hashlib.sha256(name.encode() + b"\n" + bytes([alg]) + public_key).digest()[:4]
    return f"{name}+{kid.hex()}+{base64.b64encode(bytes([alg]) + public_key).decode()}"


# --- key ids and key strings -----------------------------------------------------------


def test_key_id_is_truncated_sha256_of_name_newline_alg_key() -> None:
    public_key = bytes(range(32))
    expected = hashlib.sha256(b"example.com/log\n\x01" + public_key).digest()[:4]
    assert key_id("example.com/log", ALG_ED25519, public_key) == expected
    assert key_id("example.com/log", ALG_COSIGNATURE_V1, public_key) != expected


def test_go_skey_vector_gives_go_vkey() -> None:
    signer = Signer.from_skey(GO["skey"])
    assert signer.vkey() == GO["vkey"]
    assert signer.seed().hex() == GO["ed25519_seed_hex"]
    assert signer.skey() == GO["skey"]
    assert (
        Signer.from_seed("PeterNeumann", bytes.fromhex(GO["ed25519_seed_hex"])).vkey()
        == (GO["vkey"])
    )


@pytest.mark.parametrize(
    "vkey", [GO["vkey"], VECTORS["c2sp_signed_note_example"]["vkey"], CKPT["log_vkey"]]
)
def test_vector_vkeys_round_trip(vkey: str) -> None:
    assert Verifier.from_vkey(vkey).vkey() == vkey


def test_log_seed_vector_gives_log_vkey() -> None:
    signer = Signer.from_seed(
        "example.com/agent-ledger-test", bytes.fromhex(CKPT["log_ed25519_seed_hex"])
    )
    assert signer.vkey() == CKPT["log_vkey"]
    assert signer.verifier().vkey() == CKPT["log_vkey"]


@given(name=key_names, seed=seeds)
def test_key_strings_round_trip(name: str, seed: bytes) -> None:
    signer = Signer.from_seed(name, seed)
    assert Signer.from_skey(signer.skey()).public_key == signer.public_key
    verifier = Verifier.from_vkey(signer.vkey())
    assert (verifier.name, verifier.key_id, verifier.public_key) == (
        name,
        signer.key_id,
        signer.public_key,
    )
    assert signer.vkey() == vkey_for(name, ALG_ED25519, signer.public_key)


@given(name=key_names, seed=seeds, message=st.binary(max_size=200))
def test_sign_then_verify(name: str, seed: bytes, message: bytes) -> None:
    signer = Signer.from_seed(name, seed)
    signature = signer.sign(message)
    assert len(signature) == 64
    signer.verifier().verify(message, signature)
    with pytest.raises(SignatureInvalidError):
        signer.verifier().verify(message + b"x", signature)


def test_signature_of_other_message_fail() -> None:
    signer = Signer.generate("example.com/log")
    with pytest.raises(SignatureInvalidError, match="does not verify"):
        signer.verifier().verify(b"two", signer.sign(b"one"))


@pytest.mark.parametrize("length", [0, 63, 65])
def test_signature_wrong_length_fail(length: int) -> None:
    with pytest.raises(SignatureInvalidError, match="64"):
        Signer.generate("k").verifier().verify(b"m", bytes(length))


def test_signature_by_other_key_fail() -> None:
    alice, mallory = Signer.generate("alice"), Signer.generate("alice")
    with pytest.raises(SignatureInvalidError):
        alice.verifier().verify(b"m", mallory.sign(b"m"))


def test_repr_does_not_leak_seed() -> None:
    signer = Signer.from_seed("k", bytes(range(32)))
    assert base64.b64encode(b"\x01" + bytes(range(32))).decode() not in repr(signer)
    assert bytes(range(32)).hex() not in repr(signer)


# --- key names -------------------------------------------------------------------------


@pytest.mark.parametrize(
    "name",
    ["", "a+b", "a b", "a\tb", "a\nb", "a\u00a0b", "a\u2003b", "a\u2028b", "a\u3000b",
     "a\x00b", "a\x7fb", "a\x85b", "a\x1cb", "a\ud800b"],
)  # fmt: skip
def test_bad_key_name_fail(name: str) -> None:
    with pytest.raises(BadKeyError):
        check_key_name(name)
    with pytest.raises(BadKeyError):
        Signer.generate(name)


@pytest.mark.parametrize("name", ["example.com/log", "ünïcödé/名前", "oid/1.3.6.1", "a"])
def test_good_key_name_accepted(name: str) -> None:
    signer = Signer.generate(name)
    assert Verifier.from_vkey(signer.vkey()).name == name


# --- vkey/skey tampering ---------------------------------------------------------------


def test_vkey_key_id_mismatch_fail() -> None:
    name, hex_id, blob = GO["vkey"].split("+", 2)
    wrong = f"{(int(hex_id, 16) ^ 1):08x}"
    with pytest.raises(BadKeyError, match="does not match"):
        Verifier.from_vkey(f"{name}+{wrong}+{blob}")


def test_vkey_renamed_key_fail() -> None:
    _, hex_id, blob = GO["vkey"].split("+", 2)
    with pytest.raises(BadKeyError, match="does not match"):
        Verifier.from_vkey(f"PeterNeuman+{hex_id}+{blob}")


@pytest.mark.parametrize(
    "text",
    [
        "PeterNeumann+C74F20A3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",  # upper-case id
        "PeterNeumann+c74f20a+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TW",  # 7 hex digits
        "PeterNeumann+c74f20a3",  # no key material
        "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10T",  # bad padding
        "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10TX",  # non-canonical
        "PeterNeumann+c74f20a3+ARpc2QcUPDhMQegwxbzhKqiBfsVkmqq/LDE4izWy10T!",  # not base64
        "PeterNeumann+c74f20a3+",  # empty material
    ],
)
def test_malformed_vkey_fail(text: str) -> None:
    with pytest.raises(BadKeyError):
        Verifier.from_vkey(text)


@pytest.mark.parametrize("length", [31, 33])
def test_vkey_wrong_key_length_fail(length: int) -> None:
    with pytest.raises(BadKeyError, match="32 bytes"):
        Verifier.from_vkey(vkey_for("k", ALG_ED25519, bytes(range(1, length + 1))))


def test_vkey_unknown_type_fail() -> None:
    public_key = Signer.generate("k").public_key
    with pytest.raises(BadKeyError, match="0x02"):
        Verifier.from_vkey(vkey_for("k", 0x02, public_key))


def test_witness_vkey_as_log_key_fail() -> None:
    with pytest.raises(BadKeyError, match="cosignature/v1 key"):
        Verifier.from_vkey(CKPT["witness_vkey"])
    with pytest.raises(BadKeyError, match="ed25519 key"):
        CosignatureVerifier.from_vkey(CKPT["log_vkey"])


@pytest.mark.parametrize(
    "text",
    [
        GO["skey"].replace("c74f20a3", "c74f20a4"),  # key id mismatch
        GO["skey"].replace("PRIVATE+KEY+", "PRIVATE+KEYS+"),
        GO["skey"].replace("PeterNeumann", "Peter Neumann"),
        "PRIVATE+KEY+k+00000000+" + base64.b64encode(b"\x04" + bytes(32)).decode(),
        "PRIVATE+KEY+k+00000000+" + base64.b64encode(b"\x01" + bytes(31)).decode(),
        GO["vkey"],
    ],
)
def test_malformed_skey_fail(text: str) -> None:
    with pytest.raises(BadKeyError):
        Signer.from_skey(text)


@pytest.mark.parametrize("length", [0, 31, 33, 64])
def test_seed_wrong_length_fail(length: int) -> None:
    with pytest.raises(BadKeyError, match="32 bytes"):
        Signer.from_seed("k", bytes(length))


# --- weak public keys (THREATS row 5) --------------------------------------------------
# The small-order points are derived here from the curve equation -x^2 + y^2 = 1 + d x^2 y^2,
# independently of attest.keys: the identity (0, 1); (0, -1) of order 2; (±sqrt(-1), 0) of
# order 4; and the four points of order 8, whose doubles are the order-4 points, so
# y3 = (x^2 + y^2) / (2 + x^2 - y^2) = 0, i.e. y^2 = -x^2 and d x^4 - 2 x^2 - 1 = 0.

P = 2**255 - 19
D = -121665 * pow(121666, -1, P) % P


def _sqrt(a: int) -> int | None:
    """A square root modulo p (Atkin's method, p = 5 mod 8), or None."""
    a %= P
    v = pow(2 * a, (P - 5) // 8, P)
    i = 2 * a * v * v % P
    root = a * v * (i - 1) % P
    return root if root * root % P == a else None


def _small_order_points() -> list[tuple[int, int]]:
    i = _sqrt(-1)
    assert i is not None
    points = {(0, 1), (0, P - 1), (i, 0), (P - i, 0)}
    root = _sqrt(1 + D)
    assert root is not None
    for x_squared in ((1 + root) * pow(D, -1, P) % P, (1 - root) * pow(D, -1, P) % P):
        x, y = _sqrt(x_squared), _sqrt(-x_squared)
        if x is None or y is None:
            continue
        for px in (x, P - x):
            for py in (y, P - y):
                if (-px * px + py * py - 1 - D * px * px * py * py) % P == 0:
                    points.add((px, py))
    return sorted(points)


def _encode(x: int, y: int, sign: int | None = None) -> bytes:
    bit = (x & 1) if sign is None else sign
    return (y | (bit << 255)).to_bytes(32, "little")


def _weak_encodings() -> Iterator[bytes]:
    for x, y in _small_order_points():
        yield _encode(x, y)
        if x == 0:
            yield _encode(x, y, sign=1)  # negative zero
        if y + P < 2**255:
            yield _encode(x, y + P)  # y >= p
            if x == 0:
                yield _encode(x, y + P, sign=1)


WEAK = sorted(set(_weak_encodings()))


def test_small_order_point_derivation_is_complete() -> None:
    assert len(_small_order_points()) == 8  # the full torsion subgroup of edwards25519
    assert len(WEAK) == 14


@pytest.mark.parametrize("raw", WEAK, ids=[raw.hex()[:16] for raw in WEAK])
def test_low_order_key_fail(raw: bytes) -> None:
    with pytest.raises(WeakKeyError, match="small-order"):
        Verifier("example.com/log", raw)
    with pytest.raises(WeakKeyError):
        Verifier.from_vkey(vkey_for("example.com/log", ALG_ED25519, raw))
    with pytest.raises(WeakKeyError):
        CosignatureVerifier.from_vkey(vkey_for("w", ALG_COSIGNATURE_V1, raw))


def test_identity_key_universal_forgery_fail() -> None:
    # With the identity as public key, R = identity and S = 0 satisfy the verification
    # equation for every message; registre must never hold such a verifier.
    identity = (1).to_bytes(32, "little")
    with pytest.raises(WeakKeyError):
        Verifier("example.com/log", identity)


@pytest.mark.parametrize("y", range(2, 19))
def test_non_canonical_key_fail(y: int) -> None:
    with pytest.raises(BadKeyError):
        Verifier("k", (y + P).to_bytes(32, "little"))


def test_point_not_on_curve_fail() -> None:
    y = next(y for y in range(2, 100) if _sqrt((y * y - 1) * pow(D * y * y + 1, -1, P)) is None)
    with pytest.raises(BadKeyError, match="not a point") as caught:
        Verifier("k", y.to_bytes(32, "little"))
    assert not isinstance(caught.value, WeakKeyError)


@given(seed=seeds)
def test_generated_keys_are_never_weak(seed: bytes) -> None:
    public_key = Signer.from_seed("k", seed).public_key
    assert Verifier("k", public_key).public_key == public_key


# --- key files -------------------------------------------------------------------------


@pytest.fixture
def permissive_umask() -> Iterator[None]:
    old = os.umask(0)
    try:
        yield
    finally:
        os.umask(old)


@pytest.mark.usefixtures("permissive_umask")
@pytest.mark.parametrize("passphrase", [None, b"correct horse"])
def test_key_file_mode_0600(tmp_path: Path, passphrase: bytes | None) -> None:
    path = tmp_path / "log.key"
    Signer.generate("example.com/log").save(path, passphrase)
    assert stat.S_IMODE(path.stat().st_mode) == 0o600


@pytest.mark.parametrize("passphrase", [None, b"correct horse"])
def test_key_file_round_trip(tmp_path: Path, passphrase: bytes | None) -> None:
    signer = Signer.generate("example.com/log")
    signer.save(tmp_path / "log.key", passphrase)
    loaded = Signer.load(tmp_path / "log.key", passphrase)
    assert (loaded.name, loaded.public_key) == (signer.name, signer.public_key)
    text = (tmp_path / "log.key").read_text()
    assert text.startswith("registre-key-name: example.com/log\nregistre-key-type: ed25519\n")
    assert ("ENCRYPTED" in text) == (passphrase is not None)


def test_witness_key_file_round_trip(tmp_path: Path) -> None:
    witness = CosignatureSigner.generate("witness.example/w1")
    witness.save(tmp_path / "w.key", b"pw")
    assert CosignatureSigner.load(tmp_path / "w.key", b"pw").vkey() == witness.vkey()


def test_key_file_overwrite_fail(tmp_path: Path) -> None:
    path = tmp_path / "log.key"
    Signer.generate("first").save(path)
    before = path.read_bytes()
    with pytest.raises(KeyFileRefusedError, match="already exists"):
        Signer.generate("second").save(path)
    assert path.read_bytes() == before


def test_key_file_symlink_fail(tmp_path: Path) -> None:
    target = tmp_path / "elsewhere"
    (tmp_path / "log.key").symlink_to(target)
    with pytest.raises(KeyFileRefusedError):
        Signer.generate("k").save(tmp_path / "log.key")
    assert not target.exists()


def test_empty_passphrase_refused(tmp_path: Path) -> None:
    with pytest.raises(KeyFileRefusedError, match="empty passphrase"):
        Signer.generate("k").save(tmp_path / "k.key", b"")
    assert not (tmp_path / "k.key").exists()


def test_wrong_passphrase_fail(tmp_path: Path) -> None:
    Signer.generate("k").save(tmp_path / "k.key", b"right")
    with pytest.raises(BadKeyError, match="wrong passphrase"):
        Signer.load(tmp_path / "k.key", b"wrong")


def test_missing_passphrase_fail(tmp_path: Path) -> None:
    Signer.generate("k").save(tmp_path / "k.key", b"right")
    with pytest.raises(BadKeyError, match="encrypted; give its passphrase"):
        Signer.load(tmp_path / "k.key")


def test_unneeded_passphrase_fail(tmp_path: Path) -> None:
    Signer.generate("k").save(tmp_path / "k.key")
    with pytest.raises(BadKeyError, match="not encrypted"):
        Signer.load(tmp_path / "k.key", b"pw")


def test_corrupted_key_file_fail(tmp_path: Path) -> None:
    path = tmp_path / "k.key"
    Signer.generate("k").save(path)
    lines = path.read_text().split("\n")
    lines[3] = lines[3][:10] + ("A" if lines[3][10] != "A" else "B") + lines[3][11:]
    path.write_text("\n".join(lines[:3] + lines[4:]))  # also drop a line of the PEM body
    with pytest.raises(BadKeyError, match="corrupted"):
        Signer.load(path)


def test_key_file_without_header_fail(tmp_path: Path) -> None:
    path = tmp_path / "k.key"
    Signer.generate("k").save(path)
    path.write_text(path.read_text().split("\n", 2)[2])
    with pytest.raises(BadKeyError, match="not written by registre"):
        Signer.load(path)


def test_key_file_wrong_type_fail(tmp_path: Path) -> None:
    CosignatureSigner.generate("w").save(tmp_path / "w.key")
    with pytest.raises(BadKeyError, match="'cosignature/v1' key"):
        Signer.load(tmp_path / "w.key")


def test_key_file_not_ed25519_fail(tmp_path: Path) -> None:
    pem = ec.generate_private_key(ec.SECP256R1()).private_bytes(
        serialization.Encoding.PEM,
        serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption(),
    )
    path = tmp_path / "p256.key"
    path.write_bytes(b"registre-key-name: k\nregistre-key-type: ed25519\n" + pem)
    path.chmod(0o600)
    with pytest.raises(BadKeyError, match="Ed25519"):
        Signer.load(path)


def test_missing_key_file_fail(tmp_path: Path) -> None:
    with pytest.raises(BadKeyError, match="cannot read key file"):
        Signer.load(tmp_path / "absent.key")


def test_key_file_bad_name_fail(tmp_path: Path) -> None:
    path = tmp_path / "k.key"
    Signer.generate("k").save(path)
    path.write_text(path.read_text().replace("registre-key-name: k", "registre-key-name: a b"))
    with pytest.raises(BadKeyError, match="whitespace"):
        Signer.load(path)


# --- key files carry their verifier key (issue 14: a one-bit flip must not load) -----------


def _flip_bit(path: Path, offset: int, bit: int) -> None:
    data = bytearray(path.read_bytes())
    data[offset] ^= 1 << bit
    path.write_bytes(bytes(data))


def test_key_file_states_its_verifier_key(tmp_path: Path) -> None:
    signer = Signer.generate("k")
    signer.save(tmp_path / "k.key")
    lines = (tmp_path / "k.key").read_text().split("\n")
    assert lines[2] == f"registre-key-vkey: {signer.vkey()}"
    assert Signer.load(tmp_path / "k.key").vkey() == signer.vkey()


def test_key_file_bit_flip_fail(tmp_path: Path) -> None:
    """Every single-bit flip of an unencrypted key file is refused or loads the same key:
    none loads as another valid key (before, a flip in the PEM gave another seed)."""
    signer = Signer.from_seed("k", bytes(range(32)))
    original = tmp_path / "original.key"
    signer.save(original)
    data = original.read_bytes()
    other_keys = 0
    for offset in range(len(data)):
        for bit in range(8):
            path = tmp_path / f"flip-{offset}-{bit}.key"
            path.write_bytes(data)
            path.chmod(0o600)
            _flip_bit(path, offset, bit)
            try:
                loaded = Signer.load(path)
            except BadKeyError:
                path.unlink()
                continue
            other_keys += loaded.vkey() != signer.vkey()
            path.unlink()
    assert other_keys == 0


def test_key_file_seed_flip_fail(tmp_path: Path) -> None:
    path = tmp_path / "k.key"
    Signer.from_seed("k", bytes(range(32))).save(path)
    text = path.read_text()
    pem_start = text.index("-----BEGIN")
    body = pem_start + text[pem_start:].index("\n") + 1
    # the seed is the tail of the base64 body: change one character of it
    index = body + 40
    replacement = "A" if text[index] != "A" else "B"
    path.write_text(text[:index] + replacement + text[index + 1 :])
    with pytest.raises(KeyFileCorruptedError, match="does not give the verifier key"):
        Signer.load(path)


@pytest.mark.parametrize("mode", [0o644, 0o666, 0o640, 0o604])
def test_key_file_readable_by_others_fail(tmp_path: Path, mode: int) -> None:
    path = tmp_path / "k.key"
    Signer.generate("k").save(path)
    path.chmod(mode)
    with pytest.raises(KeyFilePermissionError, match=f"mode {mode:04o}") as failure:
        Signer.load(path)
    assert failure.value.hint == f"chmod 600 {path}"


def test_first_format_key_file_loads_with_a_warning(tmp_path: Path) -> None:
    signer = Signer.generate("k")
    path = tmp_path / "k.key"
    signer.save(path)
    lines = path.read_text().split("\n")
    path.write_text("\n".join(lines[:2] + lines[3:]))  # the format before the vkey line
    with pytest.warns(LegacyKeyFileWarning, match="registre key upgrade"):
        assert Signer.load(path).vkey() == signer.vkey()


def test_encrypted_key_without_passphrase_fail(tmp_path: Path) -> None:
    Signer.generate("k").save(tmp_path / "k.key", b"pw")
    with pytest.raises(KeyPassphraseError):
        Signer.load(tmp_path / "k.key")
