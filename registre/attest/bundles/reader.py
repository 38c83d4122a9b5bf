"""Reading audit bundles (``specs/bundle.md``): open one zip safely and check its members.

A bundle is a deterministic zip (:mod:`registre.attest.bundles.zip_container`) holding

* ``manifest.json`` -- format, origin, disclosure (``full`` or ``partial``), tree size, entry
  count, checkpoint sizes, and the byte size and SHA-256 of every other member
  (:mod:`registre.attest.bundles.manifest`);
* ``entries.jsonl`` -- the leaves, byte for byte, each followed by ``\\n`` (canonical JSON
  has no raw newline); in seq order;
* ``checkpoints/<size, 20 digits>.note`` -- signed checkpoint notes with any cosignatures;
* ``proofs.json`` -- only in a partial bundle: an inclusion proof for each disclosed entry
  against the head checkpoint, and consistency proofs between sizes.

Bundles are written by :mod:`registre.attest.bundles.writer` (:func:`write_bundle`,
:func:`bundle_bytes`) from plain data, with the proofs :func:`build_proofs` makes
(:mod:`registre.attest.bundles.proofs`); all are exported by :mod:`registre.attest.bundles`.

:func:`open_bundle` is step 1 of the verifier (``specs/verify.md``): the container checks of
:func:`registre.attest.bundles.zip_container.open_zip`, then the manifest, then every member
against it; ``entries.jsonl`` is streamed once, hashed, split and checked line by line, and only a
digest per group of lines is kept (:class:`registre.attest.bundles._line_groups.LineGroups`;
:class:`registre.attest.bundles.leaves.BundleLeaves` reads the lines again when a later step
asks, and checks them against it). :func:`read_bundle` is the same with the leaves read
into a list, for bundles that fit in memory. Nothing read here is trusted yet: keys in the
manifest are informational only, and signatures are the verifier's job.
"""

from __future__ import annotations

import hashlib
import os
import re
from collections.abc import Iterable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any

from registre.attest.bundles._line_groups import LineGroups
from registre.attest.bundles.leaves import BundleLeaves, LeafHashes
from registre.attest.bundles.manifest import (
    CHECKPOINT_DIR,
    ENTRIES_MEMBER,
    FORMAT,
    MANIFEST_BASE_VALUES,
    MANIFEST_MEMBER,
    MANIFEST_VALUES_PER_MEMBER,
    MAX_MANIFEST_BYTES,
    BundleManifest,
    checkpoint_member,
    parse_manifest,
)
from registre.attest.bundles.proofs import (
    PROOFS_MEMBER,
    BundleProofs,
    parse_proofs,
)
from registre.attest.bundles.zip_container import DEFAULT_LIMITS, ZipArchive, ZipLimits, open_zip
from registre.attest.entries import MAX_LEAF_BYTES
from registre.errors import MalformedError, VerificationError

__all__ = [
    "MAX_NOTE_BYTES",
    "Bundle",
    "EntriesFormatError",
    "LeafCountError",
    "LeafTooLargeError",
    "ManifestMismatchError",
    "MemberDigestMismatchError",
    "MissingMemberError",
    "UncheckedCheckpointError",
    "UnexpectedMemberError",
    "open_bundle",
    "read_bundle",
]

MAX_NOTE_BYTES = 1 << 20

_LINE_OVERHEAD = 64  # a bytes object and its list slot, rounded up
_CHECKPOINT_NAME = re.compile(r"checkpoints/([0-9]{20})\.note")


class EntriesFormatError(MalformedError):
    """``entries.jsonl`` that is not one leaf per ``\\n``-terminated line."""


class LeafTooLargeError(EntriesFormatError):
    """A line of ``entries.jsonl`` longer than any valid entry, refused before parsing."""

    hint = "no entry registre signs is this large: the bundle was not written by registre"


class LeafCountError(EntriesFormatError):
    """More (short) lines in ``entries.jsonl`` than a zip of its size may cost to hold."""

    hint = "genuine entries are hundreds of bytes each: the bundle was not written by registre"


class UnexpectedMemberError(MalformedError):
    """A zip member whose name the bundle format does not define."""


