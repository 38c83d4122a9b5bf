"""Step 10 of ``registre verify --db``: the working context replayed (``specs/context.md``).

:class:`ContextCheck` is fed every verified entry of a thread in seq order
(:mod:`registre.ledger.verify.database` steps 2-5 have accepted it and every entry before it) and
checks, in this order, naming the first bad seq:

10.1 every ``context.compaction`` keeps every rule of ``specs/context.md`` section 7 against
     the fold of the entries before it (:func:`registre.context.validate_compaction`), and
     the fold can apply it (:class:`CompactionInvalidError`, the rule's error chained); the
     fold it returns, with the compaction applied, is carried on (not folded again);
10.2 every ``model.call`` names an earlier ``at_seq`` and its ``projection_sha256`` is the
     digest of the projection the entries ``0..at_seq`` give with the recorded budget,
     policy and counter, and, for a call recording ``lifecycle_block``, the lifecycle state
     after ``0..at_seq`` (the replay of step 9 when no lifecycle entry lies after
     ``at_seq``, else replayed again to ``at_seq``)
     (:func:`registre.attest.projection_digest.digest.verify_model_call`'s check, run by a
     :class:`~registre.attest.projection_digest.stream.ModelCallChecker` that carries the
     projection's parts forward with the kept fold instead of rebuilding them per call;
     :class:`ModelCallDigestError`, the cause chained) -- a digest signed with the operator
     key but forged is found here;
10.3 the ``context_snapshot`` row of every compaction is exactly the stored form of the
     fold just after it, and there is no other row (:class:`ContextSnapshotMismatchError`;
     ``registre rebuild`` repairs it).

The fold is built only around the entries that need it: at a compaction or model call it is
restored from the last compaction already checked (its row compared in 10.3, so trusted) and
the entries since, then kept entry by entry until ``IDLE_ENTRIES`` entries pass without a
compaction or model call. Memory is O(context), not O(thread); a thread without compactions
or model calls costs nothing here. Token counters: the default one, plus those given.
"""

from __future__ import annotations

import json
from array import array
from bisect import bisect_right
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from typing import Any, Final

from sqlalchemy import Connection

from registre.attest.entries import Entry
from registre.attest.notes import Verifier
from registre.attest.projection_digest import ModelCallChecker, claims_block
from registre.context import (
    ContextEntry,
    ContextState,
    TokenCounter,
    counter_registry,
    entry_text,
    validate_compaction,
)
from registre.errors import MalformedError, VerificationError
from registre.kinds import CONTEXT_COMPACTION, MODEL_CALL
from registre.ledger.context.store import EntryReader, connection_reader, lifecycle_at
from registre.ledger.errors import rebuild_hint
from registre.ledger.store.context_snapshots import (
    ContextHistoryError,
    context_entries,
    fold_from_snapshot,
    fold_on,
    seal_verifies,
    snapshot_json,
    stored_seal,
    stored_snapshot,
    stored_snapshots,
)
from registre.ledger.store.lifecycle_fold import ThreadFold
from registre.ledger.verify.errors import (
    CompactionInvalidError,
    ContextSnapshotMismatchError,
    ModelCallDigestError,
)

__all__ = ["IDLE_ENTRIES", "ContextCheck"]

TEXT_BLOCK: Final = 64
TEXT_BLOCKS: Final = 256
"""Blocks of :data:`TEXT_BLOCK` entry texts kept for quote checks (16,384 texts)."""

IDLE_ENTRIES: Final = 4096
"""Entries after the last compaction or model call beyond which the fold is dropped (and
rebuilt from the last compaction when the next one comes)."""


