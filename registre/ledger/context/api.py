"""The thread's working-context API: project, compact, call a model, replay, expand.

The working-context wing of :class:`registre.ledger.thread.Thread`::

    projection = thread.project(budget=8000)             # messages + manifest, at the head
    thread.compact(budget=8000)                           # appends a context.compaction if due
    projection, call = thread.model_call("acme/model-4", budget=8000)
    send(projection.messages)                             # what the digest in `call` covers
    thread.replay_context(call.seq)                       # rebuilt byte for byte, digest proved
    projection, call = thread.model_call("gpt-x", budget=8000, shape="openai.chat")
    client.chat.completions.create(model="gpt-x", **projection.as_openai_chat())  # digested
    thread.replay_request(call.seq)                       # that request data, digest proved
    entry, proof = thread.expand(4)                       # the entry behind a summary pointer

A projection is a pure function of the ledger prefix ``0..at``, the budget, the policy and
the counter: ``project(at=k)`` today gives what it gave when entry ``k`` was the head. It is
read from the context snapshots (:mod:`registre.ledger.store.context_snapshots`), so its cost
follows the context, not the history. Defaults: the budget is the policy's ``budget_tokens``;
without a policy, ``Policy(budget_tokens=budget)`` (the other fields at their defaults); the
counter is the default counter ``registre.default/1``.

Every write is one ledger entry written with what it derives, or nothing
(:mod:`registre.ledger.context.store`). Pins and unpins are lifecycle requests
(:meth:`registre.ledger.lifecycle.api.LifecycleThread.pin`); a live pin's text is in every
projection verbatim.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from sqlalchemy import Connection

from registre.attest.entries import Entry
from registre.attest.projection_digest import (
    REGISTRE_SHAPE,
    SHAPES,
    claims_block,
    rebuild_projection,
    shape_json,
    verify_model_call,
)
from registre.attest.tree import verify_inclusion
from registre.context import (
    ContextBudgetError,
    ContextEntry,
    ContextState,
    ExtractiveSummarizer,
    Policy,
    Projection,
    Summarizer,
    TokenCounter,
    counter_registry,
    default_counter,
    plan_compaction,
    project,
    task_pins_due,
)
from registre.context.events import COMPACTION_ACTOR
from registre.context.recall import RecallOptions
from registre.context.task_pin import TASK_PIN_ACTOR, TASK_PIN_KIND, stale_task_pins
from registre.errors import RefusedError
from registre.ledger.context.store import (
    MODEL_CALL_ACTOR,
    PlannedCompaction,
    compaction_would_record,
    head_size,
    lifecycle_at,
    record_compaction,
    record_model_call,
)
from registre.ledger.context.task_turns import task_turns
from registre.ledger.core.append import read_bound_head
from registre.ledger.core.thread_core import ThreadCore, ThreadInclusionProof
from registre.ledger.errors import EntryNotFoundError, StoreCorruptError
from registre.ledger.store.context_cache import fold_cache, verifier_of
from registre.ledger.store.context_snapshots import context_entries, fold_context
from registre.ledger.store.engine import read_transaction
from registre.lifecycle import LifecycleFormatError, LifecycleState

__all__ = ["ContextThread", "NotAModelCallError", "resolve_policy"]


class NotAModelCallError(RefusedError):
    """``replay_context`` given the seq of an entry that is not a ``model.call``."""


def resolve_policy(budget: int | None, policy: Policy | None) -> tuple[int, Policy]:
    """``(budget, policy)`` by the defaults of the module docstring. LifecycleFormatError
    (a MalformedError) for a budget that is not a positive integer."""
    if budget is not None and (type(budget) is not int or budget < 1):
        raise LifecycleFormatError(
            "budget", f"expected a whole number of tokens >= 1, got {budget}"
        )
    if policy is None:
        policy = Policy() if budget is None else Policy(budget_tokens=budget)
    return (policy.budget_tokens if budget is None else budget), policy


def _recall_options(recall: bool | RecallOptions) -> RecallOptions | None:
    if isinstance(recall, RecallOptions):
        return recall
    return RecallOptions() if recall else None


class ContextThread(ThreadCore):
    """The thread core with the working-context wing (module docstring).
    :class:`registre.ledger.thread.Thread` is this and the lifecycle wing."""

    def context_state(self, at: int | None = None) -> ContextState:
        """The context fold of entries ``0..at`` (default: the head; ``-1``: no entry).
        EntryNotFoundError for an ``at`` outside ``-1 .. head - 1``; ContextHistoryError if
        the stored entries do not fold."""
        with read_transaction(self._db.engine, snapshot=True) as conn:
            size = head_size(conn, self.id)
            at = size - 1 if at is None else at
            if type(at) is not int or not -1 <= at < size:
                raise EntryNotFoundError(
                    f"thread {self.id} has entries 0..{size - 1}; at {at} is not one of them "
                    "(-1: before the first)"
                )
            if at >= 0:  # the entries folded are under a head the thread's key signed
                read_bound_head(conn, self.id, lock=False)
            signer = self._db.signer
            return fold_context(conn, self.id, at, verifier_of(signer) if signer else None)

    def context_entries(self, start: int = 0, stop: int | None = None) -> list[ContextEntry]:
        """Entries ``start <= seq < stop`` (default: to the head) as the context fold reads
        them: parsed, in seq order, signatures not checked (:meth:`entries` checks them).
        EntryNotFoundError for a range outside the thread."""
        with read_transaction(self._db.engine, snapshot=True) as conn:
            size = head_size(conn, self.id)
            stop = size if stop is None else stop
            if not 0 <= start <= stop <= size:
                raise EntryNotFoundError(
                    f"thread {self.id} has entries 0..{size - 1}; asked for [{start}, {stop})"
                )
            return list(context_entries(conn, self.id, start, stop))

    def project(
        self,
        at: int | None = None,
        budget: int | None = None,
        policy: Policy | None = None,
        counter: TokenCounter | None = None,
        *,
        lifecycle_block: bool = False,
    ) -> Projection:
        """The projection of entries ``0..at`` (default: the head) for ``budget`` tokens;
        with ``lifecycle_block``, ending with the lifecycle block of the lifecycle state
        after the same entries (at the head: the writer's cached lifecycle fold, caught up;
        else replayed, O(lifecycle entries)). Deterministic. Raises
        ContextBudgetError (PinsOverBudgetError, ProjectionOverBudgetError: compact first)
        when it does not fit; EntryNotFoundError for a bad ``at``."""
        budget, policy = resolve_policy(budget, policy)
        state = self.context_state(at)
        lifecycle = None
        if lifecycle_block:
            lifecycle = self._lifecycle_state(state.at + 1)
        projection = project(state, budget, policy, counter or default_counter(), lifecycle)
        fold_cache().adopt(self._db.engine, self.id, state)  # keep what it counted
        return projection

    def _lifecycle_state(self, size: int) -> LifecycleState:
        """The lifecycle state after the first ``size`` entries: from the writer's cached fold,
        caught up, when that fold is not past ``size`` (a projection at the head: O(lifecycle
        entries since)), else replayed (O(lifecycle entries))."""
        with (
            self._db.lifecycle.using(self.id) as slot,
            read_transaction(self._db.engine, snapshot=True) as conn,
        ):
            if slot.fold is None or slot.fold.size <= size:
                return slot.current(conn, size).state.copy()  # a writer may fold on
            return lifecycle_at(conn, self.id, size - 1).state

    def compact(
        self,
        budget: int | None = None,
        policy: Policy | None = None,
        summarizer: Summarizer | None = None,
        *,
        counter: TokenCounter | None = None,
        actor: str = COMPACTION_ACTOR,
        task_pin: bool = True,
    ) -> Entry | None:
        """Append the ``context.compaction`` the policy calls for now (``budget`` overrides
        the policy's ``budget_tokens``), summarized by ``summarizer`` (default: the
        extractive summarizer); None when the context is under the high-water mark, or when
        no compaction would make it smaller (a compaction must pay for itself: nothing is
        written).

        ``task_pin`` (default on): before a compaction that folds the thread's system
        prompt or first user turn, pin them (``task_parameter``, their whole text) so the
        header carries them verbatim (``specs/context.md`` section 5.1); each is pinned at
        most once, and only if it takes at most an eighth of the budget.

        A summarizer that raises, or whose summary is refused (SummaryRefusedError
        subclasses), leaves the ledger exactly as it was (a task pin made first stays); so
        does ContextBudgetError (the pins or the most recent turns cannot fit)."""
        if budget is not None:
            resolve_policy(budget, None)
            policy = (policy or Policy()).with_budget(budget)
        policy, counter = policy or Policy(), counter or default_counter()
        summarizer = summarizer or ExtractiveSummarizer()
        planned = None
        if task_pin:
            due, planned = self._carry_task(policy, counter, summarizer)
            if not due:
                return None  # nothing due at the head it planned from
        return record_compaction(
            self._db, self.id, policy, counter, summarizer, actor, planned=planned
        )

    def _carry_task(
        self, policy: Policy, counter: TokenCounter, summarizer: Summarizer
    ) -> tuple[bool, PlannedCompaction | None]:
        """Pin the task entries the next compaction would fold (:meth:`compact`), once that
        compaction, planned and summarized without the pins, is known to be recorded: a
        summarizer that raises or a summary refused leaves the ledger as it was. ``(False,
        None)`` when no compaction is due at the head it read (so most model calls fold and
        plan once, not twice); ``(True, planned)`` when one may be (or the plan raised:
        record_compaction raises it again, with nothing written), ``planned`` the plan made
        at that head (None once a task pin moved the head, or when the plan raised), which
        record_compaction uses rather than planning again."""
        state = self.context_state()
        try:
            plan = plan_compaction(state, policy, counter)
        except ContextBudgetError:
            return True, None  # record_compaction raises it, with nothing written
        if plan is None:
            return False, None
        planned = PlannedCompaction(state, plan)
        if plan.folded is None:
            return True, planned
        with read_transaction(self._db.engine, snapshot=True) as conn:
            entries = task_turns(conn, self.id, state.at + 1)
            stale = stale_task_pins(self._automatic_task_pins(conn, state), entries)
        due = task_pins_due(entries, state, plan, counter)
        if (due or stale) and compaction_would_record(
            self._db, self.id, policy, counter, summarizer
        ):
            for pin_id in stale:
                self._unpin_task(pin_id, f"a new task started at entry {entries[0].seq}")
            for seq, text in due:
                self._pin_task(seq, text)
            return True, None  # the head moved: plan again
        return True, planned

    def _automatic_task_pins(
        self, conn: Connection, state: ContextState
    ) -> list[tuple[str, int, str]]:
        """``(pin id, source seq, text)`` of each live ``task_parameter`` pin whose
        ``context.pin`` entry the writer made itself (actor ``registre``)."""
        found = []
        for pin in state.live_pins():
            if pin.kind != TASK_PIN_KIND:
                continue
            made_at = state.pin_entry_seq(pin.id)
            made = next(iter(context_entries(conn, self.id, made_at, made_at + 1)))
            if made.actor == TASK_PIN_ACTOR:
                found.append((pin.id, pin.seq, pin.text))
        return found

    def _pin_task(self, seq: int, text: str) -> None:
        """Pin the whole ``text`` of entry ``seq`` as a task parameter. The working-context
        wing cannot write lifecycle events: :class:`registre.ledger.thread.Thread` does."""

    def _unpin_task(self, pin_id: str, reason: str) -> None:
        """Unpin the automatic task pin ``pin_id`` of an earlier task, saying why
        (:class:`registre.ledger.thread.Thread` does)."""

    def model_call(
        self,
        model: str,
        budget: int,
        policy: Policy | None = None,
        counter: TokenCounter | None = None,
        compact: bool = True,
        *,
        summarizer: Summarizer | None = None,
        actor: str = MODEL_CALL_ACTOR,
        shape: str = REGISTRE_SHAPE,
        lifecycle_block: bool = True,
        task_pin: bool = True,
        recall: bool | RecallOptions = True,
    ) -> tuple[Projection, Entry]:
        """Record that ``model`` is sent the context at the head: compact first if the
        context is past the policy's high-water mark (``compact``), then project for
        ``budget`` tokens and append the ``model.call`` with the digest of what is sent,
        ``at_seq`` = its seq - 1. Returns the projection and the entry.

        ``shape`` says what is sent, and so what the digest covers (``specs/context.md``
        section 8): ``"registre"`` (default) the projection itself (``projection.to_json()``;
        the body has no ``shape`` field, as before shapes existed); ``"openai.chat"``,
        ``"openai.responses"`` or ``"anthropic"`` the provider request data, which the caller
        sends as returned by ``projection.as_openai_chat()``, ``as_openai_responses()`` or
        ``as_anthropic()``: ``client.chat.completions.create(model=...,
        **projection.as_openai_chat())``. Only that shape's bytes are covered.

        ``task_pin`` is :meth:`compact`'s (the compaction made first may pin the task).

        ``lifecycle_block`` (default on: the agent must see what it may cite): end the
        projection with the lifecycle block (every active evidence id, statements for those
        that fit, the stale conclusions, the open questions; at most a tenth of ``budget``,
        shrinking rather than refusing; ``specs/context.md`` section 4.1) and record
        ``"lifecycle_block": 2`` (its version) in the body, so verifiers rebuild it. With
        nothing to show there is no block message (the field is recorded all the same).

        ``recall`` (default on; :class:`~registre.context.recall.RecallOptions` to size
        it): before the call, entries of the whole thread that the context does not show
        verbatim and that share words with the latest user turn, the task pins or the latest
        tool result's identifiers are recalled through the database's full-text index into a
        section after the tail, in the room the other messages leave (at most half the
        budget by default), and the body records them (``"recalled"``: seq, SHA-256 of the
        text shown, byte range of an excerpt), so verifiers check each against its entry
        (``specs/context.md`` section 4.3). ``recall=False``: the call is what it was
        before recall existed, byte for byte.

        Raises LifecycleFormatError (a MalformedError) for a shape not in
        ``registre.attest.projection_digest.digest.SHAPES``, before anything is written;
        ContextBudgetError when the context cannot fit (nothing recorded for the call; a
        compaction made first stays), EmptyThreadError on an empty thread, and what
        :meth:`compact` raises."""
        if shape not in SHAPES:
            raise LifecycleFormatError(
                "shape", f"expected one of {', '.join(SHAPES)}, got {shape!r:.80}"
            )
        budget, policy = resolve_policy(budget, policy)
        counter = counter or default_counter()
        if compact:
            self.compact(policy=policy, summarizer=summarizer, counter=counter, task_pin=task_pin)
        return record_model_call(
            self._db,
            self.id,
            model,
            budget,
            policy,
            counter,
            actor,
            shape=shape,
            lifecycle_block=lifecycle_block,
            recall=_recall_options(recall),
        )

    def replay_context(self, call_seq: int, counters: Iterable[TokenCounter] = ()) -> Projection:
        """The projection the ``model.call`` at ``call_seq`` recorded, rebuilt from the
        ledger, after proving that its digest is the recorded one (in the shape the call
        records: the provider request of a provider shape is rebuilt from this projection,
        :meth:`replay_request`). ``counters``: counters other than the default, by name.

        Raises NotAModelCallError, UnknownTokenCounterError, ModelCallOverBudgetError and
        ContextDigestMismatchError (the context sent was not the one the ledger implies)."""
        return self._replay(call_seq, counters)[0]

    def replay_request(
        self, call_seq: int, counters: Iterable[TokenCounter] = ()
    ) -> dict[str, Any]:
        """What the ``model.call`` at ``call_seq`` digested, rebuilt and proved like
        :meth:`replay_context`: the provider request data of its shape
        (``projection.as_openai_chat()`` for ``"shape": "openai.chat"``, ...), or
        ``projection.to_json()`` for a call without a shape. Its RFC 8785 bytes hash to the
        recorded ``projection_sha256``. Raises what :meth:`replay_context` raises."""
        projection, shape = self._replay(call_seq, counters)
        return shape_json(projection, shape)

    def _replay(self, call_seq: int, counters: Iterable[TokenCounter]) -> tuple[Projection, str]:
        entry = self.entry(call_seq)
        if entry.kind != "model.call":
            raise NotAModelCallError(
                f"entry {call_seq} of thread {self.id} is a {entry.kind}, not a model.call"
            )
        body: dict[str, Any] = dict(entry.body)
        registry = counter_registry(counters)
        at_seq = int(body["at_seq"])
        state = self.context_state(at_seq)
        lifecycle = None
        if claims_block(body):
            with read_transaction(self._db.engine, snapshot=True) as conn:
                lifecycle = lifecycle_at(conn, self.id, at_seq).state
        entries = self._entry_at
        verify_model_call(body, state, registry, lifecycle, entries)
        projection = rebuild_projection(body, state, registry, lifecycle, entries)
        return projection, str(body.get("shape", REGISTRE_SHAPE))

    def _entry_at(self, seq: int) -> ContextEntry:
        """Entry ``seq`` as the context fold reads it (a model call's recalls)."""
        return self.context_entries(seq, seq + 1)[0]

    def expand(self, seq: int, size: int | None = None) -> tuple[Entry, ThreadInclusionProof]:
        """The entry ``seq`` (the one behind a summary pointer), verified, with its RFC 9162
        inclusion proof in the tree of ``size`` entries (default: the head; give a signed
        checkpoint's size to prove it against that checkpoint). The proof is checked against
        the stored tree before it is returned. EntryNotFoundError unless
        ``0 <= seq < size <= head``."""
        proof = self.prove_inclusion(seq, size)
        entry = self.entry(seq)
        if entry.leaf_hash != proof.leaf_hash:
            raise StoreCorruptError(
                f"thread {self.id}: the stored leaf hash of entry {seq} is not the hash of its leaf"
            )
        verify_inclusion(proof.leaf_hash, seq, proof.size, proof.hashes, proof.root)
        return entry, proof
