"""Ed25519 keys in the C2SP signed-note / Go ``sumdb/note`` string formats, and key files.

Formats (normative text in ``specs/checkpoint.md``):

* key id: ``SHA-256(name ‖ 0x0A ‖ alg ‖ public key)[:4]``; ``alg`` is :data:`ALG_ED25519`
  (0x01) for log keys and :data:`ALG_COSIGNATURE_V1` (0x04) for witness keys.
* verifier key (vkey): ``name+hex8(key id)+base64(alg ‖ 32-byte public key)``.
* signer key (skey, Go ``sumdb/note``): ``PRIVATE+KEY+name+hex8(key id)+base64(0x01 ‖ seed)``.
* key file: three header lines, ``registre-key-name: NAME``, ``registre-key-type: TYPE``
  (``ed25519`` or ``cosignature/v1``) and ``registre-key-vkey: VKEY`` (the verifier key: name,
  key id and public key), then the PKCS#8 PEM block, optionally encrypted with a passphrase.
  The file is created with mode 0600 and never overwritten. On load the private key must give
  exactly the stated verifier key: a flipped bit anywhere in the file is refused
  (KeyFileCorruptedError), never loaded as another valid key. A file of the first format
  (no ``vkey`` line) still loads, with a :class:`LegacyKeyFileWarning`: it cannot be checked,
  so ``registre key upgrade`` rewrites it in the current format.
* a private key file that its group or others may read or write (mode bits 0o077) is refused
  (KeyFilePermissionError), as ssh refuses one; the hint gives the ``chmod`` to run.

Every public key is checked when it is loaded: a point that is not on the curve, a
non-canonical encoding, or a point of small order (the identity and the seven other points
``P`` with ``8·P = identity``, which would let one signature "verify" for many messages) is
refused with :class:`~registre.attest.errors.BadKeyError` or
:class:`~registre.attest.errors.WeakKeyError` (THREATS row 5). Key names must be non-empty and
contain no ``+``, no whitespace (ASCII or Unicode) and no control characters.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import os
import stat
import unicodedata
import warnings
from pathlib import Path
from typing import Self

from cryptography.exceptions import InternalError, InvalidSignature, UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import (
    Ed25519PrivateKey,
    Ed25519PublicKey,
)

from registre.attest.errors import BadKeyError, WeakKeyError
from registre.errors import RefusedError, VerificationError

__all__ = [
    "ALG_COSIGNATURE_V1",
    "ALG_ED25519",
    "KEY_TYPE_NAMES",
    "MAX_KEY_FILE_BYTES",
    "KeyFileCorruptedError",
    "KeyFilePermissionError",
    "KeyFileRefusedError",
    "KeyPassphraseError",
    "LegacyKeyFileWarning",
    "SignatureInvalidError",
    "Signer",
    "SigningKey",
    "Verifier",
    "VerifierKey",
    "check_key_name",
    "decode_vkey",
    "encode_vkey",
    "key_id",
    "load_public_key",
    "read_key_file",
    "write_key_file",
]

ALG_ED25519 = 0x01
ALG_COSIGNATURE_V1 = 0x04
KEY_TYPE_NAMES: dict[int, str] = {ALG_ED25519: "ed25519", ALG_COSIGNATURE_V1: "cosignature/v1"}
MAX_KEY_FILE_BYTES = 64 * 1024

_SKEY_PREFIX = "PRIVATE+KEY+"
_NAME_HEADER = "registre-key-name: "
_TYPE_HEADER = "registre-key-type: "
_VKEY_HEADER = "registre-key-vkey: "


class SignatureInvalidError(VerificationError):
    """An Ed25519 signature that does not verify for this key and message."""


class KeyFileCorruptedError(BadKeyError):
    """A key file whose private key does not give the verifier key it states (or whose
    stated key does not parse): the file was altered or damaged."""


class KeyFilePermissionError(BadKeyError):
    """A private key file that its group or others may read or write."""


class KeyPassphraseError(BadKeyError):
    """An encrypted key file loaded without its passphrase, or with the wrong one."""


class LegacyKeyFileWarning(UserWarning):
    """A key file of the first format (no verifier-key line), which cannot be checked on
    load; rewrite it with ``registre key upgrade``."""


class KeyFileRefusedError(RefusedError):
    """A key file request refused before anything was written (file exists, empty passphrase)."""


class PrivateKeyGivenError(BadKeyError):
    """An operator's private key (a registre key file or a ``PRIVATE+KEY+`` signer key) given
    where a verifier key is pinned: an auditor pins the public half, never the private key."""


def holds_private_key(text: str) -> bool:
    """Whether ``text`` is, or starts like, a private key: a registre key file (its
    ``registre-key-name:`` header), a PEM private key block or a Go ``sumdb/note`` signer key
    (``PRIVATE+KEY+``). Verifier keys and anything else: False."""
    start = text.lstrip()
    return (
        start.startswith((_NAME_HEADER.strip(), _SKEY_PREFIX)) or "PRIVATE KEY-----" in start[:4096]
    )


# --- key names and ids -----------------------------------------------------------------


def check_key_name(name: str) -> None:
    """Raise BadKeyError unless ``name`` is a valid key name.

    Valid: non-empty, valid UTF-8 (no lone surrogates), no ``+``, no whitespace (ASCII or
    Unicode, Python ``str.isspace`` or categories Zs/Zl/Zp) and no control character (Cc).
    """
    if not name:
        raise BadKeyError("key name is empty; choose a name such as example.com/log")
    for index, char in enumerate(name):
        category = unicodedata.category(char)
        if char == "+":
            raise BadKeyError(f"key name {name!r} contains '+' (at character {index}); remove it")
        if char.isspace() or category in ("Zs", "Zl", "Zp"):
            raise BadKeyError(
                f"key name {name!r} contains whitespace U+{ord(char):04X} "
                f"(at character {index}); key names are single words"
            )
        if category == "Cc":
            raise BadKeyError(
                f"key name {name!r} contains control character U+{ord(char):04X} "
                f"(at character {index})"
            )
        if category == "Cs":
            raise BadKeyError(f"key name {name!r} is not valid UTF-8 (lone surrogate)")


def key_id(name: str, alg: int, public_key: bytes) -> bytes:
    """The 4-byte key id: ``SHA-256(name ‖ 0x0A ‖ alg ‖ public_key)[:4]``."""
    digest = hashlib.sha256(name.encode("utf-8") + b"\n" + bytes([alg]) + public_key).digest()
    return digest[:4]


# --- public key validation (tiny Edwards arithmetic, key load only) ---------------------

_P = 2**255 - 19
_D = (-121665 * pow(121666, _P - 2, _P)) % _P
_SQRT_M1 = pow(2, (_P - 1) // 4, _P)


def _times_eight_is_identity(x: int, y: int) -> bool:
    """Whether 8·(x, y) is the identity: three projective doublings (a = -1), no inversion.

    The doubling is exception-free on edwards25519 (d is not a square), so the result is
    the identity exactly when X = 0 and Y = Z.
    """
    big_x, big_y, big_z = x, y, 1
    for _ in range(3):
        b = (big_x + big_y) ** 2 % _P
        c = big_x * big_x % _P
        d = big_y * big_y % _P
        e = -c % _P
        f = (e + d) % _P
        j = (f - 2 * big_z * big_z) % _P
        big_x, big_y, big_z = (b - c - d) * j % _P, f * (e - d) % _P, f * j % _P
    return big_x == 0 and big_y == big_z


def load_public_key(raw: bytes) -> Ed25519PublicKey:
    """Load a 32-byte Ed25519 public key, refusing anything that is not a sound key.

    Steps: 1. exactly 32 bytes; 2. decode y (modulo p) and recover x, else BadKeyError (not
    on the curve); 3. if 8·P is the identity, WeakKeyError (small order, including every
    non-canonical encoding of a small-order point); 4. y ≥ p or a negative zero x,
    BadKeyError (non-canonical encoding).
    """
    # 1. length
    if len(raw) != 32:
        raise BadKeyError(f"an Ed25519 public key is 32 bytes, got {len(raw)}")
    # 2. decompress (RFC 8032 §5.1.3), with y reduced so that step 3 sees every encoding
    encoded_y = int.from_bytes(raw, "little") & ((1 << 255) - 1)
    sign = raw[31] >> 7
    y = encoded_y % _P
    u = (y * y - 1) % _P
    v = (_D * y * y + 1) % _P
    x = u * pow(v, 3, _P) * pow(u * pow(v, 7, _P), (_P - 5) // 8, _P) % _P
    if (v * x * x - u) % _P != 0:
        x = x * _SQRT_M1 % _P
        if (v * x * x - u) % _P != 0:
            raise BadKeyError("public key is not a point on the Ed25519 curve")
    if x & 1 != sign:
        x = (_P - x) % _P
    # 3. small order: 8·P == identity
    if _times_eight_is_identity(x, y):
        raise WeakKeyError(
            "public key is a small-order point (8·P is the identity); such a key would "
            "verify forged signatures and is refused"
        )
    # 4. canonical encoding
    if encoded_y >= _P or (x == 0 and sign == 1):
        raise BadKeyError("public key encoding is not canonical (y >= p or negative zero x)")
    return Ed25519PublicKey.from_public_bytes(raw)


# --- key strings -----------------------------------------------------------------------


def _b64decode_canonical(text: str, what: str) -> bytes:
    try:
        raw = base64.b64decode(text.encode("ascii"), validate=True)
    except (UnicodeEncodeError, binascii.Error) as exc:
        raise BadKeyError(f"{what} is not standard base64: {exc}") from None
    if base64.b64encode(raw).decode("ascii") != text:
        raise BadKeyError(f"{what} is not canonical base64")
    return raw


def encode_vkey(name: str, alg: int, public_key: bytes) -> str:
    """The verifier key string ``name+hex8(key id)+base64(alg ‖ public_key)``."""
    check_key_name(name)
    blob = base64.b64encode(bytes([alg]) + public_key).decode("ascii")
    return f"{name}+{key_id(name, alg, public_key).hex()}+{blob}"


def decode_vkey(text: str, *, expected_alg: int) -> tuple[str, bytes]:
    """Parse a verifier key string of type ``expected_alg``; return ``(name, public_key)``.

    Raises BadKeyError for a bad layout, name, base64, key type or length, or a key id that
    does not match the name and key. The point itself is checked (weak keys refused) when
    the returned bytes are loaded: by :class:`Verifier`, ``CosignatureVerifier`` or
    :func:`load_public_key`.
    """
    text = text.strip()
    parts = text.split("+", 2)  # the base64 key material may itself contain '+'
    if len(parts) != 3:
        raise BadKeyError(f"verifier key {text[:60]!r} must have the form name+keyid+base64key")
    name, hex_id, blob = parts
    check_key_name(name)
    if len(hex_id) != 8 or any(c not in "0123456789abcdef" for c in hex_id):
        raise BadKeyError(f"key id {hex_id!r} must be 8 lowercase hexadecimal digits")
    raw = _b64decode_canonical(blob, "verifier key material")
    if not raw:
        raise BadKeyError("verifier key material is empty")
    alg = raw[0]
    if alg != expected_alg:
        found = KEY_TYPE_NAMES.get(alg, f"unsupported type 0x{alg:02x}")
        wanted = KEY_TYPE_NAMES[expected_alg]
        raise BadKeyError(
            f"verifier key {name} is a {found} key; a {wanted} key "
            f"(type 0x{expected_alg:02x}) is needed here"
        )
    public_key = raw[1:]
    if len(public_key) != 32:
        raise BadKeyError(f"an Ed25519 public key is 32 bytes, got {len(public_key)}")
    computed = key_id(name, alg, public_key).hex()
    if computed != hex_id:
        raise BadKeyError(
            f"verifier key {name}: key id {hex_id} does not match the name and key "
            f"(computed {computed}); the key string was altered or mistyped"
        )
    return name, public_key


# --- signer and verifier ---------------------------------------------------------------


class VerifierKey:
    """An Ed25519 public key with its name, for one note key type (``alg``).

    The shared half of :class:`Verifier` (log keys, alg 0x01) and
    :class:`registre.attest.notes.cosignature.CosignatureVerifier` (witness keys, alg 0x04):
    construction
    validates the name and refuses weak keys (see :func:`load_public_key`), and the verifier
    key string ``name+hex8+base64(alg ‖ key)`` is read and written for the subclass's type
    only, so a witness key is never accepted as a log key or the reverse.
    """

    alg: int

    def __init__(self, name: str, public_key: bytes) -> None:
        check_key_name(name)
        self._key = load_public_key(public_key)
        self.name = name
        self.public_key = bytes(public_key)
        self.key_id = key_id(name, self.alg, self.public_key)

    @classmethod
    def from_vkey(cls, text: str) -> Self:
        """Parse ``name+hex8+base64(alg ‖ key)``; BadKeyError/WeakKeyError if unsound, or if
        the string is for another key type."""
        name, public_key = decode_vkey(text, expected_alg=cls.alg)
        return cls(name, public_key)

    def vkey(self) -> str:
        return encode_vkey(self.name, self.alg, self.public_key)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self.vkey()!r})"


class Verifier(VerifierKey):
    """An Ed25519 log public key (alg 0x01) with its name; verifies raw signatures."""

    alg = ALG_ED25519

    def verify(self, message: bytes, signature: bytes) -> None:
        """Return only if ``signature`` is this key's Ed25519 signature of ``message``.

        Raises SignatureInvalidError otherwise (including a signature that is not 64 bytes).
        """
        if len(signature) != 64:
            raise SignatureInvalidError(
                f"signature by {self.name} is {len(signature)} bytes; Ed25519 signatures are 64"
            )
        try:
            self._key.verify(signature, message)
        except InvalidSignature:
            raise SignatureInvalidError(
                f"signature does not verify with key {self.name}+{self.key_id.hex()}"
            ) from None


class SigningKey:
    """An Ed25519 private key with its name, for one note key type (``alg``).

    The shared half of :class:`Signer` (log keys, alg 0x01) and
    :class:`registre.attest.notes.cosignature.CosignatureSigner` (witness keys, alg 0x04):
    construction,
    the verifier key string and key files. The key id depends on the type, so one Ed25519
    key under two types has two ids.
    """

    alg: int

    def __init__(self, name: str, private_key: Ed25519PrivateKey) -> None:
        check_key_name(name)
        self.name = name
        self._private = private_key
        self.public_key = private_key.public_key().public_bytes(
            serialization.Encoding.Raw, serialization.PublicFormat.Raw
        )
        self.key_id = key_id(name, self.alg, self.public_key)

    @classmethod
    def generate(cls, name: str) -> Self:
        """A fresh key from the operating system's random source."""
        return cls(name, Ed25519PrivateKey.generate())

    @classmethod
    def from_seed(cls, name: str, seed: bytes) -> Self:
        """The key whose RFC 8032 32-byte private seed is ``seed``."""
        if len(seed) != 32:
            raise BadKeyError(f"an Ed25519 seed is 32 bytes, got {len(seed)}")
        return cls(name, Ed25519PrivateKey.from_private_bytes(seed))

    def seed(self) -> bytes:
        return self._private.private_bytes(
            serialization.Encoding.Raw,
            serialization.PrivateFormat.Raw,
            serialization.NoEncryption(),
        )

    def vkey(self) -> str:
        return encode_vkey(self.name, self.alg, self.public_key)

    def save(self, path: str | os.PathLike[str], passphrase: bytes | None = None) -> None:
        """Write a new key file (see module docstring); never overwrites, mode 0600."""
        write_key_file(path, self.name, self.alg, self._private, passphrase)

    @classmethod
    def load(cls, path: str | os.PathLike[str], passphrase: bytes | None = None) -> Self:
        """Read a key file written by :meth:`save` for this key type; BadKeyError with the
        reason otherwise."""
        name, private_key = read_key_file(path, cls.alg, passphrase)
        return cls(name, private_key)

    def __repr__(self) -> str:  # never shows the private key
        return f"{type(self).__name__}(vkey={self.vkey()!r})"


