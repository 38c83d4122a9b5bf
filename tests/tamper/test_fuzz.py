"""Hypothesis mutates valid bundles -- byte flips in the zip and in its members (re-zipped with
correct manifests), truncations, member swaps, JSON edits of entries and of the manifest,
hostile values in the zip's header fields, splices of the zip's bytes, zip64 records -- and
the verifier always ends in a clean verification or a RegistreError: never another
exception, never a hang, never "verified" for a bundle whose entry bytes changed, and never
"verified" for a zip whose local entries (what a streaming unzip extracts) are not exactly
the members its directory lists. Bounded under the default and ci profiles; run
``HYPOTHESIS_PROFILE=deep pytest tests/tamper/test_fuzz.py`` to hunt longer."""

from __future__ import annotations

import functools
import json
import signal
import struct
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

from hypothesis import event, given, settings
from hypothesis import strategies as st

from registre.attest.bundles import ENTRIES_MEMBER, MANIFEST_MEMBER, deterministic_zip, read_bundle
from registre.attest.canonical_json import canonical_bytes
from registre.attest.verify import verify_bundle
from registre.errors import RegistreError
from tests.bundles import build_thread, members, policy, rezip
from tests.tamper.zipcraft import EndRecord, RawMember, craft_zip

SECONDS_PER_EXAMPLE = 20


@functools.cache
def originals() -> dict[str, bytes]:
    thread = build_thread(14)
    return {
        "full": thread.full_bundle(checkpoint_sizes=[9]),
        "partial": thread.partial_bundle([1, 2, 3, 5, 12], checkpoint_sizes=[7]),
    }


@contextmanager
def deadline(seconds: int) -> Iterator[None]:
    """Turn a hang into a failure of this example. The test's own limit (pytest-timeout, on
    the same real-time timer) is put back afterwards, less the time spent; when it comes
    first it is left to fire."""

    def expired(signum: int, frame: Any) -> None:
        raise AssertionError(f"verification did not finish within {seconds} s")

    outer, _interval = signal.getitimer(signal.ITIMER_REAL)
    if outer and outer <= seconds:
        yield
        return
    start = time.monotonic()
    previous = signal.signal(signal.SIGALRM, expired)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)
        if outer:
            signal.setitimer(signal.ITIMER_REAL, max(outer - (time.monotonic() - start), 0.001))


def outcome(bundle: bytes, original: bytes) -> str:
    """Verify; return "verified" or "refused". Anything else fails the test: another
    exception, a hang, or a verification of changed entry bytes."""
    with deadline(SECONDS_PER_EXAMPLE):
        try:
            verify_bundle(bundle, policy())
        except RegistreError:
            return "refused"
    assert read_bundle(bundle).leaves == read_bundle(original).leaves, "changed entries verified"
    assert streamed_names(bundle) == sorted(members(bundle)), "hidden local entries verified"
    return "verified"


def streamed_names(zip_bytes: bytes) -> list[str]:
    """The names a streaming unzip finds walking local headers from the front (no data
    descriptors: registre's writer uses none)."""
    names = []
    position = 0
    while zip_bytes[position : position + 4] == b"PK\x03\x04":
        fields = struct.unpack_from("<4s2B4HL2L2H", zip_bytes, position)
        csize, name_length, extra_length = fields[8], fields[10], fields[11]
        start = position + 30
        names.append(zip_bytes[start : start + name_length].decode("ascii", "replace"))
        position = start + name_length + extra_length + csize
    return sorted(names)


kinds = st.sampled_from(["full", "partial"])


@given(
    kind=kinds,
    flips=st.lists(st.tuples(st.integers(0), st.integers(1, 255)), min_size=1, max_size=8),
)
def test_zip_byte_flips_never_verify_changed_entries(
    kind: str, flips: list[tuple[int, int]]
) -> None:
    """Bytes flipped anywhere in the zip file."""
    original = originals()[kind]
    data = bytearray(original)
    for position, mask in flips:
        data[position % len(data)] ^= mask
    event(outcome(bytes(data), original))


