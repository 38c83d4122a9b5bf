"""Sign a run of consecutive entries of one thread: :func:`sign_entries`, the batch signer.

:func:`sign_entries` returns exactly the entries :func:`registre.attest.entries.entry.sign_entry`
would return signed one by one -- the same leaf bytes, signatures and leaf hashes -- with
each entry's ``prev`` the tree head after the one before it and its ``lifecycle`` the
chain head after it (:mod:`registre.attest.entries.lifecycle_chain`). The byte format is
:mod:`registre.attest.entries.entry`'s; only the work per entry is less:

* the checks of the thread id and the key, and the canonical text of the envelope members
  that are the same for every entry of the thread (``key``, ``log``, ``thread``, ``v``),
  are done once per batch;
* an actor, a kind and a lifecycle head are checked and encoded once per distinct value;
* the envelope is written as its canonical bytes directly: the members in RFC 8785 order
  (their keys are ASCII, so code point and UTF-16 order agree) around the body's compact
  JSON with sorted keys -- the same text for every body the schemas admit unless a string
  holds a character beyond U+FFFF, whose entry takes ``canonical_bytes`` of the whole
  envelope, as :func:`registre.attest.entries.entry.sign_entry` does;
* each leaf hash is computed once, appended to the caller's frontier, and handed back with
  the completed subtrees for the store to insert.

tests/attest/entries/test_entry_batch.py holds the output to ``sign_entry``'s, byte for byte, as a
property.
"""

from __future__ import annotations

import binascii
import hashlib
import json
import time as _time
from collections.abc import Collection, Sequence
from dataclasses import dataclass
from typing import Any

from registre.attest.canonical_json import canonical_bytes
from registre.attest.entries.bodies import validate_body
from registre.attest.entries.body_base import LIFECYCLE_KINDS, c_compact_encoder
from registre.attest.entries.entry import (
    ENTRY_SIGNATURE_PREFIX,
    ENTRY_VERSION,
    MAX_LEAF_BYTES,
    Entry,
    EntryFormatError,
    check_actor_name,
    check_thread_id,
    check_time,
    envelope_json,
    format_time,
    has_astral,
    signed_entry,
)
from registre.attest.entries.lifecycle_chain import LifecycleHead
from registre.attest.notes import Signer
from registre.attest.tree import CompactRange

__all__ = ["SignedBatch", "sign_entries"]

_B2A = binascii.b2a_base64
_SHA256 = hashlib.sha256
_time_ns = _time.time_ns
_FORMAT_TIME = format_time
_STRING = json.JSONEncoder(ensure_ascii=False).encode
_BODY_ENCODER = json.JSONEncoder(
    ensure_ascii=False,
    sort_keys=True,
    separators=(",", ":"),
    allow_nan=False,
    check_circular=False,
)


_BODY = (
    c_compact_encoder(_BODY_ENCODER.encode, sort_keys=True, default=_BODY_ENCODER.default)
    or _BODY_ENCODER.encode
)
"""``_BODY_ENCODER.encode``, from a C encoder made once (a tenth of the signer's own work
per entry went to building one at every call), or ``encode`` itself where that C encoder
is not to be had or writes another text."""
_PREFIX_LENGTH = len(ENTRY_SIGNATURE_PREFIX)
_LEAF_HEAD = b'{"entry":'
_LEAF_SIG = b',"sig":"'
_LEAF_END = b'"}'


@dataclass(frozen=True, slots=True)
class SignedBatch:
    """What :func:`sign_entries` signed: the entries in order, every complete subtree
    ``(level, index, hash)`` their leaves finished (what :meth:`CompactRange.append`
    returned for each, in order), and the lifecycle head after the last entry."""

    entries: list[Entry]
    subtrees: list[tuple[int, int, bytes]]
    lifecycle: LifecycleHead | None