class ContextCheck:
    """Step 10 for one thread, inside ``verify --db``'s read snapshot (module docstring)."""

    def __init__(
        self,
        conn: Connection,
        thread: str,
        counters: Iterable[TokenCounter] = (),
        key: Verifier | None = None,
    ) -> None:
        self._conn = conn
        self._key = key  # the thread's key: a sealed snapshot's seal must verify under it
        self._thread = thread
        self._counters = counter_registry(counters)
        self._state: ContextState | None = None
        self._idle = 0
        self._compactions = array("q")  # the seqs of the compactions checked, 8 bytes each
        self._calls = ModelCallChecker(self._counters)
        # texts of earlier entries for quote checks, read in blocks and kept across
        # compactions (entries before the one checked are verified and never change)
        self._texts = _EarlierTexts(connection_reader(conn, thread))

    def check(self, entry: Entry, lifecycle: ThreadFold | None = None) -> None:
        """Check ``entry`` (the next one of the thread) and fold it if the fold is kept.
        ``lifecycle``: the lifecycle replay of the entries before ``entry`` (step 9), for a
        model call carrying the lifecycle block (replayed here when not given)."""
        kind = entry.kind
        if kind not in (CONTEXT_COMPACTION, MODEL_CALL):
            if self._state is not None:
                self._apply(self._state, entry)
                self._idle += 1
                if self._idle > IDLE_ENTRIES:
                    self._state = None
            return
        state = self._state if self._state is not None else self._fold_to(entry.seq - 1)
        if kind == CONTEXT_COMPACTION:
            # the fold after the entry, as validated: carried on, not folded again
            state = self._check_compaction(state, entry)
            self._check_snapshot(state, entry.seq)
            self._compactions.append(entry.seq)
        else:
            self._check_model_call(state, entry, lifecycle)
            self._apply(state, entry)
        self._state, self._idle = state, 0

    def finish(self) -> None:
        """10.3: no snapshot row at a seq that is not a compaction."""
        expected = iter(self._compactions)
        for seq, _boundary, _snapshot in stored_snapshots(self._conn, self._thread):
            if seq != next(expected, None):
                raise ContextSnapshotMismatchError(
                    self._thread,
                    seq,
                    "context snapshot row for an entry that is not a checked compaction",
                ).with_hint(rebuild_hint(self._thread))

    # --- the checks ---------------------------------------------------------------------------

    def _check_compaction(self, state: ContextState, entry: Entry) -> ContextState:
        """10.1; the fold after ``entry`` (``validate_compaction`` applied it to a copy of
        ``state``, which is left as it was)."""
        texts = _TailFirst(state, self._texts, entry.seq)
        try:
            return validate_compaction(state, _context_entry(entry), texts, self._counters)
        except (VerificationError, MalformedError) as exc:
            raise CompactionInvalidError(self._thread, entry.seq, str(exc)) from exc

    def _check_model_call(
        self, state: ContextState, entry: Entry, lifecycle: ThreadFold | None
    ) -> None:
        at_seq = entry.body["at_seq"]
        if at_seq >= entry.seq:
            raise ModelCallDigestError(
                self._thread,
                entry.seq,
                f"the model call projects entries up to {at_seq}, which is not before the call",
            )
        at = state if at_seq == state.at else self._fold_to(at_seq)
        try:
            block_state = None
            if claims_block(entry.body):
                if lifecycle is None or lifecycle.size > at_seq + 1:
                    lifecycle = lifecycle_at(self._conn, self._thread, at_seq)
                block_state = lifecycle.state
            self._calls.check(entry.body, at, block_state, self._entry)
        except (VerificationError, MalformedError) as exc:
            raise ModelCallDigestError(self._thread, entry.seq, str(exc)) from exc

    def _entry(self, seq: int) -> ContextEntry:
        """Entry ``seq`` of the thread, read back (a model call's recalls)."""
        return next(context_entries(self._conn, self._thread, seq, seq + 1))

    def _check_snapshot(self, state: ContextState, seq: int) -> None:
        stored = stored_snapshot(self._conn, self._thread, seq)
        expected: dict[str, Any] = json.loads(json.dumps(snapshot_json(state)))
        if stored is None:
            problem = "is missing"
        elif stored != expected:
            field = next(
                (name for name in expected if stored.get(name) != expected[name]), "format"
            )
            problem = f"differs from the fold of the entries in {field!r}"
        elif not self._seal_ok(seq):
            problem = "carries a seal that does not verify under the thread's key"
        else:
            return
        raise ContextSnapshotMismatchError(
            self._thread, seq, f"the context snapshot of the compaction {problem}"
        ).with_hint(rebuild_hint(self._thread))

    def _seal_ok(self, seq: int) -> bool:
        """An unsealed row is never trusted by a reader, so it is fine; a sealed one must be
        sealed by the thread's key."""
        found = stored_seal(self._conn, self._thread, seq)
        if found is None or found[2] is None:
            return True
        boundary, snapshot, seal = found
        key = self._key
        return key is not None and seal_verifies(
            self._conn, key, self._thread, seq, boundary, snapshot, seal
        )

    # --- folding ------------------------------------------------------------------------------

    def _fold_to(self, at: int) -> ContextState:
        """The fold of ``0..at`` from the last compaction at or before ``at`` already checked
        (its row matched the fold, so it is trusted), else from entry 0."""
        index = bisect_right(self._compactions, at) - 1
        try:
            if index < 0:
                entries = context_entries(self._conn, self._thread, 0, at + 1)
                return fold_on(ContextState(), entries, self._thread)
            seq = self._compactions[index]
            snapshot = stored_snapshot(self._conn, self._thread, seq)
            assert snapshot is not None  # compared in 10.3 when it was checked
            return fold_from_snapshot(self._conn, self._thread, seq, snapshot, at)
        except ContextHistoryError as exc:
            raise CompactionInvalidError(self._thread, exc.seq, exc.problem) from exc

    def _apply(self, state: ContextState, entry: Entry) -> None:
        try:
            fold_on(state, (_context_entry(entry),), self._thread)
        except ContextHistoryError as exc:
            raise CompactionInvalidError(self._thread, entry.seq, exc.problem) from exc


