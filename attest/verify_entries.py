"""Step 3 of bundle verification: every entry opened under a pinned key and bound to its place.

For each leaf, in line order (``specs/verify.md`` step 3):

3.1 open it as received (:func:`open_leaf`, equivalent to :func:`registre.attest.entry.open_entry`):
    strict canonical JSON, envelope structure, a PINNED key with this key id whose name gives
    the entry's origin, the Ed25519 signature, the body schema of its kind;
3.2 its ``log`` is the bundle's origin (:class:`EntryOriginMismatchError`);
3.3 its ``seq`` is the one expected at this line: ``0 .. n-1`` in a full bundle
    (:class:`SeqGapError`, :class:`SeqDuplicateError`, :class:`SeqOrderError`), the seq
    ``proofs.json`` discloses for the line in a partial one (:class:`DisclosedSeqMismatchError`);
3.4 in a full bundle, its ``prev.root`` is the root recomputed over the leaves before it
    (:class:`PrevRootMismatchError`); a partial bundle proves it in step 4 instead;
3.5 in a full bundle, its signed lifecycle head is the chain over the lifecycle entries
    before it (:func:`registre.attest.lifecycle_chain.check_lifecycle_chain`, run by the
    verifier over :attr:`EntriesChecked.marks`); a partial bundle's is step 4.6.

The leaves are read once, in line order, in chunks of at most :data:`MAX_CHUNK` lines: each
chunk is checked (in this process, or by one of ``jobs`` processes, at most
:data:`CHUNKS_IN_FLIGHT` per process queued at a time) and only what later steps need is kept:
the counts per kind, the bodies of the :data:`SEMANTIC_KINDS`, the leaf hashes packed 32
bytes each, the roots asked for, and the chain marks that can decide the lifecycle chain
check (:func:`thin_marks`). So memory does not grow with the leaves' bytes.
Every chunk stops at its first failure; the first failing line is then re-run in this
process, so the error raised is the real one, for the first bad line, whatever the number of
jobs.

:func:`open_leaf` is the fast path. It reads the bytes with the C JSON parser and accepts them
only if the C encoder (sorted keys, no whitespace, no ASCII escaping) writes the value back as
exactly the same bytes, no character lies beyond U+FFFF (where JCS key order, by UTF-16
units, differs from the encoder's), the envelope passes open_entry's own structure checks
with ``seq`` within +/-(2**53-1), the signature verifies and the body passes its schema. A
value passing all that holds no float (none survives the envelope's types and the body
schema), no NaN (the encoder refuses it), no duplicate key (the re-encoding would be
shorter), no lone surrogate (it has no UTF-8 form) and only safe integers (the body schema
bounds them), and is nested at most 34 deep -- so the bytes are exactly its RFC 8785 form,
and the canonical envelope, the signed message, is a slice of the leaf: nothing is parsed or
serialised twice. Anything else -- and every failure -- goes through
:func:`registre.attest.entry.open_entry` itself, which raises the precise error.

The body's schema: rules 1-3 of :func:`~registre.attest.bodies.validate_body` (plain JSON
values, no float, safe integers, Unicode strings, nesting, size) hold by the text whenever
(:func:`_body_rules_hold`) the parse refused floats (``parse_float`` raises: the fast path
returns None), the text holds no run of 16 digits (every integer then has at most 15, so
lies within +/-(2**53-1)), the leaf is at most MAX_BODY_BYTES long (the body's compact JSON
is a slice of it) and the body nests at most MAX_DEPTH containers (sure when the text holds
at most MAX_DEPTH + 2 brackets, the leaf and its envelope being two of them; else walked).
The C parser gives only dicts with str keys, lists, str, int, bool and None; a string with a
lone surrogate cannot re-encode to the text read (valid UTF-8). Then
:func:`~registre.attest.bodies.validate_schema` alone gives validate_body's verdict; when a
condition fails, validate_body runs whole.
"""

from __future__ import annotations

import json
import math
import re
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass, field
from itertools import islice
from typing import Any, overload

