"""Invariants of the working context over random threads, budgets and policies.

Threads are random mixes of turns, tool call/result pairs of random sizes (some made in
parallel), pins and unpins, decisions, evidence and model calls; compactions are planned,
summarized by the default summarizer and recorded whenever they fall due, as the ledger does.
"""

from __future__ import annotations

import json
from itertools import pairwise

from hypothesis import assume, event, given
from hypothesis import strategies as st

from registre.attest.entries import validate_body
from registre.context import (
    STATUSES,
    ContextBudgetError,
    ContextState,
    PinsOverBudgetError,
    Policy,
    Projection,
    RecentTurnsOverBudgetError,
    counter_registry,
    parse_compaction,
    project,
    restore_state,
    state_snapshot,
    validate_compaction,
)
from registre.context.fold import REFILL_WINDOW
from registre.context.projection import live_pin_tokens
from registre.context.render import pin_message
from tests.context.strategies import Outcome, policies, run_script, scripts
from tests.context.threads import ThreadBuilder


def projected(builder: ThreadBuilder) -> Projection:
    policy = builder.policy
    return project(builder.state, policy.budget_tokens, policy, builder.counter)


def check_partition(projection: Projection) -> None:
    """Runs cover 0..at in order, without gaps or overlaps, one status each; every message
    of the tail is the message of exactly one verbatim, stubbed or pinned entry."""
    runs = projection.manifest.runs
    expected = 0
    for run in runs:
        assert run.first == expected
        assert run.first <= run.last
        assert run.status in STATUSES
        expected = run.last + 1
    assert expected == projection.at + 1
    prefix = projection.manifest.stable_prefix_messages
    tail_messages = []
    for run in runs:
        if run.status in ("verbatim", "stubbed"):
            assert run.message is not None
            tail_messages.extend(range(run.message, run.message + run.last - run.first + 1))
        elif run.status == "pinned" and run.message is not None and run.message >= prefix:
            tail_messages.append(run.message)
    assert tail_messages == list(range(prefix, len(projection.messages)))


@given(script=scripts(), policy=policies())
def test_projection_fits_its_budget_or_the_error_says_why(script: list, policy: Policy) -> None:
    def step(builder: ThreadBuilder) -> None:
        projection = projected(builder)  # never raises after the compaction fell due
        assert projection.tokens <= policy.budget_tokens
        assert sum(projection.message_tokens) == projection.tokens

    outcome = run_script(script, policy, on_step=step)
    error = outcome.stopped_by
    if isinstance(error, PinsOverBudgetError):
        assert (
            live_pin_tokens(outcome.builder.state, outcome.builder.counter) > policy.budget_tokens
        )
    if error is not None:
        assert error.over_by > 0
        assert str(error.over_by) in str(error)


@given(script=scripts(), policy=policies())
def test_every_live_pin_appears_verbatim(script: list, policy: Policy) -> None:
    def step(builder: ThreadBuilder) -> None:
        contents = {message.content for message in projected(builder).messages}
        for pin in builder.state.live_pins():
            assert pin_message(pin).content in contents
            assert pin.text in pin_message(pin).content

    run_script(script, policy, on_step=step)


@given(script=scripts(), policy=policies())
def test_every_entry_has_exactly_one_status(script: list, policy: Policy) -> None:
    run_script(script, policy, on_step=lambda builder: check_partition(projected(builder)))


@given(script=scripts(), policy=policies())
def test_every_pointer_resolves_inside_its_compaction_range(script: list, policy: Policy) -> None:
    outcome = run_script(script, policy)
    for entry in outcome.builder.entries:
        if entry.kind != "context.compaction":
            continue
        validate_body(entry.kind, entry.body)
        record = parse_compaction(entry.seq, entry.body)
        for line in record.lines:
            assert record.folded is not None
            for first, last in line.pointers:
                assert record.folded[0] <= first <= last <= record.folded[1] < entry.seq
    if outcome.stopped_by is not None:
        event("stopped over budget: no projection to check")
        return  # the last entry left the context over budget: nothing to project
    projection = projected(outcome.builder)
    for run in projection.manifest.runs:
        if run.status == "summarized":
            summary = next(s for s in outcome.builder.state.summaries if s.seq == run.compaction)
            assert run.line is not None
            assert summary.first <= run.first <= run.last <= summary.last
            line = summary.lines[run.line]
            assert all(line.covers(seq) for seq in range(run.first, run.last + 1))


@given(script=scripts(), policy=policies())
def test_every_body_written_passes_its_schema(script: list, policy: Policy) -> None:
    for entry in run_script(script, policy).builder.entries:
        validate_body(entry.kind, entry.body)


@given(script=scripts(), policy=policies())
def test_projection_is_deterministic(script: list, policy: Policy) -> None:
    outcome = run_script(script, policy)
    assume(outcome.stopped_by is None)  # stopped over budget: there is no projection
    builder = outcome.builder
    first = projected(builder).to_json()
    assert projected(builder).to_json() == first
    replayed = ContextState.replay(builder.entries)
    assert project(replayed, policy.budget_tokens, policy, builder.counter).to_json() == first
    assert (
        project(builder.state.copy(), policy.budget_tokens, policy, builder.counter).to_json()
        == first
    )


