"""The zip container of an audit bundle: a deterministic writer and a reader that trusts nothing.

Writing (:func:`deterministic_zip`): members sorted by name, every timestamp 1980-01-01
00:00:00, Unix regular-file mode 0644, deflate at level 6, no comment, no extra fields. The
same members give the same bytes (on one zlib build).

Reading (:func:`read_zip`) checks, in this order, and raises its own
:class:`~registre.attest.errors.MalformedError` subclass at the first problem:

1. the end-of-central-directory record is found and its member count and central directory
   size are within the limits, *before* the directory is parsed (:class:`ZipFormatError`,
   :class:`TooManyMembersError`);
2. for every central directory record: a safe name -- ASCII letters, digits and ``._-/``
   only, relative, no ``..`` or ``.`` segment, no empty segment, no backslash, no NUL
   (:class:`UnsafeMemberNameError`); not a directory (:class:`DirectoryMemberError`); not a
   symbolic link, device or other special file by its external attributes
   (:class:`LinkMemberError`); not encrypted and stored or deflated
   (:class:`CompressionMethodError`); not a name seen before (:class:`DuplicateMemberError`);
   a declared size within the per-member limit (:class:`MemberTooLargeError`) and a running
   total within the bundle limit (:class:`BundleTooLargeError`);
3. every member is read from its local header, whose name and method must match the
   directory (:class:`ZipFormatError`), decompressing at most *declared size + 1* bytes: a
   member that yields more than it declared, or less, is refused while streaming
   (:class:`MemberSizeMismatchError`), so a zip bomb costs at most its declared size; the
   CRC-32 must match (:class:`MemberCorruptError`).

Members are returned by name; which names a bundle may hold is :mod:`registre.attest.bundle`'s
business.
"""

from __future__ import annotations

import io
import os
import re
import stat
import struct
import zipfile
import zlib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import BinaryIO

from registre.attest.errors import MalformedError

__all__ = [
    "DEFAULT_LIMITS",
    "BundleFileError",
    "BundleTooLargeError",
    "CompressionMethodError",
    "ContainerError",
    "DirectoryMemberError",
    "DuplicateMemberError",
    "LinkMemberError",
    "MemberCorruptError",
    "MemberSizeMismatchError",
    "MemberTooLargeError",
    "TooManyMembersError",
    "UnsafeMemberNameError",
    "ZipFormatError",
    "ZipLimits",
    "deterministic_zip",
    "read_zip",
]

_FIXED_TIME = (1980, 1, 1, 0, 0, 0)
_REGULAR_FILE_MODE = 0o100644
_UNIX = 3
_LOCAL_HEADER = struct.Struct("<4s2B4HL2L2H")  # 30 bytes
_LOCAL_SIGNATURE = b"PK\x03\x04"
_END_SIGNATURE = b"PK\x05\x06"
_ZIP64_LOCATOR_SIGNATURE = b"PK\x06\x07"
_ZIP64_END_SIGNATURE = b"PK\x06\x06"
_SAFE_NAME = re.compile(r"[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*")
_READ_CHUNK = 1 << 20
_DOS_DIRECTORY = 0x10


@dataclass(frozen=True)
class ZipLimits:
    """Bounds applied to a zip before and while it is read (bytes are uncompressed sizes)."""

    max_members: int = 10_000
    max_member_bytes: int = 2 << 30
    max_total_bytes: int = 4 << 30
    max_directory_bytes: int = 16 << 20


DEFAULT_LIMITS = ZipLimits()


class ContainerError(MalformedError):
    """The bundle file is not a zip registre can read safely."""


class BundleFileError(ContainerError):
    """The bundle file cannot be opened or read."""


class ZipFormatError(ContainerError):
    """Not a zip file, or a zip whose records contradict each other."""


class TooManyMembersError(ContainerError):
    """More members (or a larger central directory) than the limits allow."""


class UnsafeMemberNameError(ContainerError):
    """A member name that is absolute, climbs out (``..``), uses backslashes or odd bytes."""


class DirectoryMemberError(ContainerError):
    """A directory entry: bundles hold files only."""


class LinkMemberError(ContainerError):
    """A symbolic link, hard link, device or other special file, by its attributes."""


class CompressionMethodError(ContainerError):
    """A member that is encrypted or compressed with anything but stored or deflate."""


class DuplicateMemberError(ContainerError):
    """Two members with the same name."""


class MemberTooLargeError(ContainerError):
    """A member whose declared size is above the per-member limit."""


class BundleTooLargeError(ContainerError):
    """Members whose declared sizes add up to more than the bundle limit."""


class MemberSizeMismatchError(ContainerError):
    """A member whose data decompresses to more (or fewer) bytes than it declares."""


class MemberCorruptError(ContainerError):
    """A member whose compressed data is damaged or whose CRC-32 does not match."""


# --- writing ---------------------------------------------------------------------------


