"""The byte layout of a zip file, read without trusting a single field (``specs/bundle.md`` 5.1).

:func:`read_layout` parses the end records, the central directory and every local header
itself (not through :mod:`zipfile`, whose reader tolerates prefixes, gaps, overlapping
entries and zip64 records that disagree with the classic end record) and requires the file
to be tiled exactly, in this order, by

    local header + data (+ data descriptor), for every directory record, in offset order;
    the central directory;
    the zip64 end record and its locator (only if present);
    the end-of-central-directory record, with no comment, ending the file.

No byte is left over, none belongs to two parts. So what a streaming extractor (which walks
the local headers from the front) sees is exactly what the directory lists: a hidden entry,
a prepended archive or an appended one is refused (:class:`UnaccountedBytesError`), as are
entries sharing bytes (:class:`OverlappingEntriesError`). Every offset and size is compared
with the file's length as a Python integer before anything is read at it, so a field of
2**63 or 2**64 - 1 is a :class:`ZipOffsetError`, never an ``OverflowError``. A zip64 end
record whose counts, size or offset disagree with the classic end record is refused
(:class:`Zip64MismatchError`); the member count and directory size are bounded
(:class:`TooManyMembersError`) before the directory is read.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from typing import BinaryIO

from registre.errors import MalformedError

__all__ = [
    "ContainerError",
    "OverlappingEntriesError",
    "Record",
    "TooManyMembersError",
    "UnaccountedBytesError",
    "Zip64MismatchError",
    "ZipFormatError",
    "ZipOffsetError",
    "read_layout",
]

_END = struct.Struct("<4s4H2LH")  # 22 bytes
_LOCATOR = struct.Struct("<4sLQL")  # 20 bytes
_ZIP64_END = struct.Struct("<4sQ2H2L4Q")  # 56 bytes
_CENTRAL = struct.Struct("<4s4B4HL2L5H2L")  # 46 bytes
_LOCAL = struct.Struct("<4s2B4HL2L2H")  # 30 bytes
_END_SIGNATURE = b"PK\x05\x06"
_LOCATOR_SIGNATURE = b"PK\x06\x07"
_ZIP64_END_SIGNATURE = b"PK\x06\x06"
_CENTRAL_SIGNATURE = b"PK\x01\x02"
_LOCAL_SIGNATURE = b"PK\x03\x04"
_DESCRIPTOR_SIGNATURE = b"PK\x07\x08"
_ZIP64_EXTRA = 0x0001
_U16 = 0xFFFF
_U32 = 0xFFFFFFFF
_DATA_DESCRIPTOR_FLAG = 0x0008
_MAX_VERSION_NEEDED = 63  # zip 6.3, the newest version Python's zipfile also reads


class ContainerError(MalformedError):
    """The bundle file is not a zip registre can read safely."""


class ZipFormatError(ContainerError):
    """Not a zip file, or a zip whose records contradict each other."""


class ZipOffsetError(ZipFormatError):
    """A zip64 locator or a directory record pointing outside the file (2**63, 2**64 - 1...)."""

    hint = "the file is damaged or forged: ask the sender for a fresh `registre export`"


class Zip64MismatchError(ZipFormatError):
    """A zip64 end record whose counts, directory size or offset contradict the classic one."""

    hint = (
        "the file is damaged or forged (registre writes zip64 records that agree): ask the "
        "sender for a fresh `registre export`"
    )


class TooManyMembersError(ContainerError):
    """More members (or a larger central directory) than the limits allow."""


class UnaccountedBytesError(ContainerError):
    """Bytes of the file that no directory record accounts for: a hidden local entry, a
    prefix, a suffix, a comment or a gap between the parts of the zip."""

    hint = (
        "another unzip tool may extract what the directory hides: do not unpack this file; "
        "ask the sender for a fresh `registre export`, which leaves no byte unaccounted for"
    )


class OverlappingEntriesError(ContainerError):
    """Two parts of the zip claiming the same bytes (entries sharing data, a member running
    into the directory)."""

    hint = "the file is damaged or forged: ask the sender for a fresh `registre export`"


@dataclass(frozen=True)
class Record:
    """One central directory record, checked against its local header.

    ``name`` is the raw name bytes; ``data_offset`` is where the member's compressed data
    starts. Sizes and offsets are the zip64 values when the record has them."""

    name: bytes
    create_system: int
    flags: int
    method: int
    crc: int
    compressed_size: int
    size: int
    external_attr: int
    offset: int
    data_offset: int


@dataclass(frozen=True)
class _End:
    count: int
    directory_size: int
    directory_offset: int
    start: int  # where the end records begin (the zip64 record, or the classic one)


def read_layout(
    handle: BinaryIO, *, max_members: int, max_directory_bytes: int
) -> tuple[list[Record], int]:
    """The directory records of the zip in ``handle`` and the file's length.

    Raises :class:`ZipFormatError` (or a subclass), :class:`TooManyMembersError`,
    :class:`UnaccountedBytesError` or :class:`OverlappingEntriesError` as the module says.
    Reads at most the end records, ``max_directory_bytes`` of directory and one local
    header per record; no member data.
    """
    handle.seek(0, os.SEEK_END)
    length = handle.tell()
    end = _end_records(handle, length)
    if end.count > max_members:
        raise TooManyMembersError(
            f"the zip declares {end.count} members; at most {max_members} are read"
        )
    if end.directory_size > max_directory_bytes:
        raise TooManyMembersError(
            f"the zip's central directory is {end.directory_size} bytes; at most "
            f"{max_directory_bytes} are read"
        )
    if end.directory_offset + end.directory_size > end.start:
        raise OverlappingEntriesError(
            f"the central directory ({end.directory_size} bytes at offset "
            f"{end.directory_offset}) runs into the end records at offset {end.start}"
        )
    if end.directory_offset + end.directory_size < end.start:
        gap = end.start - end.directory_offset - end.directory_size
        raise UnaccountedBytesError(
            f"{gap} bytes between the central directory and the end records belong to no member"
        )
    handle.seek(end.directory_offset)
    directory = handle.read(end.directory_size)
    if len(directory) != end.directory_size:
        raise ZipFormatError("the file ends inside its central directory")
    partial = _parse_directory(directory, end.count)
    return _check_tiling(handle, partial, end.directory_offset), length


def _end_records(handle: BinaryIO, length: int) -> _End:
    if length < _END.size:
        raise ZipFormatError("not a zip file: too short for an end-of-central-directory record")
    window = min(length, _END.size + _U16)
    handle.seek(length - window)
    tail = handle.read(window)
    if tail[-_END.size : -_END.size + 4] != _END_SIGNATURE or tail[-2:] != b"\0\0":
        found = tail.rfind(_END_SIGNATURE, 0, len(tail) - _END.size)
        if found >= 0:
            raise UnaccountedBytesError(
                f"{len(tail) - found - _END.size} bytes follow the end-of-central-directory "
                "record (a comment or appended data), which no member accounts for"
            )
        raise ZipFormatError("not a zip file: no end-of-central-directory record at its end")
    fields = _END.unpack(tail[-_END.size :])
    _, disk, directory_disk, disk_count, count, size, offset, _ = fields
    if disk or directory_disk or disk_count != count:
        raise ZipFormatError("a multi-disk (split) zip: bundles are one file")
    start = length - _END.size
    locator_offset = start - _LOCATOR.size
    if locator_offset < 0:
        return _End(count, size, offset, start)
    handle.seek(locator_offset)
    locator = handle.read(_LOCATOR.size)
    if locator[:4] != _LOCATOR_SIGNATURE:
        return _End(count, size, offset, start)
    return _zip64_end(handle, locator, locator_offset, (count, size, offset))


def _zip64_end(
    handle: BinaryIO, locator: bytes, locator_offset: int, classic: tuple[int, int, int]
) -> _End:
    _, disk, record_offset, disks = _LOCATOR.unpack(locator)
    if disk or disks != 1:
        raise ZipFormatError("a multi-disk (split) zip64: bundles are one file")
    expected = locator_offset - _ZIP64_END.size
    if record_offset != expected:
        raise ZipOffsetError(
            f"the zip64 locator points at offset {record_offset}; its end record must "
            f"immediately precede the locator, at offset {expected}"
        )
    handle.seek(record_offset)
    record = handle.read(_ZIP64_END.size)
    fields = _ZIP64_END.unpack(record)
    signature, record_size, _, _, disk, directory_disk, disk_count, count, size, offset = fields
    if signature != _ZIP64_END_SIGNATURE or record_size != _ZIP64_END.size - 12:
        raise ZipFormatError("the zip64 end-of-central-directory record is missing or damaged")
    if disk or directory_disk or disk_count != count:
        raise ZipFormatError("a multi-disk (split) zip64: bundles are one file")
    for name, small, large, sentinel in zip(
        ("member count", "directory size", "directory offset"),
        classic,
        (count, size, offset),
        (_U16, _U32, _U32),
        strict=True,
    ):
        if small not in (sentinel, large):
            raise Zip64MismatchError(
                f"the zip64 end record gives {large} as {name}, the classic end record "
                f"{small}: readers would disagree on what the zip holds"
            )
    return _End(count, size, offset, record_offset)


@dataclass(frozen=True)
class _Partial:
    """A directory record before its local header is read."""

    name: bytes
    create_system: int
    version_needed: int
    flags: int
    method: int
    crc: int
    compressed_size: int
    size: int
    external_attr: int
    offset: int
    zip64: bool


def _parse_directory(directory: bytes, count: int) -> list[_Partial]:
    records: list[_Partial] = []
    position = 0
    for index in range(count):
        fixed = directory[position : position + _CENTRAL.size]
        if len(fixed) != _CENTRAL.size or fixed[:4] != _CENTRAL_SIGNATURE:
            raise ZipFormatError(f"central directory record {index} is missing or damaged")
        fields = _CENTRAL.unpack(fixed)
        (_, _, system, version, _, flags, method, _, _, crc, csize, size) = fields[:12]
        name_length, extra_length, comment_length, disk, _, external, offset = fields[12:]
        start = position + _CENTRAL.size
        position = start + name_length + extra_length + comment_length
        if position > len(directory):
            raise ZipFormatError(f"central directory record {index} runs past the directory")
        name = directory[start : start + name_length]
        extra = directory[start + name_length : start + name_length + extra_length]
        wanted = [value == _U32 for value in (size, csize, offset)] + [disk == _U16]
        values = _zip64_values(extra, wanted, name)
        if any(wanted):
            size, csize, offset, disk = (
                values.pop(0) if flag else value
                for flag, value in zip(wanted, (size, csize, offset, disk), strict=True)
            )
        if disk:
            raise ZipFormatError(f"member {name[:80]!r} is on another disk: bundles are one file")
        records.append(
            _Partial(
                name, system, version, flags, method, crc, csize, size, external, offset,
                any(wanted),
            )
        )  # fmt: skip
    if position != len(directory):
        raise UnaccountedBytesError(
            f"{len(directory) - position} bytes of the central directory follow its last "
            "record and belong to no member"
        )
    return records


def _zip64_values(extra: bytes, wanted: list[bool], name: bytes) -> list[int]:
    """The zip64 fields (8 bytes each, 4 for the disk) the record's sentinels ask for."""
    fields = _extra_fields(extra, name)
    needed = sum(wanted[:3]) * 8 + wanted[3] * 4
    if not needed:
        return []
    data = fields.get(_ZIP64_EXTRA)
    if data is None or len(data) < needed:
        raise ZipFormatError(f"member {name[:80]!r}: zip64 sizes announced but missing")
    values = list(struct.unpack_from("<" + "Q" * sum(wanted[:3]), data))
    if wanted[3]:
        values.append(struct.unpack_from("<L", data, sum(wanted[:3]) * 8)[0])
    return values


