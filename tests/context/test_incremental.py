"""The incremental projection is the naive one (Hypothesis).

A :class:`ContextState` keeps its projection's messages, manifest runs and token totals and
extends them as entries are folded (dropping them at a compaction); :meth:`ContextState.copy`
shares the tail items. Over random threads (turns, tool calls, pins and unpins, compactions
as they fall due, model calls):

* after every step, ``project`` and ``context_tokens`` of the state kept up to date equal
  those of ``ContextState.replay`` of the same entries, byte for byte (``to_json``);
* a copy taken at any step, projected then and again after the original moved on (and after
  the copy itself was folded further), still gives the projection of its own prefix.
"""

from __future__ import annotations

from hypothesis import given

from registre.context import (
    ContextBudgetError,
    ContextState,
    Policy,
    Projection,
    context_tokens,
    default_counter,
    project,
)
from tests.context.strategies import policies, run_script, scripts
from tests.context.threads import ThreadBuilder

COUNTER = default_counter()


def projected(state: ContextState, policy: Policy) -> Projection | type[ContextBudgetError]:
    try:
        return project(state, policy.budget_tokens, policy, COUNTER)
    except ContextBudgetError as error:
        return type(error)


def same(ours: Projection | type[ContextBudgetError], naive: object) -> None:
    assert ours == naive
    if isinstance(ours, Projection):
        assert isinstance(naive, Projection)
        assert ours.to_json() == naive.to_json()


@given(script=scripts(), policy=policies())
def test_the_kept_state_projects_as_the_replay(script: list, policy: Policy) -> None:
    forks: list[tuple[ContextState, object]] = []

    def step(builder: ThreadBuilder) -> None:
        state = builder.state
        naive = ContextState.replay(builder.entries)
        same(projected(state, policy), projected(naive, policy))
        assert context_tokens(state, COUNTER) == context_tokens(naive, COUNTER)
        fork = state.copy()
        forks.append((fork, projected(fork, policy)))

    run_script(script, policy, on_step=step)
    for fork, then in forks:
        same(projected(fork, policy), then)


@given(script=scripts(min_size=10, max_size=40), policy=policies())
def test_a_copy_folded_further_leaves_the_original_as_it_was(script: list, policy: Policy) -> None:
    outcome = run_script(script, policy)
    entries = outcome.builder.entries
    middle = len(entries) // 2
    original = ContextState.replay(entries[:middle])
    before = projected(original, policy)
    fork = original.copy()
    for entry in entries[middle:]:
        fork.apply(entry)
        projected(fork, policy)
    same(projected(original, policy), before)
    same(projected(fork, policy), projected(ContextState.replay(entries), policy))
