"""What step 3 of bundle verification keeps for the later steps (``specs/verify.md``).

:class:`EntriesChecked` is step 3's result: the counts per kind, the records of the
:data:`SEMANTIC_KINDS` (the bodies steps 6 and 7 read), the roots
asked for, and the lifecycle chain marks, thinned (:func:`thin_marks`) to those that can
decide the chain check. :class:`RecordsWithBodies` gives the records back with the bodies
step 3 did not keep, read again from verified bytes.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import overload

from registre.attest.entries import LIFECYCLE_KINDS, ChainMark, load_leaf
from registre.attest.verify._entry_records import EntryRecord, PackedRecords, RereadLines

__all__ = [
    "SEMANTIC_KINDS",
    "EntriesChecked",
    "RecordsWithBodies",
    "thin_marks",
]

SEMANTIC_KINDS: frozenset[str] = LIFECYCLE_KINDS | {"context.compaction", "model.call"}
"""Kinds whose bodies steps 6 and 7 read; only these bodies are kept after step 3."""


@dataclass
class EntriesChecked:
    """Result of step 3.

    ``kinds`` counts entries per kind; ``records`` are the semantic entries in seq order.
    Full bundles: ``roots`` at the sizes asked for (no leaf hash is kept: a later step
    that needs one hashes the leaf again, read from the bundle).
    Partial bundles: ``prev_roots``, each entry's signed ``prev.root`` in line order, which
    step 4 proves. ``marks``: what the lifecycle chain check (3.5, 4.6) needs, in line order,
    thinned chunk by chunk (:func:`thin_marks`: the same verdict, at the same seq, as every
    line's mark would give).
    """

    kinds: dict[str, int] = field(default_factory=dict)
    records: PackedRecords = field(default_factory=PackedRecords)
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
    :class:`~registre.attest.bundles.leaves.BundleLeaves` checks each against step 1), whose
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
        body = load_leaf(self._leaves[line])["entry"]["body"]
        return EntryRecord(record.seq, record.kind, record.actor, body)

    def __iter__(self) -> Iterator[EntryRecord]:
        for index in range(len(self._records)):
            yield self[index]


def thin_marks(marks: Sequence[ChainMark]) -> list[ChainMark]:
    """``marks`` (consecutive lines, in order) without those the lifecycle chain check could
    only repeat: a mark is dropped when it is not a lifecycle entry, not the last, and the
    mark before it is a non-lifecycle entry signing the same head -- the running chain is
    the same at both (a non-lifecycle entry does not extend it) and so is the signed head,
    so the check passes or fails on the earlier one. Over the thinned marks,
    :func:`~registre.attest.entries.lifecycle_chain.check_lifecycle_chain` returns the same result,
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
