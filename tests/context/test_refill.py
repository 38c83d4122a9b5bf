"""Use the budget (issue 28, item 1): after a compaction the context is refilled with the
verbatim entries it folded, in whole blocks, up to the window (budget less the output
reserve); the stable prefix keeps its bytes between compactions (``specs/context.md``
section 4.2)."""

from __future__ import annotations

import itertools
import json
import statistics

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from registre.context import (
    ContextState,
    Policy,
    context_tokens,
    parse_policy,
    project,
    restore_state,
    state_snapshot,
)
from registre.context.fold import REFILL_WINDOW
from registre.context.policy import POLICY_FIELDS, POLICY_FIELDS_V2, default_reserve
from registre.lifecycle import LifecycleFormatError
from tests.context.strategies import policies, run_script, scripts
from tests.context.threads import ThreadBuilder

NAMES = ("Ada", "Brook", "Cyrus", "Dana", "Emil", "Farah", "Gita", "Hugo")


def _long_thread(policy: Policy, turns: int = 400) -> tuple[ThreadBuilder, list[object]]:
    """A conversation of ``turns`` varied turns with a projection before each assistant
    turn; returns the builder and the projections made after the first compaction."""
    builder = ThreadBuilder(policy=policy)
    seen = []
    for number in range(turns):
        name = NAMES[number % len(NAMES)]
        role = "user" if number % 2 == 0 else "assistant"
        if role == "assistant":
            projection = project(builder.state, policy.budget_tokens, policy, builder.counter)
            if builder.state.header_seq >= 0:
                seen.append(projection)
        words = " ".join(f"w{(number * 7 + k) % 97}" for k in range(5 + number % 23))
        builder.turn(role, f"{name} met {NAMES[(number + 3) % 8]} on day {number}: {words}.")
    return builder, seen


@pytest.mark.parametrize("budget", [4000, 8000, 16000])
@pytest.mark.parametrize("share", [0, 250, 500])
def test_mean_fill_after_compaction_is_at_least_85_percent_of_the_window(
    budget: int, share: int
) -> None:
    """The core and the refill fill their room: the window less the recall share (the
    recalled section, laid out by the ledger, takes the rest)."""
    policy = Policy(budget_tokens=budget, recall_share_permille=share)
    _builder, seen = _long_thread(policy, turns=900)
    assert len(seen) > 100
    window = policy.window_tokens()
    room = window - policy.recall_tokens()
    fill = statistics.mean(projection.tokens / room for projection in seen)
    assert fill >= 0.85, fill
    assert all(projection.tokens <= window for projection in seen)


def test_a_version_1_policy_stays_at_its_old_fill() -> None:
    """The measure above is the refill's: without it the same thread sends far less."""
    policy = Policy(budget_tokens=8000, version=1)
    _builder, seen = _long_thread(policy, turns=900)
    assert statistics.mean(projection.tokens for projection in seen) / 8000 < 0.75
    assert all(projection.refill_tokens == 0 for projection in seen)


def test_the_stable_prefix_keeps_its_bytes_between_compactions() -> None:
    policy = Policy(budget_tokens=4000)
    _builder, seen = _long_thread(policy, turns=600)
    same = 0
    for earlier, later in itertools.pairwise(seen):
        prefix = earlier.manifest.stable_prefix_messages
        if later.manifest.stable_prefix_messages != prefix:
            continue
        if earlier.messages[:prefix] == later.messages[:prefix]:
            same += 1
            continue
        # only a compaction may change it: then the summaries differ
        assert any(m.content.startswith("[summary") for m in later.messages[:prefix])
    assert same > len(seen) * 0.8


def test_the_refill_changes_only_by_whole_blocks() -> None:
    """Between compactions, consecutive calls share everything up to the tail's end unless a
    block was dropped: a provider cache reuses the refill too."""
    policy = Policy(budget_tokens=8000)
    _builder, seen = _long_thread(policy, turns=600)
    reused = dropped = 0
    for earlier, later in itertools.pairwise(seen):
        kept = earlier.messages[: len(earlier.messages)]
        if later.messages[: len(kept)] == kept:
            reused += 1
        else:
            dropped += 1
    assert reused > 3 * dropped


