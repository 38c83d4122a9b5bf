"""Step 3 of bundle verification: every entry opened under a pinned key and bound to its place.

For each leaf, in line order (``specs/verify.md`` step 3):

3.1 open it as received (:func:`open_leaf`, equivalent to
    :func:`registre.attest.entries.entry.open_entry`):
    strict canonical JSON, envelope structure, a PINNED key with this key id whose name gives
    the entry's origin, the Ed25519 signature, the body schema of its kind;
3.2 its ``log`` is the bundle's origin (:class:`EntryOriginMismatchError`);
3.3 its ``seq`` is the one expected at this line: ``0 .. n-1`` in a full bundle
    (:class:`SeqGapError`, :class:`SeqDuplicateError`, :class:`SeqOrderError`), the seq
    ``proofs.json`` discloses for the line in a partial one (:class:`DisclosedSeqMismatchError`);
3.4 in a full bundle, its ``prev.root`` is the root recomputed over the leaves before it
    (:class:`PrevRootMismatchError`); a partial bundle proves it in step 4 instead;
3.5 in a full bundle, its signed lifecycle head is the chain over the lifecycle entries
    before it (:func:`registre.attest.entries.lifecycle_chain.check_lifecycle_chain`, run by the
    verifier over :attr:`EntriesChecked.marks`); a partial bundle's is step 4.6.

The leaves are read once, in line order, in chunks of at most :data:`MAX_CHUNK` lines: each
chunk is checked (in this process, or by one of ``jobs`` processes, at most
:data:`CHUNKS_IN_FLIGHT` per process queued at a time) and only what later steps need is kept:
the counts per kind, the records of the :data:`SEMANTIC_KINDS`, the roots asked for, and the
chain marks that can decide the lifecycle chain check (:func:`thin_marks`); a leaf's hash
lives only while its chunk is checked. So memory does not grow with the leaves' bytes.
Every chunk stops at its first failure; the first failing line is then re-run in this
process, so the error raised is the real one, for the first bad line, whatever the number of
jobs.

:func:`~registre.attest.entries._leaf_open.open_leaf` (its
:class:`~registre.attest.entries._leaf_open.LeafOpener`, one per chunk) opens each leaf exactly
as :func:`registre.attest.entries.entry.open_entry` would (its fast path:
:mod:`registre.attest.entries._leaf_open`); a full bundle's chunk carries the leaves' hashes
(hashed once, by this process, for the tree), so no worker hashes a leaf again. What
step 3 keeps is in :mod:`registre.attest.verify.entries_checked`.
"""

from __future__ import annotations

import json
import math
from collections import deque
from collections.abc import Iterable, Iterator, Sequence
from concurrent.futures import Future, ProcessPoolExecutor
from dataclasses import dataclass
from itertools import islice

from registre.attest.entries import (
    LIFECYCLE_KINDS,
    ChainMark,
    Entry,
    LeafOpener,
    LifecycleHead,
    open_leaf,
)
from registre.attest.errors import OriginMismatchError
from registre.attest.notes import Verifier
from registre.attest.tree import CompactRange, leaf_hash
from registre.attest.verify.entries_checked import (
    SEMANTIC_KINDS,
    EntriesChecked,
)
from registre.errors import RegistreError, VerificationError

__all__ = [
    "CHUNKS_IN_FLIGHT",
    "MAX_CHUNK",
    "MIN_LEAVES_PER_PROCESS",
    "DisclosedSeqMismatchError",
    "EntriesProgress",
    "EntryOriginMismatchError",
    "PrevRootMismatchError",
    "SeqDuplicateError",
    "SeqGapError",
    "SeqMismatchError",
    "SeqOrderError",
    "check_entries",
    "check_entry",
]

MIN_LEAVES_PER_PROCESS = 1024
"""Below this many leaves per requested process, step 3 runs in this process alone."""

CHUNKS_PER_PROCESS = 32
"""Chunks per process: small enough that no process idles long while another finishes."""

MAX_CHUNK = 4096
"""Lines per chunk at most (a few MB of leaves), whatever the bundle's size."""

CHUNKS_IN_FLIGHT = 2
"""Chunks per process submitted and not yet collected, at most: what bounds the leaves held."""


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
    _check_place(entry, line, expected_seq, expected_prev_root, origin, full, later_leaves)
    return entry


def _check_place(
    entry: Entry,
    line: int,
    expected_seq: int,
    expected_prev_root: bytes | None,
    origin: str,
    full: bool,
    later_leaves: Sequence[bytes] = (),
) -> None:
    """Steps 3.2-3.4 for an opened entry (:func:`check_entry`)."""
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
class EntriesProgress:
    """The line (0-based) of the first failure, once :func:`check_entries` has raised."""

    line: int | None = None


