"""Step 3.1 of bundle verification, fast: open a leaf exactly as ``open_entry`` would.

:func:`open_leaf` and :class:`LeafOpener` return what
:func:`registre.attest.entries.entry.open_entry` returns and raise what it raises, for every byte
string (``tests/attest/verify/test_verify_entries.py`` checks it as a property). The fast path
below accepts only leaves open_entry accepts; anything else -- and every failure -- goes
through open_entry itself, which raises the precise error. So the fast path may be as
conservative as it likes, never more lenient.

The fast path reads the leaf's text with the C JSON scanner -- ``parse_float`` refusing
every float, ``parse_int`` every integer written in more than 15 characters -- and accepts
it only if

* the leaf is at most ``MAX_LEAF_BYTES`` long, valid UTF-8 with no character beyond U+FFFF
  (where RFC 8785 key order, by UTF-16 units, differs from the C encoder's; in UTF-8 such a
  character, and only such, starts with a byte F0-F4);
* the C encoder (sorted keys, no whitespace, no ASCII escaping, no NaN) writes the value
  back as exactly the leaf's text;
* the envelope passes every check of open_entry's step 2 (the same functions, or their
  verdicts remembered for values already seen: see below), its key id names a pinned key
  whose name gives its ``log``, and the Ed25519 signature over the envelope's bytes -- a
  slice of the leaf -- verifies;
* the body passes rules 1-3 of :func:`~registre.attest.entries.bodies.validate_body` as proved by
  the text (:func:`body_rules_hold`) and then its kind's schema
  (:func:`~registre.attest.entries.bodies.validate_schema`); or validate_body itself when the text
  does not prove them.

Such a value holds no float (refused by the parse), no NaN (the encoder refuses it), no
duplicate key (the re-encoding would be shorter), no lone surrogate (no UTF-8 form), only
integers of at most 15 digits (within +/-(2**53-1)), and nests at most 34 deep -- so the
bytes are exactly its RFC 8785 form and the signed message is a slice of the leaf: nothing
is parsed or serialised twice.

Remembered verdicts (:class:`LeafOpener`, one per chunk of leaves): the checks of step 2
and 3 that depend only on a few strings -- ``check_thread_id(thread)``,
``check_actor(actor)``, the key id's form, and the pinned key ``(log, thread, key)`` selects
-- are run once per distinct ``(log, thread, actor, key)``; the ``lifecycle`` head is parsed
once per distinct ``(count, head)``. Each is a pure function of those values, so the verdict
is the same as running it again.

Rules 1-3 proved by the text (:func:`body_rules_hold`): the parse refused floats and long
integers; the leaf is at most MAX_BODY_BYTES long (the body's compact JSON is a slice of it);
the body nests at most MAX_DEPTH containers (sure when the text holds at most MAX_DEPTH + 2
brackets, the leaf and its envelope being two of them; else walked). The C parser gives only
dicts with str keys, lists, str, int, bool and None; a string with a lone surrogate cannot
re-encode to the text read (valid UTF-8).
"""

from __future__ import annotations

import binascii
import json
from collections.abc import Sequence
from json.scanner import make_scanner
from typing import Any, Final, cast

from registre.attest.canonical_json import MAX_SAFE_INTEGER
from registre.attest.entries.bodies import nests_within, validate_body, validate_schema
from registre.attest.entries.body_base import MAX_BODY_BYTES, MAX_DEPTH
from registre.attest.entries.entry import (
    _FAST_JSON,
    ENTRY_SIGNATURE_PREFIX,
    MAX_LEAF_BYTES,
    Entry,
    check_actor,
    check_thread_id,
    check_time,
    find_key,
    open_entry,
    signed_entry,
)
from registre.attest.entries.lifecycle_chain import LifecycleHead
from registre.attest.notes import Verifier
from registre.attest.tree import HASH_SIZE, leaf_hash
from registre.errors import RegistreError

__all__ = ["LeafOpener", "body_rules_hold", "load_leaf", "open_leaf"]

