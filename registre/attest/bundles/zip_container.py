"""The zip container of an audit bundle: a deterministic writer and a reader that trusts nothing.

Writing (:func:`deterministic_zip`): members sorted by name, every timestamp 1980-01-01
00:00:00, Unix regular-file mode 0644, deflate at level 6, no comment, no extra fields. The
same members give the same bytes (on one zlib build). :class:`ZipStreamWriter` writes the
same bytes member by member to a seekable file, a member's data streamed in pieces
(:meth:`ZipStreamWriter.open`), so a bundle is never held in memory.

Reading (:func:`open_zip`, and :func:`read_zip` for every member at once) checks, in this
order, and raises its own :class:`ContainerError` subclass at the first problem:

1. the layout (:mod:`registre.attest.bundles.zip_layout`): the end records, the member count and
   directory size bounded before the directory is read, zip64 records agreeing with the
   classic ones, every offset inside the file, and every byte of the file accounted for by
   exactly one part: local headers, data and descriptors of the listed members, the
   directory, the end records (:class:`ZipFormatError`, :class:`ZipOffsetError`,
   :class:`Zip64MismatchError`, :class:`TooManyMembersError`,
   :class:`UnaccountedBytesError`, :class:`OverlappingEntriesError`);
2. for every directory record, before any data is read: a safe name -- ASCII letters, digits
   and ``._-/`` only, relative, no ``..`` or ``.`` segment, no empty segment, no backslash,
   no NUL (:class:`UnsafeMemberNameError`); not a directory (:class:`DirectoryMemberError`);
   not a symbolic link, device or other special file by its external attributes
   (:class:`LinkMemberError`); not encrypted and stored or deflated
   (:class:`CompressionMethodError`); not a name seen before (:class:`DuplicateMemberError`);
   a declared size within the per-member limit (:class:`MemberTooLargeError`), a total
   within the bundle limit (:class:`BundleTooLargeError`), and a total at most
   ``max_ratio`` times the file's size (plus ``ratio_allowance``) (:class:`CompressionRatioError`),
   so that what a file may cost to read is bounded by its size;
3. a member is inflated only when asked for (:meth:`ZipArchive.read`,
   :meth:`ZipArchive.chunks`), in chunks of at most 1 MiB, producing at most *declared size
   + 1* bytes: a member that yields more than it declared, or less, is refused while
   streaming (:class:`MemberSizeMismatchError`); the CRC-32 must match
   (:class:`MemberCorruptError`). A caller that knows the size a member must have (the
   manifest's) passes it and the member is refused before a byte is inflated.

Members are returned by name; which names a bundle may hold is
:mod:`registre.attest.bundles.reader`'s
business.
"""

from __future__ import annotations

import io
import os
import re
import stat
import zipfile
import zlib
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import IO, BinaryIO, Protocol

from registre.attest.bundles.zip_layout import (
    ContainerError,
    Record,
    ZipFormatError,
    read_layout,
)

__all__ = [
    "DEFAULT_LIMITS",
    "BundleFileError",
    "BundleTooLargeError",
    "CompressionMethodError",
    "CompressionRatioError",
    "DirectoryMemberError",
    "DuplicateMemberError",
    "LinkMemberError",
    "MemberCorruptError",
    "MemberSizeMismatchError",
    "MemberTooLargeError",
    "UnsafeMemberNameError",
    "Zip64RequiredError",
    "ZipArchive",
    "ZipLimits",
    "ZipStreamWriter",
    "deterministic_zip",
    "open_zip",
    "read_zip",
]

_FIXED_TIME = (1980, 1, 1, 0, 0, 0)
_REGULAR_FILE_MODE = 0o100644
_UNIX = 3
_SAFE_NAME = re.compile(r"[A-Za-z0-9._-]+(/[A-Za-z0-9._-]+)*")
_CHUNK = 1 << 20
_DOS_DIRECTORY = 0x10
_ENCRYPTION_FLAGS = 0x0001 | 0x0040 | 0x2000  # encrypted, strong encryption, masked headers
_LEVEL_ATTRIBUTE = (  # where a ZipInfo keeps its deflate level: renamed in Python 3.13
    "compress_level" if hasattr(zipfile.ZipInfo(), "compress_level") else "_compresslevel"
)


