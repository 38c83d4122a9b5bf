"""Writing audit bundles (``specs/bundle.md``): a zip streamed from plain data.

:func:`write_bundle` (to a file) and :func:`bundle_bytes` (in memory) take plain data (an
origin, leaf bytes, signed notes, proofs) so an exporter needs no more than its database rows.
Both stream: the leaves are iterated once, each written to ``entries.jsonl`` as it comes
(through :class:`registre.attest.bundles.zip_container.ZipStreamWriter`) while its size and SHA-256
are
summed for the manifest, which follows it in the zip; so :func:`write_bundle` holds no more
than one leaf and a buffer of :data:`WRITE_BUFFER` bytes, whatever the thread's length. The
bytes are those of :func:`registre.attest.bundles.zip_container.deterministic_zip` over the members:
the format did not change when the writer began to stream.
"""

from __future__ import annotations

import hashlib
import io
import os
import tempfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import suppress
from dataclasses import dataclass
from itertools import pairwise
from pathlib import Path
from typing import Any, BinaryIO

from registre.attest.bundles.manifest import (
    ENTRIES_MEMBER,
    MANIFEST_MEMBER,
    BundleManifest,
    Disclosure,
    checkpoint_member,
)
from registre.attest.bundles.proofs import PROOFS_MEMBER, BundleProofs
from registre.attest.bundles.zip_container import Zip64RequiredError, ZipStreamWriter
from registre.attest.canonical_json import canonical_bytes
from registre.attest.errors import output_error
from registre.attest.notes import Checkpoint, parse_note
from registre.errors import MalformedError, RefusedError

__all__ = ["WRITE_BUFFER", "BundleWriteError", "bundle_bytes", "write_bundle"]

WRITE_BUFFER = 1 << 20
"""Bytes of ``entries.jsonl`` gathered before they are handed to the compressor."""


class BundleWriteError(RefusedError):
    """Writer input that cannot make a valid bundle; nothing was written."""


@dataclass(frozen=True)
class _Plan:
    """What a bundle will hold besides its entries, checked before a byte is written."""

    origin: str
    notes: dict[int, bytes]
    disclosure: Disclosure
    count: int
    proofs: bytes | None
    informational: dict[str, Any]


def _plan(
    origin: str,
    leaves: Sequence[bytes],
    checkpoints: Sequence[str | bytes],
    seqs: Sequence[int] | None,
    proofs: BundleProofs | None,
    informational: Mapping[str, Any] | None,
) -> _Plan:
    notes = _checkpoints_by_size(origin, checkpoints)
    head = max(notes)
    if seqs is None:
        if proofs is not None:
            raise BundleWriteError("a full bundle carries no proofs.json; pass seqs for partial")
        if len(leaves) != head:
            raise BundleWriteError(
                f"a full bundle holds every entry of its head checkpoint: {head} expected, "
                f"{len(leaves)} given"
            )
    else:
        _check_partial_input(seqs, leaves, proofs, head)
    return _Plan(
        origin=origin,
        notes=notes,
        disclosure="full" if seqs is None else "partial",
        count=len(leaves),
        proofs=None if proofs is None else canonical_bytes(proofs.to_json()),
        informational=dict(informational or {}),
    )


def bundle_bytes(
    *,
    origin: str,
    leaves: Sequence[bytes],
    checkpoints: Sequence[str | bytes],
    seqs: Sequence[int] | None = None,
    proofs: BundleProofs | None = None,
    informational: Mapping[str, Any] | None = None,
) -> bytes:
    """The zip bytes of a bundle. Deterministic: the same arguments give the same bytes.

    ``leaves`` are entry leaf bytes in seq order. A *full* bundle (``seqs`` is None) holds
    leaves ``0 .. n-1`` and its largest checkpoint must have size ``n``. A *partial* bundle
    gives the disclosed ``seqs`` (strictly increasing, one per leaf) and ``proofs`` with
    exactly one inclusion proof per seq, in order. ``checkpoints`` are signed notes (any
    order) for ``origin``, with distinct sizes; the largest is the bundle's head.
    ``informational`` (e.g. ``{"log_key": vkey}``) is copied into the manifest for people;
    verifiers ignore it. Raises :class:`BundleWriteError` (nothing is produced) for input
    that cannot make a valid bundle; signatures are not checked here. The whole zip is
    built in memory: files are written by :func:`write_bundle`, which streams.
    """
    plan = _plan(origin, leaves, checkpoints, seqs, proofs, informational)
    buffer = io.BytesIO()
    _write_zip(buffer, plan, leaves)
    return buffer.getvalue()


