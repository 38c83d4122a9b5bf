"""Signed ledger entries: build, sign and open the entry envelope (DESIGN "Entry").

An entry is the envelope ::

    {"v": 1, "log": ORIGIN, "thread": ID, "seq": i, "time": RFC3339-UTC, "kind": K,
     "actor": A, "body": {...}, "prev": {"size": i, "root": B64}, "key": KEYID,
     "lifecycle": {"count": k, "head": B64}}

* ``log`` is the origin ``LOGNAME/THREAD``; LOGNAME is the name of the operator key.
* ``prev`` is the tree head *before* this entry: ``prev.size == seq`` and ``prev.root`` is the
  RFC 9162 root of leaves ``0 .. seq-1`` (the empty-tree hash for ``seq == 0``), so every
  signature commits to the whole history before it.
* ``key`` is the signer's C2SP note key id written as 8 lowercase hex digits: the first four
  bytes of ``SHA-256(name ‖ 0x0A ‖ 0x01 ‖ public key)``, the ``hex8`` of the verifier key
  string ``name+hex8+base64``. It is a hint for finding the key, never an identity: the
  signature decides.
* ``time`` is ``YYYY-MM-DDTHH:MM:SS[.fraction]Z`` (UTC); it is the writer's claim only.
* ``lifecycle`` (optional: entries signed before it existed lack it) commits to the
  lifecycle sub-log of entries ``0 .. seq-1`` (:mod:`registre.attest.entries.lifecycle_chain`), so a
  partial bundle can prove it discloses every lifecycle entry of its tree.

The writer signs ``b"registre/entry/v1\\n" ‖ canonical_bytes(envelope)`` with Ed25519; the
leaf (what the Merkle tree hashes and the store keeps byte for byte) is
``canonical_bytes({"entry": envelope, "sig": base64(signature)})``.

:func:`open_entry` is the verifier: it reads the leaf bytes as received, in numbered steps,
each failing with its own error. Signature bytes are never used as identifiers (THREATS row
11): an entry is named by (origin, seq) and its leaf hash.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any

from registre.attest.canonical_json import canonical_bytes, parse_canonical
from registre.attest.entries.bodies import validate_body
from registre.attest.entries.body_base import MAX_BODY_BYTES
from registre.attest.entries.lifecycle_chain import LifecycleHead
from registre.attest.errors import OriginMismatchError
from registre.attest.notes import SignatureInvalidError, Signer, Verifier
from registre.attest.tree import HASH_SIZE, leaf_hash
from registre.errors import MalformedError, VerificationError

__all__ = [
    "ACTOR_GRAMMAR",
    "ENTRY_SIGNATURE_PREFIX",
    "ENTRY_VERSION",
    "MAX_ACTOR_LENGTH",
    "MAX_LEAF_BYTES",
    "MAX_THREAD_ID_LENGTH",
    "SIGNATURE_FIRST_BYTES",
    "ActorNameError",
    "Entry",
    "EntryFormatError",
    "EntryOriginError",
    "EntrySignatureError",
    "InvalidActorError",
    "InvalidThreadIdError",
    "UnknownEntryKeyError",
    "actor_name",
    "check_actor",
    "check_actor_name",
    "check_thread_id",
    "format_time",
    "open_entry",
    "sign_entry",
]

ENTRY_VERSION = 1
ENTRY_SIGNATURE_PREFIX = b"registre/entry/v1\n"
MAX_THREAD_ID_LENGTH = 128
MAX_ACTOR_LENGTH = 256
SIGNATURE_SIZE = 64
_SIGNATURE_B64_LENGTH = 88  # 64 bytes in standard base64
SIGNATURE_FIRST_BYTES = 4 << 10
"""Leaves longer than this are parsed only after a pinned key's signature over them verifies."""
MAX_LEAF_BYTES = MAX_BODY_BYTES + (128 << 10)
"""Largest leaf of a valid entry: a body of at most :data:`MAX_BODY_BYTES` (canonical JSON is
no longer than the compact JSON it is measured as) and an envelope whose other fields are
bounded (thread id 128, actor 256 characters, a key name from a key file of at most 64 KiB,
fixed-size time, root, key id and signature). Readers refuse a longer leaf before parsing it;
:func:`sign_entry` never makes one."""

