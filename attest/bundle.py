"""Audit bundles (``specs/bundle.md``): write one zip from plain data, read one back safely.

A bundle is a deterministic zip (:mod:`registre.attest.bundle_zip`) holding

* ``manifest.json`` -- format, origin, disclosure (``full`` or ``partial``), tree size, entry
  count, checkpoint sizes, and the byte size and SHA-256 of every other member;
* ``entries.jsonl`` -- the leaves, byte for byte, each followed by ``\\n`` (canonical JSON
  has no raw newline); in seq order;
* ``checkpoints/<size, 20 digits>.note`` -- signed checkpoint notes with any cosignatures;
* ``proofs.json`` -- only in a partial bundle: an inclusion proof for each disclosed entry
  against the head checkpoint, and consistency proofs between sizes.

:func:`bundle_bytes` / :func:`write_bundle` take plain data (an origin, leaf bytes, signed
notes, proofs) so an exporter needs no more than its database rows; :func:`build_proofs`
(:mod:`registre.attest.bundle_proofs`, re-exported here) makes the proofs from any
:class:`~registre.attest.merkle.HashSource`. :func:`read_bundle` is step 1
of the verifier (``specs/verify.md``): the container checks of
:func:`registre.attest.bundle_zip.read_zip`, then the manifest, then every member against it.
Nothing read here is trusted yet: keys in the manifest are informational only, and signatures are
the verifier's job.
"""

from __future__ import annotations

import hashlib
import os
import re
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from itertools import pairwise
from pathlib import Path
from typing import Any, Literal

from registre.attest.bundle_proofs import (
    PROOFS_MEMBER,
    BundleProofs,
    InclusionProof,
    ProofsFormatError,
    build_proofs,
    parse_proofs,
)
from registre.attest.bundle_zip import (
    DEFAULT_LIMITS,
    ZipArchive,
    ZipLimits,
    deterministic_zip,
    open_zip,
)
from registre.attest.canonical import canonical_bytes, parse_strict
from registre.attest.checkpoint import Checkpoint
from registre.attest.entry import MAX_LEAF_BYTES
from registre.attest.errors import MalformedError, RefusedError, VerificationError
from registre.attest.note import parse_note

__all__ = [
    "CHECKPOINT_DIR",
    "ENTRIES_MEMBER",
    "FORMAT",
    "MANIFEST_MEMBER",
    "MAX_MANIFEST_BYTES",
    "MAX_MANIFEST_STRING",
    "MAX_MANIFEST_VALUES",
    "MAX_NOTE_BYTES",
    "PROOFS_MEMBER",
    "Bundle",
    "BundleProofs",
    "BundleWriteError",
    "EntriesFormatError",
    "InclusionProof",
    "LeafCountError",
    "LeafTooLargeError",
    "Manifest",
    "ManifestFormatError",
    "ManifestMismatchError",
    "MemberDigestMismatchError",
    "MissingMemberError",
    "ProofsFormatError",
    "UncheckedCheckpointError",
    "UnexpectedMemberError",
    "build_proofs",
    "bundle_bytes",
    "checkpoint_member",
    "read_bundle",
    "write_bundle",
]

FORMAT = "registre-bundle/1"
MANIFEST_MEMBER = "manifest.json"
ENTRIES_MEMBER = "entries.jsonl"
CHECKPOINT_DIR = "checkpoints/"
MAX_MANIFEST_BYTES = 16 << 20
MAX_NOTE_BYTES = 1 << 20
MAX_MANIFEST_VALUES = 1 << 16
"""Values in a manifest at most: 64, and 4 per member of the zip (a member's record is 3, a
checkpoint's size 1), never more than this; so ``informational`` stays small."""
_MANIFEST_BASE_VALUES = 64
_MANIFEST_VALUES_PER_MEMBER = 4
MAX_MANIFEST_STRING = 1 << 16

_LINE_OVERHEAD = 64  # a bytes object and its list slot, rounded up
_CHECKPOINT_NAME = re.compile(r"checkpoints/([0-9]{20})\.note")
_SHA256_HEX = re.compile(r"[0-9a-f]{64}")
_MANIFEST_FIELDS = (
    "format",
    "origin",
    "disclosure",
    "tree_size",
    "entry_count",
    "checkpoint_sizes",
    "members",
)

Disclosure = Literal["full", "partial"]


class BundleWriteError(RefusedError):
    """Writer input that cannot make a valid bundle; nothing was written."""