def _extra_fields(extra: bytes, name: bytes) -> dict[int, bytes]:
    """The extra field blocks, which must tile the extra area exactly, each id once."""
    fields: dict[int, bytes] = {}
    position = 0
    while position < len(extra):
        if position + 4 > len(extra):
            raise ZipFormatError(f"member {name[:80]!r}: damaged extra field")
        key, size = struct.unpack_from("<2H", extra, position)
        position += 4 + size
        if position > len(extra) or key in fields:
            raise ZipFormatError(f"member {name[:80]!r}: damaged extra field")
        fields[key] = extra[position - size : position]
    return fields


def _check_tiling(handle: BinaryIO, records: list[_Partial], directory_offset: int) -> list[Record]:
    """Read every local header and require the members to tile ``0 .. directory_offset``."""
    checked: list[Record] = []
    position = 0
    for record in sorted(records, key=lambda found: found.offset):
        label = f"member {record.name[:80]!r}"
        if record.version_needed > _MAX_VERSION_NEEDED:
            version = f"{record.version_needed // 10}.{record.version_needed % 10}"
            raise ZipFormatError(
                f"not a readable zip file: zip file version {version} is needed to extract "
                f"{label}; this reader reads up to 6.3"
            )
        if record.offset + _LOCAL.size > directory_offset:
            raise ZipOffsetError(
                f"{label}: its directory record points at offset {record.offset}, outside "
                f"the members area (0 .. {directory_offset})"
            )
        if record.offset > position:
            raise UnaccountedBytesError(
                f"bytes {position} .. {record.offset - 1} of the file belong to no member "
                "the central directory lists (a hidden entry, or data put in front)"
            )
        if record.offset < position:
            raise OverlappingEntriesError(
                f"{label} starts at offset {record.offset}, inside the member before it "
                f"(which ends at {position})"
            )
        data_offset = _check_local_header(handle, record, label)
        end = data_offset + record.compressed_size
        if record.flags & _DATA_DESCRIPTOR_FLAG:
            end = _check_descriptor(handle, record, end, directory_offset, label)
        if end > directory_offset:
            raise OverlappingEntriesError(
                f"{label}: its data ends at offset {end}, inside the central directory "
                f"(which starts at {directory_offset})"
            )
        position = end
        checked.append(
            Record(
                record.name, record.create_system, record.flags, record.method, record.crc,
                record.compressed_size, record.size, record.external_attr, record.offset,
                data_offset,
            )
        )  # fmt: skip
    if position != directory_offset:
        raise UnaccountedBytesError(
            f"bytes {position} .. {directory_offset - 1}, before the central directory, "
            "belong to no member it lists (a hidden entry)"
        )
    return checked


