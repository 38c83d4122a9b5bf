"""Which entries a claim bundle discloses: the chain of one conclusion (``specs/bundle.md``
section 7.2), read from the derived lifecycle tables and the context fold.

:func:`claim_chain` selects, within the first ``tree_size`` entries of a thread:

1. **conclusions** -- every version (predecessors and successors) of the conclusion asked
   for, and of every compute it cites, recursively: the entry that created each version, and
   the entry that last changed it (its revision, or the evidence revision that left it stale);
2. **evidence** -- every version of every evidence entry those conclusions cite: the entry
   that admitted it and the entry that superseded or retracted it;
3. **source reads** -- for every disclosed evidence version, the ``source.read`` entry that
   registered each reference it cites;
4. **model calls** -- every ``model.call`` after the earliest evidence admission of step 2
   and before the conclusion asked for, and the last ``model.call`` before that conclusion;
5. **compactions** -- every ``context.compaction`` the projection of a disclosed model call
   depends on: those whose summaries are live in the context at its ``at_seq``, and those
   still in that context's verbatim tail (the latest compaction always is one of the two).

6. **the lifecycle** -- every lifecycle entry (``source.read``, ``evidence.*``,
   ``conclusion.*``, ``context.pin``, ``context.unpin``) of the tree, and the tree's last
   entry (seq ``tree_size - 1``, the *anchor*), whose signed lifecycle head
   (:mod:`registre.attest.entries.lifecycle_chain`) lets the verifier prove that nothing of the
   lifecycle -- no later retraction or supersession -- was left out. Steps 1-3 are therefore
   a subset of it; they are kept to say why each entry is there.

A signed entry is disclosed whole: an ``evidence.upsert`` or ``source.read`` that also holds
other statements or references discloses them too. Entries at or beyond ``tree_size`` are
never selected (they are not in the checkpoint's tree), and a version created there is not
followed. The selection reads caches (the lifecycle tables, the context snapshots); the
bundle's verifier checks what they lead to against the signed entries.
"""

from __future__ import annotations

import json
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field

from sqlalchemy import bindparam, select

from registre.attest.entries import LIFECYCLE_KINDS
from registre.errors import RefusedError
from registre.kinds import CONTEXT_COMPACTION, MODEL_CALL
from registre.ledger.ledger import Ledger
from registre.ledger.lifecycle.views import (
    ConclusionRecord,
    evidence_history,
    get_conclusion,
    list_references,
)
from registre.ledger.store.engine import read_transaction
from registre.ledger.store.schema import tables

__all__ = ["ClaimBeyondCheckpointError", "ClaimChain", "claim_chain"]

_entry = tables.entry
_MODEL_CALLS_BETWEEN = (
    select(_entry.c.seq)
    .where(
        _entry.c.thread == bindparam("thread"),
        _entry.c.kind == MODEL_CALL,
        _entry.c.seq > bindparam("after"),
        _entry.c.seq < bindparam("before"),
    )
    .order_by(_entry.c.seq)
)
_LAST_MODEL_CALL_BEFORE = (
    select(_entry.c.seq)
    .where(
        _entry.c.thread == bindparam("thread"),
        _entry.c.kind == MODEL_CALL,
        _entry.c.seq < bindparam("before"),
    )
    .order_by(_entry.c.seq.desc())
    .limit(1)
)
_LIFECYCLE_BEFORE = (
    select(_entry.c.seq)
    .where(
        _entry.c.thread == bindparam("thread"),
        _entry.c.kind.in_(sorted(LIFECYCLE_KINDS)),
        _entry.c.seq < bindparam("before"),
    )
    .order_by(_entry.c.seq)
)
_LEAF = select(_entry.c.leaf).where(
    _entry.c.thread == bindparam("thread"), _entry.c.seq == bindparam("seq")
)


class ClaimBeyondCheckpointError(RefusedError):
    """A conclusion recorded after the checkpoint a claim bundle is exported against."""


@dataclass(frozen=True)
class ClaimChain:
    """The entries a claim bundle discloses for ``conclusion`` in the tree of ``tree_size``
    entries, by role (each sorted); :attr:`seqs` is their union in seq order."""

    conclusion: str
    tree_size: int
    conclusions: tuple[int, ...]
    evidence: tuple[int, ...]
    source_reads: tuple[int, ...]
    model_calls: tuple[int, ...]
    compactions: tuple[int, ...]
    conclusion_ids: tuple[str, ...] = field(default=())
    evidence_ids: tuple[str, ...] = field(default=())
    lifecycle: tuple[int, ...] = field(default=())
    """Every lifecycle entry of the tree (step 6)."""
    anchor: tuple[int, ...] = field(default=())
    """The tree's last entry, whose lifecycle head proves :attr:`lifecycle` complete."""

    @property
    def seqs(self) -> tuple[int, ...]:
        return tuple(
            sorted(
                {
                    *self.conclusions,
                    *self.evidence,
                    *self.source_reads,
                    *self.model_calls,
                    *self.compactions,
                    *self.lifecycle,
                    *self.anchor,
                }
            )
        )