from registre.attest.bodies import (
    LIFECYCLE_KINDS,
    MAX_BODY_BYTES,
    MAX_DEPTH,
    validate_body,
    validate_schema,
)
from registre.attest.bundle_leaves import PackedHashes
from registre.attest.entry import (
    _FAST_JSON,
    ENTRY_SIGNATURE_PREFIX,
    Entry,
    _find_key,
    _read_envelope,
    _split_leaf,
    open_entry,
)
from registre.attest.entry_records import EntryRecord, PackedRecords, RereadLines
from registre.attest.errors import OriginMismatchError, RegistreError, VerificationError
from registre.attest.keys import Verifier
from registre.attest.lifecycle_chain import ChainMark
from registre.attest.merkle import CompactRange, leaf_hash
from registre.attest.strict_json import MAX_SAFE_INTEGER

__all__ = [
    "CHUNKS_IN_FLIGHT",
    "MAX_CHUNK",
    "MIN_LEAVES_PER_PROCESS",
    "SEMANTIC_KINDS",
    "DisclosedSeqMismatchError",
    "EntriesChecked",
    "EntriesProgress",
    "EntryOriginMismatchError",
    "EntryRecord",
    "PrevRootMismatchError",
    "RecordsWithBodies",
    "SeqDuplicateError",
    "SeqGapError",
    "SeqMismatchError",
    "SeqOrderError",
    "check_entries",
    "check_entry",
    "open_leaf",
    "thin_marks",
]

SEMANTIC_KINDS: frozenset[str] = LIFECYCLE_KINDS | {"context.compaction", "model.call"}
"""Kinds whose bodies steps 6 and 7 read; only these bodies are kept after step 3."""

MIN_LEAVES_PER_PROCESS = 1024
"""Below this many leaves per requested process, step 3 runs in this process alone."""

CHUNKS_PER_PROCESS = 32
"""Chunks per process: small enough that no process idles long while another finishes."""

MAX_CHUNK = 4096
"""Lines per chunk at most (a few MB of leaves), whatever the bundle's size."""

CHUNKS_IN_FLIGHT = 2
"""Chunks per process submitted and not yet collected, at most: what bounds the leaves held."""

_LEAF_HEAD = len(b'{"entry":')
_LEAF_TAIL = len(b',"sig":"') + 88 + len(b'"}')  # 64-byte signature in base64: 88 characters
_ASTRAL = re.compile("[\U00010000-\U0010ffff]")
_LONG_DIGITS = re.compile("[0-9]{16}")
_FEW_BRACKETS = MAX_DEPTH + 2  # the leaf's and the envelope's braces hold the body


def _refuse_float(text: str) -> float:
    """``parse_float`` of the fast path: a float sends the leaf to open_entry."""
    raise ValueError(f"a float ({text[:40]}): not for the fast path")


_FAST_READ = json.JSONDecoder(parse_float=_refuse_float).decode


class EntryOriginMismatchError(OriginMismatchError):
    """An entry whose ``log`` is not the bundle's origin (an entry from another thread)."""


class SeqMismatchError(VerificationError):
    """An entry whose ``seq`` is not the one expected at its line."""


class SeqGapError(SeqMismatchError):
    """A full bundle missing an entry: the expected seq appears nowhere after its line."""


class SeqDuplicateError(SeqMismatchError):
    """A full bundle holding an entry twice (a seq already seen)."""


class SeqOrderError(SeqMismatchError):
    """A full bundle whose entries are out of order (the expected seq appears later)."""


class DisclosedSeqMismatchError(SeqMismatchError):
    """A partial bundle entry whose seq is not the one ``proofs.json`` discloses for its line."""


class PrevRootMismatchError(VerificationError):
    """An entry whose signed ``prev.root`` is not the root of the tree before it."""


# --- opening one leaf ------------------------------------------------------------------


def open_leaf(leaf: bytes, keys: Sequence[Verifier]) -> Entry:
    """Exactly :func:`registre.attest.entry.open_entry` (same result, same errors), faster.

    See the module docstring for why the fast path accepts only what open_entry accepts.
    """
    entry = _open_fast(leaf, keys)
    return entry if entry is not None else open_entry(leaf, keys)


