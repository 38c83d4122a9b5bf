"""The context fold: pairing, pins and the header, applying compactions, replay and copies."""

from __future__ import annotations

import pytest

from registre.context import (
    CompactionPointerError,
    CompactionRangeError,
    CompactionStubError,
    ContextEntry,
    ContextState,
    Policy,
    SummaryLine,
    default_counter,
    project,
)
from registre.context.fold import protected_start, safe_cuts
from registre.lifecycle import ReplayMismatchError
from tests.context.threads import ThreadBuilder, honest_body


def small_thread() -> ThreadBuilder:
    """0 user turn, 1 pin, 2-3 tool pair, 4 assistant turn, 5-6 tool pair, 7 assistant turn."""
    builder = ThreadBuilder(compact=False)
    builder.turn("user", "Why does astroid fail on namespace packages?")
    builder.pin("task_parameter", "Do not modify tests.")
    builder.tool("bash", "ls", "astroid/\ntests/")
    builder.turn("assistant", "The modutils module resolves packages.")
    builder.tool("bash", "grep spec", "modutils.py:640: spec = find_spec(name)")
    builder.turn("assistant", "Found the spec lookup.")
    return builder


def snapshot(state: ContextState) -> dict[str, object]:
    return project(state, 100_000, Policy(), default_counter()).to_json()


def compact(state: ContextState, **kwargs: object) -> None:
    body = honest_body(state, **kwargs)  # type: ignore[arg-type]
    state.apply(ContextEntry(state.at + 1, "context.compaction", "registre", body))


def test_tool_calls_pair_with_their_results() -> None:
    builder = small_thread()
    builder.parallel_tools(2, lambda k: f"out {k}")
    by_seq = {item.seq: item for item in builder.state.tail}
    assert (by_seq[2].partner, by_seq[3].partner) == (3, 2)
    assert (by_seq[8].partner, by_seq[9].partner, by_seq[10].partner) == (10, 11, 8)


def test_safe_cuts_never_separate_a_call_from_its_result() -> None:
    builder = small_thread()
    builder.parallel_tools(2, lambda k: f"out {k}")  # calls 8, 9; results 10, 11
    builder.append("tool.call", "assistant", {"call_id": "late", "name": "f", "arguments": {}})
    cuts = safe_cuts(builder.state.tail)
    assert [seq for seq, safe in enumerate(cuts) if safe] == [0, 1, 3, 4, 6, 7, 11]


def test_protected_start_counts_turns_and_tool_calls_from_the_end() -> None:
    tail = small_thread().state.tail
    assert protected_start(tail, 0) == len(tail)
    assert protected_start(tail, 1) == 7  # the last assistant turn
    assert protected_start(tail, 2) == 5  # the last tool call
    assert protected_start(tail, 99) == 0  # fewer turns than asked: keep everything


def test_entries_fold_in_order_only() -> None:
    state = small_thread().state
    with pytest.raises(ValueError, match="in order"):
        state.apply(ContextEntry(9, "turn", "user", {"role": "user", "text": "x"}))


def test_pins_made_since_the_last_compaction_show_in_the_tail() -> None:
    state = small_thread().state
    messages = [m["content"] for m in snapshot(state)["messages"]]  # type: ignore[index]
    assert messages[1] == "[pinned task_parameter pin-1] Do not modify tests."
    assert state.header == ()


def test_a_compaction_moves_live_pins_to_the_header_task_parameters_first() -> None:
    builder = small_thread()
    builder.pin("decision", "Patch modutils only.")
    builder.pin("definition", "Namespace package: a directory without __init__.py.")
    builder.unpin("pin-3")
    line = SummaryLine("findings", "Listed.", ((2, 3),))
    builder.append(
        "context.compaction", "registre", honest_body(builder.state, folded=(0, 3), lines=(line,))
    )
    assert [pin.pin.id for pin in builder.state.header] == ["pin-1", "pin-2"]
    assert builder.state.header_seq == builder.state.at
    builder.pin("open_question", "Which version broke it?")
    header = [pin.pin.id for pin in builder.state.header]
    assert header == ["pin-1", "pin-2"]  # pins made after a compaction wait in the tail