_ENVELOPE_FIELDS = frozenset(
    {"v", "log", "thread", "seq", "time", "kind", "actor", "body", "prev", "key"}
)
_OPTIONAL_FIELDS = frozenset({"lifecycle"})
_THREAD_ID = re.compile(r"[A-Za-z0-9][A-Za-z0-9._:-]*")
_TIME = re.compile(r"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2})(\.\d{1,9})?Z")
_KEY_ID = re.compile(r"[0-9a-f]{8}")
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_SURROGATE = re.compile(r"[\ud800-\udfff]")
_ASTRAL = re.compile(r"[\U00010000-\U0010ffff]")
_FAST_JSON = json.JSONEncoder(
    ensure_ascii=False,
    sort_keys=True,
    separators=(",", ":"),
    allow_nan=False,
    check_circular=False,
)


class EntryFormatError(MalformedError):
    """Entry bytes or fields that do not have the envelope's structure and types."""


class InvalidThreadIdError(EntryFormatError):
    """A thread id outside ``[A-Za-z0-9][A-Za-z0-9._:-]*`` (at most 128 characters)."""


class InvalidActorError(EntryFormatError):
    """An actor that is empty, too long, or holds control characters."""


class ActorNameError(InvalidActorError):
    """An actor a writer may not sign: not words of letters, digits and ``_ . - @ + /`` joined
    by ``:`` (``bob smith``, ``tool:``). Verifiers still accept any actor
    :func:`check_actor` accepts, as entries signed before the grammar may hold one."""


class UnknownEntryKeyError(VerificationError):
    """An entry signed by a key id that none of the trusted keys has."""


class EntryOriginError(OriginMismatchError):
    """An entry whose ``log`` is not ``KEYNAME/THREAD`` for the key that signed it."""


class EntrySignatureError(VerificationError):
    """An entry whose Ed25519 signature does not verify under its key."""


@dataclass(frozen=True)
class Entry:
    """One opened (or freshly signed) entry. ``leaf`` is the exact signed byte string.

    Two entries are the same entry when their leaves are equal; ``leaf_hash`` is
    ``H(0x00 ‖ leaf)``, the Merkle leaf hash of RFC 9162.
    """

    log: str
    thread: str
    seq: int
    time: str
    kind: str
    actor: str
    body: dict[str, Any]
    prev_size: int
    prev_root: bytes
    key: str
    signature: bytes = field(repr=False)
    leaf: bytes = field(repr=False)
    leaf_hash: bytes = field(repr=False)
    lifecycle: LifecycleHead | None = None

    def envelope(self) -> dict[str, Any]:
        """The signed envelope as a JSON value (``canonical_bytes`` of it is what was signed)."""
        return envelope_json(
            self.log,
            self.thread,
            self.seq,
            self.time,
            self.kind,
            self.actor,
            self.body,
            self.prev_size,
            self.prev_root,
            self.key,
            self.lifecycle,
        )


def signed_entry(
    log: str,
    thread: str,
    seq: int,
    time: str,
    kind: str,
    actor: str,
    body: dict[str, Any],
    prev_root: bytes,
    key: str,
    signature: bytes,
    leaf: bytes,
    digest: bytes,
    lifecycle: LifecycleHead | None,
) -> Entry:
    """The :class:`Entry` of a freshly signed leaf (``prev_size == seq``), made without the
    frozen dataclass's ``__init__``, which sets each of the fourteen fields through
    ``object.__setattr__`` (a fifth of the batch signer's own time): the instance dictionary
    is given every field at once. (Shared with :mod:`registre.attest.entries.batch`, whose
    tests compare its entries with :func:`sign_entry`'s; not part of the public API.)"""
    entry: Entry = object.__new__(Entry)
    object.__setattr__(
        entry,
        "__dict__",
        {
            "log": log,
            "thread": thread,
            "seq": seq,
            "time": time,
            "kind": kind,
            "actor": actor,
            "body": body,
            "prev_size": seq,
            "prev_root": prev_root,
            "key": key,
            "signature": signature,
            "leaf": leaf,
            "leaf_hash": digest,
            "lifecycle": lifecycle,
        },
    )
    return entry


def check_thread_id(thread: str) -> None:
    """Raise InvalidThreadIdError unless ``thread`` is a usable thread id."""
    if not isinstance(thread, str) or not _THREAD_ID.fullmatch(thread):
        raise InvalidThreadIdError(
            f"thread id {thread!r} is not allowed: use letters, digits, '.', '_', ':' or '-', "
            "starting with a letter or digit"
        )
    if len(thread) > MAX_THREAD_ID_LENGTH:
        raise InvalidThreadIdError(
            f"thread id is {len(thread)} characters; the limit is {MAX_THREAD_ID_LENGTH}"
        )