def _open_fast(leaf: bytes, keys: Sequence[Verifier]) -> Entry | None:
    try:
        text = leaf.decode("utf-8")
        if len(text) != len(leaf) and _ASTRAL.search(text):
            return None  # JCS orders such keys by UTF-16 units; the C encoder would not
        value = _FAST_READ(text)  # the C parser; a float raises ValueError
        if _FAST_JSON.encode(value) != text:  # same text, so same UTF-8 bytes
            return None
    except (ValueError, RecursionError):  # UnicodeError and JSONDecodeError are ValueErrors
        return None
    try:
        envelope, signature = _split_leaf(value)
        entry = _read_envelope(envelope, signature, leaf)
        if entry.seq > MAX_SAFE_INTEGER:
            return None
        verifier = _find_key(entry, keys)
        verifier.verify(ENTRY_SIGNATURE_PREFIX + leaf[_LEAF_HEAD:-_LEAF_TAIL], signature)
        if _body_rules_hold(text, len(leaf), entry.body):
            validate_schema(entry.kind, entry.body)
        else:
            validate_body(entry.kind, entry.body)
    except RegistreError:
        return None
    return entry


def _body_rules_hold(text: str, size: int, body: dict[str, Any]) -> bool:
    """Whether rules 1-3 of validate_body hold for ``body``, read by the fast path from the
    canonical ``text`` of a leaf of ``size`` bytes (module docstring); False: not shown."""
    if size > MAX_BODY_BYTES or _LONG_DIGITS.search(text) is not None:
        return False
    return text.count("{") + text.count("[") <= _FEW_BRACKETS or _nests_within(body, MAX_DEPTH)


def _nests_within(value: object, room: int) -> bool:
    """Whether ``value`` nests at most ``room`` containers deep (``value`` itself counts)."""
    if isinstance(value, dict):
        items: Iterable[object] = value.values()
    elif isinstance(value, list):
        items = value
    else:
        return True
    if room == 0:
        return False
    return all(_nests_within(item, room - 1) for item in items if isinstance(item, dict | list))


# --- one entry in its place ------------------------------------------------------------


def check_entry(
    leaf: bytes,
    *,
    line: int,
    expected_seq: int,
    expected_prev_root: bytes | None,
    origin: str,
    keys: Sequence[Verifier],
    full: bool,
    later_leaves: Sequence[bytes] = (),
) -> Entry:
    """Steps 3.1-3.4 for the leaf at ``line``; return the opened entry or raise.

    ``expected_prev_root`` is None when the prev root is proved later (partial bundles).
    ``later_leaves`` (the leaves after this line) only serve to name a seq mismatch in a
    full bundle precisely (gap or reorder); the verdict never depends on them.
    """
    # 3.1 canonical bytes, pinned key, signature, body schema
    entry = open_leaf(leaf, keys)
    # 3.2 the bundle's origin
    if entry.log != origin:
        raise EntryOriginMismatchError(
            f"line {line + 1}: entry seq {entry.seq} belongs to {entry.log!r}, not to the "
            f"bundle's origin {origin!r}; entries from another thread were mixed in"
        )
    # 3.3 the seq expected at this line
    if entry.seq != expected_seq:
        raise _seq_error(line, expected_seq, entry.seq, full, later_leaves)
    # 3.4 the tree before it
    if expected_prev_root is not None and entry.prev_root != expected_prev_root:
        raise PrevRootMismatchError(
            f"entry seq {entry.seq} signs prev.root {entry.prev_root.hex()}, but the tree of "
            f"the {entry.seq} entries before it has root {expected_prev_root.hex()}: the "
            "history before this entry is not the one it was signed after"
        )
    return entry


def _seq_error(
    line: int, expected: int, actual: int, full: bool, later: Sequence[bytes]
) -> SeqMismatchError:
    if not full:
        return DisclosedSeqMismatchError(
            f"line {line + 1} holds entry seq {actual}, but proofs.json discloses seq "
            f"{expected} for it: the entries and their proofs do not belong together"
        )
    if actual < expected:
        return SeqDuplicateError(
            f"line {line + 1} holds entry seq {actual} again (seq {expected} expected): an "
            "entry is duplicated"
        )
    if any(_claimed_seq(leaf) == expected for leaf in later):
        return SeqOrderError(
            f"line {line + 1} holds entry seq {actual} where seq {expected} belongs, and seq "
            f"{expected} comes later: the entries were reordered"
        )
    return SeqGapError(
        f"line {line + 1} holds entry seq {actual}; seq {expected} is missing from the "
        "bundle: an entry was dropped"
    )


def _claimed_seq(leaf: bytes) -> int | None:
    """The seq a leaf claims, unverified (only used to word an error)."""
    try:
        value = json.loads(leaf)
        seq = value["entry"]["seq"]
    except (ValueError, TypeError, KeyError, RecursionError):
        return None
    return seq if type(seq) is int else None


