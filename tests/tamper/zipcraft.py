"""Hand-made zip files for the container attacks: every header field under the test's control.

``craft_zip`` writes local headers, data and a central directory exactly as given, so a test
can declare a size the data does not have, name a member ``../evil``, mark one as a symlink,
repeat a name, or pick a compression method -- things ``zipfile`` refuses to write.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

__all__ = ["EndRecord", "RawMember", "craft_zip", "regular_mode", "symlink_mode"]

regular_mode = 0o100644 << 16
symlink_mode = 0o120777 << 16


@dataclass
class RawMember:
    """One member. ``data`` is the uncompressed content; with ``method`` 8 it is deflated
    (``payload`` overrides the bytes written). ``declared_size`` and ``crc`` default to the
    truth."""

    name: str | bytes
    data: bytes
    method: int = 8
    declared_size: int | None = None
    crc: int | None = None
    external_attr: int = regular_mode
    create_system: int = 3
    flags: int = 0
    payload: bytes | None = None
    listed: bool = True  # False: a local entry the central directory does not list
    central_offset: int | None = None  # the offset its directory record gives
    central_extra: bytes = b""


@dataclass
class EndRecord:
    """Overrides of the end records. ``zip64`` adds a zip64 end record and locator, with
    ``zip64_count`` members (default: the true count) and the locator pointing at
    ``zip64_offset`` (default: the record). ``count`` and ``directory_size`` override the
    classic record's."""

    count: int | None = None
    directory_size: int | None = None
    zip64: bool = False
    zip64_count: int | None = None
    zip64_offset: int | None = None


def _deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush()


def craft_zip(members: list[RawMember], end: EndRecord | None = None) -> bytes:
    """A zip holding ``members`` in the given order, with the fields as given."""
    end = end or EndRecord()
    out = bytearray()
    central = bytearray()
    listed = 0
    for member in members:
        name = member.name.encode("utf-8") if isinstance(member.name, str) else member.name
        if member.payload is not None:
            payload = member.payload
        else:
            payload = _deflate(member.data) if member.method == 8 else member.data
        size = len(member.data) if member.declared_size is None else member.declared_size
        crc = zlib.crc32(member.data) if member.crc is None else member.crc
        offset = len(out)
        out += struct.pack(
            "<4s2B4HL2L2H",
            b"PK\x03\x04",
            20,
            0,
            member.flags,
            member.method,
            0,
            0x21,
            crc,
            len(payload),
            size,
            len(name),
            0,
        )
        out += name + payload
        if not member.listed:
            continue
        listed += 1
        central += struct.pack(
            "<4s4B4HL2L5H2L",
            b"PK\x01\x02",
            20,
            member.create_system,
            20,
            0,
            member.flags,
            member.method,
            0,
            0x21,
            crc,
            len(payload),
            size,
            len(name),
            len(member.central_extra),
            0,
            0,
            0,
            member.external_attr,
            offset if member.central_offset is None else member.central_offset,
        )
        central += name + member.central_extra
    start = len(out)
    out += central
    count = listed if end.count is None else end.count
    if end.zip64:
        record = len(out)
        true_count = listed if end.zip64_count is None else end.zip64_count
        out += struct.pack(
            "<4sQ2H2L4Q", b"PK\x06\x06", 44, 45, 45, 0, 0, true_count, true_count,
            len(central), start,
        )  # fmt: skip
        locator = record if end.zip64_offset is None else end.zip64_offset
        out += struct.pack("<4sLQL", b"PK\x06\x07", 0, locator, 1)
    size = len(central) if end.directory_size is None else end.directory_size
    out += struct.pack("<4s4H2LH", b"PK\x05\x06", 0, 0, count, count, size, start, 0)
    return bytes(out)
