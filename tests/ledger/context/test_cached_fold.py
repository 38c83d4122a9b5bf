"""The cached fold and the digest from cached parts give what the naive refold gives.

:func:`registre.ledger.store.context_snapshots.fold_context` keeps the latest fold per thread
in the process (:mod:`registre.ledger.store.context_cache`) and folds only the entries since;
``model_call`` digests the projection from the parts the state carries
(:func:`registre.attest.projection_digest.stream.call_digest`). Over random threads of thread API
calls (Hypothesis, both engines), after every call:

* ``project`` at the head and at an arbitrary earlier ``at`` equals the projection of
  ``ContextState.replay`` of the entries ``0..at`` (or both refuse alike);
* the carried-parts digest of a projection is ``shape_digest``'s (on the state handed out,
  and again on a copy of it folded further), and a recorded model call replays;
* a state handed out earlier is not changed by the folds made since.

And: a cached fold whose last entry is no longer the stored one (another history under the
same thread id) is not used.
"""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from registre.attest.projection_digest import call_digest, shape_digest
from registre.context import (
    ContextBudgetError,
    ContextState,
    Policy,
    Projection,
    default_counter,
    project,
)
from registre.ledger.context.store import LeafTexts, engine_reader
from registre.ledger.ledger import Ledger
from registre.ledger.store.context_cache import fold_cache, text_cache
from registre.ledger.store.context_snapshots import fold_context
from registre.ledger.store.engine import read_transaction
from registre.ledger.thread import Thread
from tests.ledger.context.test_properties import act, policies, steps
from tests.ledger.helpers import drop_triggers, execute

_THREADS = itertools.count()


def naive(thread: Thread, at: int, policy: Policy) -> Projection | type[ContextBudgetError]:
    state = ContextState.replay(thread.context_entries(0, at + 1))
    try:
        return project(state, policy.budget_tokens, policy, default_counter())
    except ContextBudgetError as error:
        return type(error)


def ours(thread: Thread, at: int, policy: Policy) -> Projection | type[ContextBudgetError]:
    try:
        return thread.project(at=at, budget=policy.budget_tokens, policy=policy)
    except ContextBudgetError as error:
        return type(error)


@settings(
    max_examples=min(25, settings.default.max_examples),
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(policy=policies, script=st.lists(steps, min_size=8, max_size=30), data=st.data())
def test_cached_fold_projects_as_the_naive_refold(
    ledger: Ledger, policy: Policy, script: list[tuple[Any, ...]], data: st.DataObject
) -> None:
    thread = ledger.create_thread(f"k{next(_THREADS)}")
    thread.append("turn", {"role": "user", "text": "Why does the import fail?"}, "user")
    held: list[tuple[ContextState, Projection | type[ContextBudgetError]]] = []
    calls: dict[int, Projection] = {}
    carried: list[tuple[ContextState, Projection]] = []
    for action, then_call in script:
        act(thread, policy, action, calls)
        if then_call is not None:
            act(thread, policy, then_call, calls)
        head = thread.head().size - 1
        for at in (head, data.draw(st.integers(0, head), label="at")):
            projection = ours(thread, at, policy)
            assert projection == naive(thread, at, policy)
            if isinstance(projection, Projection):
                state = thread.context_state(at)
                assert call_digest(projection, state) == shape_digest(projection)
                carried.append((state, projection))
        for earlier, then_projected in carried[-3:]:  # a copy takes the parts along
            later = earlier.copy()
            for entry in thread.context_entries(later.at + 1, head + 1):
                later.apply(entry)
            try:
                grown = project(later, policy.budget_tokens, policy, default_counter())
            except ContextBudgetError:
                grown = None
            if grown is not None:
                assert call_digest(grown, later) == shape_digest(grown)
            assert call_digest(then_projected, earlier) == shape_digest(then_projected)
        state = thread.context_state()
        try:
            held.append((state, project(state, policy.budget_tokens, policy, default_counter())))
        except ContextBudgetError as error:
            held.append((state, type(error)))
    for seq, projection in calls.items():
        assert thread.replay_context(seq) == projection
    for state, then in held:
        try:
            now: object = project(state, policy.budget_tokens, policy, default_counter())
        except ContextBudgetError as error:
            now = type(error)
        assert now == then


def test_a_fold_cached_for_another_history_is_not_used(tmp_path: Any, signer: Any) -> None:
    first = Ledger.open(str(tmp_path / "a.db"), signer).create_thread("t")
    second = Ledger.open(str(tmp_path / "b.db"), signer).create_thread("t")
    for number in range(5):
        first.append("turn", {"role": "user", "text": f"first history {number}"}, "user")
        second.append("turn", {"role": "user", "text": f"second {number} history"}, "user")
    wrong = first.context_state(3)
    with read_transaction(first.database.engine) as conn:
        leaf_hash = fold_cache().leaf_hash(conn, "t", 3)
    assert leaf_hash is not None
    with read_transaction(second.database.engine) as conn:
        fold_cache().store(conn, "t", wrong, leaf_hash, None)  # as if it had been this one
        folded = fold_context(conn, "t", 4)
    expected = ContextState.replay(second.context_entries(0, 5))
    policy = Policy(budget_tokens=4000)
    counter = default_counter()
    assert project(folded, 4000, policy, counter) == project(expected, 4000, policy, counter)


def test_entry_texts_are_kept_across_calls_for_the_same_history_only(
    tmp_path: Any, signer: Any
) -> None:
    """A refold's quote checks read the same old entries at every compaction: their texts
    are kept per thread while the history is the one they were read from (its last entry
    hashes the same), and thrown away when it is not."""
    thread = Ledger.open(str(tmp_path / "a.db"), signer).create_thread("t")
    for number in range(6):
        thread.append("turn", {"role": "user", "text": f"figure {number} is 12.{number}m"}, "user")
    engine = thread.database.engine
    with read_transaction(engine) as conn:
        kept = text_cache().texts(conn, "t", 4)
    assert kept is not None
    texts = LeafTexts(engine_reader(engine, "t"), 4, shared=kept)
    assert texts[2] == "figure 2 is 12.2m" and kept.get(3) == "figure 3 is 12.3m"
    with read_transaction(engine) as conn:
        assert text_cache().texts(conn, "t", 6) is kept  # the same history, grown
    assert kept.anchor == 5
    drop_triggers(engine)
    execute(engine, "UPDATE entry SET leaf_hash = zeroblob(32) WHERE thread = 't' AND seq = 5")
    with read_transaction(engine) as conn:
        fresh = text_cache().texts(conn, "t", 6)
    assert fresh is not None and fresh is not kept and fresh.get(2) is None
