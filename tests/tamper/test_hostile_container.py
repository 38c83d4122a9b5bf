"""Attacks of issue 13 on the container and the parse paths (items 4, 7-10; THREATS rows 14
and 29): bytes the central directory does not account for, zip64 fields pointing anywhere
or disagreeing, members inflating far beyond the file, leaves and JSON larger than anything
valid. Each crafted file is first built honestly and verifies; then the attack is refused at
step 1 with its own error, and the CLI says so in one line with exit code 2."""

from __future__ import annotations

import functools
import json
import struct
from pathlib import Path

import pytest

from registre.attest.__main__ import main
from registre.attest.bundles import (
    ENTRIES_MEMBER,
    MANIFEST_MEMBER,
    MAX_MANIFEST_VALUES,
    CompressionRatioError,
    LeafCountError,
    LeafTooLargeError,
    MemberSizeMismatchError,
    OverlappingEntriesError,
    TooManyMembersError,
    UnaccountedBytesError,
    Zip64MismatchError,
    ZipFormatError,
    ZipLimits,
    ZipOffsetError,
    deterministic_zip,
    read_zip,
)
from registre.attest.canonical_json import TooManyElementsError, canonical_bytes
from registre.attest.entries import (
    MAX_LEAF_BYTES,
    SIGNATURE_FIRST_BYTES,
    EntryFormatError,
    EntrySignatureError,
)
from tests.bundles import LOG, build_thread, members, rezip
from tests.tamper.helpers import fails, passes
from tests.tamper.hostile import (
    deflated_zeros,
    genuine,
    hidden_entry,
    huge_leaf,
    inflating_members,
    raw_members,
    zip64_disagreeing,
    zip64_locator_far,
    zip64_record_offset_max,
)
from tests.tamper.zipcraft import EndRecord, RawMember, craft_zip

NO_RATIO = ZipLimits(max_ratio=1 << 20)


def test_crafted_zips_of_genuine_members_pass() -> None:
    """The crafting is sound: every layout the attacks start from verifies."""
    passes(craft_zip(raw_members(genuine())))
    passes(craft_zip(raw_members(genuine()), EndRecord(zip64=True)))  # consistent zip64


# --- item 4: every byte accounted for ---------------------------------------------------


def test_hidden_zip_entry_fail() -> None:
    """Another thread's entries and manifest as local entries between the members, listed
    nowhere: a streaming unzip would extract them."""
    error = fails(hidden_entry(), UnaccountedBytesError, step=1)
    assert "belong to no member" in str(error) and error.hint


@pytest.mark.parametrize(
    ("where", "junk"), [("prefix", b"PK\x03\x04 junk"), ("suffix", b"trailing"), ("comment", b"")]
)
def test_bytes_outside_the_zip_parts_fail(where: str, junk: bytes) -> None:
    """Data before the first member, after the end record, or a zip comment."""
    data = genuine()
    if where == "prefix":
        tampered = junk + data
    elif where == "suffix":
        tampered = data + junk
    else:  # a 7-byte comment, its length set in the end record
        tampered = data[:-2] + struct.pack("<H", 7) + b"comment"
    fails(tampered, UnaccountedBytesError, step=1)


def test_gap_between_members_fail() -> None:
    """A member whose data is followed by bytes that no record claims."""
    data = bytearray(craft_zip(raw_members(genuine())))
    # the same zip with 16 bytes inserted before the directory, the end record's offset fixed
    end = data.rindex(b"PK\x05\x06")
    start = int.from_bytes(data[end + 16 : end + 20], "little")
    data[end + 16 : end + 20] = (start + 16).to_bytes(4, "little")
    tampered = bytes(data[:start]) + bytes(16) + bytes(data[start:])
    fails(tampered, UnaccountedBytesError, step=1)


def test_entries_sharing_bytes_fail() -> None:
    """Two directory records pointing at one local header (overlapping, the trick of
    non-recursive zip bombs)."""
    parts = raw_members(genuine())
    twin = RawMember("checkpoints/twin", parts[0].data, central_offset=0)
    fails(craft_zip([*parts, twin]), OverlappingEntriesError, step=1)


def test_bytes_inside_the_central_directory_after_its_last_record_fail() -> None:
    """16 bytes between the last directory record and the end record, counted in the
    directory's size: they belong to no record."""
    data = craft_zip(raw_members(genuine()))
    end = data.rindex(b"PK\x05\x06")
    size = int.from_bytes(data[end + 12 : end + 16], "little")
    record = data[end : end + 12] + (size + 16).to_bytes(4, "little") + data[end + 16 :]
    tampered = data[:end] + b"PK\x01\x02" + bytes(12) + record
    passes(data)
    error = fails(tampered, UnaccountedBytesError, step=1)
    assert "16 bytes of the central directory follow its last record" in str(error)