class ManifestFormatError(MalformedError):
    """``manifest.json`` that does not follow the manifest schema."""


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


def checkpoint_member(size: int) -> str:
    """The member name of the checkpoint of ``size``: ``checkpoints/`` + 20 digits + ``.note``."""
    return f"{CHECKPOINT_DIR}{size:020d}.note"


# --- the manifest ----------------------------------------------------------------------


@dataclass(frozen=True)
class Manifest:
    """The parsed ``manifest.json``. ``members`` maps each other member to (bytes, sha256 hex);
    ``informational`` holds keys the exporter named, which the verifier never trusts."""

    origin: str
    disclosure: Disclosure
    tree_size: int
    entry_count: int
    checkpoint_sizes: tuple[int, ...]
    members: Mapping[str, tuple[int, str]]
    informational: Mapping[str, Any] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        document: dict[str, Any] = {
            "format": FORMAT,
            "origin": self.origin,
            "disclosure": self.disclosure,
            "tree_size": self.tree_size,
            "entry_count": self.entry_count,
            "checkpoint_sizes": list(self.checkpoint_sizes),
            "members": {
                name: {"bytes": size, "sha256": digest}
                for name, (size, digest) in sorted(self.members.items())
            },
        }
        if self.informational:
            document["informational"] = dict(self.informational)
        return document


@dataclass(frozen=True)
class Bundle:
    """A bundle that passed step 1: members present, hashed and sized as the manifest says.

    ``leaves`` are the lines of ``entries.jsonl``; ``checkpoints`` maps each size to its note
    bytes; ``proofs`` is set exactly for a partial bundle. Nothing here is verified beyond
    the container: signatures, proofs and sizes are the verifier's steps 2 to 7.
    """

    manifest: Manifest
    leaves: list[bytes]
    checkpoints: dict[int, bytes]
    proofs: BundleProofs | None

    @property
    def origin(self) -> str:
        return self.manifest.origin

    @property
    def is_partial(self) -> bool:
        return self.manifest.disclosure == "partial"


