"""Attacks on the zip container and the manifest (THREATS rows 9 and 14): each hand-made
zip is first built honestly from a genuine bundle's members and verifies; then the one field
the attack changes makes it fail with its own error."""

from __future__ import annotations

import functools
import json
import zlib

import pytest

from registre.attest.bundles import (
    ENTRIES_MEMBER,
    MANIFEST_MEMBER,
    BundleTooLargeError,
    CompressionMethodError,
    DirectoryMemberError,
    DuplicateMemberError,
    LinkMemberError,
    ManifestMismatchError,
    MemberCorruptError,
    MemberDigestMismatchError,
    MemberSizeMismatchError,
    MemberTooLargeError,
    MissingMemberError,
    TooManyMembersError,
    UnexpectedMemberError,
    UnsafeMemberNameError,
    ZipFormatError,
    ZipLimits,
    checkpoint_member,
    deterministic_zip,
)
from registre.attest.canonical_json import canonical_bytes
from tests.bundles import build_thread, members, rezip
from tests.tamper.helpers import fails, passes
from tests.tamper.zipcraft import RawMember, craft_zip, symlink_mode


@functools.cache
def genuine() -> bytes:
    return build_thread(12).full_bundle(checkpoint_sizes=[6])


def raw_members() -> list[RawMember]:
    return [RawMember(name, data) for name, data in members(genuine()).items()]


def test_crafted_genuine_zip_passes() -> None:
    """The hand-made zip of a genuine bundle's members verifies: the crafting is sound."""
    passes(craft_zip(raw_members()))
    passes(craft_zip([RawMember(m.name, m.data, method=0) for m in raw_members()]))


@pytest.mark.parametrize(
    "name", ["../evil.note", "checkpoints/../../etc/passwd", "/etc/passwd", "C:/x", "./entries"]
)
def test_zip_path_escape_fail(name: str) -> None:
    """A member whose name climbs out of the extraction folder or is absolute."""
    passes(craft_zip(raw_members()))
    fails(craft_zip([*raw_members(), RawMember(name, b"x")]), UnsafeMemberNameError, step=1)


def test_backslash_member_name_fail() -> None:
    """A Windows-style path that some extractors treat as a folder separator."""
    fails(
        craft_zip([*raw_members(), RawMember("checkpoints\\x.note", b"x")]), UnsafeMemberNameError
    )


def test_nul_in_member_name_fail() -> None:
    """A NUL byte, which zipfile would silently cut the name at."""
    bad = RawMember(b"entries.jsonl\x00.txt", b"x")
    fails(craft_zip([*raw_members(), bad]), UnsafeMemberNameError)


def test_symlink_member_fail() -> None:
    """A member whose Unix mode marks it as a symbolic link (to /etc/passwd)."""
    passes(craft_zip(raw_members()))
    link = RawMember("checkpoints/link", b"/etc/passwd", external_attr=symlink_mode)
    fails(craft_zip([*raw_members(), link]), LinkMemberError, step=1)


def test_directory_member_fail() -> None:
    """A directory entry, the start of directory tricks."""
    fails(craft_zip([RawMember("checkpoints/", b""), *raw_members()]), DirectoryMemberError)


def test_duplicate_member_fail() -> None:
    """The same name twice: readers disagree on which copy counts."""
    forged = RawMember(ENTRIES_MEMBER, b"forged\n")
    fails(craft_zip([*raw_members(), forged]), DuplicateMemberError, step=1)


def test_member_far_larger_than_declared_fail() -> None:
    """A member that inflates to 64 MiB while declaring its honest small size."""
    parts = raw_members()
    passes(craft_zip(parts))
    bomb = [
        RawMember(
            m.name,
            m.data,
            payload=zlib.compress(m.data + bytes(64 << 20), 9)[2:-4]
            if m.name == ENTRIES_MEMBER
            else None,
        )
        for m in parts
    ]
    fails(craft_zip(bomb), MemberSizeMismatchError, step=1)


def test_member_smaller_than_declared_fail() -> None:
    """A member that ends before the size it declares (the manifest declaring it too)."""
    contents = members(genuine())
    manifest = json.loads(contents[MANIFEST_MEMBER])
    manifest["members"][ENTRIES_MEMBER]["bytes"] += 5
    contents[MANIFEST_MEMBER] = canonical_bytes(manifest)
    parts = [
        RawMember(name, data, declared_size=len(data) + 5 if name == ENTRIES_MEMBER else None)
        for name, data in contents.items()
    ]
    fails(craft_zip(parts), MemberSizeMismatchError)