class MissingMemberError(VerificationError):
    """A member the manifest lists, or the format requires, that the zip does not hold."""


class MemberDigestMismatchError(VerificationError):
    """A member whose size or SHA-256 differs from what the manifest records (or is unlisted)."""


class ManifestMismatchError(VerificationError):
    """A manifest whose counts or sizes disagree with the members they describe."""


class UncheckedCheckpointError(ManifestMismatchError):
    """A checkpoint member that is not one of the manifest's ``checkpoint_sizes``, so the
    verifier would never open it."""


# --- the bundle ------------------------------------------------------------------------


@dataclass(frozen=True)
class Bundle:
    """A bundle that passed step 1: members present, hashed and sized as the manifest says.

    ``leaves`` are the lines of ``entries.jsonl`` (a list from :func:`read_bundle`, a
    :class:`BundleLeaves` reading them again from the open zip from :func:`open_bundle`), and
    ``groups`` step 1's digests of their lines, a group of lines each (``leaf_hashes``:
    their RFC 9162 leaf hashes, computed as they are read); ``checkpoints`` maps each size
    to its note bytes; ``proofs`` is set exactly for a partial bundle. Nothing here is
    verified beyond the container: signatures, proofs and sizes are the verifier's steps 2 to 7.
    """

    manifest: BundleManifest
    leaves: Sequence[bytes]
    checkpoints: dict[int, bytes]
    proofs: BundleProofs | None
    groups: LineGroups

    @property
    def leaf_hashes(self) -> LeafHashes:
        """The leaf hash of every line, in line order, computed from ``leaves`` as read."""
        return LeafHashes(self.leaves)

    @property
    def origin(self) -> str:
        return self.manifest.origin

    @property
    def is_partial(self) -> bool:
        return self.manifest.disclosure == "partial"


# --- reading ---------------------------------------------------------------------------


@contextmanager
def open_bundle(
    source: bytes | str | os.PathLike[str], limits: ZipLimits = DEFAULT_LIMITS
) -> Iterator[Bundle]:
    """Step 1 of verification, the zip kept open: ``with open_bundle(path) as bundle: ...``.

    The checks are :func:`read_bundle`'s; ``bundle.leaves`` is a :class:`BundleLeaves`, which
    reads the lines again from the zip when asked (each checked against the digest step 1
    recorded for its group of lines), valid inside the ``with`` block. Memory: under a byte
    per entry (:class:`~registre.attest.bundles._line_groups.LineGroups`).
    """
    with open_zip(source, limits) as archive:
        manifest, members, hashes, _ = _read_members(archive, keep=None)
        size = manifest.members[ENTRIES_MEMBER][0]
        leaves = BundleLeaves(lambda: archive.chunks(ENTRIES_MEMBER, expected_size=size), hashes)
        yield _bundle(manifest, members, leaves, hashes)


def read_bundle(
    source: bytes | str | os.PathLike[str], limits: ZipLimits = DEFAULT_LIMITS
) -> Bundle:
    """Step 1 of verification: read the zip safely and check every member against the manifest.

    1.1-1.3 the container (:func:`registre.attest.bundles.zip_container.open_zip`: every byte
        accounted
        for, bounded counts, sizes and compression ratio, safe names, no links, no
        duplicates, stored/deflate only, sizes enforced while streaming, CRC-32);
    1.4 every name, present or listed in the manifest, is one the format defines
        (:class:`UnexpectedMemberError`);
    1.5 ``manifest.json`` is present and strict JSON following its schema
        (:class:`MissingMemberError`, a JSONFormatError, :class:`ManifestFormatError`);
    1.6 the members are exactly those the manifest lists, plus ``proofs.json`` exactly for a
        partial bundle (:class:`MissingMemberError`, :class:`MemberDigestMismatchError`);
        every checkpoint member, present or listed, is one of ``checkpoint_sizes``
        (:class:`UncheckedCheckpointError`), so step 2 opens every one;
    1.7 every member's byte size and SHA-256 equal the manifest's
        (:class:`MemberDigestMismatchError`): the size the zip declares is compared before
        the member is inflated, a checkpoint over :data:`MAX_NOTE_BYTES` is refused then
        (:class:`ManifestMismatchError`);
    1.8 ``entries.jsonl`` is one non-empty line per leaf, each at most
        :data:`~registre.attest.entries.entry.MAX_LEAF_BYTES` (:class:`LeafTooLargeError`, while
        streaming, before any leaf is parsed), ``entry_count`` of them; the
        checkpoint members are exactly ``checkpoint_sizes``, the largest equal to
        ``tree_size`` (:class:`EntriesFormatError`, :class:`ManifestMismatchError`). That a
        full bundle holds all ``tree_size`` entries is step 4's check, after step 3 has
        named any gap or duplicate precisely;
    1.9 ``proofs.json`` (partial) is no larger than the proofs a bundle of this size can
        need, strict JSON following its schema, one inclusion proof per line with strictly
        increasing seqs (:class:`ProofsFormatError`).

    The leaves come back as a list (the whole ``entries.jsonl`` in memory); a verifier of
    large bundles uses :func:`open_bundle`, which holds a digest per group of lines only.
    """
    with open_zip(source, limits) as archive:
        kept: list[bytes] = []
        manifest, members, hashes, _ = _read_members(archive, keep=kept)
    return _bundle(manifest, members, kept, hashes)