class Signer(SigningKey):
    """An Ed25519 log private key (alg 0x01) with its name.

    ``sign`` returns the raw 64-byte signature; Ed25519 is deterministic, so the same key
    and message always give the same bytes.
    """

    alg = ALG_ED25519

    @classmethod
    def from_skey(cls, text: str) -> Signer:
        """Parse a Go ``sumdb/note`` signer key ``PRIVATE+KEY+name+hex8+base64(0x01 ‖ seed)``.

        The key id is checked against the name and the public key derived from the seed.
        """
        text = text.strip()
        if not text.startswith(_SKEY_PREFIX):
            raise BadKeyError("signer key must start with 'PRIVATE+KEY+'")
        parts = text[len(_SKEY_PREFIX) :].split("+", 2)
        if len(parts) != 3:
            raise BadKeyError("signer key must have the form PRIVATE+KEY+name+keyid+base64seed")
        name, hex_id, blob = parts
        check_key_name(name)
        raw = _b64decode_canonical(blob, "signer key material")
        if len(raw) != 33 or raw[0] != ALG_ED25519:
            raise BadKeyError("signer key material must be 0x01 followed by a 32-byte seed")
        signer = cls.from_seed(name, raw[1:])
        if signer.key_id.hex() != hex_id:
            raise BadKeyError(
                f"signer key {name}: key id {hex_id} does not match the name and key "
                f"(computed {signer.key_id.hex()})"
            )
        return signer

    def skey(self) -> str:
        blob = base64.b64encode(bytes([ALG_ED25519]) + self.seed()).decode("ascii")
        return f"{_SKEY_PREFIX}{self.name}+{self.key_id.hex()}+{blob}"

    def verifier(self) -> Verifier:
        return Verifier(self.name, self.public_key)

    def sign(self, message: bytes) -> bytes:
        return self._private.sign(message)