def _check_local_header(handle: BinaryIO, record: _Partial, label: str) -> int:
    handle.seek(record.offset)
    header = handle.read(_LOCAL.size)
    if len(header) != _LOCAL.size or header[:4] != _LOCAL_SIGNATURE:
        raise ZipFormatError(f"{label}: local header missing at its directory offset")
    fields = _LOCAL.unpack(header)
    flags, method, crc, csize, size, name_length, extra_length = (
        fields[3], fields[4], fields[7], fields[8], fields[9], fields[10], fields[11],
    )  # fmt: skip
    name = handle.read(name_length)
    extra = handle.read(extra_length)
    if len(extra) != extra_length:
        raise ZipFormatError(f"{label}: the file ends inside its local header")
    if name != record.name or method != record.method or flags != record.flags:
        raise ZipFormatError(
            f"{label}: the local header (name {name[:80]!r}, method {method}, flags "
            f"{flags:#x}) contradicts the central directory"
        )
    if size == _U32 or csize == _U32:
        local = _zip64_values(extra, [size == _U32, csize == _U32, False, False], name)
        size = local.pop(0) if size == _U32 else size
        csize = local.pop(0) if csize == _U32 else csize
    else:
        _extra_fields(extra, name)
    truth = (record.crc, record.compressed_size, record.size)
    deferred = record.flags & _DATA_DESCRIPTOR_FLAG and (crc, csize, size) == (0, 0, 0)
    if not deferred and (crc, csize, size) != truth:
        raise ZipFormatError(
            f"{label}: the local header's CRC and sizes ({crc:#010x}, {csize}, {size}) "
            f"contradict the central directory's ({record.crc:#010x}, "
            f"{record.compressed_size}, {record.size})"
        )
    return record.offset + _LOCAL.size + int(name_length) + int(extra_length)


def _check_descriptor(
    handle: BinaryIO, record: _Partial, end: int, directory_offset: int, label: str
) -> int:
    """The data descriptor after the data: optional signature, CRC, sizes (8 bytes in zip64)."""
    width = 8 if record.zip64 else 4
    if end + 4 > directory_offset:
        raise OverlappingEntriesError(f"{label}: its data descriptor runs into the directory")
    handle.seek(end)
    signed = handle.read(4) == _DESCRIPTOR_SIGNATURE
    start = end + 4 if signed else end
    handle.seek(start)
    raw = handle.read(4 + 2 * width)
    if len(raw) != 4 + 2 * width:
        raise ZipFormatError(f"{label}: the file ends inside its data descriptor")
    crc, csize, size = struct.unpack("<L" + ("Q" if width == 8 else "L") * 2, raw)
    if (crc, csize, size) != (record.crc, record.compressed_size, record.size):
        raise ZipFormatError(f"{label}: its data descriptor contradicts the central directory")
    return start + len(raw)
