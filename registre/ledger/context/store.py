"""Writing the working context to the ledger: compactions, model calls, and their checks.

Three write paths, each ONE write transaction that appends the entry and stores what the
fold derives from it (:mod:`registre.ledger.store.context_snapshots`) together, or nothing:

* :func:`record_compaction` -- ``Thread.compact``: fold the context at the head, plan and
  summarize **outside** the write lock (a summarizer may be a slow model call), then, under
  the lock, check that the head has not moved (else plan again), check the body against the
  rules (:func:`registre.context.validate_compaction`), append it and store the snapshot;
* :func:`record_model_call` -- ``Thread.model_call``: under the lock, fold the context at the
  head, project it (a context over budget raises, nothing written) and append the
  ``model.call`` with the projection's digest and ``at_seq`` = its own seq - 1;
* :func:`append_context_checked` -- ``Thread.append_many`` given ``context.compaction`` or
  ``model.call`` items (``registre append``, imports): each compaction must keep every rule
  and each model call's digest must reproduce (:class:`ContextEntryRefusedError`
  otherwise), so the ledger never receives one a verifier would refuse. Such a batch may not
  also hold lifecycle kinds (:class:`MixedContextBatchError`).

A summarizer that raises, a summary the controller refuses, a budget that cannot be met:
each raises before the write transaction starts or rolls it back, leaving the ledger exactly
as it was. Token counters are given by the caller; raw appends know the default counter only.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from sqlalchemy import Connection, Engine, bindparam, select

from registre.attest.entries import LIFECYCLE_KINDS, Entry, validate_body
from registre.attest.notes import Signer, Verifier
from registre.attest.projection_digest import (
    REGISTRE_SHAPE,
    call_digest,
    claims_block,
    verify_model_call,
)
from registre.context import (
    LIFECYCLE_BLOCK_VERSION,
    CompactionPlan,
    ContextEntry,
    ContextState,
    Policy,
    Projection,
    StalePlanError,
    Summarizer,
    TokenCounter,
    counter_registry,
    entry_text,
    plan_compaction,
    prepare_compaction,
    project,
    validate_compaction,
)
from registre.context.recall import RecallOptions
from registre.errors import MalformedError, RefusedError, VerificationError
from registre.ledger.context.recall import recall_section
from registre.ledger.core.append import (
    AppendItem,
    append_entries,
    batch_has_kind,
    read_bound_head,
    read_head,
)
from registre.ledger.core.database import Database
from registre.ledger.errors import UnknownThreadError
from registre.ledger.store.context_cache import (
    SharedTexts,
    fold_cache,
    text_cache,
    verifier_of,
)
from registre.ledger.store.context_snapshots import (
    ContextHistoryError,
    context_entries,
    fold_context,
    fold_on,
    insert_snapshots,
    rebuild_thread_context,
    seal_row,
    snapshot_row,
)
from registre.ledger.store.engine import read_transaction, write_transaction
from registre.ledger.store.lifecycle_fold import ThreadFold, catch_up
from registre.ledger.store.schema import tables

__all__ = [
    "CONTEXT_WRITE_KINDS",
    "MODEL_CALL_ACTOR",
    "ContextEntryRefusedError",
    "ContextRebuildReport",
    "EmptyThreadError",
    "LeafTexts",
    "MixedContextBatchError",
    "PlannedCompaction",
    "append_context_checked",
    "commit_context_items",
    "connection_reader",
    "engine_reader",
    "head_size",
    "lifecycle_at",
    "rebuild_context",
    "record_compaction",
    "record_model_call",
]

CONTEXT_WRITE_KINDS: Final = frozenset(("context.compaction", "model.call"))
"""Kinds whose raw appends are checked against the working-context rules."""

MODEL_CALL_ACTOR: Final = "registre"
_PLAN_ATTEMPTS: Final = 3
_HEAD_SIZE: Final = select(tables.thread.c.size).where(tables.thread.c.id == bindparam("thread"))

EntryReader = Callable[[int, int], Iterator[ContextEntry]]
"""``read(start, stop)``: the entries ``start <= seq < stop`` as the context fold reads them."""


class ContextEntryRefusedError(RefusedError):
    """A ``context.compaction`` that breaks a rule of ``specs/context.md``, or a
    ``model.call`` whose digest does not reproduce, offered for appending; nothing was
    written. ``seq`` is the entry it would have been; the rule's error is chained."""

    def __init__(self, message: str, seq: int) -> None:
        self.seq = seq
        super().__init__(message)