@pytest.mark.parametrize(("field", "value"), [("flags", 0x0800), ("method", 0)])
def test_local_header_contradicting_the_directory_fail(field: str, value: int) -> None:
    """The first member's local header (what a streaming extractor reads) gives another
    flags word (UTF-8 names) or method (stored) than its directory record."""
    data = bytearray(craft_zip(raw_members(genuine())))
    at = {"flags": 6, "method": 8}[field]
    assert data[:4] == b"PK\x03\x04" and data[at : at + 2] != value.to_bytes(2, "little")
    data[at : at + 2] = value.to_bytes(2, "little")
    error = fails(bytes(data), ZipFormatError, step=1)
    assert "contradicts the central directory" in str(error)


# --- item 7: zip64 offsets anywhere -------------------------------------------------------


def test_zip64_locator_far_offset_fail() -> None:
    """A zip64 locator pointing at offset 2**63 (a traceback, exit 1, before)."""
    error = fails(zip64_locator_far(1 << 63), ZipOffsetError, step=1)
    assert "9223372036854775808" in str(error)


def test_zip64_record_offset_max_fail() -> None:
    """A directory record whose zip64 offset is 2**64 - 1 (OverflowError from bytes before)."""
    error = fails(zip64_record_offset_max(), ZipOffsetError, step=1)
    assert str((1 << 64) - 1) in str(error)