# --- many entries ----------------------------------------------------------------------


@dataclass
class EntriesChecked:
    """Result of step 3.

    ``kinds`` counts entries per kind; ``records`` are the semantic entries in seq order.
    Full bundles: ``leaf_hashes`` in seq order (packed) and ``roots`` at the sizes asked for.
    Partial bundles: ``prev_roots``, each entry's signed ``prev.root`` in line order, which
    step 4 proves. ``marks``: what the lifecycle chain check (3.5, 4.6) needs, in line order,
    thinned chunk by chunk (:func:`thin_marks`: the same verdict, at the same seq, as every
    line's mark would give).
    """

    kinds: dict[str, int] = field(default_factory=dict)
    records: PackedRecords = field(default_factory=PackedRecords)
    leaf_hashes: PackedHashes = field(default_factory=PackedHashes)
    roots: dict[int, bytes] = field(default_factory=dict)
    prev_roots: list[bytes] = field(default_factory=list)
    marks: list[ChainMark] = field(default_factory=list)

    @property
    def reread(self) -> RereadLines:
        """Records kept without their body (the ``reread`` kinds): seq -> line to read it
        from (a view of ``records``)."""
        return self.records.reread


class RecordsWithBodies(Sequence[EntryRecord]):
    """The records of step 3 with the bodies it did not keep (``reread``: seq -> line) read
    again from ``leaves`` -- verified bytes (a
    :class:`~registre.attest.bundle_leaves.BundleLeaves` checks each against step 1), whose
    canonical JSON the C parser reads exactly as step 3 did. Iterated in seq order, so a
    reader of its own (``BundleLeaves.fork()``) goes through the member once; one body is
    held at a time."""

    def __init__(
        self, records: Sequence[EntryRecord], reread: Mapping[int, int], leaves: Sequence[bytes]
    ) -> None:
        self._records = records
        self._reread = reread
        self._leaves = leaves

    def __len__(self) -> int:
        return len(self._records)

    @overload
    def __getitem__(self, index: int) -> EntryRecord: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[EntryRecord]: ...

    def __getitem__(self, index: int | slice) -> EntryRecord | Sequence[EntryRecord]:
        if isinstance(index, slice):
            return [self[i] for i in range(*index.indices(len(self)))]
        record = self._records[index]
        line = self._reread.get(record.seq)
        if line is None:
            return record
        body = json.loads(self._leaves[line])["entry"]["body"]
        return EntryRecord(record.seq, record.kind, record.actor, body)

    def __iter__(self) -> Iterator[EntryRecord]:
        for index in range(len(self._records)):
            yield self[index]


@dataclass
class EntriesProgress:
    """The line (0-based) of the first failure, once :func:`check_entries` has raised."""

    line: int | None = None


@dataclass(frozen=True)
class _Chunk:
    """Leaves ``start ..`` with their expected seqs. ``frontier`` (full bundles) is the tree
    before ``start`` as (size, hashes), from which the chunk recomputes every prev root."""

    start: int
    leaves: list[bytes]
    seqs: list[int]
    frontier: tuple[int, list[bytes]] | None
    origin: str
    reread: frozenset[str] = frozenset()


@dataclass
class _ChunkResult:
    checked: EntriesChecked
    failed_at: int | None = None


_WORKER_KEYS: list[Verifier] = []


def _init_worker(vkeys: tuple[str, ...]) -> None:
    _WORKER_KEYS[:] = [Verifier.from_vkey(text) for text in vkeys]


def _run_chunk(chunk: _Chunk) -> _ChunkResult:
    return _check_chunk(chunk, _WORKER_KEYS)


def thin_marks(marks: Sequence[ChainMark]) -> list[ChainMark]:
    """``marks`` (consecutive lines, in order) without those the lifecycle chain check could
    only repeat: a mark is dropped when it is not a lifecycle entry, not the last, and the
    mark before it is a non-lifecycle entry signing the same head -- the running chain is
    the same at both (a non-lifecycle entry does not extend it) and so is the signed head,
    so the check passes or fails on the earlier one. Over the thinned marks,
    :func:`~registre.attest.lifecycle_chain.check_lifecycle_chain` returns the same result,
    or raises the same error at the same seq. A thread of turns keeps a mark per lifecycle
    entry and one after it, not one per line."""
    kept: list[ChainMark] = []
    last = len(marks) - 1
    for index, mark in enumerate(marks):
        previous = marks[index - 1] if index else None
        if (
            mark.lifecycle
            or index == last
            or previous is None
            or previous.lifecycle
            or previous.signed != mark.signed
        ):
            kept.append(mark)
    return kept