class MixedContextBatchError(RefusedError):
    """An append batch holding both lifecycle kinds and compactions or model calls."""


class EmptyThreadError(RefusedError):
    """A model call on a thread with no entries: there is no context to send."""


@dataclass(frozen=True)
class ContextRebuildReport:
    """What :func:`rebuild_context` did for one thread: ``snapshots`` rows written for a
    thread of ``size`` entries."""

    thread: str
    size: int
    snapshots: int


# --- entry texts, read on demand ----------------------------------------------------------


class LeafTexts(Mapping[int, str]):
    """Entry texts (:func:`registre.context.entry_text`) of entries ``0 .. stop-1``, read
    from the ledger when asked, ``block`` entries at a time, the most recent ``blocks`` blocks
    kept. ``extra`` holds texts of entries not yet written (an append batch); ``shared``, texts
    kept across calls (:class:`~registre.ledger.store.context_cache.TextCache`), is asked first
    and filled from each block read. What quote checks need: a summary line may point at
    entries folded long ago."""

    def __init__(
        self,
        read: EntryReader,
        stop: int,
        extra: Mapping[int, str] | None = None,
        *,
        block: int = 64,
        blocks: int = 64,
        shared: SharedTexts | None = None,
    ) -> None:
        self._read, self._stop, self._extra = read, stop, dict(extra or {})
        self._shared = shared
        self._block, self._blocks = block, blocks
        self._cache: OrderedDict[int, dict[int, str]] = OrderedDict()

    def __getitem__(self, seq: int) -> str:
        if seq in self._extra:
            return self._extra[seq]
        if not isinstance(seq, int) or not 0 <= seq < self._stop:
            raise KeyError(seq)
        if self._shared is not None:
            kept = self._shared.get(seq)
            if kept is not None:
                return kept
        number = seq // self._block
        texts = self._cache.get(number)
        if texts is None:
            start = number * self._block
            stop = min(self._stop, start + self._block)
            texts = {e.seq: entry_text(e.kind, e.body) for e in self._read(start, stop)}
            if self._shared is not None:
                for seq_read, text in texts.items():
                    self._shared.put(seq_read, text)
            self._cache[number] = texts
            if len(self._cache) > self._blocks:
                self._cache.popitem(last=False)
        else:
            self._cache.move_to_end(number)
        return texts[seq]

    def __iter__(self) -> Iterator[int]:
        yield from range(self._stop)
        yield from (seq for seq in self._extra if not 0 <= seq < self._stop)

    def __len__(self) -> int:
        return self._stop + sum(1 for seq in self._extra if not 0 <= seq < self._stop)


def connection_reader(conn: Connection, thread: str) -> EntryReader:
    """Read entries through ``conn`` (inside its transaction)."""
    return lambda start, stop: context_entries(conn, thread, start, stop)


def engine_reader(engine: Engine, thread: str) -> EntryReader:
    """Read entries in a short read transaction of their own per call."""

    def read(start: int, stop: int) -> Iterator[ContextEntry]:
        with read_transaction(engine) as conn:
            return iter(list(context_entries(conn, thread, start, stop)))

    return read


def head_size(conn: Connection, thread: str) -> int:
    """The thread's size, read without locking; UnknownThreadError if there is none."""
    size = conn.execute(_HEAD_SIZE, {"thread": thread}).scalar()  # built once, not per call
    if size is None:
        raise UnknownThreadError(f"no thread {thread!r}; list threads with `registre thread list`")
    return int(size)


# --- the write paths ------------------------------------------------------------------------


def append_context_checked(
    db: Database,
    thread: str,
    items: Sequence[AppendItem],
    counters: Iterable[TokenCounter] = (),
) -> list[Entry]:
    """Append ``items`` in one transaction after checking every compaction and model call
    among them against the fold of the thread (module docstring).

    Raises, with nothing written: MixedContextBatchError, the body errors of
    :func:`registre.attest.entries.bodies.validate_body`, ContextEntryRefusedError,
    ContextHistoryError (the
    stored history does not fold), and whatever :func:`registre.ledger.core.append.append_entries`
    raises.
    """
    if batch_has_kind(items, LIFECYCLE_KINDS):
        raise MixedContextBatchError(
            "append lifecycle entries and compactions or model calls in separate batches"
        )
    signer = db.require_signer()
    with write_transaction(db.engine) as conn:
        _origin, frontier = read_head(conn, thread)
        state = fold_context(conn, thread, frontier.size - 1, verifier_of(signer))
        return commit_context_items(conn, signer, thread, state, items, counter_registry(counters))