def check_actor(actor: str) -> None:
    """Raise InvalidActorError unless ``actor`` is 1..256 characters with no control codes."""
    if not isinstance(actor, str) or not actor:
        raise InvalidActorError("actor must be a non-empty string naming who acted")
    if len(actor) > MAX_ACTOR_LENGTH:
        raise InvalidActorError(f"actor is {len(actor)} characters; limit {MAX_ACTOR_LENGTH}")
    if _CONTROL.search(actor):
        raise InvalidActorError(f"actor {actor!r} contains control characters")
    if _SURROGATE.search(actor):
        raise InvalidActorError(f"actor {actor!r} contains a lone surrogate (not Unicode text)")


_ACTOR_PART = r"[\w.@+/-]+"
_ACTOR_NAME = re.compile(rf"{_ACTOR_PART}(?::{_ACTOR_PART})*")
_NOT_IN_PART = re.compile(r"[^\w.@+/-]")
ACTOR_GRAMMAR = "words of letters, digits and _ . - @ + / joined by ':'"
"""The actor names a writer signs, in words (``specs/entries.md`` section 1)."""


def check_actor_name(actor: str) -> None:
    """What a writer signs as an actor: :func:`check_actor`, and the grammar
    ``PART(:PART)*``, a PART one or more Unicode letters or digits or ``_ . - @ + /``
    (``agent``, ``tool:sql``, ``import:openai``, ``bob.smith@acme.example``). Raises
    InvalidActorError or, for a name outside the grammar (``bob smith``), ActorNameError,
    whose hint proposes one inside it."""
    check_actor(actor)
    if _ACTOR_NAME.fullmatch(actor):
        return
    bad = _NOT_IN_PART.search(actor.replace(":", "a"))
    where = (
        f"U+{ord(bad[0]):04X} at character {bad.start()}"
        if bad is not None
        else "an empty part before or after a ':'"
    )
    raise ActorNameError(f"actor {actor!r} is not an actor name ({where})").with_hint(
        f"an actor is {ACTOR_GRAMMAR}, e.g. agent, tool:sql, bob.smith; write {actor_name(actor)!r}"
    )


def actor_name(text: str) -> str:
    """``text`` made an actor name: each run of characters outside the grammar becomes ``_``
    and empty parts ``_`` (``bob smith`` -> ``bob_smith``, ``tool:my tool`` ->
    ``tool:my_tool``), cut to :data:`MAX_ACTOR_LENGTH`. For actors derived from recorded
    names -- a tool's ``tool:NAME`` -- whose text the body keeps as it is."""
    parts = [re.sub(r"[^\w.@+/-]+", "_", part) or "_" for part in str(text).split(":")]
    return ":".join(parts)[:MAX_ACTOR_LENGTH].rstrip(":") or "_"


def format_time(moment: datetime | None = None) -> str:
    """``moment`` (default: now) as RFC 3339 UTC with microseconds, e.g. ``...18.123456Z``."""
    if moment is None:  # isoformat of a UTC time ends "+00:00"
        return datetime.now(UTC).isoformat(timespec="microseconds")[:-6] + "Z"
    if moment.tzinfo is None:
        raise EntryFormatError("entry time must be timezone-aware (UTC)")
    moment = moment.astimezone(UTC)
    return moment.replace(tzinfo=None).isoformat(timespec="microseconds") + "Z"