_LEAF_HEAD: Final = len(b'{"entry":')
_LEAF_TAIL: Final = len(b',"sig":"') + 88 + len(b'"}')  # 64-byte signature in base64: 88
_FEW_BRACKETS: Final = MAX_DEPTH + 2  # the leaf's and the envelope's braces hold the body
_LONGEST_INT: Final = 15  # characters: |n| < 10**15 < 2**53 - 1
_ENVELOPE: Final = frozenset(
    {"v", "log", "thread", "seq", "time", "kind", "actor", "body", "prev", "key"}
)
_ENVELOPE_LIFECYCLE: Final = _ENVELOPE | {"lifecycle"}
_PREV: Final = frozenset({"size", "root"})
_LEAF: Final = frozenset({"entry", "sig"})
_LIFECYCLE: Final = frozenset({"count", "head"})
_MAX_REMEMBERED: Final = 1024


def _refuse_float(text: str) -> float:
    """``parse_float`` of the fast path: a float sends the leaf to open_entry."""
    raise ValueError(f"a float ({text[:40]}): not for the fast path")


def _short_int(text: str) -> int:
    """``parse_int`` of the fast path: an integer of more than 15 characters sends the leaf
    to open_entry (which bounds it exactly)."""
    if len(text) > _LONGEST_INT:
        raise ValueError(f"a long integer ({text[:40]}): not for the fast path")
    return int(text)


_SCAN: Final = make_scanner(
    cast(Any, json.JSONDecoder(parse_float=_refuse_float, parse_int=_short_int))
)  # the C scanner: what JSONDecoder.decode runs, without its whitespace steps
_ENCODE: Final = _FAST_JSON.encode
_LOAD: Final = make_scanner(
    cast(Any, json.JSONDecoder())
)  # json.loads's scanner, its hooks as they are
_TO_B64: Final = binascii.b2a_base64
_FROM_B64: Final = binascii.a2b_base64


def _b64(value: object, size: int) -> bytes | None:
    """The ``size`` bytes whose canonical base64 is ``value``, or None (not shown)."""
    if type(value) is not str:
        return None
    raw = _FROM_B64(value)  # binascii.Error (a ValueError) or a str not ASCII: ValueError
    if len(raw) != size or _TO_B64(raw, newline=False) != value.encode("ascii"):
        return None
    return raw


def body_rules_hold(text: str, size: int, body: dict[str, Any]) -> bool:
    """Whether rules 1-3 of validate_body hold for ``body``, read by the fast path (its
    parse refusing floats and integers of more than 15 characters) from the canonical
    ``text`` of a leaf of ``size`` bytes (module docstring); False: not shown."""
    if size > MAX_BODY_BYTES:
        return False
    return text.count("{") + text.count("[") <= _FEW_BRACKETS or nests_within(body, MAX_DEPTH)