def commit_context_items(
    conn: Connection,
    signer: Signer,
    thread: str,
    state: ContextState,
    items: Sequence[AppendItem],
    counters: Mapping[str, TokenCounter],
) -> list[Entry]:
    """In the caller's write transaction, ``state`` being the fold at the locked head: check
    each item in order against the fold (compactions by every rule of ``specs/context.md``
    section 7, down to rule 11: one that does not make the context smaller is refused; model
    calls by their digest), append them all, and store a snapshot per compaction. ``state``
    is the function's: it may be advanced past some items or left as it was, and is not to
    be used afterwards. Raises as :func:`append_context_checked`."""
    size = state.at + 1
    batch: list[ContextEntry] = []
    rows = []
    shared = text_cache().texts(conn, thread, size)
    for offset, item in enumerate(items):
        kind, body, actor = item
        validate_body(kind, body)
        entry = ContextEntry(size + offset, kind, actor, body)
        where = f"item {offset} ({kind}) would be entry {entry.seq}"
        texts = LeafTexts(connection_reader(conn, thread), size, _texts(batch), shared=shared)
        try:
            if kind == "context.compaction":
                # the fold after the entry, checked: the same as folding it on (not twice)
                state = validate_compaction(state, entry, texts, counters)
            else:
                if kind == "model.call":
                    at = _model_call_state(
                        conn, thread, state, batch, body["at_seq"], entry.seq, verifier_of(signer)
                    )
                    lifecycle = None
                    if claims_block(body):
                        lifecycle = lifecycle_at(conn, thread, body["at_seq"]).state
                    verify_model_call(
                        body, at, counters, lifecycle, _batch_entries(conn, thread, batch)
                    )
                fold_on(state, (entry,), thread)
        except ContextEntryRefusedError:
            raise
        except ContextHistoryError as exc:
            if exc.seq < size:
                raise  # the stored history, not this item
            raise _refusal(where, exc, entry.seq) from exc
        except (VerificationError, MalformedError) as exc:
            raise _refusal(where, exc, entry.seq) from exc
        batch.append(entry)
        if kind == "context.compaction":
            rows.append(snapshot_row(thread, entry.seq, state))
    entries = append_entries(conn, signer, thread, items, checked=range(len(items)))
    for row in rows:  # sealed once their entries are signed: the seal covers the leaf hash
        seal_row(row, signer, entries[row["seq"] - size].leaf_hash)
    insert_snapshots(conn, rows)
    return entries


def _refusal(where: str, exc: Exception, seq: int) -> ContextEntryRefusedError:
    return ContextEntryRefusedError(
        f"{where}: {exc}",
        seq,
    ).with_hint(
        "record compactions with `registre compact` (Thread.compact) and model calls with "
        "Thread.model_call, which follow the rules"
    )


def _batch_entries(
    conn: Connection, thread: str, batch: Sequence[ContextEntry]
) -> Callable[[int], ContextEntry]:
    """Entry ``seq`` of the thread: of ``batch`` (not written yet), else read back."""
    pending = {entry.seq: entry for entry in batch}

    def read(seq: int) -> ContextEntry:
        found = pending.get(seq)
        if found is not None:
            return found
        return next(context_entries(conn, thread, seq, seq + 1))

    return read


def _texts(batch: Sequence[ContextEntry]) -> dict[int, str]:
    return {entry.seq: entry_text(entry.kind, entry.body) for entry in batch}


def lifecycle_at(conn: Connection, thread: str, at: int) -> ThreadFold:
    """The lifecycle fold of entries ``0..at``, replayed (O(lifecycle entries)): for a model
    call carrying the lifecycle block whose state no cached fold holds.
    LifecycleHistoryError if the stored history does not replay."""
    fold = ThreadFold(thread)
    catch_up(conn, fold, at + 1)
    return fold