def _check_chunk(chunk: _Chunk, keys: Sequence[Verifier]) -> _ChunkResult:
    """Steps 3.1-3.4 over the chunk's lines; the chain marks thinned (:func:`thin_marks`)."""
    checked = EntriesChecked()
    kinds, records = checked.kinds, checked.records
    marks: list[ChainMark] = []
    full = chunk.frontier is not None
    tree = CompactRange.restore(*chunk.frontier) if chunk.frontier is not None else None
    for offset, leaf in enumerate(chunk.leaves):
        try:
            entry = check_entry(
                leaf,
                line=chunk.start + offset,
                expected_seq=chunk.seqs[offset],
                expected_prev_root=None if tree is None else tree.root(),
                origin=chunk.origin,
                keys=keys,
                full=full,
            )
        except RegistreError:
            return _ChunkResult(checked, failed_at=chunk.start + offset)
        if tree is None:
            checked.prev_roots.append(entry.prev_root)
        else:
            tree.append(entry.leaf_hash)
        kinds[entry.kind] = kinds.get(entry.kind, 0) + 1
        marks.append(
            ChainMark(entry.seq, entry.kind in LIFECYCLE_KINDS, entry.leaf_hash, entry.lifecycle)
        )
        if entry.kind in chunk.reread:
            records.append(entry.seq, entry.kind, entry.actor, None, chunk.start + offset)
        elif entry.kind in SEMANTIC_KINDS:
            records.append(entry.seq, entry.kind, entry.actor, entry.body, chunk.start + offset)
    checked.marks = thin_marks(marks)
    return _ChunkResult(checked)


def check_entries(
    leaves: Sequence[bytes],
    *,
    seqs: Sequence[int],
    full: bool,
    origin: str,
    keys: Sequence[Verifier],
    root_sizes: Iterable[int] = (),
    jobs: int = 1,
    progress: EntriesProgress | None = None,
    leaf_hashes: PackedHashes | None = None,
    reread: Iterable[str] = (),
) -> EntriesChecked:
    """Step 3 over all ``leaves``: raise the error of the first bad line, or return the facts.

    ``seqs[i]`` is the seq expected at line ``i``. A ``full`` bundle's prev roots are
    recomputed, and the roots at ``root_sizes`` returned; a partial bundle's are returned
    for step 4. ``leaf_hashes``, if given, are the leaf hashes of ``leaves`` (as step 1
    recorded them; a :class:`~registre.attest.bundle_leaves.BundleLeaves` guarantees it),
    used for the tree instead of hashing each leaf again. ``leaves`` are iterated once, in
    chunks (module docstring); indexed only to re-run a failing line. ``jobs`` > 1 spreads
    the chunks over that many processes (when there are at least
    :data:`MIN_LEAVES_PER_PROCESS` leaves per process); this process meanwhile reads and
    hashes the leaves and hands each chunk the tree before it. On failure
    ``progress.line`` names the bad line. Records of the ``reread`` kinds (semantic kinds
    whose bodies can be large: compactions) are kept with an empty body, their lines in
    ``reread`` of the result, for :class:`RecordsWithBodies` to read again when step 6 needs
    them.
    """
    if jobs < 1:
        raise ValueError(f"jobs must be at least 1, got {jobs}")
    count = len(leaves)
    if count < MIN_LEAVES_PER_PROCESS * jobs:
        jobs = 1  # starting processes would cost more than they save
    size = max(256, math.ceil(count / (jobs * CHUNKS_PER_PROCESS))) if jobs > 1 else MAX_CHUNK
    size = min(size, MAX_CHUNK)
    merged = EntriesChecked()
    if leaf_hashes is not None:
        if len(leaf_hashes) != count:
            raise ValueError(f"{len(leaf_hashes)} leaf hashes for {count} leaves")
        merged.leaf_hashes = leaf_hashes
    chunks = _chunks(
        leaves, seqs, full, origin, size, root_sizes, merged, leaf_hashes, frozenset(reread)
    )
    if jobs == 1:
        results: Iterator[_ChunkResult] = (_check_chunk(chunk, keys) for chunk in chunks)
        failed = _merge(results, merged)
    else:
        vkeys = tuple(key.vkey() for key in keys)
        with ProcessPoolExecutor(jobs, initializer=_init_worker, initargs=(vkeys,)) as pool:
            failed = _merge(_pooled(pool, chunks, jobs * CHUNKS_IN_FLIGHT), merged)
    if failed is not None:
        if progress is not None:
            progress.line = failed
        _raise_first_failure(leaves, failed, seqs, origin, keys, full, merged.leaf_hashes)
    merged.kinds = dict(sorted(merged.kinds.items()))
    return merged