def sign_entries(
    signer: Signer,
    *,
    thread: str,
    items: Sequence[tuple[str, Any, str]],
    frontier: CompactRange,
    lifecycle: LifecycleHead | None,
    checked: Collection[int] = (),
    time: str | None = None,
) -> SignedBatch:
    """Sign ``items`` (``(kind, body, actor)`` each) as the next entries of ``thread``.

    Entry ``i`` has ``seq = frontier.size``, ``prev`` the frontier's root, and the lifecycle
    head ``lifecycle`` extended by the lifecycle entries before it in the batch; its leaf
    hash is then appended to ``frontier`` (which the call advances). ``lifecycle`` None
    signs legacy entries without the field, as ``sign_entry`` does, and returns no head.
    ``time``: every entry's time (default: the moment each is signed,
    :func:`registre.attest.entries.entry.format_time`).
    ``checked``: positions whose bodies the caller has just validated
    (:func:`registre.attest.entries.bodies.validate_body`), as ``sign_entry``'s ``body_checked``.

    Raises what ``sign_entry`` raises for the first refused item, before signing it
    (InvalidThreadIdError, InvalidActorError, EntryFormatError, the body schema's
    MalformedError); ``frontier`` then holds the entries signed before it, so a caller
    that stores nothing of a failed batch must drop it.
    """
    log, key, key_kind, log_member, tail = _thread_members(signer.name, signer.key_id, thread)
    sign = signer.sign
    append = frontier.append
    root_of = frontier.root
    actors: dict[str, bytes] = {}
    kinds: dict[str, bytes] = {}
    lifecycle_bytes = _lifecycle_member(lifecycle)
    entries: list[Entry] = []
    subtrees: list[tuple[int, int, bytes]] = []
    extend = subtrees.extend
    first = frontier.size
    time_unchecked = time is not None
    # format_time is this module's name for the clock, the seam a caller (a test fixing
    # the times of a worked example) may replace; while it is entry.format_time itself the
    # loop formats the same clock inline (_clock_prefix)
    clock = None if format_time is _FORMAT_TIME else format_time
    clock_second = -1
    clock_prefix = ""
    for offset, (kind, body, actor) in enumerate(items):
        actor_bytes = actors.get(actor) if type(actor) is str else None
        if actor_bytes is None:
            check_actor_name(actor)
            actor_bytes = actors[actor] = b'{"actor":' + _STRING(actor).encode()
        if time_unchecked:
            check_time(time)
            time_unchecked = False
        if offset not in checked:
            validate_body(kind, body)
        if not isinstance(body, dict):
            raise EntryFormatError(f"body must be a JSON object, got {type(body).__name__}")
        kind_bytes = kinds.get(kind)
        if kind_bytes is None:
            kind_bytes = kinds[kind] = _STRING(kind).encode()
        seq = first + offset
        root = root_of()
        if clock is not None:
            moment = clock() if time is None else time
        elif time is None:
            # format_time(), spelled out: the date and time of day change once a second,
            # so only the microseconds are formatted for each entry (_clock_prefix)
            micros = _time_ns() // 1000
            second = micros // 1_000_000
            if second != clock_second:
                clock_second, clock_prefix = second, _clock_prefix(second)
            moment = f"{clock_prefix}{micros - second * 1_000_000:06d}Z"
        else:
            moment = time
        body_text = _BODY(body)
        if has_astral(body_text):  # keys would sort differently (module docstring)
            envelope = envelope_json(
                log, thread, seq, moment, kind, actor, body, seq, root, key, lifecycle
            )
            signed = canonical_bytes(envelope)
        else:
            signed = b"".join(
                (
                    actor_bytes,
                    b',"body":',
                    body_text.encode(),
                    key_kind,
                    kind_bytes,
                    lifecycle_bytes,
                    log_member,
                    _B2A(root, newline=False),
                    b'","size":%d}' % seq,
                    tail % (seq, moment.encode()),
                )
            )
        if len(signed) > MAX_LEAF_BYTES - 200:  # as sign_entry: the wrapper adds ~110 bytes
            raise EntryFormatError(
                f"the entry would be {len(signed)} bytes; a leaf is at most {MAX_LEAF_BYTES}"
            )
        signature = sign(ENTRY_SIGNATURE_PREFIX + signed)
        leaf = b"".join((_LEAF_HEAD, signed, _LEAF_SIG, _B2A(signature, newline=False), _LEAF_END))
        digest = _SHA256(b"\x00" + leaf).digest()
        entries.append(
            signed_entry(
                log,
                thread,
                seq,
                moment,
                kind,
                actor,
                body,
                root,
                key,
                signature,
                leaf,
                digest,
                lifecycle,
            )
        )
        extend(append(digest))
        if lifecycle is not None and kind in LIFECYCLE_KINDS:
            lifecycle = lifecycle.extend(digest)
            lifecycle_bytes = _lifecycle_member(lifecycle)
    return SignedBatch(entries, subtrees, lifecycle)


# The members of a thread's envelopes that every entry shares, by (key name, key id,
# thread): a pure function of the three, kept for the next batch (a single append is a
# batch of one, and computing them cost as much as a third of its signature).
_MEMBERS: dict[tuple[str, bytes, str], tuple[str, str, bytes, bytes, bytes]] = {}
_MEMBERS_MAX = 4096


def _thread_members(name: str, key_id: bytes, thread: str) -> tuple[str, str, bytes, bytes, bytes]:
    """``(log, key, key_kind, log_member, tail)`` for entries of ``thread`` signed by the key
    ``name`` / ``key_id``: the log name, the key id in hex, and the canonical text of the
    members after ``body`` (``tail`` is %-formatted with each entry's seq and time; a thread
    id holds no "%", escaped all the same). InvalidThreadIdError for a bad thread id."""
    found = _MEMBERS.get((name, key_id, thread))
    if found is not None:
        return found
    check_thread_id(thread)
    log = f"{name}/{thread}"
    key = key_id.hex()
    key_kind = b',"key":' + _STRING(key).encode() + b',"kind":'
    log_member = b',"log":' + _STRING(log).encode() + b',"prev":{"root":"'
    tail = b',"seq":%d,"thread":' + _STRING(thread).encode().replace(b"%", b"%%")
    tail += b',"time":"%s","v":' + str(ENTRY_VERSION).encode() + b"}"
    if len(_MEMBERS) >= _MEMBERS_MAX:
        _MEMBERS.clear()
    members = _MEMBERS[(name, key_id, thread)] = (log, key, key_kind, log_member, tail)
    return members


def _lifecycle_member(head: LifecycleHead | None) -> bytes:
    if head is None:  # a legacy entry, signed before the field existed
        return b""
    head_b64 = _B2A(head.head, newline=False)
    return b',"lifecycle":{"count":%d,"head":"%s"}' % (head.count, head_b64)


def _clock_prefix(second: int) -> str:
    """``YYYY-MM-DDTHH:MM:SS.`` of the UTC second ``second`` (seconds since the epoch): what
    :func:`registre.attest.entries.entry.format_time` writes before the microseconds. Both read the
    system clock (``datetime.now`` takes ``time.time_ns`` floored to the microsecond) and
    write the year with four digits (``%Y``: every year from 1000)."""
    return _time.strftime("%Y-%m-%dT%H:%M:%S.", _time.gmtime(second))