def _model_call_state(
    conn: Connection,
    thread: str,
    state: ContextState,
    batch: Sequence[ContextEntry],
    at_seq: int,
    seq: int,
    key: Verifier,
) -> ContextState:
    """The fold at ``at_seq`` for a model call that would be entry ``seq`` (snapshots trusted
    only when sealed by ``key``)."""
    if at_seq >= seq:
        raise ContextEntryRefusedError(
            f"a model call at seq {seq} cannot project entries up to {at_seq}: at_seq must "
            "name an earlier entry",
            seq,
        )
    if at_seq == state.at:
        return state
    written = seq - len(batch)
    if at_seq < written:
        return fold_context(conn, thread, at_seq, key)
    before = fold_context(conn, thread, written - 1, key)
    return fold_on(before, batch[: at_seq - written + 1], thread)


@dataclass(frozen=True, slots=True, eq=False)
class PlannedCompaction:
    """A plan already made by the caller: ``plan`` is ``plan_compaction(state, policy,
    counter)`` and ``state`` the fold of the thread's first ``state.at + 1`` entries, folded
    with the database's signer's key trusted (as :func:`record_compaction` folds). Handed to
    :func:`record_compaction` so that it does not fold and plan a second time while the head
    has not moved; ``state`` is the caller's no more."""

    state: ContextState
    plan: CompactionPlan


def record_compaction(
    db: Database,
    thread: str,
    policy: Policy,
    counter: TokenCounter,
    summarizer: Summarizer,
    actor: str,
    *,
    planned: PlannedCompaction | None = None,
) -> Entry | None:
    """Append the compaction ``policy`` calls for at the head, or return None, writing
    nothing, when none is due or none would make the context smaller (a compaction must pay
    for itself: ``prepare_compaction`` never returns one whose ``tokens_after`` is not below
    its ``tokens_before``, and :func:`commit_context_items` would refuse it). ``planned``:
    the plan the caller made with this ``policy`` and ``counter``, used while the head is
    still the one it was made at (else the head is folded and planned again). Raises, with
    nothing written: NoSignerError, UnknownThreadError, ContextBudgetError (pins or recent
    turns cannot fit), whatever the summarizer raises, SummaryRefusedError subclasses,
    ContextEntryRefusedError, and StalePlanError when the thread kept moving while the
    summary was written (after three attempts)."""
    signer = db.require_signer()
    counters = counter_registry([counter])
    for _attempt in range(_PLAN_ATTEMPTS):
        with read_transaction(db.engine, snapshot=True) as conn:
            size = head_size(conn, thread)
            read_bound_head(conn, thread, lock=False)  # nothing unverified reaches a summarizer
            plan: CompactionPlan | None
            if planned is not None and planned.state.at == size - 1:
                state, plan = planned.state, planned.plan
            else:
                state = fold_context(conn, thread, size - 1, verifier_of(signer))
                plan = None
            planned = None  # a second attempt folds the new head
            shared = text_cache().texts(conn, thread, size)
        if plan is None:
            plan = plan_compaction(state, policy, counter)
            if plan is None:
                return None
        if shared is not None:
            # what the quote checks of the summary (here, then under the lock) look up first:
            # the tail's texts, already in hand (TailItem.text is entry_text), not read back
            for tail_item in state.tail:
                shared.put(tail_item.seq, tail_item.text)
        texts = LeafTexts(engine_reader(db.engine, thread), size, shared=shared)
        body = prepare_compaction(state, policy, counter, summarizer, texts, plan=plan)
        if body is None:
            return None
        with write_transaction(db.engine) as conn:
            _origin, frontier = read_head(conn, thread)
            if frontier.size != size:
                continue  # another writer appended meanwhile: plan again
            item = ("context.compaction", body, actor)
            return commit_context_items(conn, signer, thread, state, [item], counters)[0]
    raise StalePlanError(
        f"thread {thread} kept growing while its compaction was being summarized "
        f"({_PLAN_ATTEMPTS} attempts); try again"
    )