def _bundle(
    manifest: BundleManifest,
    members: dict[str, bytes],
    leaves: Sequence[bytes],
    hashes: LineGroups,
) -> Bundle:
    """1.8 the entry count, then 1.9 the proofs, of a bundle whose members passed 1.4-1.8."""
    if len(hashes) != manifest.entry_count:
        raise ManifestMismatchError(
            f"{ENTRIES_MEMBER} holds {len(hashes)} entries; the manifest says "
            f"{manifest.entry_count}"
        )
    checkpoints = {size: members[checkpoint_member(size)] for size in manifest.checkpoint_sizes}
    # 1.9 proofs
    proofs = None
    if manifest.disclosure == "partial":
        proofs = parse_proofs(members[PROOFS_MEMBER], len(hashes), len(manifest.checkpoint_sizes))
    return Bundle(manifest, leaves, checkpoints, proofs, hashes)


def _read_members(
    archive: ZipArchive, keep: list[bytes] | None
) -> tuple[BundleManifest, dict[str, bytes], LineGroups, int]:
    """Steps 1.4-1.8 on an opened zip: the manifest first, then every member it lists,
    refused before inflating when its declared size is not the manifest's. Returns the
    manifest, the members but ``entries.jsonl``, the digests of its lines (the
    lines themselves appended to ``keep`` if given) and its size."""
    # 1.4 only names the format defines
    for name in archive.names:
        _check_member_name(name, "member")
    # 1.5 the manifest
    if MANIFEST_MEMBER not in archive.names:
        raise MissingMemberError(f"the bundle has no {MANIFEST_MEMBER}")
    manifest = parse_manifest(
        archive.read(MANIFEST_MEMBER, max_bytes=MAX_MANIFEST_BYTES),
        max_values=MANIFEST_BASE_VALUES + MANIFEST_VALUES_PER_MEMBER * len(archive.names),
    )
    for name in manifest.members:  # 1.4 also for the names the manifest lists
        _check_member_name(name, "the manifest lists member")
    # 1.6 exactly the members the manifest lists
    listed = set(manifest.members)
    present = set(archive.names) - {MANIFEST_MEMBER}
    required = {ENTRIES_MEMBER} | {checkpoint_member(s) for s in manifest.checkpoint_sizes}
    if manifest.disclosure == "partial":
        required.add(PROOFS_MEMBER)
    for name in sorted(required | listed):
        if name not in present:
            raise MissingMemberError(f"the bundle lacks {name!r}, which the manifest requires")
    for name in sorted(present - listed):
        raise MemberDigestMismatchError(
            f"member {name!r} is not listed in the manifest, so nothing vouches for it"
        )
    # 1.6 every checkpoint member is one step 2 opens (those of checkpoint_sizes)
    checked_notes = {checkpoint_member(size) for size in manifest.checkpoint_sizes}
    for name in sorted(present):
        if _CHECKPOINT_NAME.fullmatch(name) and name not in checked_notes:
            raise UncheckedCheckpointError(
                f"checkpoint member {name!r} is not among the manifest's checkpoint_sizes "
                f"{list(manifest.checkpoint_sizes)}: it would never be verified"
            )
    if manifest.disclosure == "full" and PROOFS_MEMBER in present:
        raise ManifestMismatchError(f"a full bundle carries no {PROOFS_MEMBER}")
    # 1.7 sizes (before inflating) and digests; 1.8 entries.jsonl split while it streams
    members: dict[str, bytes] = {}
    hashes = LineGroups()
    entries_size = 0
    for name, (size, digest) in sorted(manifest.members.items()):
        if archive.size(name) != size:
            raise MemberDigestMismatchError(
                f"member {name!r} declares {archive.size(name)} bytes in the zip; the manifest "
                f"records {size}: refused before inflating it"
            )
        hasher = hashlib.sha256()
        if name == ENTRIES_MEMBER:
            chunks = archive.chunks(name, expected_size=size)
            hashes = _split_entries(chunks, hasher, archive.budget, keep)
            entries_size = size
        else:
            if name.startswith(CHECKPOINT_DIR) and size > MAX_NOTE_BYTES:
                raise ManifestMismatchError(
                    f"checkpoint member {name!r} is {size} bytes; a note is at most "
                    f"{MAX_NOTE_BYTES}"
                )
            members[name] = archive.read(name, expected_size=size)
            hasher.update(members[name])
        if hasher.hexdigest() != digest:
            raise MemberDigestMismatchError(
                f"member {name!r} has SHA-256 {hasher.hexdigest()}; the manifest records "
                f"{digest}: the member was changed"
            )
    return manifest, members, hashes, entries_size