@dataclass(frozen=True)
class _Chunk:
    """Leaves ``start ..`` with their expected seqs. ``frontier`` (full bundles) is the tree
    before ``start`` as (size, hashes), from which the chunk recomputes every prev root;
    ``hashes`` (full bundles) the leaves' hashes, one per leaf."""

    start: int
    leaves: list[bytes]
    seqs: list[int]
    frontier: tuple[int, list[bytes]] | None
    origin: str
    reread: frozenset[str] = frozenset()
    hashes: list[bytes] | None = None


@dataclass
class _ChunkResult:
    checked: EntriesChecked
    failed_at: int | None = None


_WORKER_KEYS: list[Verifier] = []


def _init_worker(vkeys: tuple[str, ...]) -> None:
    _WORKER_KEYS[:] = [Verifier.from_vkey(text) for text in vkeys]


def _run_chunk(chunk: _Chunk) -> _ChunkResult:
    return _check_chunk(chunk, _WORKER_KEYS)


def _check_chunk(chunk: _Chunk, keys: Sequence[Verifier]) -> _ChunkResult:
    """Steps 3.1-3.4 over the chunk's lines; the chain marks thinned as they come: a mark
    is made only if :func:`thin_marks` would keep it (it is a lifecycle entry, the first,
    after a lifecycle entry or signing another head than the line before it), or for the
    last line -- so ``checked.marks`` is ``thin_marks`` of every line's mark."""
    checked = EntriesChecked()
    kinds, records = checked.kinds, checked.records
    marks = checked.marks
    before: tuple[bool, LifecycleHead | None] | None = None  # the line before: (lifecycle, signed)
    dropped: Entry | None = None  # the line before, if its mark was not made
    full = chunk.frontier is not None
    tree = CompactRange.restore(*chunk.frontier) if chunk.frontier is not None else None
    opener = LeafOpener(keys)
    hashes = chunk.hashes
    for offset, leaf in enumerate(chunk.leaves):
        try:
            entry = opener.open(leaf, digest=None if hashes is None else hashes[offset])
            _check_place(
                entry,
                chunk.start + offset,
                chunk.seqs[offset],
                None if tree is None else tree.root(),
                chunk.origin,
                full,
            )
        except RegistreError:
            return _ChunkResult(checked, failed_at=chunk.start + offset)
        if tree is None:
            checked.prev_roots.append(entry.prev_root)
        else:
            tree.append(entry.leaf_hash)
        kind, signed = entry.kind, entry.lifecycle
        kinds[kind] = kinds.get(kind, 0) + 1
        lifecycle = kind in LIFECYCLE_KINDS
        if lifecycle or before is None or before[0] or before[1] != signed:
            marks.append(ChainMark(entry.seq, lifecycle, entry.leaf_hash, signed))
            dropped = None
        else:
            dropped = entry
        before = (lifecycle, signed)
        if entry.kind in chunk.reread:
            records.append(entry.seq, entry.kind, entry.actor, None, chunk.start + offset)
        elif entry.kind in SEMANTIC_KINDS:
            records.append(entry.seq, entry.kind, entry.actor, entry.body, chunk.start + offset)
    if dropped is not None:  # the last line's mark is always kept
        marks.append(ChainMark(dropped.seq, False, dropped.leaf_hash, dropped.lifecycle))
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
    leaf_hashes: Sequence[bytes] | None = None,
    reread: Iterable[str] = (),
) -> EntriesChecked:
    """Step 3 over all ``leaves``: raise the error of the first bad line, or return the facts.

    ``seqs[i]`` is the seq expected at line ``i``. A ``full`` bundle's prev roots are
    recomputed, and the roots at ``root_sizes`` returned; a partial bundle's are returned
    for step 4. ``leaf_hashes``, if given, are the leaf hashes of ``leaves`` (held by the
    caller), used for the tree instead of hashing each leaf; none are kept. ``leaves`` are
    iterated once, in chunks (module docstring); indexed only to re-run a failing line.
    ``jobs`` > 1 spreads the chunks over that many processes (when there are at least
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
    if leaf_hashes is not None and len(leaf_hashes) != count:
        raise ValueError(f"{len(leaf_hashes)} leaf hashes for {count} leaves")
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
        known = () if leaf_hashes is None else leaf_hashes
        _raise_first_failure(leaves, failed, seqs, origin, keys, full, known)
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
    known: Sequence[bytes] | None,
    reread: frozenset[str],
) -> Iterator[_Chunk]:
    """The leaves in chunks of ``size`` lines, read as they are asked for. For a full
    bundle, the leaves are hashed on the way (or their ``known`` hashes taken): each chunk
    gets the tree before it and its leaves' hashes, and ``into`` gets the roots at
    ``root_sizes`` (the leaf hashes are not kept)."""
    wanted = set(root_sizes)
    tree = CompactRange()
    roots = into.roots
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
        digests: list[bytes] | None = None
        if full:
            if known is None:
                digests = [leaf_hash(leaf) for leaf in batch]
            else:
                digests = [known[index] for index in range(start, end)]
        yield _Chunk(start, batch, list(seqs[start:end]), frontier, origin, reread, digests)
        if digests is not None:
            for digest in digests:
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
    hashes: Sequence[bytes],
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