# --- writing ---------------------------------------------------------------------------


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
    that cannot make a valid bundle; signatures are not checked here.
    """
    notes = _checkpoints_by_size(origin, checkpoints)
    head = max(notes)
    for index, leaf in enumerate(leaves):
        if not isinstance(leaf, bytes) or not leaf or b"\n" in leaf or b"\r" in leaf:
            raise BundleWriteError(
                f"leaf {index} is empty or holds a raw newline; leaves are canonical JSON"
            )
    disclosure: Disclosure = "full" if seqs is None else "partial"
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
    members: dict[str, bytes] = {ENTRIES_MEMBER: b"".join(leaf + b"\n" for leaf in leaves)}
    for size, note in notes.items():
        members[checkpoint_member(size)] = note
    if proofs is not None:
        members[PROOFS_MEMBER] = canonical_bytes(proofs.to_json())
    manifest = Manifest(
        origin=origin,
        disclosure=disclosure,
        tree_size=head,
        entry_count=len(leaves),
        checkpoint_sizes=tuple(sorted(notes)),
        members={
            name: (len(data), hashlib.sha256(data).hexdigest()) for name, data in members.items()
        },
        informational=dict(informational or {}),
    )
    members[MANIFEST_MEMBER] = canonical_bytes(manifest.to_json())
    return deterministic_zip(members)


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
    """Write :func:`bundle_bytes` to ``path`` safely; return the number of bytes written.

    The zip goes to a temporary file in the target folder, is flushed and fsynced, then
    renamed over ``path`` (``overwrite=True``) or linked to it only if ``path`` does not
    exist yet (:class:`BundleWriteError` if it does); the folder is fsynced after. A crash
    leaves either no bundle or a complete one, never a torn file.
    """
    data = bundle_bytes(
        origin=origin,
        leaves=leaves,
        checkpoints=checkpoints,
        seqs=seqs,
        proofs=proofs,
        informational=informational,
    )
    target = Path(path)
    if not overwrite and target.exists():
        raise BundleWriteError(f"{target} exists; choose another name or allow overwriting")
    handle, temporary = tempfile.mkstemp(prefix=f".{target.name}.", dir=target.parent)
    try:
        with os.fdopen(handle, "wb") as stream:
            stream.write(data)
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
            os.unlink(temporary)
    except BaseException:
        if os.path.exists(temporary):
            os.unlink(temporary)
        raise
    _fsync_directory(target.parent)
    return len(data)


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


# --- reading ---------------------------------------------------------------------------


def read_bundle(
    source: bytes | str | os.PathLike[str], limits: ZipLimits = DEFAULT_LIMITS
) -> Bundle:
    """Step 1 of verification: read the zip safely and check every member against the manifest.

    1.1-1.3 the container (:func:`registre.attest.bundle_zip.open_zip`: every byte accounted
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
        :data:`~registre.attest.entry.MAX_LEAF_BYTES` (:class:`LeafTooLargeError`, while
        streaming, before any leaf is parsed), ``entry_count`` of them; the
        checkpoint members are exactly ``checkpoint_sizes``, the largest equal to
        ``tree_size`` (:class:`EntriesFormatError`, :class:`ManifestMismatchError`). That a
        full bundle holds all ``tree_size`` entries is step 4's check, after step 3 has
        named any gap or duplicate precisely;
    1.9 ``proofs.json`` (partial) is no larger than the proofs a bundle of this size can
        need, strict JSON following its schema, one inclusion proof per line with strictly
        increasing seqs (:class:`ProofsFormatError`).
    """
    with open_zip(source, limits) as archive:
        manifest, members, leaves = _read_members(archive)
    if len(leaves) != manifest.entry_count:
        raise ManifestMismatchError(
            f"{ENTRIES_MEMBER} holds {len(leaves)} entries; the manifest says "
            f"{manifest.entry_count}"
        )
    checkpoints = {size: members[checkpoint_member(size)] for size in manifest.checkpoint_sizes}
    # 1.9 proofs
    proofs = None
    if manifest.disclosure == "partial":
        proofs = parse_proofs(members[PROOFS_MEMBER], len(leaves), len(manifest.checkpoint_sizes))
    return Bundle(manifest, leaves, checkpoints, proofs)


def _read_members(archive: ZipArchive) -> tuple[Manifest, dict[str, bytes], list[bytes]]:
    """Steps 1.4-1.8 on an opened zip: the manifest first, then every member it lists,
    refused before inflating when its declared size is not the manifest's."""
    # 1.4 only names the format defines
    for name in archive.names:
        _check_member_name(name, "member")
    # 1.5 the manifest
    if MANIFEST_MEMBER not in archive.names:
        raise MissingMemberError(f"the bundle has no {MANIFEST_MEMBER}")
    manifest = _parse_manifest(
        archive.read(MANIFEST_MEMBER, max_bytes=MAX_MANIFEST_BYTES),
        max_values=_MANIFEST_BASE_VALUES + _MANIFEST_VALUES_PER_MEMBER * len(archive.names),
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
    leaves: list[bytes] = []
    for name, (size, digest) in sorted(manifest.members.items()):
        if archive.size(name) != size:
            raise MemberDigestMismatchError(
                f"member {name!r} declares {archive.size(name)} bytes in the zip; the manifest "
                f"records {size}: refused before inflating it"
            )
        hasher = hashlib.sha256()
        if name == ENTRIES_MEMBER:
            chunks = archive.chunks(name, expected_size=size)
            leaves = _split_entries(chunks, hasher, archive.budget)
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
    return manifest, members, leaves


def _check_member_name(name: str, what: str) -> None:
    if name not in (MANIFEST_MEMBER, ENTRIES_MEMBER, PROOFS_MEMBER) and not (
        _CHECKPOINT_NAME.fullmatch(name)
    ):
        raise UnexpectedMemberError(
            f"{what} {name!r}, which is not part of the bundle format ({FORMAT}): expected "
            f"{MANIFEST_MEMBER}, {ENTRIES_MEMBER}, {PROOFS_MEMBER} and "
            f"{CHECKPOINT_DIR}<size as 20 digits>.note"
        )


def _split_entries(chunks: Iterable[bytes], hasher: Any, budget: int) -> list[bytes]:
    """The lines of ``entries.jsonl`` as it streams in, hashed on the way; a line longer
    than any valid entry (:data:`~registre.attest.entry.MAX_LEAF_BYTES`) is refused as soon
    as it is seen, before anything parses it (:class:`LeafTooLargeError`). The lines held,
    each counted with :data:`_LINE_OVERHEAD` bytes of bookkeeping, stay within the zip's
    ``budget`` (:class:`LeafCountError`), so a million one-byte lines cost no more memory
    than the file may hold."""
    leaves: list[bytes] = []
    pending = b""
    size = 0
    held = 0
    for chunk in chunks:
        hasher.update(chunk)
        size += len(chunk)
        lines = (pending + chunk).split(b"\n")
        pending = lines.pop()
        for line in lines:
            _check_line(line, len(leaves))
            held += len(line) + _LINE_OVERHEAD
            if held > budget:
                raise LeafCountError(
                    f"{ENTRIES_MEMBER} holds more than {len(leaves)} lines, which with their "
                    f"bookkeeping exceed the {budget} bytes a zip of this size may cost to read"
                )
            leaves.append(line)
        if len(pending) > MAX_LEAF_BYTES:
            _check_line(pending, len(leaves))
    if pending:
        raise EntriesFormatError(
            f"{ENTRIES_MEMBER} must end with a newline after its last leaf", size
        )
    return leaves


def _check_line(line: bytes, index: int) -> None:
    if not line:
        raise EntriesFormatError(f"{ENTRIES_MEMBER} line {index + 1} is empty")
    if len(line) > MAX_LEAF_BYTES:
        raise LeafTooLargeError(
            f"{ENTRIES_MEMBER} line {index + 1} is over {MAX_LEAF_BYTES} bytes, more than any "
            "valid entry can be; refused before parsing it"
        )


def _parse_manifest(data: bytes, max_values: int = MAX_MANIFEST_VALUES) -> Manifest:
    value = parse_strict(
        data,
        max_depth=8,
        max_bytes=MAX_MANIFEST_BYTES,
        max_elements=min(max_values, MAX_MANIFEST_VALUES),
        max_string_length=MAX_MANIFEST_STRING,
    )
    if not isinstance(value, dict):
        raise ManifestFormatError("the manifest must be a JSON object")
    missing = [name for name in _MANIFEST_FIELDS if name not in value]
    extra = sorted(set(value) - set(_MANIFEST_FIELDS) - {"informational"})
    if missing or extra:
        raise ManifestFormatError(f"manifest fields: missing {missing}, unexpected {extra}")
    if value["format"] != FORMAT:
        raise ManifestFormatError(
            f"manifest format {value['format']!r} is not {FORMAT!r}; this verifier reads "
            f"{FORMAT} only"
        )
    origin = value["origin"]
    if not isinstance(origin, str) or not origin:
        raise ManifestFormatError("manifest origin must be a non-empty string")
    disclosure = value["disclosure"]
    if disclosure not in ("full", "partial"):
        raise ManifestFormatError('manifest disclosure must be "full" or "partial"')
    tree_size = _count(value["tree_size"], "tree_size")
    entry_count = _count(value["entry_count"], "entry_count")
    sizes = value["checkpoint_sizes"]
    if not isinstance(sizes, list) or not sizes:
        raise ManifestFormatError("manifest checkpoint_sizes must be a non-empty list")
    checked = tuple(_count(size, "checkpoint_sizes[]") for size in sizes)
    if any(b <= a for a, b in pairwise(checked)):
        raise ManifestFormatError("manifest checkpoint_sizes must be strictly increasing")
    if checked[-1] != tree_size:
        raise ManifestFormatError(
            f"manifest tree_size {tree_size} is not its largest checkpoint size {checked[-1]}"
        )
    informational = value.get("informational", {})
    if not isinstance(informational, dict):
        raise ManifestFormatError("manifest informational must be an object")
    return Manifest(
        origin=origin,
        disclosure=disclosure,
        tree_size=tree_size,
        entry_count=entry_count,
        checkpoint_sizes=checked,
        members=_parse_members(value["members"]),
        informational=informational,
    )


def _parse_members(value: object) -> dict[str, tuple[int, str]]:
    if not isinstance(value, dict):
        raise ManifestFormatError("manifest members must be an object")
    members: dict[str, tuple[int, str]] = {}
    for name, record in value.items():
        if name == MANIFEST_MEMBER:
            raise ManifestFormatError("the manifest cannot list itself")
        if not isinstance(record, dict) or set(record) != {"bytes", "sha256"}:
            raise ManifestFormatError(
                f'manifest member {name!r} must be {{"bytes": N, "sha256": HEX}}'
            )
        digest = record["sha256"]
        if not isinstance(digest, str) or not _SHA256_HEX.fullmatch(digest):
            raise ManifestFormatError(f"manifest member {name!r}: sha256 must be 64 hex digits")
        members[name] = (_count(record["bytes"], f"members[{name!r}].bytes"), digest)
    return members


def _count(value: object, name: str) -> int:
    if type(value) is not int or value < 0:
        raise ManifestFormatError(f"manifest {name} must be a non-negative integer")
    return value