def test_fold_range_must_start_at_a_boundary_fail() -> None:
    state = small_thread().state
    before = snapshot(state)
    with pytest.raises(CompactionRangeError, match="starts at the tail"):
        compact(state, folded=(1, 3), lines=(SummaryLine("findings", "x", ((1, 1),)),))
    assert snapshot(state) == before  # a refused compaction changes nothing


def test_fold_range_reaching_its_own_entry_fail() -> None:
    state = small_thread().state
    body = honest_body(state, folded=(0, 2), lines=(SummaryLine("findings", "x", ((0, 0),)),))
    body["folded"] = {"from": 0, "to": state.at + 1}
    with pytest.raises(CompactionRangeError, match="does not lie before"):
        state.apply(ContextEntry(state.at + 1, "context.compaction", "registre", body))


def test_pointer_outside_folded_range_is_refused_by_the_fold() -> None:
    state = small_thread().state
    body = honest_body(state, folded=(0, 3), lines=(SummaryLine("findings", "x", ((0, 0),)),))
    body["summary"] = [{"section": "findings", "text": "x", "pointers": [[4, 4]]}]
    with pytest.raises(CompactionPointerError, match="outside the folded range 0-3"):
        state.apply(ContextEntry(state.at + 1, "context.compaction", "registre", body))


def test_stub_of_something_else_than_a_tool_result_fail() -> None:
    state = small_thread().state
    with pytest.raises(CompactionStubError, match="entry 4"):
        compact(state, folded=None, stubbed=(4,))
    with pytest.raises(CompactionStubError, match="entry 3"):  # folded by the same compaction
        compact(
            state, folded=(0, 3), lines=(SummaryLine("findings", "x", ((0, 0),)),), stubbed=(3,)
        )


def test_stubbed_result_shows_its_stub() -> None:
    state = small_thread().state
    compact(state, folded=None, stubbed=(6,))
    contents = [m["content"] for m in snapshot(state)["messages"]]  # type: ignore[index]
    assert "[output elided: 39 bytes; ledger entry 6]" in contents


def test_refold_replaces_the_summaries_it_covers() -> None:
    state = small_thread().state
    compact(state, folded=(0, 1), lines=(SummaryLine("open_threads", "Asked why.", ((0, 0),)),))
    compact(state, folded=(2, 3), lines=(SummaryLine("tool_outputs", "Listed.", ((2, 3),)),))
    assert [s.seq for s in state.summaries] == [8, 9]
    with pytest.raises(CompactionRangeError, match="ends where a live summary ends"):
        compact(state, folded=(0, 2), lines=(SummaryLine("findings", "x", ((0, 0),)),))
    compact(state, folded=(0, 3), lines=(SummaryLine("findings", "Both.", ((0, 3),)),))
    assert [(s.seq, s.first, s.last) for s in state.summaries] == [(10, 0, 3)]
    assert state.boundary == 4


def test_forged_pin_outcome_fail() -> None:
    state = ContextState()
    body = {
        "request": {"kind": "decision", "text": "x", "seq": 0},
        "outcome": {"accepted": True, "id": "pin-7"},
    }
    with pytest.raises(ReplayMismatchError):
        state.apply(ContextEntry(0, "context.pin", "user", body))
    assert state.at == -1


def test_copy_is_independent_and_replay_equals_the_incremental_fold() -> None:
    builder = small_thread()
    fork = builder.state.copy()
    compact(fork, folded=None, stubbed=(3,))
    assert snapshot(builder.state) != snapshot(fork)
    assert snapshot(ContextState.replay(builder.entries)) == snapshot(builder.state)