# --- key files -------------------------------------------------------------------------


def write_key_file(
    path: str | os.PathLike[str],
    name: str,
    alg: int,
    private_key: Ed25519PrivateKey,
    passphrase: bytes | None,
) -> None:
    """Create ``path`` (mode 0600 from the first instant, O_EXCL) holding the named key.

    Raises KeyFileRefusedError if the file exists or the passphrase is empty.
    """
    check_key_name(name)
    if passphrase is not None and not passphrase:
        raise KeyFileRefusedError("empty passphrase; pass None for an unencrypted key file")
    encryption: serialization.KeySerializationEncryption = (
        serialization.NoEncryption()
        if passphrase is None
        else serialization.BestAvailableEncryption(passphrase)
    )
    pem = private_key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption
    )
    public_key = private_key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    header = (
        f"{_NAME_HEADER}{name}\n{_TYPE_HEADER}{KEY_TYPE_NAMES[alg]}\n"
        f"{_VKEY_HEADER}{encode_vkey(name, alg, public_key)}\n"
    ).encode()
    try:
        fd = os.open(path, os.O_CREAT | os.O_EXCL | os.O_WRONLY, 0o600)
    except FileExistsError:
        raise KeyFileRefusedError(
            f"key file {os.fspath(path)} already exists; refusing to overwrite a key"
        ) from None
    try:
        with os.fdopen(fd, "wb") as handle:
            handle.write(header + pem)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        Path(path).unlink(missing_ok=True)
        raise


