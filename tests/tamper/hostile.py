"""Hostile bundles of issue 13 (items 4, 7-10), built from a genuine bundle's members.

Each builder takes its size as a parameter: the tests build small ones, the measurement
(``python -m tests.tamper.hostile OUT_DIR``) the full-size attacks of the issue, and writes
them to ``OUT_DIR`` so that they can be timed one process each (``/usr/bin/time -v``).
"""

from __future__ import annotations

import functools
import struct
import sys
import zlib
from collections.abc import Callable
from pathlib import Path

from registre.attest.bundles import ENTRIES_MEMBER, ContainerError
from tests.bundles import build_thread, members, rezip
from tests.tamper.zipcraft import EndRecord, RawMember, craft_zip

__all__ = [
    "deflated_zeros",
    "genuine",
    "hidden_entry",
    "huge_leaf",
    "inflating_members",
    "raw_members",
    "zip64_disagreeing",
    "zip64_locator_far",
    "zip64_record_offset_max",
]


@functools.cache
def genuine(entries: int = 12) -> bytes:
    """A genuine full bundle of ``entries`` entries, with an earlier checkpoint at size 6."""
    return build_thread(entries).full_bundle(checkpoint_sizes=[6])


def raw_members(bundle: bytes) -> list[RawMember]:
    return [RawMember(name, data) for name, data in members(bundle).items()]


def hidden_entry() -> bytes:
    """Item 4: another thread's entries and manifest as local entries between the members,
    listed nowhere in the central directory (a streaming unzip extracts them)."""
    other = members(build_thread(3, thread="thread-2", story=False).full_bundle())
    parts = raw_members(genuine())
    hidden = [RawMember(name, data, listed=False) for name, data in sorted(other.items())]
    return craft_zip([parts[0], *hidden, *parts[1:]])


def zip64_locator_far(offset: int = 1 << 63) -> bytes:
    """Item 7: a zip64 locator pointing at ``offset``, the classic count saying "see zip64"."""
    return craft_zip(
        raw_members(genuine()), EndRecord(count=0xFFFF, zip64=True, zip64_offset=offset)
    )


def zip64_record_offset_max() -> bytes:
    """Item 7: a directory record whose zip64 extra field gives the offset 2**64 - 1."""
    parts = raw_members(genuine())
    extra = struct.pack("<2HQ", 1, 8, (1 << 64) - 1)
    parts[-1] = RawMember(
        parts[-1].name, parts[-1].data, central_offset=0xFFFFFFFF, central_extra=extra
    )
    return craft_zip(parts)


def zip64_disagreeing(records: int = 0) -> bytes:
    """Item 8: the classic end record counts the genuine members, a zip64 end record (which
    zipfile prefers) counts ``records`` more: empty members after them."""
    parts = raw_members(genuine())
    padding = [RawMember(f"p{index:x}", b"", method=0) for index in range(records)]
    end = EndRecord(count=len(parts), directory_size=46 * len(parts), zip64=True)
    return craft_zip([*parts, *padding], end)


def deflated_zeros(size: int) -> bytes:
    """A raw deflate stream of ``size`` zero bytes (about 1/1030 of it)."""
    compressor = zlib.compressobj(9, zlib.DEFLATED, -15)
    block = bytes(min(size, 1 << 24))
    out = bytearray()
    left = size
    while left:
        step = min(left, len(block))
        out += compressor.compress(block[:step] if step < len(block) else block)
        left -= step
    return bytes(out + compressor.flush())


def inflating_members(size: int = (2 << 30) - (1 << 20)) -> bytes:
    """Item 9: entries.jsonl and a checkpoint note each declaring ``size`` bytes of zeros,
    their CRCs and sizes true, the manifest the genuine one."""
    zeros = deflated_zeros(size)
    crc = 0
    block = bytes(1 << 24)
    for _ in range(size // len(block)):
        crc = zlib.crc32(block, crc)
    crc = zlib.crc32(bytes(size % len(block)), crc)
    parts = raw_members(genuine())
    bombs = {ENTRIES_MEMBER, "checkpoints/00000000000000000006.note"}
    crafted = [
        RawMember(m.name, b"", declared_size=size, crc=crc, payload=zeros) if m.name in bombs else m
        for m in parts
    ]
    return craft_zip(crafted)


def huge_leaf(elements: int = 5_000_000) -> bytes:
    """Item 10: one leaf holding a list of ``elements`` zeros and a signature of zeros,
    the manifest recomputed."""
    signature = b"A" * 86 + b"=="  # 64 zero bytes: the shape of a signature, not one
    leaf = b'{"entry":{"x":[' + b"0," * (elements - 1) + b'0]},"sig":"' + signature + b'"}'
    return rezip(genuine(), {ENTRIES_MEMBER: leaf + b"\n"})


ATTACKS: dict[str, Callable[[], bytes]] = {
    "hidden_entry": hidden_entry,
    "zip64_locator_2e63": zip64_locator_far,
    "zip64_offset_2e64": zip64_record_offset_max,
    "zip64_disagreeing_1M": lambda: zip64_disagreeing(1_000_000),
    "inflating_2x2GiB": inflating_members,
    "huge_leaf_5M": huge_leaf,
}


def main(folder: str) -> None:
    out = Path(folder)
    out.mkdir(parents=True, exist_ok=True)
    for name, build in ATTACKS.items():
        try:
            data = build()
        except ContainerError as exc:  # pragma: no cover - a builder reading its own output
            print(f"{name}: cannot build: {exc}")
            continue
        (out / f"{name}.zip").write_bytes(data)
        print(f"{name}: {len(data)} bytes")


if __name__ == "__main__":
    main(sys.argv[1])
