"""Step 3's records of the semantic entries, packed into arrays.

Step 3 (:mod:`registre.attest.verify.entries`) keeps, for every entry of a
:data:`~registre.attest.verify.entries_checked.SEMANTIC_KINDS` kind, what steps 6 and 7 need of it:
its seq, kind and actor, and either its body or the line step 6 reads the body from again.
:class:`PackedRecords` holds them in arrays (why, with the figures:
``docs/design/2026-12-04-verifier-memory.md``): seq and line as unsigned integers, kind
and actor as indexes into tables of the distinct values (a thread has a handful of kinds and
actors), and the bodies that were kept in a dict by position. Each array starts with the
narrowest item that holds its values and is widened (copied once) when a value needs more
(:func:`_append`). It is a
``Sequence[EntryRecord]``: indexing or iterating builds each record on demand, equal to the
record that was appended. :attr:`PackedRecords.reread` is the ``seq -> line`` mapping of the
records kept without their body, as a read-only view of the same arrays.
"""

from __future__ import annotations

from array import array
from bisect import bisect_left
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final, overload

__all__ = ["EntryRecord", "PackedRecords", "RereadLines"]

_NO_LINE: Final = 0
"""The stored line of a record kept with its body (nothing to read again); a record to be
read again stores its line + 1."""

_WIDTHS: Final = ("B", "H", "I", "Q")
"""Unsigned typecodes, narrowest first (1, 2, 4 and 8 bytes an item in CPython)."""


def _unsigned() -> array[int]:
    return array(_WIDTHS[0])


def _limit(values: array[int]) -> int:
    return (1 << (8 * values.itemsize)) - 1


def _append(values: array[int], value: int) -> array[int]:
    """``values`` with ``value`` (>= 0) appended: the same array, or a wider copy when
    ``value`` does not fit its items. ValueError for a negative value or one over 64 bits."""
    if value > _limit(values) or value < 0:
        values = _widened(values, value)
    values.append(value)
    return values


def _widened(values: array[int], value: int) -> array[int]:
    if value < 0:
        raise ValueError(f"a packed record holds values >= 0, got {value}")
    for code in _WIDTHS:
        wider = array(code)
        if wider.itemsize > values.itemsize and value <= _limit(wider):
            return array(code, values)
    raise ValueError(f"a packed record holds values below 2^64, got {value}")


def _extend(values: array[int], more: array[int]) -> array[int]:
    """``values`` followed by ``more`` (same rules as :func:`_append`)."""
    if more.itemsize > values.itemsize:
        values = _widened(values, _limit(more))
    values.extend(more if more.typecode == values.typecode else array(values.typecode, more))
    return values


@dataclass(frozen=True)
class EntryRecord:
    """What later steps need of an entry of a semantic kind."""

    seq: int
    kind: str
    actor: str
    body: dict[str, Any]