def sign_entry(
    signer: Signer,
    *,
    thread: str,
    seq: int,
    kind: str,
    actor: str,
    body: object,
    prev_root: bytes,
    time: str | None = None,
    body_checked: bool = False,
    lifecycle: LifecycleHead | None = None,
) -> Entry:
    """Validate every field, then sign and return the entry for leaf ``seq`` of ``thread``.

    ``prev_root`` is the root of the tree of the ``seq`` leaves before this one. Raises
    (before signing anything) InvalidThreadIdError, InvalidActorError, EntryFormatError for a
    bad seq, root or time, and the body schema's MalformedError for an unknown kind or a body
    that fails its schema. ``body_checked``: the caller has just run
    :func:`registre.attest.entries.bodies.validate_body` on this very ``(kind, body)`` (the checked
    append paths must, to decide it), so the schema check is not run twice.
    """
    check_thread_id(thread)
    check_actor_name(actor)
    if type(seq) is not int or seq < 0:
        raise EntryFormatError(f"seq must be a non-negative integer, got {seq!r}")
    if not isinstance(prev_root, bytes) or len(prev_root) != HASH_SIZE:
        raise EntryFormatError(f"prev root must be {HASH_SIZE} bytes")
    if time is None:
        time = format_time()
    else:
        check_time(time)
    if not body_checked:
        validate_body(kind, body)
    if not isinstance(body, dict):
        raise EntryFormatError(f"body must be a JSON object, got {type(body).__name__}")
    log = f"{signer.name}/{thread}"
    key = signer.key_id.hex()
    envelope = envelope_json(
        log, thread, seq, time, kind, actor, body, seq, prev_root, key, lifecycle
    )
    signed = _canonical_envelope(envelope)
    if len(signed) > MAX_LEAF_BYTES - 200:  # the signature wrapper adds ~110 bytes
        raise EntryFormatError(
            f"the entry would be {len(signed)} bytes; a leaf is at most {MAX_LEAF_BYTES}"
        )
    signature = signer.sign(ENTRY_SIGNATURE_PREFIX + signed)
    leaf = _leaf_bytes(signed, signature)
    return Entry(
        log,
        thread,
        seq,
        time,
        kind,
        actor,
        body,
        seq,
        prev_root,
        key,
        signature,
        leaf,
        leaf_hash(leaf),
        lifecycle,
    )


def open_entry(leaf: bytes, keys: Iterable[Verifier] | Mapping[str, Verifier]) -> Entry:
    """Verify the leaf bytes of one entry and return it. Steps, each its own error:

    1. Parse the bytes as received (:func:`registre.attest.canonical_json.jcs.parse_canonical`): at
       most
       :data:`MAX_LEAF_BYTES` (else ``InputTooLargeError`` before parsing), strict JSON in
       RFC 8785 canonical form, or that module's MalformedError.
    2. Structure and types: ``{"entry", "sig"}`` exactly; the ten envelope fields exactly,
       each of its type, plus the optional ``lifecycle`` head; ``v == 1``;
       ``prev.size == seq``; base64 root of 32 bytes and signature of 64 bytes in
       canonical base64; key id 8 lowercase hex; RFC 3339 UTC time;
       valid thread id and actor -> EntryFormatError (or a subclass).
    3. Known key: a trusted key with this key id -> UnknownEntryKeyError; whose name makes
       ``log == NAME/thread`` -> EntryOriginError.
    4. Signature over ``b"registre/entry/v1\\n" ‖ canonical_bytes(envelope)``
       -> EntrySignatureError.
    5. Body schema for the kind (:func:`registre.attest.entries.bodies.validate_body`) -> its
    MalformedError.

    A leaf over :data:`SIGNATURE_FIRST_BYTES` has its signature checked first, on the bytes
    where a canonical leaf holds its envelope, under every pinned key: if none verifies it
    (``EntrySignatureError``), or it does not have the shape ``{"entry":…,"sig":"…"}``
    (``EntryFormatError``), it is refused before it is parsed, so an unsigned leaf costs a
    hash of its bytes, not a parse.

    ``keys`` are the pinned verifier keys (or a mapping whose values are). The caller checks
    that ``thread`` and ``seq`` are the ones it expected at this position.
    """
    # 0. a large leaf is parsed only once a pinned key has signed it
    trusted = list(keys.values() if isinstance(keys, Mapping) else keys)
    if len(leaf) > SIGNATURE_FIRST_BYTES:
        _check_signature_first(bytes(leaf), trusted)
    # 1. canonical bytes as received, no longer than a valid entry can be
    value = parse_canonical(leaf, max_bytes=MAX_LEAF_BYTES)
    # 2. structure and types
    envelope, signature = _split_leaf(value)
    entry = _read_envelope(envelope, signature, bytes(leaf))
    # 3. a trusted key with this id, and the origin it implies
    verifier = _find_key(entry, trusted)
    # 4. the signature, with the entry domain prefix
    message = ENTRY_SIGNATURE_PREFIX + canonical_bytes(envelope)
    try:
        verifier.verify(message, signature)
    except SignatureInvalidError as exc:
        raise EntrySignatureError(
            f"entry {entry.log} seq {entry.seq}: signature does not verify under key "
            f"{verifier.name}+{entry.key}; the entry bytes were changed after signing"
        ) from exc
    # 5. the body schema of its kind
    validate_body(entry.kind, entry.body)
    return entry