@dataclass(frozen=True)
class ZipLimits:
    """Bounds applied to a zip before and while it is read (bytes are uncompressed sizes).

    ``max_ratio``: the members together may declare at most this many bytes per byte of the
    zip file, plus ``ratio_allowance`` (:attr:`ZipArchive.budget`). Genuine bundles compress
    2 to 5 times (signatures and hashes do not compress); deflate reaches 1,032, which is
    what a bomb uses. The bound makes what a file costs to read proportional to its size."""

    max_members: int = 10_000
    max_member_bytes: int = 2 << 30
    max_total_bytes: int = 4 << 30
    max_directory_bytes: int = 16 << 20
    max_ratio: int = 12
    ratio_allowance: int = 32 << 10


DEFAULT_LIMITS = ZipLimits()


class BundleFileError(ContainerError):
    """The bundle file cannot be opened or read."""


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
    """A member whose declared size is above the per-member limit (or the caller's)."""


class BundleTooLargeError(ContainerError):
    """Members whose declared sizes add up to more than the bundle limit."""


class CompressionRatioError(ContainerError):
    """Members declaring far more bytes than a file of this size can genuinely hold."""

    hint = (
        "a zip bomb, or entries far more repetitive than usual: if you trust the sender, "
        "verify with a higher --max-ratio (Python: limits=ZipLimits(max_ratio=N))"
    )


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
            archive.writestr(_member_info(name), members[name], compresslevel=6)
    return buffer.getvalue()


def _member_info(name: str) -> zipfile.ZipInfo:
    _check_name(name)
    info = zipfile.ZipInfo(name, date_time=_FIXED_TIME)
    info.create_system = _UNIX
    info.external_attr = _REGULAR_FILE_MODE << 16
    info.compress_type = zipfile.ZIP_DEFLATED
    return info


class Zip64RequiredError(Exception):
    """A member streamed without zip64 records grew past the size at which
    :func:`deterministic_zip` would have written them: write the zip again with
    ``zip64=True`` for that member (:meth:`ZipStreamWriter.open`). Not a refusal."""


class MemberWriter(Protocol):
    """Where a streamed member's bytes go (:meth:`ZipStreamWriter.open`)."""

    def write(self, data: bytes | bytearray) -> int: ...


class _StreamedMember:
    """The data of one member as it is written: compressed and CRC'd by :mod:`zipfile`;
    without zip64, refused (:class:`Zip64RequiredError`) once the bytes written reach the
    size for which :func:`deterministic_zip` writes zip64 records (its rule is zipfile's:
    ``size * 1.05 > ZIP64_LIMIT``)."""

    def __init__(self, raw: IO[bytes], zip64: bool) -> None:
        self._raw = raw
        self._zip64 = zip64
        self.size = 0

    def write(self, data: bytes | bytearray) -> int:
        self.size += len(data)
        if not self._zip64 and self.size * 1.05 > zipfile.ZIP64_LIMIT:
            raise Zip64RequiredError(f"a member of over {self.size} bytes needs zip64 records")
        return self._raw.write(data)


class ZipStreamWriter:
    """A deterministic zip written to the seekable binary ``stream``, one member after the
    other, in sorted name order (ValueError otherwise): the bytes are exactly those of
    :func:`deterministic_zip` over the same members, whether a member is written whole
    (:meth:`write`) or streamed in pieces (:meth:`open`; deflate's output does not depend on
    how its input is cut). :meth:`close` writes the central directory; a writer abandoned
    after an error must still be closed (or its stream discarded)."""

    def __init__(self, stream: BinaryIO) -> None:
        self._zip = zipfile.ZipFile(stream, "w", allowZip64=True)
        self._last: str | None = None

    def _next(self, name: str) -> zipfile.ZipInfo:
        if self._last is not None and name <= self._last:
            raise ValueError(f"member {name!r} comes after {self._last!r}; write in sorted order")
        info = _member_info(name)
        self._last = name
        return info

    def write(self, name: str, data: bytes) -> None:
        """The member ``name`` holding ``data``."""
        self._zip.writestr(self._next(name), data, compresslevel=6)

    @contextmanager
    def open(self, name: str, *, zip64: bool = False) -> Iterator[MemberWriter]:
        """A member whose data is written in pieces inside the ``with`` block. Without
        ``zip64``, :class:`Zip64RequiredError` once the data reaches the size at which
        :func:`deterministic_zip` would have used zip64 records (so the bytes would differ):
        write the whole zip again with ``zip64=True`` for this member. ``zip64=True`` gives
        :func:`deterministic_zip`'s bytes only for a member that large."""
        info = self._next(name)
        # writestr's compresslevel=6, which ZipFile.open leaves unset for a ZipInfo
        setattr(info, _LEVEL_ATTRIBUTE, 6)
        with self._zip.open(info, "w", force_zip64=zip64) as raw:
            yield _StreamedMember(raw, zip64)

    def close(self) -> None:
        """Write the central directory and the end records (the stream stays open)."""
        self._zip.close()


