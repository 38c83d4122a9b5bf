"""The entries of an open bundle, read from the zip as they are needed, never all held.

Step 1 (:func:`registre.attest.bundles.reader.open_bundle`) streams ``entries.jsonl`` once: it
checks the member's SHA-256 against the manifest and records the digest of each group of
lines (:class:`~registre.attest.bundles._line_groups.LineGroups`), so what it keeps does not
grow with the entries' bytes (why, with the figures:
``docs/design/2026-12-04-verifier-memory.md``).

:class:`BundleLeaves` is then the member as a sequence of leaves: iterating it (or a slice
of it, :class:`LeafRange`) inflates the member again from its start; an index reads forward
from where the last index stopped, so the steps that walk the entries in seq order (3, the
context replay of 6) read the member once each. Every line read is checked, before it is
handed out, against the digest step 1 recorded for its group (the group is read whole and
checked first; :class:`EntriesChangedError` otherwise), so every later step sees exactly the
bytes the manifest vouches for, even if the file changes while it is verified.
:class:`LeafHashes` gives the leaf hashes of such lines, computed as they are read.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator, Sequence

from registre.attest.bundles._line_groups import LineGroups, group_digest
from registre.attest.entries import LeafView
from registre.attest.tree import leaf_hash
from registre.errors import VerificationError

__all__ = [
    "HELD_BYTES",
    "BundleLeaves",
    "EntriesChangedError",
    "LeafHashes",
    "LeafRange",
    "ReadAhead",
]


class EntriesChangedError(VerificationError):
    """``entries.jsonl``, read again after step 1, does not give the lines step 1 hashed (the
    bundle file changed while it was being verified)."""

    hint = "the bundle file was modified during verification: verify a copy nobody writes to"


class BundleLeaves(LeafView):
    """The lines of ``entries.jsonl``, read again from the zip on demand (module docstring).

    ``chunks`` gives the member's bytes from its start each time it is called (the open
    archive's :meth:`~registre.attest.bundles.zip_container.ZipArchive.chunks`); ``groups`` are the
    digests step 1 recorded, a group of lines each, which fix the length and every line's
    bytes. Valid while the archive is open.
    """

    def __init__(self, chunks: Callable[[], Iterable[bytes]], groups: LineGroups) -> None:
        self._chunks = chunks
        self._groups = groups
        self._cursor: Iterator[bytes] | None = None
        self._next = 0  # the line the cursor yields next
        self._current: tuple[int, bytes] | None = None

    @property
    def groups(self) -> LineGroups:
        """The digests of the lines, a group at a time, in line order."""
        return self._groups

    @property
    def position(self) -> int:
        """The index of the line the cursor reads next (0 before the first read)."""
        return self._next

    def fork(self) -> BundleLeaves:
        """The same lines with a cursor of their own (for a second reader moving forward)."""
        return BundleLeaves(self._chunks, self._groups)

    def __len__(self) -> int:
        return len(self._groups)

    def _leaf(self, index: int) -> bytes:
        return self._at(index)

    def _range(self, start: int, stop: int) -> Sequence[bytes]:
        return LeafRange(self, start, stop)

    def __iter__(self) -> Iterator[bytes]:
        return self.iterate(0, len(self))

    def _at(self, index: int) -> bytes:
        """Line ``index``: from the cursor if it has not passed it, else from a new pass."""
        if self._current is not None and self._current[0] == index:
            return self._current[1]
        if self._cursor is None or index < self._next:
            self._cursor = self.iterate(index, len(self))
            self._next = index
        leaf = b""
        while self._next <= index:
            leaf = next(self._cursor)
            self._next += 1
        self._current = (index, leaf)
        return leaf

    def iterate(self, start: int, stop: int) -> Iterator[bytes]:
        """Lines ``start .. stop-1`` (within ``0 .. len``), in a pass of their own: the member
        is inflated from its start, the lines before the group of ``start`` skipped unsplit;
        each group is read whole and checked before any of its lines is given."""
        if start >= stop:
            return
        groups = self._groups
        group = groups.group_of(start)
        first, group_stop = groups.bounds(group)
        line = 0
        pending = b""
        held: list[bytes] = []
        for chunk in self._chunks():
            if line < first:
                newlines = chunk.count(b"\n")
                if line + newlines < first:
                    line += newlines
                    continue
                cut = -1
                for _ in range(first - line):
                    cut = chunk.index(b"\n", cut + 1)
                chunk = chunk[cut + 1 :]
                line = first
            pieces = (pending + chunk).split(b"\n")
            pending = pieces.pop()
            for piece in pieces:
                held.append(piece)
                line += 1
                if line < group_stop:
                    continue
                group_start = group_stop - len(held)
                if group_digest(held) != groups.digest(group):
                    raise EntriesChangedError(
                        f"lines {group_start + 1}..{group_stop} of entries.jsonl are not the "
                        "lines hashed in step 1: the bundle file changed while it was verified"
                    )
                for offset, leaf in enumerate(held, start=group_start):
                    if start <= offset < stop:
                        yield leaf
                if group_stop >= stop:
                    return
                held = []
                group += 1
                _first, group_stop = groups.bounds(group)
        raise EntriesChangedError(
            f"entries.jsonl ends after {line} lines where step 1 read {len(self)}: the bundle "
            "file changed while it was verified"
        )


class LeafHashes(LeafView):
    """The RFC 9162 leaf hash of each of ``leaves``, computed as they are read (nothing
    kept): iterating reads ``leaves`` once in a pass of its own."""

    __slots__ = ("_leaves",)

    def __init__(self, leaves: Sequence[bytes]) -> None:
        self._leaves = leaves

    def __len__(self) -> int:
        return len(self._leaves)

    def _leaf(self, index: int) -> bytes:
        return leaf_hash(self._leaves[index])

    def __iter__(self) -> Iterator[bytes]:
        return map(leaf_hash, self._leaves)


class LeafRange(LeafView):
    """Lines ``start .. stop-1`` of a :class:`BundleLeaves`, read through it (a slice that
    copies nothing): indexing moves the shared cursor, iterating makes a pass of its own."""

    def __init__(self, leaves: BundleLeaves, start: int, stop: int) -> None:
        self._leaves = leaves
        self._start = start
        self._stop = stop

    def __len__(self) -> int:
        return self._stop - self._start

    def _leaf(self, index: int) -> bytes:
        return self._leaves[self._start + index]

    def _range(self, start: int, stop: int) -> Sequence[bytes]:
        return LeafRange(self._leaves, self._start + start, self._start + stop)

    def __iter__(self) -> Iterator[bytes]:
        return self._leaves.iterate(self._start, self._stop)


HELD_BYTES = 4 * 2**20
"""The most bytes of lines :class:`ReadAhead` holds for its reader behind (one line more)."""


class ReadAhead:
    """Two readers of one :class:`BundleLeaves` moving forward through a single pass of it:
    :attr:`ahead` reads line ``s`` before :attr:`behind` reads the lines up to ``s`` (step 6:
    the body of a compaction or model call at ``s``, then the context fold up to it).

    A line ``ahead`` asks for past the shared cursor moves the cursor there, and the lines
    it passes are held for ``behind`` (which drops them as it moves past them), at most
    :data:`HELD_BYTES` of them: beyond that, or for a line the cursor has already passed,
    ``ahead`` reads from a cursor of its own (``BundleLeaves.fork``, made once), as it always
    did before. The lines are the cursor's, each checked against step 1 before it is handed
    out; either reader gets exactly the line the member holds at that index. Iterating
    either view is a pass of its own, as iterating the leaves is.
    """

    def __init__(self, leaves: BundleLeaves, held_bytes: int = HELD_BYTES) -> None:
        self._leaves = leaves
        self._held: deque[bytes] = deque()
        self._base = 0  # the index of _held[0]
        self._size = 0  # bytes held
        self._limit = held_bytes
        self._fork: BundleLeaves | None = None
        self.ahead: LeafView = _Reader(self, self._read_ahead)
        self.behind: LeafView = _Reader(self, self._read_behind)

    def __len__(self) -> int:
        return len(self._leaves)

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._leaves)

    def _read_behind(self, index: int) -> bytes:
        held = self._held
        if self._base <= index < self._base + len(held):
            while self._base < index:  # lines behind this one are not asked for again
                self._size -= len(held.popleft())
                self._base += 1
            return held[0]
        return self._leaves[index]

    def _read_ahead(self, index: int) -> bytes:
        held, leaves = self._held, self._leaves
        end = self._base + len(held)
        if self._base <= index < end:
            return held[index - self._base]
        cursor = leaves.position
        if end != cursor:  # the cursor moved on its own (a reader went back): start again
            held.clear()
            self._base, self._size = cursor, 0
        while cursor <= index and self._size <= self._limit:
            line = leaves[cursor]
            held.append(line)
            self._size += len(line)
            cursor += 1
        if cursor > index and index >= self._base:
            return held[index - self._base]
        if self._fork is None:
            self._fork = leaves.fork()
        return self._fork[index]


class _Reader(LeafView):
    """One reader of a :class:`ReadAhead`."""

    __slots__ = ("_length", "_read", "_shared")

    def __init__(self, shared: ReadAhead, read: Callable[[int], bytes]) -> None:
        self._shared = shared
        self._read = read
        self._length = len(shared)  # the lines step 1 recorded: fixed

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[bytes]:
        return iter(self._shared)

    def _leaf(self, index: int) -> bytes:
        return self._read(index)