def read_key_file(
    path: str | os.PathLike[str], alg: int, passphrase: bytes | None
) -> tuple[str, Ed25519PrivateKey]:
    """Read a key file of type ``alg``; return ``(name, private key)``.

    Raises BadKeyError naming the problem: unreadable or oversized file, missing headers,
    wrong key type, missing/unneeded/wrong passphrase (KeyPassphraseError), corrupted PEM,
    not an Ed25519 key, a private key that is not the stated one (KeyFileCorruptedError), a
    file others may read (KeyFilePermissionError). A file without the verifier-key line
    loads with a LegacyKeyFileWarning.
    """
    where = os.fspath(path)
    try:
        with open(path, "rb") as handle:
            _check_mode(os.fstat(handle.fileno()).st_mode, where)
            data = handle.read(MAX_KEY_FILE_BYTES + 1)
    except OSError as exc:
        raise BadKeyError(f"cannot read key file {where}: {exc.strerror}") from None
    if len(data) > MAX_KEY_FILE_BYTES:
        raise BadKeyError(f"key file {where} is larger than {MAX_KEY_FILE_BYTES} bytes")
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise BadKeyError(f"key file {where} is not UTF-8 text", exc.start) from None
    lines = text.split("\n", 2)
    if (
        len(lines) != 3
        or not lines[0].startswith(_NAME_HEADER)
        or not lines[1].startswith(_TYPE_HEADER)
    ):
        raise BadKeyError(
            f"key file {where} does not start with '{_NAME_HEADER}NAME' and "
            f"'{_TYPE_HEADER}TYPE' lines; it was not written by registre"
        )
    name = lines[0][len(_NAME_HEADER) :]
    check_key_name(name)
    key_type = lines[1][len(_TYPE_HEADER) :]
    if key_type != KEY_TYPE_NAMES[alg]:
        raise BadKeyError(
            f"key file {where} holds a {key_type!r} key; a {KEY_TYPE_NAMES[alg]!r} key is needed"
        )
    stated, pem = _split_vkey_line(lines[2], where)
    private_key = _load_pem(pem, passphrase, where)
    public_key = private_key.public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw
    )
    if stated is None:
        warnings.warn(
            LegacyKeyFileWarning(
                f"key file {where} has the first format, which cannot be checked for damage; "
                "rewrite it with `registre key upgrade`"
            ),
            stacklevel=3,
        )
    elif stated != encode_vkey(name, alg, public_key):
        raise KeyFileCorruptedError(
            f"key file {where} is corrupted: its private key does not give the verifier key "
            f"it states ({stated.rsplit('+', 1)[0]})"
        )
    return name, private_key