def pairs(builder: ThreadBuilder) -> list[tuple[int, int]]:
    calls: dict[str, int] = {}
    found = []
    for entry in builder.entries:
        if entry.kind == "tool.call":
            calls[str(entry.body["call_id"])] = entry.seq
        elif entry.kind == "tool.result":
            found.append((calls[str(entry.body["call_id"])], entry.seq))
    return found


@given(script=scripts(), policy=policies())
def test_a_tool_call_is_never_split_from_its_result(script: list, policy: Policy) -> None:
    builder = run_script(script, policy).builder
    ranges = [
        parse_compaction(entry.seq, entry.body).folded
        for entry in builder.entries
        if entry.kind == "context.compaction"
    ]
    for call, result in pairs(builder):
        for folded in ranges:
            if folded is not None:
                assert (folded[0] <= call <= folded[1]) == (folded[0] <= result <= folded[1])
    boundary = builder.state.boundary
    for call, result in pairs(builder):
        assert (call < boundary) == (result < boundary)


@given(script=scripts(), policy=policies())
def test_stable_prefix_changes_only_at_a_compaction(script: list, policy: Policy) -> None:
    seen: list[tuple[int, tuple[object, ...], int]] = []

    def step(builder: ThreadBuilder) -> None:
        projection = projected(builder)
        prefix = projection.messages[: projection.manifest.stable_prefix_messages]
        seen.append((len(builder.compactions), prefix, projection.manifest.stable_prefix_tokens))

    run_script(script, policy, on_step=step)
    for (count, prefix, tokens), (next_count, next_prefix, next_tokens) in pairwise(seen):
        if count == next_count:
            assert (prefix, tokens) == (next_prefix, next_tokens)


@given(script=scripts(), policy=policies(), data=st.data())
def test_rebuilding_at_an_earlier_seq_gives_the_projection_of_then(
    script: list, policy: Policy, data: st.DataObject
) -> None:
    then: dict[int, dict[str, object]] = {}

    def step(builder: ThreadBuilder) -> None:
        then[builder.state.at] = projected(builder).to_json()

    builder = run_script(script, policy, on_step=step).builder
    at = data.draw(st.sampled_from(sorted(then)))
    rebuilt = ContextState.replay(builder.entries[: at + 1])
    assert project(rebuilt, policy.budget_tokens, policy, builder.counter).to_json() == then[at]


@given(script=scripts(), policy=policies())
def test_recorded_compactions_verify_on_replay(script: list, policy: Policy) -> None:
    outcome: Outcome = run_script(script, policy)
    state = ContextState()
    for entry in outcome.builder.entries:
        if entry.kind == "context.compaction":
            validate_compaction(state, entry, outcome.builder.texts, counter_registry())
        state.apply(entry)
    assert state.at == outcome.builder.state.at


@given(script=scripts(), policy=policies())
def test_compaction_never_folds_the_most_recent_turns(script: list, policy: Policy) -> None:
    from registre.context.fold import protected_start

    checked = []

    def step(builder: ThreadBuilder) -> None:
        if not builder.compactions or builder.compactions[-1] != builder.state.at:
            return  # no compaction just recorded
        checked.append(builder.state.at)
        # the state just before the compaction: replay up to it
        before = ContextState.replay(builder.entries[: builder.state.at])
        record = parse_compaction(builder.state.at, builder.entries[-1].body)
        start = protected_start(before.tail, policy.keep_recent_turns)
        protected = {item.seq for item in before.tail[start:]}
        if record.folded is not None:
            assert not protected & set(range(record.folded[0], record.folded[1] + 1))
        # stand-ins inside the recent turns only when nothing else fits the budget (tier 4)
        inside = protected & (set(record.stubbed) | {seq for seq, _, _ in record.elided})
        if inside:
            event("stand-ins inside the recent turns")
            # tier 4 sizes for the window: the budget less the output reserve
            assert record.tokens_before > policy.window_tokens()

    run_script(script, policy, on_step=step)
    event("a compaction was checked" if checked else "no compaction fell due")


def test_errors_are_context_budget_errors() -> None:
    assert issubclass(RecentTurnsOverBudgetError, ContextBudgetError)


@given(script=scripts(), policy=policies(), data=st.data())
def test_a_restored_snapshot_folds_like_the_original(
    script: list, policy: Policy, data: st.DataObject
) -> None:
    builder = run_script(script, policy, compact=True).builder
    split = data.draw(st.integers(0, len(builder.entries)))
    original = ContextState.replay(builder.entries[:split])
    snapshot = json.loads(json.dumps(state_snapshot(original)))
    restored = restore_state(
        snapshot,
        builder.entries[original.boundary : split],
        builder.entries[max(0, original.boundary - REFILL_WINDOW) : original.boundary],
    )
    for entry in builder.entries[split:]:
        original.apply(entry)
        restored.apply(entry)
    assert state_snapshot(restored) == state_snapshot(original)
    budget = 10**9  # compare whatever the size: the projection must be the same
    assert project(restored, budget, policy, builder.counter) == project(
        original, budget, policy, builder.counter
    )