def write_bundle(
    path: str | os.PathLike[str],
    *,
    origin: str,
    leaves: Sequence[bytes],
    checkpoints: Sequence[str | bytes],
    seqs: Sequence[int] | None = None,
    proofs: BundleProofs | None = None,
    informational: Mapping[str, Any] | None = None,
    overwrite: bool = False,
) -> int:
    """Write the bundle :func:`bundle_bytes` makes of the same arguments to ``path``, byte for
    byte, safely; return the number of bytes written.

    The leaves are iterated once (twice for an ``entries.jsonl`` over ~1.9 GiB, whose zip64
    records are known only once it has grown that large), each streamed into the zip as it
    comes: memory does not grow with their number. An error raised by the leaves' iterator
    (an exporter's StoreCorruptError) propagates, with nothing written. The zip goes to a
    temporary file in the target folder, is flushed and fsynced, then renamed over ``path``
    (``overwrite=True``) or linked to it only if ``path`` does not exist yet
    (:class:`BundleWriteError` if it does); the folder is fsynced after. A crash leaves either
    no bundle or a complete one, never a torn file. A file that cannot be written is
    OutputFolderError or OutputWriteError, naming ``path`` and never the temporary file.
    """
    plan = _plan(origin, leaves, checkpoints, seqs, proofs, informational)
    target = Path(path)
    if not overwrite and target.exists():
        raise BundleWriteError(f"{target} exists; choose another name or allow overwriting")
    try:
        handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    except OSError as error:
        raise output_error(target, error) from None
    try:
        with os.fdopen(handle, "w+b") as stream:
            written = _write_zip(stream, plan, leaves)
            stream.flush()
            os.fsync(stream.fileno())
        if overwrite:
            os.replace(temporary, target)
        else:
            try:
                os.link(temporary, target)
            except FileExistsError:
                raise BundleWriteError(
                    f"{target} appeared while writing; nothing was replaced"
                ) from None
            except OSError as error:  # a file system without hard links, ...
                raise output_error(target, error).with_hint(
                    "this file system may not hold hard links: write elsewhere, or pass "
                    "--force (the bundle then replaces by rename)"
                ) from None
            os.unlink(temporary)
    except OSError as error:  # the error names the temporary file: name the bundle instead
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise output_error(target, error) from None
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    _fsync_directory(target.parent)
    return written


def _write_zip(stream: BinaryIO, plan: _Plan, leaves: Iterable[bytes]) -> int:
    """The zip of ``plan`` and ``leaves`` written to ``stream`` (from its start); its size."""
    try:
        _write_members(stream, plan, leaves, zip64=False)
    except Zip64RequiredError:
        stream.seek(0)
        stream.truncate()
        _write_members(stream, plan, leaves, zip64=True)
    return stream.tell()