def _check_mode(mode: int, where: str) -> None:
    if os.name == "posix" and mode & (stat.S_IRWXG | stat.S_IRWXO):
        raise KeyFilePermissionError(
            f"key file {where} is readable or writable by others (mode "
            f"{stat.S_IMODE(mode):04o}); a private key must be private"
        ).with_hint(f"chmod 600 {where}")


def _split_vkey_line(rest: str, where: str) -> tuple[str | None, str]:
    """``(stated vkey, PEM)`` of a key file's body after the two first headers; no stated
    key for a first-format file."""
    if rest.startswith("-----BEGIN "):
        return None, rest
    line, _, pem = rest.partition("\n")
    if not line.startswith(_VKEY_HEADER):
        raise KeyFileCorruptedError(
            f"key file {where} is corrupted: its third line is neither '{_VKEY_HEADER}VKEY' "
            "nor the start of the PEM block"
        )
    return line[len(_VKEY_HEADER) :], pem


def _load_pem(pem: str, passphrase: bytes | None, where: str) -> Ed25519PrivateKey:
    try:
        private_key = serialization.load_pem_private_key(pem.encode(), passphrase)
    except TypeError as exc:
        if passphrase is None:
            raise KeyPassphraseError(
                f"key file {where} is encrypted; give its passphrase to load it"
            ) from None
        raise KeyPassphraseError(
            f"key file {where} is not encrypted; load it without a passphrase ({exc})"
        ) from None
    except (UnsupportedAlgorithm, InternalError):
        raise KeyFileCorruptedError(
            f"key file {where} is corrupted: its PEM block does not decode to a key"
        ) from None
    except ValueError as exc:
        if passphrase is not None and "password" in str(exc).lower():
            raise KeyPassphraseError(
                f"wrong passphrase for key file {where} (or the encrypted key is corrupted)"
            ) from None
        raise KeyFileCorruptedError(f"key file {where} is corrupted: {exc}") from None
    if not isinstance(private_key, Ed25519PrivateKey):
        raise BadKeyError(f"key file {where} does not hold an Ed25519 key")
    return private_key