def compaction_would_record(
    db: Database, thread: str, policy: Policy, counter: TokenCounter, summarizer: Summarizer
) -> bool:
    """Whether :func:`record_compaction` would append a compaction at the head now: plans
    and summarizes exactly as it does, writing nothing. Raises what it raises before
    writing (ContextBudgetError, the summarizer's errors, SummaryRefusedError subclasses)."""
    with read_transaction(db.engine, snapshot=True) as conn:
        size = head_size(conn, thread)
        state = fold_context(conn, thread, size - 1)
        shared = text_cache().texts(conn, thread, size)
    texts = LeafTexts(engine_reader(db.engine, thread), size, shared=shared)
    return prepare_compaction(state, policy, counter, summarizer, texts) is not None


def record_model_call(
    db: Database,
    thread: str,
    model: str,
    budget: int,
    policy: Policy,
    counter: TokenCounter,
    actor: str = MODEL_CALL_ACTOR,
    shape: str = REGISTRE_SHAPE,
    *,
    lifecycle_block: bool = False,
    recall: RecallOptions | None = None,
) -> tuple[Projection, Entry]:
    """Under the write lock, project the context at the head and append the ``model.call``
    recording the digest of the projection in ``shape`` (``registre``: the projection itself,
    no ``shape`` field; a provider shape: its request data, ``"shape"`` recorded) with
    ``at_seq`` = the call's seq - 1. With ``lifecycle_block``, the projection ends with the
    lifecycle block built from the thread's lifecycle state at the head (the writer's cached
    fold) and the body records ``"lifecycle_block": 2`` (the block's version). With
    ``recall``, entries of the whole thread relevant to the latest user turn, the task pins
    and the latest tool result are recalled from the full-text index into the room the other
    messages leave (:mod:`registre.ledger.context.recall`), and the body records them under
    ``"recalled"`` (nothing when none is). Raises, with
    nothing written: NoSignerError, UnknownThreadError, EmptyThreadError,
    ContextBudgetError (compact first), BodySchemaError (a bad model name), ValueError (a
    shape not in ``registre.attest.projection_digest.digest.SHAPES``)."""
    signer = db.require_signer()
    with db.lifecycle.using(thread) as slot, write_transaction(db.engine) as conn:
        _origin, frontier = read_head(conn, thread)
        if frontier.size == 0:
            raise EmptyThreadError(f"thread {thread} has no entries: there is no context to send")
        state = fold_context(conn, thread, frontier.size - 1, verifier_of(signer))
        lifecycle = slot.current(conn, frontier.size).state if lifecycle_block else None
        projection = project(state, budget, policy, counter, lifecycle)
        recalled = None
        if recall is not None:
            room = recall.room(policy.window_tokens(budget), projection.tokens)
            recalled = recall_section(
                conn, thread, state, room, counter, recall, projection.manifest
            )
            if recalled is not None:
                projection = project(state, budget, policy, counter, lifecycle, recalled=recalled)
        digest = call_digest(projection, state, shape)
        fold_cache().adopt(db.engine, thread, state)  # keep what it counted and encoded
        body: dict[str, Any] = {
            "model": model,
            "projection_sha256": digest,
            "at_seq": state.at,
            "budget_tokens": budget,
            "policy": policy.to_json(),
            "token_counter": counter.name,
        }
        if shape != REGISTRE_SHAPE:
            body["shape"] = shape
        if lifecycle_block:
            body["lifecycle_block"] = LIFECYCLE_BLOCK_VERSION
        if recalled is not None:
            body["recalled"] = recalled.to_body()
        entry = append_entries(conn, signer, thread, [("model.call", body, actor)])[0]
    return projection, entry


def rebuild_context(db: Database, thread: str | None = None) -> list[ContextRebuildReport]:
    """Drop and rebuild the context snapshots of ``thread`` (default: every thread) from the
    entries, one write transaction per thread under its lock; sealed when the database's
    signer is the thread's key (else unsealed, so never trusted). Raises UnknownThreadError;
    ContextHistoryError for a thread whose entries do not fold (its rows are left as they
    were)."""
    if thread is None:
        ids = db.thread_ids()
    else:
        with read_transaction(db.engine) as conn:
            head_size(conn, thread)
        ids = [thread]
    reports = []
    for thread_id in ids:
        with write_transaction(db.engine) as conn:
            _origin, frontier, bound = read_bound_head(conn, thread_id)
            signer = db.signer if db.signer is not None and db.signer.vkey() == bound else None
            count = rebuild_thread_context(conn, thread_id, frontier.size, signer)
        reports.append(ContextRebuildReport(thread_id, frontier.size, count))
    return reports