def _merge(results: Iterator[_ChunkResult], into: EntriesChecked) -> int | None:
    """Fold the chunks' results, in line order, into ``into``; the first failing line (the
    remaining results are then not asked for), or None."""
    for result in results:
        if result.failed_at is not None:
            return result.failed_at
        for kind, count in result.checked.kinds.items():
            into.kinds[kind] = into.kinds.get(kind, 0) + count
        into.records.extend(result.checked.records)
        into.prev_roots.extend(result.checked.prev_roots)
        into.marks.extend(result.checked.marks)
    return None


def _pooled(
    pool: ProcessPoolExecutor, chunks: Iterator[_Chunk], window: int
) -> Iterator[_ChunkResult]:
    """The results of ``chunks`` checked by ``pool``, in order, with at most ``window``
    chunks submitted and not yet collected; the ones still queued are cancelled when the
    caller stops early (at a failure)."""
    futures: deque[Future[_ChunkResult]] = deque()
    try:
        for chunk in chunks:
            futures.append(pool.submit(_run_chunk, chunk))
            if len(futures) >= window:
                yield futures.popleft().result()
        while futures:
            yield futures.popleft().result()
    finally:
        for future in futures:
            future.cancel()


def _chunks(
    leaves: Iterable[bytes],
    seqs: Sequence[int],
    full: bool,
    origin: str,
    size: int,
    root_sizes: Iterable[int],
    into: EntriesChecked,
    known: PackedHashes | None,
    reread: frozenset[str],
) -> Iterator[_Chunk]:
    """The leaves in chunks of ``size`` lines, read as they are asked for. For a full
    bundle, the leaves are hashed on the way (or their ``known`` hashes taken): each chunk
    gets the tree before it, and ``into`` gets the leaf hashes (unless ``known``) and the
    roots at ``root_sizes``."""
    wanted = set(root_sizes)
    tree = CompactRange()
    hashes, roots = into.leaf_hashes, into.roots
    if full and 0 in wanted:
        roots[0] = tree.root()
    source = iter(leaves)
    start = 0
    while True:
        batch = list(islice(source, size))
        if not batch:
            return
        end = start + len(batch)
        frontier = (tree.size, tree.hashes()) if full else None
        yield _Chunk(start, batch, list(seqs[start:end]), frontier, origin, reread)
        if full:
            for index in range(start, end):
                if known is None:
                    digest = leaf_hash(batch[index - start])
                    hashes.append(digest)
                else:
                    digest = known[index]
                tree.append(digest)
                if tree.size in wanted:
                    roots[tree.size] = tree.root()
        start = end


def _raise_first_failure(
    leaves: Sequence[bytes],
    line: int,
    seqs: Sequence[int],
    origin: str,
    keys: Sequence[Verifier],
    full: bool,
    hashes: PackedHashes,
) -> None:
    """Re-run the failing line here so the real error (with its cause) is raised. The tree
    before it comes from ``hashes`` where they reach it (else from the leaves)."""
    tree = CompactRange()
    if full:
        known = min(line, len(hashes))
        for digest in islice(hashes, known):
            tree.append(digest)
        for leaf in leaves[known:line]:
            tree.append(leaf_hash(leaf))
    check_entry(
        leaves[line],
        line=line,
        expected_seq=seqs[line],
        expected_prev_root=tree.root() if full else None,
        origin=origin,
        keys=keys,
        full=full,
        later_leaves=leaves[line + 1 :],
    )
    raise AssertionError(f"line {line + 1} failed in a worker but passes here")  # pragma: no cover