@given(kind=kinds, keep=st.floats(0, 1, exclude_max=True))
def test_truncated_zip_is_refused(kind: str, keep: float) -> None:
    """The zip cut short anywhere."""
    original = originals()[kind]
    assert outcome(original[: int(len(original) * keep)], original) == "refused"


def member_names(kind: str) -> list[str]:
    return sorted(members(originals()[kind]))


@given(data=st.data(), kind=kinds)
def test_member_byte_flips_never_verify_changed_entries(data: st.DataObject, kind: str) -> None:
    """Bytes of one member flipped, inserted or cut, the manifest recomputed to match."""
    original = originals()[kind]
    name = data.draw(st.sampled_from(member_names(kind)))
    content = bytearray(members(original)[name])
    edit = data.draw(st.sampled_from(["flip", "insert", "cut"]))
    position = data.draw(st.integers(0, max(0, len(content) - 1)))
    if edit == "flip":
        content[position] ^= data.draw(st.integers(1, 255))
    elif edit == "insert":
        content[position:position] = data.draw(st.binary(min_size=1, max_size=8))
    else:
        del content[position : position + data.draw(st.integers(1, 64))]
    fix = name != MANIFEST_MEMBER
    tampered = (
        rezip(original, {name: bytes(content)}, fix_manifest=fix)
        if fix
        else _raw(original, name, bytes(content))
    )
    result = outcome(tampered, original)
    event(result)
    if name == ENTRIES_MEMBER and bytes(content) != members(original)[name]:
        assert result == "refused"


def _raw(original: bytes, name: str, content: bytes) -> bytes:
    contents = members(original)
    contents[name] = content
    return deterministic_zip(contents)


@given(data=st.data(), kind=kinds)
def test_member_swaps_never_verify_changed_entries(data: st.DataObject, kind: str) -> None:
    """Two members' contents exchanged, the manifest recomputed to match."""
    original = originals()[kind]
    names = member_names(kind)
    first = data.draw(st.sampled_from(names))
    second = data.draw(st.sampled_from([n for n in names if n != first]))
    contents = members(original)
    swapped = {first: contents[second], second: contents[first]}
    if MANIFEST_MEMBER in swapped:
        tampered = deterministic_zip({**contents, **swapped})
    else:
        tampered = rezip(original, swapped)
    result = outcome(tampered, original)
    event(result)
    if ENTRIES_MEMBER in swapped:
        assert result == "refused"


def json_edit(value: Any, draw: Callable[[Any], Any]) -> Any:
    """A copy of ``value`` with one scalar somewhere replaced by another JSON scalar."""
    if isinstance(value, dict) and value:
        key = draw(st.sampled_from(sorted(value)))
        return {**value, key: json_edit(value[key], draw)}
    if isinstance(value, list) and value:
        index = draw(st.integers(0, len(value) - 1))
        return [*value[:index], json_edit(value[index], draw), *value[index + 1 :]]
    return draw(
        st.one_of(
            st.none(),
            st.booleans(),
            st.integers(-(2**53) + 1, 2**53 - 1),
            st.text(st.characters(codec="utf-8"), max_size=12),  # no lone surrogate
        ).filter(lambda new: new != value or type(new) is not type(value))
    )


@settings(deadline=None)
@given(data=st.data(), kind=kinds)
def test_entry_json_edits_are_refused(data: st.DataObject, kind: str) -> None:
    """One value inside one entry changed and the entry re-serialised canonically."""
    original = originals()[kind]
    lines = members(original)[ENTRIES_MEMBER][:-1].split(b"\n")
    index = data.draw(st.integers(0, len(lines) - 1))
    genuine = lines[index]
    # every value json_edit draws is representable, and differs from the one it replaces
    lines[index] = canonical_bytes(json_edit(json.loads(genuine), data.draw))
    assert lines[index] != genuine
    tampered = rezip(original, {ENTRIES_MEMBER: b"".join(line + b"\n" for line in lines)})
    assert outcome(tampered, original) == "refused"