# --- reading ---------------------------------------------------------------------------


class ZipArchive:
    """A zip whose layout and directory passed checks 1 and 2; members inflate on demand.

    Use as a context manager (it closes the file it opened). ``names`` are sorted.
    """

    def __init__(
        self, handle: BinaryIO, records: Mapping[str, Record], owned: bool, budget: int
    ) -> None:
        self._handle = handle
        self._records = dict(sorted(records.items()))
        self._owned = owned
        self._budget = budget

    @property
    def budget(self) -> int:
        """The most bytes a reader of this zip should hold: ``max_ratio`` times the file's
        size plus ``ratio_allowance``; the members' declared sizes are within it."""
        return self._budget

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._records)

    def size(self, name: str) -> int:
        """The uncompressed size ``name`` declares (``KeyError`` if it is not a member)."""
        return self._records[name].size

    def chunks(self, name: str, *, expected_size: int | None = None) -> Iterator[bytes]:
        """The member's bytes in chunks of at most 1 MiB, checked as the module says.

        With ``expected_size``, a member declaring another size is refused
        (:class:`MemberSizeMismatchError`) before anything is inflated. The CRC-32 is checked
        after the last chunk, so a consumer must not act on the bytes before the end.
        """
        record = self._records[name]
        if expected_size is not None and record.size != expected_size:
            raise MemberSizeMismatchError(
                f"member {name!r} declares {record.size} bytes in the zip where {expected_size} "
                "are expected; refused before inflating it"
            )
        try:
            yield from _member_chunks(self._handle, record, name)
        except ContainerError:
            raise
        except (ValueError, OSError, EOFError, OverflowError) as exc:
            raise ZipFormatError(f"member {name!r}: not readable: {exc}") from None

    def read(
        self, name: str, *, expected_size: int | None = None, max_bytes: int | None = None
    ) -> bytes:
        """The member's bytes (:meth:`chunks` joined); over ``max_bytes`` declared, refused
        before inflating (:class:`MemberTooLargeError`)."""
        declared = self._records[name].size
        if max_bytes is not None and declared > max_bytes:
            raise MemberTooLargeError(
                f"member {name!r} declares {declared} bytes; at most {max_bytes} are read"
            )
        return b"".join(self.chunks(name, expected_size=expected_size))

    def close(self) -> None:
        if self._owned:
            self._handle.close()

    def __enter__(self) -> ZipArchive:
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        value: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        self.close()


def open_zip(
    source: bytes | str | os.PathLike[str], limits: ZipLimits = DEFAULT_LIMITS
) -> ZipArchive:
    """Open the zip ``source`` (bytes or a path) and run checks 1 and 2 of the module.

    Raises a :class:`ContainerError` subclass for the first problem (:class:`BundleFileError`
    if a path cannot be read); no member data is inflated.
    """
    if isinstance(source, bytes | bytearray | memoryview):
        return _open(io.BytesIO(bytes(source)), limits, owned=True)
    try:
        handle = open(source, "rb")  # noqa: SIM115 - closed by the archive, or below
    except OSError as exc:
        raise BundleFileError(
            f"cannot read bundle file {os.fspath(source)}: {exc.strerror or exc}"
        ) from None
    try:
        return _open(handle, limits, owned=True)
    except BaseException:
        handle.close()
        raise


def read_zip(
    source: bytes | str | os.PathLike[str], limits: ZipLimits = DEFAULT_LIMITS
) -> dict[str, bytes]:
    """Every member of the zip ``source``, checked as the module says, sorted by name."""
    with open_zip(source, limits) as archive:
        return {name: archive.read(name) for name in archive.names}