class _EarlierTexts:
    """Entry texts read from the ledger :data:`TEXT_BLOCK` entries at a time, the most
    recent :data:`TEXT_BLOCKS` whole blocks kept across compactions (entries before the one
    being checked are verified and never change; a block reaching past it is not kept)."""

    def __init__(self, read: EntryReader) -> None:
        self._read = read
        self._blocks: OrderedDict[int, dict[int, str]] = OrderedDict()

    def text(self, seq: int, stop: int) -> str:
        """The text of entry ``seq`` (< ``stop``, the entry being checked)."""
        number = seq // TEXT_BLOCK
        texts = self._blocks.get(number)
        if texts is not None:
            self._blocks.move_to_end(number)
            return texts[seq]
        start = number * TEXT_BLOCK
        end = min(stop, start + TEXT_BLOCK)
        texts = {e.seq: entry_text(e.kind, e.body) for e in self._read(start, end)}
        if end == start + TEXT_BLOCK:
            self._blocks[number] = texts
            if len(self._blocks) > TEXT_BLOCKS:
                self._blocks.popitem(last=False)
        return texts[seq]


class _TailFirst(Mapping[int, str]):
    """The texts of entries ``0..stop-1`` a compaction at ``stop`` searches its quotes in:
    those of the fold's tail from the tail items (the fold rendered them, and most quotes
    point at the entries being folded), the others from ``texts`` (read from the ledger)."""

    def __init__(self, state: ContextState, texts: _EarlierTexts, stop: int) -> None:
        self._state, self._texts, self._stop = state, texts, stop

    def __getitem__(self, seq: int) -> str:
        if not isinstance(seq, int) or not 0 <= seq < self._stop:
            raise KeyError(seq)
        tail = self._state.tail
        index = seq - self._state.boundary
        if 0 <= index < len(tail) and tail[index].seq == seq:
            return tail[index].text
        return self._texts.text(seq, self._stop)

    def __iter__(self) -> Iterator[int]:
        return iter(range(self._stop))

    def __len__(self) -> int:
        return self._stop


def _context_entry(entry: Entry) -> ContextEntry:
    return ContextEntry(entry.seq, entry.kind, entry.actor, entry.body)
