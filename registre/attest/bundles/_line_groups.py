"""Step 1's digests of ``entries.jsonl``, one per group of lines.

Every later step reads the entries again from the zip, and every line it reads must be a line
step 1 hashed (:class:`registre.attest.bundles.leaves.BundleLeaves`).
:class:`LineGroups` keeps one SHA-256 per *group* of consecutive lines: a group closes
after :data:`GROUP_LINES` lines, or as soon as its lines (newlines included) reach
:data:`GROUP_BYTES`, so a reader that buffers one group before handing out any of its lines
holds at most ``GROUP_BYTES`` plus one line. A group's digest is the SHA-256 of its bytes in
the member, each line followed by its newline: for a fixed line count, equal digests mean equal
lines (SHA-256 collision resistance), which is what the per-line hashes gave. The groups are
fixed by the lines alone, so any reader finds the group of a line from its number
(:meth:`LineGroups.group_of`). Why groups and not a hash a line, with the figures:
``docs/design/2026-12-04-verifier-memory.md``.

Nothing here is a format: the groups live in memory for one verification.
"""

from __future__ import annotations

import hashlib
from array import array
from bisect import bisect_right
from collections.abc import Iterable
from typing import Any, Final

from registre.attest.tree import HASH_SIZE

__all__ = ["GROUP_BYTES", "GROUP_LINES", "LineGroups", "group_digest"]

GROUP_LINES: Final = 64
"""At most this many lines a group."""

GROUP_BYTES: Final = 1 << 17
"""A group closes once its lines, newlines included, reach this many bytes (128 KiB)."""


def group_digest(lines: Iterable[bytes]) -> bytes:
    """SHA-256 of ``lines`` as the member holds them: each line followed by ``\\n``."""
    hasher = hashlib.sha256()
    for line in lines:
        hasher.update(line)
        hasher.update(b"\n")
    return hasher.digest()


class LineGroups:
    """The lines of ``entries.jsonl`` in groups, each with its digest (module docstring).

    Built line by line (:meth:`add`, then :meth:`close` after the last line); read with
    :meth:`group_of`, :meth:`bounds` and :meth:`digest`. ``len`` is the number of lines added.
    A group holds at least one line; groups are numbered from 0 in line order.
    """

    __slots__ = ("_digests", "_hasher", "_lines", "_open_bytes", "_open_lines", "_starts")

    def __init__(self, lines: Iterable[bytes] = ()) -> None:
        self._starts = array("q")
        self._digests = bytearray()
        self._lines = 0
        self._open_lines = 0
        self._open_bytes = 0
        self._hasher: Any = None
        for line in lines:
            self.add(line)
        self.close()

    def add(self, line: bytes) -> None:
        """Take in the next line (without its newline); closes the group it fills."""
        if self._hasher is None:
            self._hasher = hashlib.sha256()
            self._starts.append(self._lines)
        hasher = self._hasher
        hasher.update(line)
        hasher.update(b"\n")
        self._lines += 1
        self._open_lines += 1
        self._open_bytes += len(line) + 1
        if self._open_lines >= GROUP_LINES or self._open_bytes >= GROUP_BYTES:
            self.close()

    def close(self) -> None:
        """Close the open group, if any (after the last line; adding later opens a new one)."""
        if self._hasher is not None:
            self._digests += self._hasher.digest()
            self._hasher = None
            self._open_lines = self._open_bytes = 0

    def __len__(self) -> int:
        return self._lines

    @property
    def groups(self) -> int:
        """The number of groups opened so far."""
        return len(self._starts)

    def group_of(self, line: int) -> int:
        """The group holding line ``line`` (``0 <= line < len``); IndexError otherwise."""
        if not 0 <= line < self._lines:
            raise IndexError(line)
        return bisect_right(self._starts, line) - 1

    def bounds(self, group: int) -> tuple[int, int]:
        """``(start, stop)``: the lines ``start .. stop-1`` of ``group``."""
        starts = self._starts
        stop = starts[group + 1] if group + 1 < len(starts) else self._lines
        return starts[group], stop

    def digest(self, group: int) -> bytes:
        """The digest of a closed ``group`` (:func:`group_digest` of its lines)."""
        if not 0 <= group < len(self._digests) // HASH_SIZE:
            raise IndexError(group)
        return bytes(self._digests[group * HASH_SIZE : (group + 1) * HASH_SIZE])

    def __eq__(self, other: object) -> bool:
        if isinstance(other, LineGroups):
            return (self._lines, self._starts, self._digests) == (
                other._lines,
                other._starts,
                other._digests,
            )
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"LineGroups({self._lines} lines in {self.groups} groups)"