def _open(handle: BinaryIO, limits: ZipLimits, *, owned: bool) -> ZipArchive:
    try:
        records, length = read_layout(
            handle,
            max_members=limits.max_members,
            max_directory_bytes=limits.max_directory_bytes,
        )
    except OSError as exc:
        raise BundleFileError(f"cannot read the bundle file: {exc.strerror or exc}") from None
    by_name: dict[str, Record] = {}
    total = 0
    compressed = 0
    for record in records:
        name = _check_record(record, by_name, limits)
        by_name[name] = record
        total += record.size
        compressed += record.compressed_size
        if total > limits.max_total_bytes:
            raise BundleTooLargeError(
                f"members declare more than {limits.max_total_bytes} bytes in total; "
                "the bundle is too large to verify with these limits"
            )
    allowed = limits.max_ratio * length + limits.ratio_allowance
    if total > allowed:
        worst = max(by_name, key=lambda name: by_name[name].size)
        raise CompressionRatioError(
            f"members declare {total} bytes in a zip of {length} bytes (member {worst!r}: "
            f"{by_name[worst].size} from {by_name[worst].compressed_size}); at most "
            f"{limits.max_ratio} bytes per byte of the file (plus {limits.ratio_allowance}) "
            "are read: a zip bomb, or a bundle compressing far better than entries do"
        )
    return ZipArchive(handle, by_name, owned, allowed)


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


def _check_record(record: Record, seen: Mapping[str, Record], limits: ZipLimits) -> str:
    name = record.name.decode("ascii", errors="replace")
    if name.endswith("/") and _SAFE_NAME.fullmatch(name[:-1]):
        raise DirectoryMemberError(f"member {name!r} is a directory; bundles hold files only")
    _check_name(name)
    mode = record.external_attr >> 16
    if record.create_system == _UNIX and mode and not stat.S_ISREG(mode):
        kind = "a symbolic link" if stat.S_ISLNK(mode) else "not a regular file"
        raise LinkMemberError(f"member {name!r} is {kind} (mode {mode:o})")
    if record.external_attr & _DOS_DIRECTORY:
        raise DirectoryMemberError(f"member {name!r} carries the directory attribute")
    if record.flags & _ENCRYPTION_FLAGS:
        raise CompressionMethodError(f"member {name!r} is encrypted")
    if record.method not in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        raise CompressionMethodError(
            f"member {name!r} uses compression method {record.method}; only stored (0) "
            "and deflate (8) are read"
        )
    if name in seen:
        raise DuplicateMemberError(f"member name {name!r} appears twice")
    if record.size > limits.max_member_bytes:
        raise MemberTooLargeError(
            f"member {name!r} declares {record.size} bytes; at most "
            f"{limits.max_member_bytes} are read"
        )
    if record.method == zipfile.ZIP_STORED and record.compressed_size != record.size:
        raise MemberSizeMismatchError(
            f"member {name!r} is stored with {record.compressed_size} bytes but declares "
            f"{record.size}"
        )
    return name


def _member_chunks(handle: BinaryIO, record: Record, name: str) -> Iterator[bytes]:
    crc = 0
    source = (
        _inflate(handle, record, name)
        if record.method == zipfile.ZIP_DEFLATED
        else _stored(handle, record, name)
    )
    for chunk in source:
        crc = zlib.crc32(chunk, crc)
        yield chunk
    if crc != record.crc:
        raise MemberCorruptError(f"member {name!r} fails its CRC-32 check; the zip is damaged")


def _stored(handle: BinaryIO, record: Record, name: str) -> Iterator[bytes]:
    remaining = record.size
    position = record.data_offset
    while remaining:
        handle.seek(position)
        chunk = handle.read(min(_CHUNK, remaining))
        if not chunk:
            raise MemberSizeMismatchError(
                f"member {name!r} ends after {record.size - remaining} of its {record.size} bytes"
            )
        position += len(chunk)
        remaining -= len(chunk)
        yield chunk


def _inflate(handle: BinaryIO, record: Record, name: str) -> Iterator[bytes]:
    """Decompress one member, producing at most ``size + 1`` bytes whatever it holds."""
    declared = record.size
    decompressor = zlib.decompressobj(-15)
    produced = 0
    remaining = record.compressed_size
    position = record.data_offset
    try:
        while True:
            pending = decompressor.unconsumed_tail
            if not pending and remaining:
                handle.seek(position)  # the caller may read other members between chunks
                pending = handle.read(min(_CHUNK, remaining))
                if not pending:
                    raise MemberSizeMismatchError(
                        f"member {name!r}: the file ends inside its compressed data"
                    )
                position += len(pending)
                remaining -= len(pending)
            elif not pending:
                break
            chunk = decompressor.decompress(pending, min(_CHUNK, declared + 1 - produced))
            produced += len(chunk)
            if produced > declared:
                raise MemberSizeMismatchError(
                    f"member {name!r} decompresses to more than the {declared} bytes it "
                    "declares; refused while reading (a zip bomb or a forged size)"
                )
            if chunk:
                yield chunk
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