def test_refilled_entries_are_verbatim_in_the_manifest() -> None:
    policy = Policy(budget_tokens=4000, recall_share_permille=0)  # the most refill
    builder, _seen = _long_thread(policy, turns=300)
    projection = project(builder.state, 4000, policy, builder.counter)
    for number in range(200):  # to a call that shows a refill (most do)
        if projection.refill_tokens:
            break
        builder.turn("user", f"One more question, number {number}, about day {number}.")
        projection = project(builder.state, 4000, policy, builder.counter)
    assert projection.refill_tokens > 0
    refilled = [
        seq
        for seq in range(builder.state.boundary)
        if projection.manifest.status_of(seq).status == "verbatim"
    ]
    assert refilled
    for seq in refilled:
        run = projection.manifest.status_of(seq)
        message = projection.messages[run.message + seq - run.first]
        assert message.content == builder.entries[seq].body["text"]
    prefix = projection.manifest.stable_prefix_messages
    assert projection.messages[prefix].content == builder.entries[refilled[0]].body["text"]
    assert projection.core_tokens == context_tokens(builder.state, builder.counter)


def test_a_restored_state_refills_only_with_its_folded_entries() -> None:
    policy = Policy(budget_tokens=4000)
    builder, _seen = _long_thread(policy, turns=300)
    state = builder.state
    snapshot = json.loads(json.dumps(state_snapshot(state)))
    tail = builder.entries[state.boundary :]
    folded = builder.entries[max(0, state.boundary - REFILL_WINDOW) : state.boundary]
    restored = restore_state(snapshot, tail, folded)
    assert project(restored, 4000, policy, builder.counter) == project(
        state, 4000, policy, builder.counter
    )
    with pytest.raises(ValueError, match="just before the boundary"):
        restore_state(snapshot, tail, folded[1:])


@settings(max_examples=60, deadline=None)
@given(script=scripts(), policy=policies(), data=st.data())
def test_a_refill_never_shows_a_result_without_its_call(
    script: list, policy: Policy, data: st.DataObject
) -> None:
    builder = run_script(script, policy, compact=True).builder
    budget = data.draw(st.integers(policy.budget_tokens, 4 * policy.budget_tokens))
    try:
        projection = project(builder.state, budget, policy, builder.counter)
    except Exception:  # over the budget: nothing is sent, nothing to check
        return
    calls: set[str] = set()
    for message in projection.messages:
        if message.role == "assistant" and message.call_id is not None:
            calls.add(message.call_id)
        if message.role == "tool":
            assert message.call_id in calls
    assert projection.tokens <= budget
    if not policy.refills:
        assert projection.refill_tokens == 0


def test_policy_versions_read_and_write_their_own_fields() -> None:
    legacy = {name: getattr(Policy(), name) for name in POLICY_FIELDS}
    assert parse_policy(legacy).version == 1
    assert parse_policy(legacy).to_json() == legacy
    assert not parse_policy(legacy).refills
    current = Policy(budget_tokens=8000)
    assert list(current.to_json()) == list(POLICY_FIELDS_V2)
    assert parse_policy(current.to_json()) == current
    assert current.output_reserve_tokens == default_reserve(8000) == 1000
    assert Policy(budget_tokens=64000).output_reserve_tokens == 4096
    assert Policy(budget_tokens=64000).with_budget(4000).output_reserve_tokens == 500
    assert Policy(budget_tokens=8000, output_reserve_tokens=10).with_budget(4000) == Policy(
        budget_tokens=4000, output_reserve_tokens=10
    )
    with pytest.raises(LifecycleFormatError):
        parse_policy({**legacy, "output_reserve_tokens": 5})  # eight fields: neither
    with pytest.raises(LifecycleFormatError):
        Policy(budget_tokens=100, output_reserve_tokens=100)
    with pytest.raises(LifecycleFormatError):
        Policy(version=1, output_reserve_tokens=5)


def test_compaction_falls_due_below_the_output_reserve() -> None:
    policy = Policy(
        budget_tokens=8000,
        high_water_permille=1000,
        low_water_permille=600,
        recall_share_permille=0,
    )
    assert policy.compact_above_tokens == 7000
    shared = Policy(budget_tokens=8000, high_water_permille=1000, low_water_permille=600)
    assert shared.compact_above_tokens == 7000 - 7000 * shared.recall_share_permille // 1000
    # the low-water mark keeps its ratio to the lowered mark: compactions as far apart
    assert shared.compact_to_tokens == 8000 * 600 // 1000 * shared.compact_above_tokens // 8000
    state = ContextState()
    assert project(state, 8000, policy, ThreadBuilder().counter).compaction_due is False
