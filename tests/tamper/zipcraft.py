"""Hand-made zip files for the container attacks: every header field under the test's control.

``craft_zip`` writes local headers, data and a central directory exactly as given, so a test
can declare a size the data does not have, name a member ``../evil``, mark one as a symlink,
repeat a name, or pick a compression method -- things ``zipfile`` refuses to write.
"""

from __future__ import annotations

import struct
import zlib
from dataclasses import dataclass

__all__ = ["RawMember", "craft_zip", "regular_mode", "symlink_mode"]

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


def _deflate(data: bytes) -> bytes:
    compressor = zlib.compressobj(6, zlib.DEFLATED, -15)
    return compressor.compress(data) + compressor.flush()


def craft_zip(members: list[RawMember]) -> bytes:
    """A zip holding ``members`` in the given order, with the fields as given."""
    out = bytearray()
    central = bytearray()
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
            0,
            0,
            0,
            0,
            member.external_attr,
            offset,
        )
        central += name
    start = len(out)
    out += central
    out += struct.pack(
        "<4s4H2LH", b"PK\x05\x06", 0, 0, len(members), len(members), len(central), start, 0
    )
    return bytes(out)