INTERESTING = [
    0,
    1,
    0x7F,
    0xFF,
    0xFFFF,
    0x10000,
    0xFFFFFFFF,
    1 << 31,
    1 << 32,
    1 << 63,
    (1 << 64) - 1,
]
SIGNATURES = [b"PK\x03\x04", b"PK\x01\x02", b"PK\x05\x06"]


@given(data=st.data(), kind=kinds)
def test_zip_header_fields_never_crash(data: st.DataObject, kind: str) -> None:
    """A hostile value (0, 0xFFFF, 0xFFFFFFFF, 2**63, 2**64 - 1, ...) written over a field of
    a local header, a directory record or the end record."""
    original = originals()[kind]
    signature = data.draw(st.sampled_from(SIGNATURES))
    starts = [i for i in range(len(original) - 3) if original[i : i + 4] == signature]
    start = data.draw(st.sampled_from(starts))
    width = data.draw(st.sampled_from([2, 4, 8]))
    offset = start + 4 + data.draw(st.integers(0, 42))
    value = data.draw(st.sampled_from(INTERESTING) | st.integers(0, (1 << 64) - 1))
    field = (value % (1 << (8 * width))).to_bytes(width, "little")
    tampered = bytearray(original)
    tampered[offset : offset + width] = field
    event(outcome(bytes(tampered[: len(original)]), original))


@given(data=st.data(), kind=kinds)
def test_zip_splices_never_crash(data: st.DataObject, kind: str) -> None:
    """A slice of the zip inserted elsewhere (a hidden copy), deleted, or junk inserted."""
    original = originals()[kind]
    start = data.draw(st.integers(0, len(original)))
    stop = data.draw(st.integers(start, min(len(original), start + 2000)))
    where = data.draw(st.integers(0, len(original)))
    edit = data.draw(st.sampled_from(["copy", "delete", "junk"]))
    if edit == "copy":
        tampered = original[:where] + original[start:stop] + original[where:]
    elif edit == "delete":
        tampered = original[:start] + original[stop:]
    else:
        tampered = (
            original[:where] + data.draw(st.binary(min_size=1, max_size=64)) + original[where:]
        )
    result = outcome(tampered, original)
    event(result)
    if tampered != original and edit != "delete":
        assert result == "refused"


@given(
    kind=kinds,
    count=st.none() | st.sampled_from(INTERESTING[:7]) | st.integers(0, 0xFFFF),
    zip64_count=st.none() | st.sampled_from(INTERESTING) | st.integers(0, 1 << 40),
    zip64_offset=st.none() | st.sampled_from(INTERESTING) | st.integers(0, 1 << 20),
    hidden=st.booleans(),
)
def test_zip64_end_records_never_crash(
    kind: str, count: int | None, zip64_count: int | None, zip64_offset: int | None, hidden: bool
) -> None:
    """The genuine members re-crafted with zip64 end records of arbitrary counts and
    locator offsets, and possibly a hidden (unlisted) copy of the entries."""
    original = originals()[kind]
    parts = [RawMember(name, data) for name, data in members(original).items()]
    if hidden:
        parts.insert(1, RawMember(ENTRIES_MEMBER, b"hidden\n", listed=False))
    end = EndRecord(
        count=None if count is None else count % 0x10000,
        zip64=True,
        zip64_count=None if zip64_count is None else zip64_count % (1 << 64),
        zip64_offset=None if zip64_offset is None else zip64_offset % (1 << 64),
    )
    result = outcome(craft_zip(parts, end), original)
    event(result)
    if hidden:
        assert result == "refused"


@settings(deadline=None)
@given(data=st.data(), kind=kinds)
def test_manifest_json_edits_never_crash(data: st.DataObject, kind: str) -> None:
    """One value inside the manifest changed (sizes, counts, digests, names), re-zipped."""
    original = originals()[kind]
    contents = members(original)
    contents[MANIFEST_MEMBER] = canonical_bytes(
        json_edit(json.loads(contents[MANIFEST_MEMBER]), data.draw)
    )
    event(outcome(deterministic_zip(contents), original))
