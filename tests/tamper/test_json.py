"""JSON ambiguity (THREATS row 10): bytes two readers could read differently, in an entry and
in the manifest. The verifier reads bytes as received with the strict reader; each trick is
refused with its own error, the member digests recomputed so only the JSON check can catch
it."""

from __future__ import annotations

import functools

import pytest

from registre.attest.bundles import MANIFEST_MEMBER, deterministic_zip
from registre.attest.canonical_json import (
    ByteOrderMarkError,
    DuplicateKeyError,
    IntegerRangeError,
    InvalidUTF8Error,
    JSONFormatError,
    LoneSurrogateError,
    NestingTooDeepError,
    NonCanonicalError,
    NonFiniteNumberError,
    NumberOverflowError,
)
from tests.bundles import build_thread, members
from tests.tamper.helpers import entry_lines, fails, passes, with_entry_lines

LINE = 11  # a turn: {"role": "user", "text": "turn 11"}


@functools.cache
def genuine() -> bytes:
    return build_thread(12).full_bundle()


def edit_entry(old: bytes, new: bytes) -> bytes:
    lines = entry_lines(genuine())
    assert old in lines[LINE]
    lines[LINE] = lines[LINE].replace(old, new, 1)
    return with_entry_lines(genuine(), lines)


ENTRY_TRICKS: list[tuple[str, bytes, bytes, type[JSONFormatError]]] = [
    ("duplicate_key", b'{"entry":{', b'{"entry":{"v":1,', DuplicateKeyError),
    ("nan", b'"seq":11', b'"seq":NaN', NonFiniteNumberError),
    ("huge_integer", b'"seq":11', b'"seq":100000000000000000011', IntegerRangeError),
    ("overflowing_number", b'"seq":11', b'"seq":1e400', NumberOverflowError),
    ("invalid_utf8", b"turn 11", b"turn \xff11", InvalidUTF8Error),
    ("lone_surrogate", b"turn 11", b"turn \\ud80011", LoneSurrogateError),
    ("reserialised", b'"seq":11', b'"seq": 11', NonCanonicalError),
    ("escaped_letter", b"turn 11", b"\\u0074urn 11", NonCanonicalError),
]


@pytest.mark.parametrize(
    ("old", "new", "error"),
    [(old, new, error) for _, old, new, error in ENTRY_TRICKS],
    ids=[name for name, *_ in ENTRY_TRICKS],
)
def test_ambiguous_json_in_entry_fail(old: bytes, new: bytes, error: type[JSONFormatError]) -> None:
    """An entry rewritten with duplicate keys, NaN, huge numbers, bad UTF-8 or another spelling."""
    passes(genuine())
    fails(edit_entry(old, new), error, step=3, seq=LINE)


def _with_manifest(data: bytes) -> bytes:
    contents = members(genuine())
    contents[MANIFEST_MEMBER] = data
    return deterministic_zip(contents)


MANIFEST_TRICKS: list[tuple[str, bytes, bytes, type[JSONFormatError]]] = [
    (
        "duplicate_key",
        b'{"checkpoint_sizes"',
        b'{"tree_size":12,"checkpoint_sizes"',
        DuplicateKeyError,
    ),
    ("nan", b'"tree_size":12', b'"tree_size":NaN', NonFiniteNumberError),
    ("huge_integer", b'"tree_size":12', b'"tree_size":18446744073709551628', IntegerRangeError),
    ("invalid_utf8", b'"origin":"registre', b'"origin":"\xc0\xafregistre', InvalidUTF8Error),
    ("lone_surrogate", b'"origin":"registre', b'"origin":"\\udc00registre', LoneSurrogateError),
    (
        "byte_order_mark",
        b'{"checkpoint_sizes"',
        b'\xef\xbb\xbf{"checkpoint_sizes"',
        ByteOrderMarkError,
    ),
    (
        "deep_nesting",
        b'"informational":{',
        b'"informational":{"x":' + b"[" * 100 + b"]" * 100 + b",",
        NestingTooDeepError,
    ),
]


@pytest.mark.parametrize(
    ("old", "new", "error"),
    [(old, new, error) for _, old, new, error in MANIFEST_TRICKS],
    ids=[name for name, *_ in MANIFEST_TRICKS],
)
def test_ambiguous_json_in_manifest_fail(
    old: bytes, new: bytes, error: type[JSONFormatError]
) -> None:
    """A manifest with duplicate keys, NaN, huge numbers, bad UTF-8, a BOM or deep nesting."""
    passes(_with_manifest(members(genuine())[MANIFEST_MEMBER]))
    fails(_with_manifest(members(genuine())[MANIFEST_MEMBER].replace(old, new, 1)), error, step=1)