def deterministic_zip(members: Mapping[str, bytes]) -> bytes:
    """The zip holding ``members``: sorted, fixed timestamps and modes, deflate level 6.

    Raises :class:`UnsafeMemberNameError` for a name the reader would refuse.
    """
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", allowZip64=True) as archive:
        for name in sorted(members):
            _check_name(name)
            info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
            info.create_system = _UNIX
            info.external_attr = _REGULAR_FILE_MODE << 16
            info.compress_type = zipfile.ZIP_DEFLATED
            archive.writestr(info, members[name], compresslevel=6)
    return buffer.getvalue()


# --- reading ---------------------------------------------------------------------------


def read_zip(
    source: bytes | str | os.PathLike[str], limits: ZipLimits = DEFAULT_LIMITS
) -> dict[str, bytes]:
    """Every member of the zip ``source`` (bytes or a path), checked as the module says.

    Returns ``{name: data}`` sorted by name. Raises a :class:`ContainerError` subclass for
    the first problem (:class:`BundleFileError` if a path cannot be read).
    """
    if isinstance(source, bytes | bytearray | memoryview):
        return _read(io.BytesIO(bytes(source)), limits)
    try:
        with open(source, "rb") as handle:
            return _read(handle, limits)
    except OSError as exc:
        raise BundleFileError(
            f"cannot read bundle file {os.fspath(source)}: {exc.strerror or exc}"
        ) from None


def _read(handle: BinaryIO, limits: ZipLimits) -> dict[str, bytes]:
    # 1. the end record, bounded before the directory is parsed
    _check_end_record(handle, limits)
    try:
        archive = zipfile.ZipFile(handle)
    except (
        zipfile.BadZipFile,
        zipfile.LargeZipFile,
        NotImplementedError,  # a directory record asking for a newer zip version
        struct.error,
        ValueError,
        EOFError,
        OSError,
    ) as exc:
        raise ZipFormatError(f"not a readable zip file: {exc}") from None
    infos = archive.infolist()
    if len(infos) > limits.max_members:
        raise TooManyMembersError(
            f"the zip has {len(infos)} members; at most {limits.max_members} are read"
        )
    # 2. every directory record, before any data is read
    seen: set[str] = set()
    total = 0
    for info in infos:
        _check_record(info, seen, limits)
        total += info.file_size
        if total > limits.max_total_bytes:
            raise BundleTooLargeError(
                f"members declare more than {limits.max_total_bytes} bytes in total; "
                "the bundle is too large to verify with these limits"
            )
    # 3. every member's data, bounded by its declared size
    try:
        return {info.orig_filename: _read_member(handle, info) for info in sorted(infos, key=_name)}
    except MalformedError:
        raise
    except (ValueError, OSError, EOFError, struct.error) as exc:
        # A damaged record the checks above did not anticipate is still unusable input,
        # never a crash (the bundle fuzzer in tests/tamper/test_fuzz.py looks for these).
        raise ZipFormatError(f"not a readable zip file: {exc}") from None


def _name(info: zipfile.ZipInfo) -> str:
    return info.orig_filename


def _check_end_record(handle: BinaryIO, limits: ZipLimits) -> None:
    """Find the end-of-central-directory record and bound the member count and directory."""
    handle.seek(0, os.SEEK_END)
    length = handle.tell()
    window = min(length, 22 + 0xFFFF + 20)
    handle.seek(length - window)
    tail = handle.read(window)
    position = tail.rfind(_END_SIGNATURE)
    if position < 0 or len(tail) - position < 22:
        raise ZipFormatError("not a zip file: no end-of-central-directory record")
    (_, _, _, _, count, directory_size, _, _) = struct.unpack(
        "<4s4H2LH", tail[position : position + 22]
    )
    if count == 0xFFFF or directory_size == 0xFFFFFFFF:
        count, directory_size = _zip64_counts(handle, length - window + position)
    if count > limits.max_members:
        raise TooManyMembersError(
            f"the zip declares {count} members; at most {limits.max_members} are read"
        )
    if directory_size > limits.max_directory_bytes:
        raise TooManyMembersError(
            f"the zip's central directory is {directory_size} bytes; at most "
            f"{limits.max_directory_bytes} are read"
        )


def _zip64_counts(handle: BinaryIO, end_offset: int) -> tuple[int, int]:
    if end_offset < 20:
        raise ZipFormatError("zip64 end record announced but its locator is missing")
    handle.seek(end_offset - 20)
    locator = handle.read(20)
    signature, _, record_offset, _ = struct.unpack("<4sLQL", locator)
    if signature != _ZIP64_LOCATOR_SIGNATURE:
        raise ZipFormatError("zip64 end record announced but its locator is missing")
    handle.seek(record_offset)
    record = handle.read(56)
    if len(record) != 56 or record[:4] != _ZIP64_END_SIGNATURE:
        raise ZipFormatError("zip64 end-of-central-directory record is missing or damaged")
    count, directory_size = struct.unpack("<QQ", record[32:48])
    return int(count), int(directory_size)