def claim_chain(ledger: Ledger, thread_id: str, conclusion_id: str, tree_size: int) -> ClaimChain:
    """The chain of ``conclusion_id`` in the first ``tree_size`` entries of ``thread_id``, by the
    rule of the module docstring.

    Raises UnknownThreadError, UnknownItemError (no such conclusion) and
    :class:`ClaimBeyondCheckpointError` when the conclusion was recorded at or after
    ``tree_size``; ContextHistoryError if the stored entries do not fold into a context.
    """
    engine = ledger.engine
    asked = get_conclusion(engine, thread_id, conclusion_id)
    if asked.seq >= tree_size:
        raise ClaimBeyondCheckpointError(
            f"conclusion {conclusion_id} of thread {thread_id} was recorded at seq {asked.seq}, "
            f"after the checkpoint of size {tree_size}"
        ).with_hint(
            "export against a later checkpoint "
            f"(run `registre checkpoint {thread_id}` first if there is none)"
        )
    walk = _LifecycleWalk(ledger, thread_id, tree_size)
    walk.follow(conclusion_id)
    # 4. model calls between the earliest evidence admission and the conclusion
    first_admission = min(walk.admissions, default=asked.seq)
    calls = _model_calls(ledger, thread_id, first_admission, asked.seq)
    # 5. the compactions their projections depend on
    compactions = _compactions_behind(ledger, thread_id, calls)
    # 6. the whole lifecycle of the tree, and its last entry
    with read_transaction(engine) as conn:
        params = {"thread": thread_id, "before": tree_size}
        lifecycle = tuple(int(seq) for seq in conn.execute(_LIFECYCLE_BEFORE, params).scalars())
    return ClaimChain(
        conclusion=conclusion_id,
        tree_size=tree_size,
        conclusions=tuple(sorted(walk.conclusion_seqs)),
        evidence=tuple(sorted(walk.evidence_seqs)),
        source_reads=tuple(sorted(walk.read_seqs)),
        model_calls=tuple(calls),
        compactions=tuple(sorted(compactions)),
        conclusion_ids=tuple(sorted(walk.conclusions, key=_id_number)),
        evidence_ids=tuple(sorted(walk.evidence, key=_id_number)),
        lifecycle=lifecycle,
        anchor=(tree_size - 1,),
    )


class _LifecycleWalk:
    """Steps 1-3: follow conclusions, their versions and citations down to source reads."""

    def __init__(self, ledger: Ledger, thread_id: str, tree_size: int) -> None:
        self.engine = ledger.engine
        self.thread = thread_id
        self.size = tree_size
        self.conclusions: set[str] = set()
        self.evidence: set[str] = set()
        self.conclusion_seqs: set[int] = set()
        self.evidence_seqs: set[int] = set()
        self.read_seqs: set[int] = set()
        self.admissions: list[int] = []
        self._reads: dict[str, int] | None = None

    def follow(self, conclusion_id: str) -> None:
        queue = deque([conclusion_id])
        while queue:
            current = queue.popleft()
            if current in self.conclusions:
                continue
            for version in self._conclusion_versions(current):
                self.conclusions.add(version.id)
                if version.seq >= self.size:
                    continue  # created after the checkpoint: not in its tree
                self._disclose(self.conclusion_seqs, version.seq, version.changed_seq)
                for cited in version.cites:
                    if cited.startswith("cc-"):
                        queue.append(cited)
                    else:
                        self._follow_evidence(cited)

    def _follow_evidence(self, evidence_id: str) -> None:
        if evidence_id in self.evidence:
            return
        for version in evidence_history(self.engine, self.thread, evidence_id):
            self.evidence.add(version.id)
            if version.seq >= self.size:
                continue
            self._disclose(self.evidence_seqs, version.seq, version.changed_seq)
            self.admissions.append(version.seq)
            reads = self._registrations()
            for ref in version.cites:
                read = reads.get(ref)
                if read is not None and read < self.size:
                    self.read_seqs.add(read)

    def _disclose(self, into: set[int], seq: int, changed_seq: int | None) -> None:
        into.add(seq)
        if changed_seq is not None and changed_seq < self.size:
            into.add(changed_seq)

    def _conclusion_versions(self, conclusion_id: str) -> list[ConclusionRecord]:
        """Every version of ``conclusion_id``, oldest first (one read per version)."""
        start = get_conclusion(self.engine, self.thread, conclusion_id)
        older: list[ConclusionRecord] = []
        current = start
        while current.predecessor is not None:
            current = get_conclusion(self.engine, self.thread, current.predecessor)
            older.append(current)
        chain = [*reversed(older), start]
        while chain[-1].successor is not None:
            chain.append(get_conclusion(self.engine, self.thread, chain[-1].successor))
        return chain

    def _registrations(self) -> dict[str, int]:
        if self._reads is None:
            self._reads = {ref.ref: ref.seq for ref in list_references(self.engine, self.thread)}
        return self._reads


def _model_calls(ledger: Ledger, thread_id: str, after: int, before: int) -> list[int]:
    with read_transaction(ledger.engine) as conn:
        params = {"thread": thread_id, "after": after, "before": before}
        calls = set(conn.execute(_MODEL_CALLS_BETWEEN, params).scalars())
        last = conn.execute(_LAST_MODEL_CALL_BEFORE, {"thread": thread_id, "before": before})
        calls.update(last.scalars())
    return sorted(int(seq) for seq in calls)


def _compactions_behind(ledger: Ledger, thread_id: str, calls: Iterable[int]) -> set[int]:
    """The compactions the projections of the model calls ``calls`` depend on."""
    thread = ledger.thread(thread_id)
    prefixes: set[int] = set()
    with read_transaction(ledger.engine) as conn:
        for seq in calls:
            leaf = conn.execute(_LEAF, {"thread": thread_id, "seq": seq}).scalar_one()
            prefixes.add(int(json.loads(bytes(leaf))["entry"]["body"]["at_seq"]))
    found: set[int] = set()
    for at in sorted(prefixes):
        state = thread.context_state(at)
        found.update(summary.seq for summary in state.summaries)
        found.update(item.seq for item in state.tail if item.kind == CONTEXT_COMPACTION)
    return found


def _id_number(item_id: str) -> tuple[str, int]:
    prefix, _, number = item_id.partition("-")
    return prefix, int(number) if number.isdigit() else -1