# --- helpers ---------------------------------------------------------------------------


def envelope_json(
    log: str,
    thread: str,
    seq: int,
    time: str,
    kind: str,
    actor: str,
    body: dict[str, Any],
    prev_size: int,
    prev_root: bytes,
    key: str,
    lifecycle: LifecycleHead | None = None,
) -> dict[str, Any]:
    """The envelope as a JSON value. (Shared with :mod:`registre.attest.entries.batch`; not
    part of the public API.)"""
    envelope: dict[str, Any] = {
        "v": ENTRY_VERSION,
        "log": log,
        "thread": thread,
        "seq": seq,
        "time": time,
        "kind": kind,
        "actor": actor,
        "body": body,
        "prev": {"size": prev_size, "root": base64.b64encode(prev_root).decode("ascii")},
        "key": key,
    }
    if lifecycle is not None:
        envelope["lifecycle"] = lifecycle.to_json()
    return envelope


def has_astral(text: str) -> bool:
    """Whether ``text`` holds a character beyond U+FFFF, where RFC 8785 and ``json`` order
    keys differently. (Shared with :mod:`registre.attest.entries.batch`; not public.)"""
    return not text.isascii() and _ASTRAL.search(text) is not None


def _canonical_envelope(envelope: dict[str, Any]) -> bytes:
    """``canonical_bytes(envelope)`` for an envelope whose fields passed :func:`sign_entry`'s
    checks, computed with the C JSON encoder when that gives the same bytes.

    For such values RFC 8785 and ``json`` with sorted keys, no whitespace and no ASCII
    escaping write the same text: validate_body admits no floats, no integers beyond 2**53,
    no lone surrogates, only str keys and plain types, and both escape exactly the same
    characters (quote, backslash, C0 controls, with lowercase \\u00xx). The one difference
    is key order when a string holds a character beyond U+FFFF (JCS sorts UTF-16 code units,
    ``json`` code points), so such envelopes take :func:`canonical_bytes` itself.
    tests/attest/entries/test_entry.py checks the equality as a property.
    """
    text = _FAST_JSON.encode(envelope)
    if has_astral(text):
        return canonical_bytes(envelope)
    return text.encode("utf-8")


def _leaf_bytes(signed_envelope: bytes, signature: bytes) -> bytes:
    # canonical_bytes({"entry": envelope, "sig": b64}) spelled out: JCS orders "entry" before
    # "sig", adds no whitespace, and base64 needs no escaping. tests/attest/entries/test_entry.py
    # checks this equals canonical_bytes of the dict.
    return b'{"entry":' + signed_envelope + b',"sig":"' + base64.b64encode(signature) + b'"}'


def _split_leaf(value: object) -> tuple[dict[str, Any], bytes]:
    if not isinstance(value, dict) or set(value) != {"entry", "sig"}:
        raise EntryFormatError('a leaf must be an object with exactly "entry" and "sig"')
    envelope = value["entry"]
    if not isinstance(envelope, dict):
        raise EntryFormatError('"entry" must be an object')
    signature = _b64_field(value["sig"], "sig", SIGNATURE_SIZE)
    return envelope, signature


def _read_envelope(env: dict[str, Any], signature: bytes, leaf: bytes) -> Entry:
    missing = sorted(_ENVELOPE_FIELDS - set(env))
    extra = sorted(set(env) - _ENVELOPE_FIELDS - _OPTIONAL_FIELDS)
    if missing or extra:
        raise EntryFormatError(f"envelope fields: missing {missing}, unexpected {extra}")
    if type(env["v"]) is not int or env["v"] != ENTRY_VERSION:
        raise EntryFormatError(f"unsupported entry version {env['v']!r}; this reader knows v=1")
    for name in ("log", "thread", "time", "kind", "actor", "key"):
        if not isinstance(env[name], str):
            raise EntryFormatError(f'"{name}" must be a string')
    seq = env["seq"]
    if type(seq) is not int or seq < 0:
        raise EntryFormatError(f'"seq" must be a non-negative integer, got {seq!r}')
    check_thread_id(env["thread"])
    check_actor(env["actor"])
    check_time(env["time"])
    if not _KEY_ID.fullmatch(env["key"]):
        raise EntryFormatError(f'"key" must be 8 lowercase hex digits, got {env["key"]!r}')
    if not isinstance(env["body"], dict):
        raise EntryFormatError('"body" must be an object')
    prev = env["prev"]
    if not isinstance(prev, dict) or set(prev) != {"size", "root"}:
        raise EntryFormatError('"prev" must be an object with exactly "size" and "root"')
    if type(prev["size"]) is not int or prev["size"] != seq:
        raise EntryFormatError(
            f'"prev.size" must equal seq ({seq}): prev is the tree head before this entry'
        )
    prev_root = _b64_field(prev["root"], "prev.root", HASH_SIZE)
    lifecycle = None
    if "lifecycle" in env:
        try:
            lifecycle = LifecycleHead.from_json(env["lifecycle"])
        except MalformedError as exc:
            raise EntryFormatError(str(exc)) from None
    return Entry(
        env["log"],
        env["thread"],
        seq,
        env["time"],
        env["kind"],
        env["actor"],
        env["body"],
        prev["size"],
        prev_root,
        env["key"],
        signature,
        leaf,
        leaf_hash(leaf),
        lifecycle,
    )