def test_zip64_locator_far_offset_cli_fail(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """On the command line: one line, exit code 2 (unusable input), no traceback."""
    path = tmp_path / "bundle.zip"
    path.write_bytes(zip64_locator_far(1 << 63))
    with pytest.raises(SystemExit) as exit_:
        main(["verify", str(path), "--key", LOG.vkey()])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "ZipOffsetError" in err and "Traceback" not in err


# --- item 8: the member bound holds whatever the zip64 record says ------------------------


def test_zip64_count_disagreeing_with_end_record_fail() -> None:
    """The classic end record counts the genuine members, a zip64 record (which zipfile
    prefers) counts more: refused before the directory is parsed."""
    error = fails(zip64_disagreeing(5), Zip64MismatchError, step=1)
    assert "member count" in str(error)


@pytest.mark.parametrize(("name", "at"), [("directory size", 12), ("directory offset", 16)])
def test_zip64_directory_disagreeing_with_end_record_fail(name: str, at: int) -> None:
    """The member counts agree and the zip64 end record tells the truth, but the classic end
    record (read by readers that ignore zip64) gives another directory size or offset, not
    the "see zip64" sentinel: two readers would see two directories."""
    data = bytearray(craft_zip(raw_members(genuine()), EndRecord(zip64=True)))
    passes(bytes(data))
    end = data.rindex(b"PK\x05\x06")
    true = int.from_bytes(data[end + at : end + at + 4], "little")
    data[end + at : end + at + 4] = (true + 46).to_bytes(4, "little")
    error = fails(bytes(data), Zip64MismatchError, step=1)
    assert f"gives {true} as {name}, the classic end record {true + 46}" in str(error)


def test_zip64_count_over_the_limit_fail() -> None:
    """A zip64 record that agrees with the classic "see zip64" sentinel but declares two
    million members: refused by the member bound before the directory is read."""
    end = EndRecord(count=0xFFFF, zip64=True, zip64_count=2_000_000)
    error = fails(craft_zip(raw_members(genuine()), end), TooManyMembersError, step=1)
    assert "2000000 members" in str(error)


# --- item 9: members inflating far beyond the file ---------------------------------------


def test_members_inflating_far_beyond_the_file_fail() -> None:
    """Two members declaring 64 MiB of zeros each in a zip of ~130 kB, sizes and CRCs true:
    refused before a byte is inflated."""
    error = fails(inflating_members(64 << 20), CompressionRatioError, step=1)
    assert ENTRIES_MEMBER in str(error) or "checkpoints/" in str(error)


def test_member_inflating_beyond_its_declared_size_is_stopped_while_streaming() -> None:
    """Within the ratio, a member yielding more than it declares is refused mid-stream."""
    bomb = inflating_members(8 << 20)
    with pytest.raises(CompressionRatioError):
        read_zip(bomb)
    parts = raw_members(genuine())
    lying = [
        RawMember(m.name, m.data, payload=inflating_payload(), declared_size=len(m.data))
        if m.name == ENTRIES_MEMBER
        else m
        for m in parts
    ]
    with pytest.raises(MemberSizeMismatchError, match="more than"):
        read_zip(craft_zip(lying), NO_RATIO)


@functools.cache
def inflating_payload() -> bytes:
    return deflated_zeros(32 << 20)


# --- item 10: leaves and JSON larger than anything valid ---------------------------------


def test_huge_leaf_fail() -> None:
    """One unsigned leaf holding a list of 5 million zeros in a 17 kB bundle."""
    fails(huge_leaf(5_000_000), CompressionRatioError, step=1)


def test_leaf_larger_than_any_entry_fail() -> None:
    """With the ratio out of the way, the leaf is refused by its length, before parsing."""
    elements = MAX_LEAF_BYTES // 2 + 1
    error = fails(huge_leaf(elements), LeafTooLargeError, step=1, limits=NO_RATIO)
    assert "before parsing" in str(error)


def test_manifest_with_a_million_values_fail() -> None:
    """An informational list of 10**6 values in the manifest, refused once the count is hit."""
    manifest = json.loads(members(genuine())[MANIFEST_MEMBER])
    manifest["informational"] = {"x": [0] * 1_000_000}
    contents = members(genuine())
    contents[MANIFEST_MEMBER] = canonical_bytes(manifest)
    error = fails(deterministic_zip(contents), TooManyElementsError, step=1, limits=NO_RATIO)
    assert error.position is not None and error.position < 8 * MAX_MANIFEST_VALUES


def test_rezip_helper_keeps_the_genuine_bundle_valid() -> None:
    """The builders' starting point: a re-zip without changes still verifies."""
    passes(rezip(genuine(), {}))


def test_large_unsigned_leaf_fail() -> None:
    """A leaf of 1 MB (under the leaf bound) holding 500,000 values and no signature: its
    signature is checked before it is parsed, so refusing it costs a hash, not a parse."""
    error = fails(huge_leaf(500_000), EntrySignatureError, step=3, seq=0, limits=NO_RATIO)
    assert "before parsing" in str(error)


def test_large_leaf_shaped_otherwise_fail() -> None:
    """A large leaf that is not ``{"entry":…,"sig":"…"}`` is refused by its shape unparsed."""
    leaf = b'{"x":[' + b"0," * 100_000 + b"0]}"
    tampered = rezip(genuine(), {ENTRIES_MEMBER: leaf + b"\n"})
    error = fails(tampered, EntryFormatError, step=3, seq=0, limits=NO_RATIO)
    assert "before parsing" in str(error)


def test_large_genuine_leaf_passes() -> None:
    """A signed entry above the signature-first threshold verifies as any other."""
    thread = build_thread(10)
    thread.turn(" ".join(f"word{index}" for index in range(SIGNATURE_FIRST_BYTES // 5)))
    bundle = thread.full_bundle()
    assert max(len(line) for line in members(bundle)[ENTRIES_MEMBER].split(b"\n")) > (
        SIGNATURE_FIRST_BYTES
    )
    passes(bundle)


def test_many_tiny_lines_fail() -> None:
    """A million one-byte lines (2 MB inflating from 2 kB): refused once the lines held
    exceed what a zip of that size may cost, whatever entry_count the manifest claims."""
    tampered = rezip(genuine(), {ENTRIES_MEMBER: b"0\n" * 1_000_000})
    fails(tampered, LeafCountError, step=1, limits=ZipLimits(max_ratio=2000))


def test_manifest_informational_padding_fail() -> None:
    """30,000 values in ``informational`` of a 5-member bundle (about 4 kB, within the ratio):
    a manifest holds 64 values and 4 per member at most, so parsing stops there."""
    manifest = json.loads(members(genuine())[MANIFEST_MEMBER])
    manifest["informational"] = {"x": [0] * 30_000}
    contents = members(genuine())
    contents[MANIFEST_MEMBER] = canonical_bytes(manifest)
    bundle = deterministic_zip(contents)
    assert len(bundle) < 5000
    fails(bundle, TooManyElementsError, step=1)


def test_max_ratio_option_lets_a_trusted_repetitive_bundle_verify(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A genuine bundle of very repetitive turns (ratio ~40) is refused by default, with the
    hint naming --max-ratio, and verifies with --max-ratio 100."""
    thread = build_thread(10)
    thread.turn("same line again. " * 20_000)
    path = tmp_path / "bundle.zip"
    path.write_bytes(thread.full_bundle())
    with pytest.raises(SystemExit) as exit_:
        main(["verify", str(path), "--key", LOG.vkey()])
    assert exit_.value.code == 2
    err = capsys.readouterr().err
    assert "CompressionRatioError" in err and "--max-ratio" in err
    main(["verify", str(path), "--key", LOG.vkey(), "--max-ratio", "100"])  # no SystemExit
    assert "passed" in capsys.readouterr().out