def _write_members(stream: BinaryIO, plan: _Plan, leaves: Iterable[bytes], zip64: bool) -> None:
    """Members in name order: checkpoints, ``entries.jsonl`` (streamed; its size and digest
    summed on the way), the manifest (which needs them), ``proofs.json``."""
    writer = ZipStreamWriter(stream)
    members: dict[str, tuple[int, str]] = {}
    try:
        for size, note in plan.notes.items():
            name = checkpoint_member(size)
            writer.write(name, note)
            members[name] = (len(note), hashlib.sha256(note).hexdigest())
        with writer.open(ENTRIES_MEMBER, zip64=zip64) as member:
            count, size, digest = _stream_entries(leaves, member.write)
        if count != plan.count:
            raise BundleWriteError(f"{plan.count} leaves announced, {count} given")
        members[ENTRIES_MEMBER] = (size, digest)
        if plan.proofs is not None:
            members[PROOFS_MEMBER] = (len(plan.proofs), hashlib.sha256(plan.proofs).hexdigest())
        manifest = BundleManifest(
            origin=plan.origin,
            disclosure=plan.disclosure,
            tree_size=max(plan.notes),
            entry_count=count,
            checkpoint_sizes=tuple(plan.notes),
            members=members,
            informational=plan.informational,
        )
        writer.write(MANIFEST_MEMBER, canonical_bytes(manifest.to_json()))
        if plan.proofs is not None:
            writer.write(PROOFS_MEMBER, plan.proofs)
    except BaseException:
        with suppress(Exception):  # the first error is the one to report
            writer.close()  # so that the abandoned zipfile never writes to the stream again
        raise
    writer.close()


def _stream_entries(
    leaves: Iterable[bytes], write: Callable[[bytes | bytearray], int]
) -> tuple[int, int, str]:
    """Write each leaf and a newline through ``write``, :data:`WRITE_BUFFER` bytes at a time;
    ``(leaves, bytes, sha256 hex)`` of what was written. A leaf that is not non-empty bytes
    without a raw newline is :class:`BundleWriteError`."""
    hasher = hashlib.sha256()
    buffer = bytearray()
    size = 0
    count = 0
    for leaf in leaves:
        if not isinstance(leaf, bytes) or not leaf or b"\n" in leaf or b"\r" in leaf:
            raise BundleWriteError(
                f"leaf {count} is empty or holds a raw newline; leaves are canonical JSON"
            )
        buffer += leaf
        buffer += b"\n"
        count += 1
        if len(buffer) >= WRITE_BUFFER:
            hasher.update(buffer)
            size += write(buffer)
            buffer.clear()
    hasher.update(buffer)
    size += write(buffer)
    return count, size, hasher.hexdigest()


def _fsync_directory(folder: Path) -> None:
    try:
        descriptor = os.open(folder, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory descriptors
        return
    try:
        os.fsync(descriptor)
    finally:
        os.close(descriptor)


def _checkpoints_by_size(origin: str, checkpoints: Sequence[str | bytes]) -> dict[int, bytes]:
    if not checkpoints:
        raise BundleWriteError("a bundle needs at least one signed checkpoint")
    notes: dict[int, bytes] = {}
    for note in checkpoints:
        data = note.encode("utf-8") if isinstance(note, str) else bytes(note)
        try:
            text, _ = parse_note(data)
            checkpoint = Checkpoint.parse(text)
        except MalformedError as exc:
            raise BundleWriteError(f"a checkpoint is not a signed checkpoint note: {exc}") from exc
        if checkpoint.origin != origin:
            raise BundleWriteError(
                f"checkpoint of size {checkpoint.size} has origin {checkpoint.origin!r}, "
                f"not the bundle's {origin!r}"
            )
        if checkpoint.size in notes:
            raise BundleWriteError(f"two checkpoints of size {checkpoint.size}")
        notes[checkpoint.size] = data
    return dict(sorted(notes.items()))


def _check_partial_input(
    seqs: Sequence[int], leaves: Sequence[bytes], proofs: BundleProofs | None, head: int
) -> None:
    if len(seqs) != len(leaves):
        raise BundleWriteError(f"{len(seqs)} seqs for {len(leaves)} leaves; give one per leaf")
    if any(b <= a for a, b in pairwise(seqs)) or any(not 0 <= seq < head for seq in seqs):
        raise BundleWriteError(
            f"disclosed seqs must be strictly increasing and inside the head tree of {head}"
        )
    if proofs is None or [proof.seq for proof in proofs.inclusion] != list(seqs):
        raise BundleWriteError(
            "a partial bundle needs one inclusion proof per disclosed seq, in order "
            "(see build_proofs)"
        )