def test_member_size_disagreeing_with_manifest_fail() -> None:
    """A member whose zip size is not the manifest's: refused before it is inflated."""
    parts = [
        RawMember(
            m.name, m.data, declared_size=len(m.data) + 5 if m.name == ENTRIES_MEMBER else None
        )
        for m in raw_members()
    ]
    error = fails(craft_zip(parts), MemberDigestMismatchError)
    assert "before inflating" in str(error)


def test_stored_member_sizes_disagree_fail() -> None:
    """A stored member whose compressed and declared sizes differ."""
    parts = [
        RawMember(m.name, m.data, method=0, declared_size=3 if m.name == ENTRIES_MEMBER else None)
        for m in raw_members()
    ]
    fails(craft_zip(parts), MemberSizeMismatchError)


def test_zip_bomb_over_member_limit_fail() -> None:
    """A member declaring more than the per-member limit is refused before it is read."""
    limits = ZipLimits(max_member_bytes=1000)
    passes(genuine(), limits=ZipLimits(max_member_bytes=1 << 20))
    fails(genuine(), MemberTooLargeError, limits=limits)


def test_bundle_over_total_limit_fail() -> None:
    """Members adding up to more than the bundle limit."""
    fails(genuine(), BundleTooLargeError, limits=ZipLimits(max_total_bytes=2000))


def test_too_many_members_fail() -> None:
    """A zip declaring more members than the limit, refused before its directory is parsed."""
    fails(genuine(), TooManyMembersError, limits=ZipLimits(max_members=3))
    fails(genuine(), TooManyMembersError, limits=ZipLimits(max_directory_bytes=100))


def test_unsupported_compression_fail() -> None:
    """A member compressed with bzip2 (method 12), outside stored and deflate."""
    parts = [
        RawMember(m.name, m.data, method=12 if m.name == ENTRIES_MEMBER else 8)
        for m in raw_members()
    ]
    fails(craft_zip(parts), CompressionMethodError)


def test_encrypted_member_fail() -> None:
    """A member flagged as encrypted."""
    parts = [
        RawMember(m.name, m.data, flags=1 if m.name == ENTRIES_MEMBER else 0) for m in raw_members()
    ]
    fails(craft_zip(parts), CompressionMethodError)


def test_member_crc_mismatch_fail() -> None:
    """A member whose CRC-32 is wrong (damaged in transit)."""
    parts = [
        RawMember(m.name, m.data, crc=1 if m.name == ENTRIES_MEMBER else None)
        for m in raw_members()
    ]
    fails(craft_zip(parts), MemberCorruptError)


def test_not_a_zip_fail() -> None:
    """Bytes that are not a zip at all, or a zip cut short."""
    fails(b"this is not a zip", ZipFormatError, step=1)
    fails(genuine()[: len(genuine()) // 2], ZipFormatError)


def test_unexpected_member_fail() -> None:
    """A member the format does not define (a place to smuggle content)."""
    tampered = rezip(genuine(), {"README.txt": b"trust me"})
    fails(tampered, UnexpectedMemberError, step=1)


def test_manifest_hash_mismatch_fail() -> None:
    """An entries member changed without updating the manifest's digest."""
    data = members(genuine())[ENTRIES_MEMBER]
    tampered = rezip(
        genuine(), {ENTRIES_MEMBER: data.replace(b"turn 11", b"turn 12")}, fix_manifest=False
    )
    fails(tampered, MemberDigestMismatchError, step=1)


def test_unlisted_member_fail() -> None:
    """A checkpoint added to the zip but not to the manifest."""
    extra = members(build_thread(12).full_bundle())[checkpoint_member(12)]
    tampered = rezip(genuine(), {checkpoint_member(11): extra}, fix_manifest=False)
    fails(tampered, MemberDigestMismatchError)


def test_member_missing_fail() -> None:
    """A checkpoint the manifest lists, removed from the zip."""
    tampered = rezip(genuine(), {checkpoint_member(6): None}, fix_manifest=False)
    fails(tampered, MissingMemberError, step=1)


def test_manifest_missing_fail() -> None:
    """No manifest at all."""
    fails(rezip_without_manifest(), MissingMemberError)


def rezip_without_manifest() -> bytes:
    contents = members(genuine())
    del contents[MANIFEST_MEMBER]
    return deterministic_zip(contents)


def test_manifest_entry_count_lies_fail() -> None:
    """A manifest counting more entries than entries.jsonl holds."""
    tampered = rezip(genuine(), {}, manifest_changes={"entry_count": 13})
    fails(tampered, ManifestMismatchError, step=1)