def _check_name(name: str) -> None:
    if "\\" in name:
        raise UnsafeMemberNameError(f"member name {name!r} contains a backslash")
    if name.startswith("/") or re.match(r"[A-Za-z]:", name):
        raise UnsafeMemberNameError(f"member name {name!r} is an absolute path")
    if not _SAFE_NAME.fullmatch(name):
        raise UnsafeMemberNameError(
            f"member name {name!r} is not a plain relative path of ASCII letters, digits "
            "and . _ - separated by single '/'"
        )
    if any(part in (".", "..") for part in name.split("/")):
        raise UnsafeMemberNameError(f"member name {name!r} has a '.' or '..' segment")


def _check_record(info: zipfile.ZipInfo, seen: set[str], limits: ZipLimits) -> None:
    name = info.orig_filename
    if name.endswith("/") and _SAFE_NAME.fullmatch(name[:-1]):
        raise DirectoryMemberError(f"member {name!r} is a directory; bundles hold files only")
    _check_name(name)
    mode = info.external_attr >> 16
    if info.create_system == _UNIX and mode and not stat.S_ISREG(mode):
        kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
        raise LinkMemberError(f"member {name!r} is {kind} (mode {mode:o})")
    if info.external_attr & _DOS_DIRECTORY:
        raise DirectoryMemberError(f"member {name!r} carries the directory attribute")
    if info.flag_bits & 0x1:
        raise CompressionMethodError(f"member {name!r} is encrypted")
    if info.compress_type not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise CompressionMethodError(
            f"member {name!r} uses compression method {info.compress_type}; only stored (0) "
            "and deflate (8) are read"
        )
    if info.header_offset < 0:
        raise ZipFormatError(
            f"member {name!r}: its directory record points before the start of the file"
        )
    if name in seen:
        raise DuplicateMemberError(f"member name {name!r} appears twice")
    seen.add(name)
    if info.file_size > limits.max_member_bytes:
        raise MemberTooLargeError(
            f"member {name!r} declares {info.file_size} bytes; at most "
            f"{limits.max_member_bytes} are read"
        )


def _read_member(handle: BinaryIO, info: zipfile.ZipInfo) -> bytes:
    name = info.orig_filename
    handle.seek(info.header_offset)
    header = handle.read(_LOCAL_HEADER.size)
    if len(header) != _LOCAL_HEADER.size or header[:4] != _LOCAL_SIGNATURE:
        raise ZipFormatError(f"member {name!r}: local header missing at its directory offset")
    fields = _LOCAL_HEADER.unpack(header)
    method, name_length, extra_length = fields[4], fields[10], fields[11]
    local_name = handle.read(name_length)
    if local_name != name.encode("utf-8") or method != info.compress_type:
        raise ZipFormatError(
            f"member {name!r}: the local header (name {local_name[:80]!r}, method {method}) "
            "contradicts the central directory"
        )
    handle.seek(extra_length, os.SEEK_CUR)
    if info.compress_type == zipfile.ZIP_STORED and info.compress_size != info.file_size:
        raise MemberSizeMismatchError(
            f"member {name!r} is stored with {info.compress_size} bytes but declares "
            f"{info.file_size}"
        )
    data = _inflate(handle, info) if info.compress_type == zipfile.ZIP_DEFLATED else b""
    if info.compress_type == zipfile.ZIP_STORED:
        data = handle.read(info.file_size)
        if len(data) != info.file_size:
            raise MemberSizeMismatchError(
                f"member {name!r} ends after {len(data)} of its {info.file_size} bytes"
            )
    if zlib.crc32(data) != info.CRC:
        raise MemberCorruptError(f"member {name!r} fails its CRC-32 check; the zip is damaged")
    return data


def _inflate(handle: BinaryIO, info: zipfile.ZipInfo) -> bytes:
    """Decompress one member, producing at most ``file_size + 1`` bytes whatever it holds."""
    name, declared = info.orig_filename, info.file_size
    decompressor = zlib.decompressobj(-15)
    parts: list[bytes] = []
    produced = 0
    remaining = info.compress_size
    try:
        while True:
            room = declared + 1 - produced
            pending = decompressor.unconsumed_tail
            if not pending and remaining:
                pending = handle.read(min(_READ_CHUNK, remaining))
                if not pending:
                    raise MemberSizeMismatchError(
                        f"member {name!r}: the file ends inside its compressed data"
                    )
                remaining -= len(pending)
            elif not pending:
                break
            chunk = decompressor.decompress(pending, room)
            produced += len(chunk)
            parts.append(chunk)
            if produced > declared:
                raise MemberSizeMismatchError(
                    f"member {name!r} decompresses to more than the {declared} bytes it "
                    "declares; refused while reading (a zip bomb or a forged size)"
                )
            if decompressor.eof:
                break
    except zlib.error as exc:
        raise MemberCorruptError(f"member {name!r}: damaged deflate data ({exc})") from None
    if not decompressor.eof:
        raise MemberCorruptError(f"member {name!r}: its deflate stream is truncated")
    if decompressor.unused_data or decompressor.unconsumed_tail or remaining:
        raise MemberCorruptError(f"member {name!r}: data follows the end of its deflate stream")
    if produced != declared:
        raise MemberSizeMismatchError(
            f"member {name!r} decompresses to {produced} bytes but declares {declared}"
        )
    return b"".join(parts)
