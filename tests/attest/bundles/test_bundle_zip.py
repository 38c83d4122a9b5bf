"""attest.bundle_zip: the deterministic writer and the bounded reader. The attacks on the
reader are in tests/tamper/test_container.py; here, what an honest zip guarantees."""

from __future__ import annotations

import io
import zipfile
import zlib
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registre.attest.bundles import (
    BundleFileError,
    MemberSizeMismatchError,
    OverlappingEntriesError,
    UnsafeMemberNameError,
    ZipFormatError,
    deterministic_zip,
    read_zip,
)
from tests.tamper.zipcraft import RawMember, craft_zip

segment = st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_-", min_size=1, max_size=8)
names = st.lists(segment, min_size=1, max_size=3).map("/".join)
contents = st.dictionaries(names, st.binary(max_size=2000), min_size=1, max_size=6).filter(
    lambda found: not any(a != b and b.startswith(a + "/") for a in found for b in found)
)


@given(contents)
def test_read_zip_returns_what_deterministic_zip_wrote(members: dict[str, bytes]) -> None:
    assert read_zip(deterministic_zip(members)) == dict(sorted(members.items()))


@given(contents)
def test_deterministic_zip_depends_only_on_the_members(members: dict[str, bytes]) -> None:
    reordered = dict(reversed(list(members.items())))
    assert deterministic_zip(members) == deterministic_zip(reordered)


def test_members_are_sorted_with_fixed_times_and_modes() -> None:
    data = deterministic_zip({"b": b"2", "a/c": b"1"})
    infos = zipfile.ZipFile(io.BytesIO(data)).infolist()
    assert [info.filename for info in infos] == ["a/c", "b"]
    assert {info.date_time for info in infos} == {(1980, 1, 1, 0, 0, 0)}
    assert {info.external_attr >> 16 for info in infos} == {0o100644}
    assert {info.compress_type for info in infos} == {zipfile.ZIP_DEFLATED}


@pytest.mark.parametrize("name", ["../x", "/x", "a\\b", "a//b", "a/./b", "", "é"])
def test_writer_refuses_names_the_reader_would_refuse(name: str) -> None:
    with pytest.raises(UnsafeMemberNameError):
        deterministic_zip({name: b"x"})


def test_reads_from_a_path(tmp_path: Path) -> None:
    path = tmp_path / "b.zip"
    path.write_bytes(deterministic_zip({"a": b"1"}))
    assert read_zip(path) == {"a": b"1"}
    with pytest.raises(BundleFileError, match="cannot read"):
        read_zip(tmp_path / "missing.zip")


def test_member_longer_than_declared_is_refused_where_zipfile_truncates() -> None:
    """zipfile silently returns the declared prefix when its CRC matches; the reader refuses."""
    data = b"0123456789" + b"hidden tail" * 1000
    member = RawMember("m", data[:10], payload=_deflate(data))  # size and CRC of the prefix
    crafted = craft_zip([member])
    assert zipfile.ZipFile(io.BytesIO(crafted)).read("m") == data[:10]
    with pytest.raises(MemberSizeMismatchError, match="more than the 10 bytes"):
        read_zip(crafted)


def _deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush()


def test_directory_record_asking_for_a_newer_zip_version_fail() -> None:
    """A flipped byte that raises the "version needed to extract" of a directory record is
    unusable input (found by the bundle fuzzer: zipfile raises NotImplementedError)."""
    data = bytearray(deterministic_zip({"a.txt": b"hello"}))
    directory = data.rindex(b"PK\x01\x02")
    data[directory + 6] = 84  # version needed to extract: 8.4
    with pytest.raises(ZipFormatError, match=r"not a readable zip file: zip file version 8\.4"):
        read_zip(bytes(data))


def test_directory_record_pointing_before_the_file_fail() -> None:
    """A flipped byte in the end record's directory offset can make zipfile compute a
    negative local header offset (found by the bundle fuzzer)."""
    data = bytearray(deterministic_zip({"a.txt": b"hello", "b.txt": b"world"}))
    end = data.rindex(b"PK\x05\x06")
    offset = int.from_bytes(data[end + 16 : end + 20], "little")
    data[end + 16 : end + 20] = (offset + 1).to_bytes(4, "little")
    with pytest.raises(OverlappingEntriesError, match="runs into the end records"):
        read_zip(bytes(data))