def _b64_field(value: object, name: str, size: int) -> bytes:
    if not isinstance(value, str):
        raise EntryFormatError(f'"{name}" must be a base64 string')
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        raise EntryFormatError(f'"{name}" is not valid base64') from None
    if base64.b64encode(raw).decode("ascii") != value:
        raise EntryFormatError(f'"{name}" is not in canonical base64 (padding or spare bits)')
    if len(raw) != size:
        raise EntryFormatError(f'"{name}" must decode to {size} bytes, got {len(raw)}')
    return raw


def check_time(time: object) -> None:
    """EntryFormatError unless ``time`` is an entry time. (Shared with
    :mod:`registre.attest.entries.batch`; not part of the public API.)"""
    match = _TIME.fullmatch(time) if isinstance(time, str) else None
    if match is None:
        raise EntryFormatError(
            f"entry time {time!r} is not RFC 3339 UTC like 2026-11-30T08:30:18.123456Z"
        )
    try:
        datetime.fromisoformat(match.group(1))
    except ValueError:
        raise EntryFormatError(f"entry time {time!r} is not a real date and time") from None


def _check_signature_first(leaf: bytes, keys: list[Verifier]) -> None:
    """Refuse a leaf that no pinned key signed, reading the envelope at its canonical place."""
    head, tail = b'{"entry":', b',"sig":"'
    end = len(leaf) - 2 - _SIGNATURE_B64_LENGTH
    if not (leaf.startswith(head) and leaf[end - len(tail) : end] == tail and leaf[-2:] == b'"}'):
        raise EntryFormatError(
            f'a leaf of {len(leaf)} bytes that is not shaped {{"entry":…,"sig":"…"}}; '
            "refused before parsing"
        )
    try:
        signature = base64.b64decode(leaf[end:-2], validate=True)
    except binascii.Error:
        signature = b""
    message = ENTRY_SIGNATURE_PREFIX + leaf[len(head) : end - len(tail)]
    for key in keys:
        try:
            key.verify(message, signature)
        except SignatureInvalidError:
            continue
        return
    raise EntrySignatureError(
        f"a leaf of {len(leaf)} bytes whose signature verifies under no pinned key; refused "
        "before parsing"
    )


def _find_key(entry: Entry, keys: Iterable[Verifier]) -> Verifier:
    return find_key(entry.log, entry.thread, entry.key, entry.seq, keys)


def find_key(log: str, thread: str, key_id: str, seq: int, keys: Iterable[Verifier]) -> Verifier:
    """The pinned key with id ``key_id`` whose name makes ``log == NAME/thread`` (steps 3 of
    :func:`open_entry`): UnknownEntryKeyError when no key has this id, EntryOriginError when
    none of those does; ``seq`` only names the entry in the error. (Shared with
    :mod:`registre.attest.entries._leaf_open`; not part of the public API.)"""
    candidates = [key for key in keys if key.key_id.hex() == key_id]
    if not candidates:
        raise UnknownEntryKeyError(
            f"entry {log} seq {seq} is signed by key id {key_id}, which is not "
            "among the trusted keys; pin the operator's verifier key"
        )
    for key in candidates:
        if log == f"{key.name}/{thread}":
            return key
    raise EntryOriginError(
        f"entry log {log!r} is not {candidates[0].name}/{thread}, the origin the "
        f"key {candidates[0].name}+{key_id} signs for"
    )