class PackedRecords(Sequence[EntryRecord]):
    """Records in seq order, packed (module docstring). Append in line order; the seqs of
    the records appended must increase (step 3 appends in line order, and seqs increase
    along the lines of any bundle that passes 3.3)."""

    __slots__ = (
        "_actor_ids",
        "_actors",
        "_actors_of",
        "_bodies",
        "_kind_ids",
        "_kinds",
        "_kinds_of",
        "_lines",
        "_seqs",
    )

    def __init__(self) -> None:
        self._seqs = _unsigned()
        self._lines = _unsigned()  # the line + 1, or _NO_LINE
        self._kinds = _unsigned()
        self._actors = _unsigned()
        self._kind_ids: dict[str, int] = {}
        self._kinds_of: list[str] = []
        self._actor_ids: dict[str, int] = {}
        self._actors_of: list[str] = []
        self._bodies: dict[int, dict[str, Any]] = {}

    def append(
        self, seq: int, kind: str, actor: str, body: dict[str, Any] | None, line: int
    ) -> None:
        """Add a record: with ``body`` kept, or (``body`` None) to be read again from ``line``."""
        position = len(self._seqs)
        self._seqs = _append(self._seqs, seq)
        self._lines = _append(self._lines, _NO_LINE if body is not None else line + 1)
        self._kinds = _append(self._kinds, _index(kind, self._kind_ids, self._kinds_of))
        self._actors = _append(self._actors, _index(actor, self._actor_ids, self._actors_of))
        if body is not None:
            self._bodies[position] = body

    def extend(self, other: PackedRecords) -> None:
        """Append ``other``'s records after these (a later chunk of lines)."""
        base = len(self._seqs)
        self._seqs = _extend(self._seqs, other._seqs)
        self._lines = _extend(self._lines, other._lines)
        kinds = [_index(kind, self._kind_ids, self._kinds_of) for kind in other._kinds_of]
        actors = [_index(actor, self._actor_ids, self._actors_of) for actor in other._actors_of]
        for name, ids, mapped in (
            ("_kinds", other._kinds, kinds),
            ("_actors", other._actors, actors),
        ):
            values: array[int] = getattr(self, name)
            if mapped and max(mapped) > _limit(values):
                values = _widened(values, max(mapped))
            values.extend(array(values.typecode, (mapped[i] for i in ids)))
            setattr(self, name, values)
        for position, body in other._bodies.items():
            self._bodies[base + position] = body

    def line(self, index: int) -> int | None:
        """The line record ``index``'s body is to be read again from, or None (body kept)."""
        line = self._lines[index]
        return None if line == _NO_LINE else line - 1

    @property
    def reread(self) -> RereadLines:
        """``seq -> line`` of the records kept without their body (a view)."""
        return RereadLines(self)

    def __len__(self) -> int:
        return len(self._seqs)

    @overload
    def __getitem__(self, index: int) -> EntryRecord: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[EntryRecord]: ...

    def __getitem__(self, index: int | slice) -> EntryRecord | Sequence[EntryRecord]:
        if isinstance(index, slice):
            return [self._record(i) for i in range(*index.indices(len(self)))]
        count = len(self._seqs)
        if index < 0:
            index += count
        if not 0 <= index < count:
            raise IndexError(index)
        return self._record(index)

    def _record(self, index: int) -> EntryRecord:
        body = self._bodies.get(index)
        return EntryRecord(
            self._seqs[index],
            self._kinds_of[self._kinds[index]],
            self._actors_of[self._actors[index]],
            {} if body is None else body,
        )

    def __iter__(self) -> Iterator[EntryRecord]:
        for index in range(len(self._seqs)):
            yield self._record(index)

    def __eq__(self, other: object) -> bool:
        if isinstance(other, PackedRecords | list | tuple):
            return len(self) == len(other) and all(a == b for a, b in zip(self, other, strict=True))
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]  # mutable

    def __repr__(self) -> str:
        return f"PackedRecords({len(self)} records)"


class RereadLines(Mapping[int, int]):
    """``seq -> line`` of the records of a :class:`PackedRecords` kept without their body."""

    __slots__ = ("_records",)

    def __init__(self, records: PackedRecords) -> None:
        self._records = records

    def __getitem__(self, seq: int) -> int:
        records = self._records
        seqs = records._seqs
        index = bisect_left(seqs, seq)
        if index < len(seqs) and seqs[index] == seq:
            line = records.line(index)
            if line is not None:
                return line
        raise KeyError(seq)

    def __iter__(self) -> Iterator[int]:
        records = self._records
        return (records._seqs[i] for i in range(len(records)) if records.line(i) is not None)

    def __len__(self) -> int:
        return sum(1 for line in self._records._lines if line != _NO_LINE)


def _index(value: str, ids: dict[str, int], values: list[str]) -> int:
    found = ids.get(value)
    if found is None:
        found = ids[value] = len(values)
        values.append(value)
    return found