def _check_member_name(name: str, what: str) -> None:
    if name not in (MANIFEST_MEMBER, ENTRIES_MEMBER, PROOFS_MEMBER) and not (
        _CHECKPOINT_NAME.fullmatch(name)
    ):
        raise UnexpectedMemberError(
            f"{what} {name!r}, which is not part of the bundle format ({FORMAT}): expected "
            f"{MANIFEST_MEMBER}, {ENTRIES_MEMBER}, {PROOFS_MEMBER} and "
            f"{CHECKPOINT_DIR}<size as 20 digits>.note"
        )


def _split_entries(
    chunks: Iterable[bytes], hasher: Any, budget: int, keep: list[bytes] | None
) -> LineGroups:
    """The digests of the lines of ``entries.jsonl`` as it streams in, the member hashed
    on the way (each line also appended to ``keep`` if given); a line longer than any valid
    entry (:data:`~registre.attest.entries.entry.MAX_LEAF_BYTES`) is refused as soon as it is seen,
    before anything parses it (:class:`LeafTooLargeError`). The lines, each counted with
    :data:`_LINE_OVERHEAD` bytes of bookkeeping, stay within the zip's ``budget``
    (:class:`LeafCountError`), so a million one-byte lines cost no more than the file may
    hold, whether they are kept or only hashed."""
    hashes = LineGroups()
    pending = b""
    size = 0
    held = 0
    for chunk in chunks:
        hasher.update(chunk)
        size += len(chunk)
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        for line in lines:
            _check_line(line, len(hashes))
            held += len(line) + _LINE_OVERHEAD
            if held > budget:
                raise LeafCountError(
                    f"{ENTRIES_MEMBER} holds more than {len(hashes)} lines, which with their "
                    f"bookkeeping exceed the {budget} bytes a zip of this size may cost to read"
                )
            hashes.add(line)
            if keep is not None:
                keep.append(line)
        if len(pending) > MAX_LEAF_BYTES:
            _check_line(pending, len(hashes))
    if pending:
        raise EntriesFormatError(
            f"{ENTRIES_MEMBER} must end with a newline after its last leaf", size
        )
    hashes.close()
    return hashes


def _check_line(line: bytes, index: int) -> None:
    if not line:
        raise EntriesFormatError(f"{ENTRIES_MEMBER} line {index + 1} is empty")
    if len(line) > MAX_LEAF_BYTES:
        raise LeafTooLargeError(
            f"{ENTRIES_MEMBER} line {index + 1} is over {MAX_LEAF_BYTES} bytes, more than any "
            "valid entry can be; refused before parsing it"
        )