class LeafOpener:
    """:func:`open_leaf` for many leaves under the same pinned ``keys``, remembering the
    verdicts of the checks that depend on a few repeated strings (module docstring)."""

    __slots__ = ("_by_id", "_keys", "_lifecycle", "_names")

    def __init__(self, keys: Sequence[Verifier]) -> None:
        self._keys = list(keys)
        self._by_id = {key.key_id.hex() for key in self._keys}
        self._names: dict[tuple[str, str, str, str], Verifier] = {}
        self._lifecycle: dict[tuple[int, str], LifecycleHead] = {}

    def open(self, leaf: bytes, *, digest: bytes | None = None) -> Entry:
        """Exactly ``open_entry(leaf, keys)`` (same result, same errors), faster.
        ``digest``, if given, is ``leaf_hash(leaf)`` (computed by the caller already)."""
        entry = self._fast(leaf, digest)
        return entry if entry is not None else open_entry(leaf, self._keys)

    def _fast(self, leaf: bytes, digest: bytes | None) -> Entry | None:
        """The entry, if the fast path shows open_entry accepts ``leaf``; else None."""
        size = len(leaf)
        if size > MAX_LEAF_BYTES:
            return None
        try:
            text = leaf.decode("utf-8")
            if len(text) != size and (
                b"\xf0" in leaf
                or b"\xf1" in leaf
                or b"\xf2" in leaf
                or b"\xf3" in leaf
                or b"\xf4" in leaf
            ):
                return None  # JCS orders such keys by UTF-16 units; the C encoder would not
            value, end = _SCAN(text, 0)  # a float or a long integer raises ValueError
            if end != len(text) or _ENCODE(value) != text:  # same text: same UTF-8 bytes
                return None
            return self._envelope(value, leaf, text, digest)
        except (ValueError, RecursionError, StopIteration, RegistreError):
            # UnicodeError, JSONDecodeError and binascii.Error are ValueErrors; the scanner
            # raises StopIteration where no value starts
            return None

    def _envelope(
        self, value: object, leaf: bytes, text: str, digest: bytes | None
    ) -> Entry | None:
        """open_entry's steps 2-5 on the parsed canonical ``value``; None unless all pass
        (the check functions raise RegistreError: also None)."""
        if type(value) is not dict or value.keys() != _LEAF:
            return None
        env = value["entry"]
        if type(env) is not dict:
            return None
        fields = env.keys()
        if fields != _ENVELOPE and fields != _ENVELOPE_LIFECYCLE:
            return None
        signature = _b64(value["sig"], 64)
        seq, body, prev = env["seq"], env["body"], env["prev"]
        log, thread, actor, key = env["log"], env["thread"], env["actor"], env["key"]
        time, kind = env["time"], env["kind"]
        if (
            signature is None
            or type(env["v"]) is not int
            or env["v"] != 1
            or type(log) is not str
            or type(thread) is not str
            or type(time) is not str
            or type(kind) is not str
            or type(actor) is not str
            or type(key) is not str
            or type(seq) is not int
            or not 0 <= seq <= MAX_SAFE_INTEGER
            or type(body) is not dict
            or type(prev) is not dict
            or prev.keys() != _PREV
            or type(prev["size"]) is not int
            or prev["size"] != seq
        ):
            return None
        names = (log, thread, actor, key)
        verifier = self._names.get(names)
        if verifier is None:
            verifier = self._check_names(log, thread, actor, key)
            if verifier is None:
                return None
        check_time(time)
        prev_root = _b64(prev["root"], HASH_SIZE)
        if prev_root is None:
            return None
        lifecycle = None
        if "lifecycle" in env:
            lifecycle = self._lifecycle_head(env["lifecycle"])
        verifier.verify(ENTRY_SIGNATURE_PREFIX + leaf[_LEAF_HEAD:-_LEAF_TAIL], signature)
        if body_rules_hold(text, len(leaf), body):
            validate_schema(kind, body)
        else:
            validate_body(kind, body)
        return signed_entry(
            log,
            thread,
            seq,
            time,
            kind,
            actor,
            body,
            prev_root,
            key,
            signature,
            leaf,
            leaf_hash(leaf) if digest is None else digest,
            lifecycle,
        )

    def _check_names(self, log: str, thread: str, actor: str, key: str) -> Verifier | None:
        """The checks of open_entry on these strings (thread id, actor, key id's form, the
        pinned key and the origin it implies), remembered when they pass."""
        if key not in self._by_id:
            return None  # open_entry: UnknownEntryKeyError, or a key id of the wrong form
        check_thread_id(thread)
        check_actor(actor)
        verifier = find_key(log, thread, key, -1, self._keys)
        if len(self._names) >= _MAX_REMEMBERED:
            self._names.clear()
        self._names[(log, thread, actor, key)] = verifier
        return verifier

    def _lifecycle_head(self, value: object) -> LifecycleHead:
        """``LifecycleHead.from_json(value)``, remembered per ``(count, head)``; raises its
        error (a RegistreError) for a field that is not a lifecycle head."""
        if type(value) is dict and value.keys() == _LIFECYCLE:
            count, head = value["count"], value["head"]
            if type(count) is int and type(head) is str:
                known = self._lifecycle.get((count, head))
                if known is not None:
                    return known
                parsed = LifecycleHead.from_json(value)
                if len(self._lifecycle) >= _MAX_REMEMBERED:
                    self._lifecycle.clear()
                self._lifecycle[(count, head)] = parsed
                return parsed
        return LifecycleHead.from_json(value)


def open_leaf(leaf: bytes, keys: Sequence[Verifier]) -> Entry:
    """Exactly :func:`registre.attest.entries.entry.open_entry` (same result, same errors), faster.

    See the module docstring for why the fast path accepts only what open_entry accepts.
    """
    return LeafOpener(keys).open(leaf)


def load_leaf(leaf: bytes) -> Any:
    """``json.loads(leaf)``: the same value, the same errors. For the leaves step 3 verified
    (canonical JSON: UTF-8, nothing around the value) the C scanner is run on the text
    directly, without json.loads's encoding detection and whitespace steps; anything else
    (and any failure) goes through json.loads itself."""
    try:
        text = leaf.decode("utf-8")
        if text[:1] == "{":
            value, end = _LOAD(text, 0)
            if end == len(text):
                return value
    except (ValueError, RecursionError, StopIteration):
        pass
    return json.loads(leaf)
