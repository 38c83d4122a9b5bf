"""Never refuse while the pins fit (issue 12, item 4): bulky tool outputs inside the most
recent turns are stubbed, or shown head and tail, before a context is refused
(``specs/context.md`` sections 5 and 7: the fourth tier, the ``elided`` field)."""

from __future__ import annotations

import contextlib
import json

import pytest
from hypothesis import event, given, settings
from hypothesis import strategies as st

from registre.attest.entries import validate_body
from registre.context import (
    CompactionFoldsRecentTurnsError,
    ContextBudgetError,
    ContextEntry,
    ContextState,
    Policy,
    RecentTurnsOverBudgetError,
    SummaryLine,
    context_tokens,
    counter_registry,
    default_counter,
    parse_compaction,
    plan_compaction,
    project,
    restore_state,
    state_snapshot,
    validate_compaction,
)
from registre.context.errors import CompactionElisionError, CompactionStubError
from registre.context.fold import REFILL_WINDOW, protected_start
from registre.context.projection import live_pin_tokens
from registre.context.record import CompactionRecord, record_to_body
from registre.context.render import (
    elided_message,
    message_tokens,
    pin_message,
    stub_message,
)
from registre.lifecycle.errors import LifecycleFormatError
from tests.context.strategies import WORDS, text
from tests.context.threads import ThreadBuilder

COUNTER = default_counter()
BUDGET_8K = Policy(budget_tokens=8000, recall_share_permille=0)  # the whole window: no recall


def big_output(kib: int = 32) -> str:
    """About ``kib`` KiB of numbered log lines."""
    return "\n".join(f"{n:05d} " + text(n, 9) for n in range(kib * 1024 // 60))


def investigation(policy: Policy, output: str) -> ThreadBuilder:
    """A question, eight tool calls each with an answer, then ``output`` as the result of the
    latest call (compactions recorded as they fall due)."""
    builder = ThreadBuilder(policy=policy)
    builder.turn("user", "Why does the import of astroid fail on namespace packages?")
    for step in range(8):
        lines = "\n".join(text(step + n, 12) for n in range(40))
        builder.tool("bash", f"grep -rn spec astroid/{step}", lines)
        builder.turn("assistant", text(step, 40))
    builder.tool("bash", "cat astroid/modutils.py", output)
    return builder


def verify_entries(builder: ThreadBuilder) -> ContextState:
    """Every recorded compaction checked as the verifier checks it; the replayed state."""
    state = ContextState()
    for entry in builder.entries:
        if entry.kind == "context.compaction":
            validate_compaction(state, entry, builder.texts, counter_registry())
        state.apply(entry)
    return state


def body_of(builder: ThreadBuilder, **fields: object) -> dict[str, object]:
    """A compaction body for the next entry with true token counts and pin digest."""
    state = builder.state
    record = CompactionRecord(
        seq=state.at + 1,
        folded=fields.get("folded"),  # type: ignore[arg-type]
        stubbed=fields.get("stubbed", ()),  # type: ignore[arg-type]
        lines=fields.get("lines", ()),  # type: ignore[arg-type]
        summarizer_name="test.manual",
        summarizer_version="1",
        policy=fields.get("policy", builder.policy),  # type: ignore[arg-type]
        token_counter=COUNTER.name,
        tokens_before=context_tokens(state, COUNTER),
        tokens_after=0,
        pin_set_sha256=state.pin_set_sha256(),
        elided=fields.get("elided", ()),  # type: ignore[arg-type]
    )
    body = record_to_body(record)
    after = state.copy()
    try:
        after.apply(ContextEntry(state.at + 1, "context.compaction", "registre", body))
    except CompactionElisionError:
        return body  # the fold refuses it: the counts do not matter
    body["tokens_after"] = context_tokens(after, COUNTER)
    return body


def verify(builder: ThreadBuilder, body: dict[str, object]) -> None:
    validate_body("context.compaction", body)
    entry = ContextEntry(builder.seq, "context.compaction", "registre", body)
    validate_compaction(builder.state, entry, builder.texts, counter_registry())


# --- the rendering ------------------------------------------------------------------------------


def test_elided_message_reads_head_marker_tail() -> None:
    body = {"call_id": "c1", "name": "bash", "content": "line one\nline two\nline three\n"}
    message = elided_message(7, body, 8, 11)
    assert message.role == "tool" and message.name == "bash" and message.call_id == "c1"
    assert message.content == (
        "[output elided: 29 bytes, showing the first 8 and last 11 characters; ledger entry 7]"
        "\nline one\n…\nline three\n"
    )


def test_elided_message_leaves_out_empty_parts_and_keeps_the_error_flag() -> None:
    body = {"call_id": "c1", "content": "héllo wörld", "is_error": True}
    assert elided_message(3, body, 0, 0).content == (
        "[error] [output elided: 13 bytes, showing the first 0 and last 0 characters; "
        "ledger entry 3]\n…"
    )
    assert elided_message(3, body, 0, 5).content.endswith("]\n…\nwörld")
    assert elided_message(3, body, 5, 0).content.endswith("]\nhéllo\n…")
    assert elided_message(3, body, 0, 0).name is None


def test_an_elision_must_leave_something_out() -> None:
    body = {"call_id": "c1", "content": "abcdef"}
    with pytest.raises(ValueError, match="must leave some out"):
        elided_message(3, body, 3, 3)
    with pytest.raises(ValueError):
        elided_message(3, body, -1, 0)


def test_the_stub_is_unchanged_byte_for_byte() -> None:
    body = {"call_id": "call-2", "name": "bash", "content": "x" * 214}
    assert stub_message(6, body).content == "[output elided: 214 bytes; ledger entry 6]"


# --- planning: the fourth tier -------------------------------------------------------------------


def test_a_32_kib_output_in_the_latest_turn_is_elided_to_fit_8k() -> None:
    """Measured before this tier: RecentTurnsOverBudgetError, 1501 tokens over 8000."""
    output = big_output()
    builder = investigation(BUDGET_8K, output)
    projection = project(builder.state, 8000, BUDGET_8K, COUNTER)
    window = BUDGET_8K.window_tokens()  # the output reserve stays free
    assert projection.tokens <= window
    compaction = builder.entries[builder.compactions[-1]]
    record = parse_compaction(compaction.seq, compaction.body)
    ((seq, head, tail),) = record.elided
    result = builder.entries[seq]
    assert result.kind == "tool.result" and result.body["content"] == output
    last = projection.messages[-1]
    assert last == elided_message(seq, result.body, head, tail)
    assert last.content.startswith(
        f"[output elided: {len(output.encode())} bytes, showing the first {head} and last "
        f"{tail} characters; ledger entry {seq}]\n"
    )
    # cut at line boundaries, head and tail of the output, sized to what fits
    assert output[:head].endswith(text(0, 9)[-10:]) or output[head] == "\n"
    assert output[len(output) - tail - 1] == "\n"
    assert head > 1000 and tail > 1000
    assert window - projection.tokens < 50
    # the call and its (elided) result stay together, the call verbatim
    call = projection.messages[-2]
    assert call.call_id == last.call_id and call.role == "assistant"
    assert projection.manifest.status_of(seq).status == "stubbed"
    assert record.tokens_after < record.tokens_before
    replayed = verify_entries(builder)
    assert project(replayed, 8000, BUDGET_8K, COUNTER) == projection


def test_a_big_output_of_an_earlier_recent_turn_is_stubbed_before_anything_is_elided() -> None:
    policy = Policy(budget_tokens=3000, keep_recent_turns=3, bulky_tool_output_tokens=200)
    builder = ThreadBuilder(policy=policy)
    builder.turn("user", "Find the failing import.")
    builder.tool("bash", "cat big.log", big_output(16))
    builder.turn("assistant", "The log is long; looking at the spec finder next.")
    builder.tool("bash", "grep -n find_spec modutils.py", "412: spec = find_spec(name)\n")
    compaction = builder.entries[builder.compactions[-1]]
    record = parse_compaction(compaction.seq, compaction.body)
    assert record.stubbed == (2,) and record.elided == ()
    assert record.folded is None or record.folded[1] < 1  # entries 1-2 are recent: not folded
    projection = project(builder.state, 3000, policy, COUNTER)
    assert projection.messages[-1].content == "412: spec = find_spec(name)\n"
    verify_entries(builder)


def test_the_tiers_that_do_not_touch_the_recent_turns_come_first() -> None:
    """A bulky result older than the recent turns is stubbed; the recent one is kept."""
    policy = Policy(budget_tokens=3000, keep_recent_turns=2, bulky_tool_output_tokens=200)
    builder = ThreadBuilder(policy=policy, compact=False)
    builder.turn("user", "Go.")
    builder.tool("bash", "cat old.log", big_output(8))
    builder.turn("assistant", "Now the new one.")
    builder.tool("bash", "cat new.log", "\n".join(text(n, 8) for n in range(150)))
    plan = plan_compaction(builder.state, policy, COUNTER)
    assert plan is not None and plan.elided == () and 2 in plan.stubbed and 6 not in plan.stubbed


def test_refused_only_when_the_recent_turns_at_their_smallest_do_not_fit() -> None:
    """Twelve recent turns whose markers alone exceed the budget: refused, saying by how
    much (long turns are elided first: issue 28 item 5)."""
    policy = Policy(budget_tokens=200, keep_recent_turns=12, summary_share_permille=500)
    builder = ThreadBuilder(policy=policy, compact=False)
    for step in range(11):
        builder.turn("assistant", f"Turn {step}: " + "reading the source carefully " * 4)
    builder.tool("bash", "cat huge.log", big_output(8))
    with pytest.raises(RecentTurnsOverBudgetError) as caught:
        plan_compaction(builder.state, policy, COUNTER)
    error = caught.value
    assert error.needed > error.budget == policy.window_tokens()
    smallest_latest = message_tokens(
        elided_message(builder.seq - 1, builder.entries[-1].body, 0, 0), COUNTER
    )
    assert error.needed >= smallest_latest
    assert f"{error.over_by} over the budget of {error.budget}" in str(error)
    assert "elided" in str(error)


def test_parallel_outputs_of_the_latest_turn_are_elided_biggest_first() -> None:
    policy = Policy(budget_tokens=2500, keep_recent_turns=1, bulky_tool_output_tokens=100)
    builder = ThreadBuilder(policy=policy)
    builder.turn("user", "Search everywhere.")
    sizes = {0: 6, 1: 12, 2: 3}
    builder.parallel_tools(3, lambda k: big_output(sizes[k]))
    projection = project(builder.state, 2500, policy, COUNTER)
    assert projection.tokens <= 2500
    record = parse_compaction(builder.compactions[-1], builder.entries[-1].body)
    elided = [seq for seq, _, _ in record.elided]
    results = [e.seq for e in builder.entries if e.kind == "tool.result"]
    assert results[1] in elided  # the biggest one
    verify_entries(builder)


def test_an_empty_output_in_the_latest_turn_is_never_elided() -> None:
    """Found by the lifecycle-block property test: an empty tool output in the latest turn
    made the planner build an elision of 0 + 0 of its 0 characters, a ValueError out of
    ``Thread.compact`` (exit 4 on the command line) where the budget simply cannot be met."""
    policy = Policy(budget_tokens=200, keep_recent_turns=2, bulky_tool_output_tokens=50)
    builder = ThreadBuilder(policy=policy, compact=False)
    builder.turn("user", "Search everywhere. " * 60)
    builder.tool("bash", "true", "")
    plan = plan_compaction(builder.state, policy, COUNTER)  # the long turn is elided
    assert plan is not None
    assert [seq for seq, _head, _tail in plan.elided] == [0]


def test_a_restored_snapshot_shows_the_same_elision_and_the_later_stub() -> None:
    builder = investigation(BUDGET_8K, big_output())
    seq = builder.compactions[-1]
    snapshot = json.loads(json.dumps(state_snapshot(builder.state)))
    boundary = builder.state.boundary
    restored = restore_state(
        snapshot,
        builder.entries[boundary:],
        builder.entries[max(0, boundary - REFILL_WINDOW) : boundary],
    )
    assert project(restored, 8000, BUDGET_8K, COUNTER) == project(
        builder.state, 8000, BUDGET_8K, COUNTER
    )
    # the agent answers: the elided output leaves the latest turn and is stubbed
    builder.turn("assistant", "modutils calls find_spec on every path entry. " * 30)
    builder.turn("user", "Then patch it.")
    later = [s for s in builder.compactions if s > seq]
    assert later, "a compaction fell due"
    final = parse_compaction(later[-1], builder.entries[later[-1]].body)
    assert final.stubbed or final.folded
    for split in (seq + 1, len(builder.entries)):
        original = ContextState.replay(builder.entries[:split])
        snapshot = json.loads(json.dumps(state_snapshot(original)))
        restored = restore_state(
            snapshot,
            builder.entries[original.boundary : split],
            builder.entries[max(0, original.boundary - REFILL_WINDOW) : original.boundary],
        )
        assert state_snapshot(restored) == state_snapshot(original)
        assert project(restored, 10**9, BUDGET_8K, COUNTER) == project(
            original, 10**9, BUDGET_8K, COUNTER
        )
    verify_entries(builder)


# --- the rules, replayed ------------------------------------------------------------------------


def recent_output(budget: int = 300) -> ThreadBuilder:
    """Entries 0-4: a question, a small and a bulky result (about 500 tokens) in the two most
    recent turns; over the budget unless it is large."""
    policy = Policy(budget_tokens=budget, keep_recent_turns=2, bulky_tool_output_tokens=50)
    builder = ThreadBuilder(policy=policy, compact=False)
    builder.turn("user", "Read both files.")  # 0
    builder.tool("bash", "cat small", "ok")  # 1, 2
    builder.tool("bash", "cat big", "\n".join(text(n, 10) for n in range(40)))  # 3, 4
    return builder


def test_stand_ins_in_the_recent_turns_of_a_context_over_budget_verify() -> None:
    builder = recent_output()
    assert context_tokens(builder.state, COUNTER) > 300
    verify(builder, body_of(builder, elided=((4, 40, 60),)))
    verify(builder, body_of(builder, stubbed=(4,)))
    # whatever their size: the bulky threshold is for results outside the recent turns
    verify(builder, body_of(builder, stubbed=(2,), elided=((4, 40, 60),)))


def test_compaction_stubbing_the_recent_turns_of_a_context_that_fits_fail() -> None:
    builder = recent_output(budget=1000)
    with pytest.raises(
        CompactionFoldsRecentTurnsError, match="fits the budget of 875"
    ):  # 1000 - reserve
        verify(builder, body_of(builder, stubbed=(4,)))
    with pytest.raises(CompactionFoldsRecentTurnsError, match="elides entry 4"):
        verify(builder, body_of(builder, elided=((4, 40, 60),)))


def test_compaction_eliding_a_small_turn_fail() -> None:
    """A turn outside the recent turns is elided only if bulky (it is not: refused)."""
    builder = recent_output()
    with pytest.raises(CompactionElisionError, match="bulky threshold"):
        verify(builder, body_of(builder, elided=((0, 2, 2),)))


def test_compaction_eliding_a_pin_fail() -> None:
    builder = recent_output()
    builder.pin("definition", "A spec is what find_spec returns for a module name.")
    with pytest.raises(CompactionElisionError, match="not a turn, tool call or tool result"):
        verify(builder, body_of(builder, elided=((5, 2, 2),)))


def test_compaction_eliding_a_small_result_fail() -> None:
    """Outside the recent turns only bulky results get a stand-in."""
    builder = recent_output()
    builder.turn("user", "And?")  # 5: the two most recent turns are 3-5
    with pytest.raises(CompactionElisionError, match="not above the policy's bulky threshold"):
        verify(builder, body_of(builder, elided=((2, 0, 1), (4, 40, 60))))


def test_compaction_stubbing_a_small_result_fail() -> None:
    builder = recent_output()
    builder.turn("user", "And?")  # 5
    with pytest.raises(CompactionStubError, match="not above the policy's bulky threshold"):
        verify(builder, body_of(builder, stubbed=(2, 4)))


def test_compaction_eliding_the_whole_output_fail() -> None:
    builder = recent_output()
    size = len(str(builder.entries[4].body["content"]))
    with pytest.raises(CompactionElisionError, match="leaves something out"):
        verify(builder, body_of(builder, elided=((4, size - 10, 10),)))


def test_compaction_eliding_and_stubbing_the_same_result_fail() -> None:
    builder = recent_output()
    with pytest.raises(CompactionElisionError, match="nor one it stubs"):
        verify(builder, body_of(builder, stubbed=(4,), elided=((4, 5, 5),)))


def test_an_elided_result_may_be_elided_again_or_stubbed_but_a_stub_stays() -> None:
    builder = recent_output(budget=100)
    builder.append("context.compaction", "registre", body_of(builder, elided=((4, 80, 80),)))
    verify(builder, body_of(builder, elided=((4, 10, 10),)))  # smaller, as pins grow
    verify(builder, body_of(builder, stubbed=(4,)))  # a stub may replace an elision
    builder.append("context.compaction", "registre", body_of(builder, stubbed=(4,)))
    with pytest.raises(CompactionElisionError, match="unstubbed"):
        verify(builder, body_of(builder, elided=((4, 10, 10),)))


def test_compaction_eliding_a_future_entry_fail() -> None:
    builder = recent_output()
    with pytest.raises(CompactionElisionError):
        verify(builder, body_of(builder, elided=((9, 1, 1),)))


@pytest.mark.parametrize(
    ("elided", "where"),
    [
        ([], "body.elided"),
        ([[4, 1]], "body.elided[0]"),
        ([[4, 1, 1], [4, 2, 2]], "body.elided[1]"),
        ([[4, -1, 1]], "body.elided[0][1]"),
    ],
)
def test_malformed_elisions_fail(elided: list[object], where: str) -> None:
    builder = recent_output()
    body = body_of(builder, elided=((4, 40, 60),))
    body["elided"] = elided
    with pytest.raises(LifecycleFormatError) as caught:
        parse_compaction(builder.seq, body)
    assert caught.value.path == where


@pytest.mark.parametrize(
    ("elided", "where"),
    [
        ([], "body.elided"),
        ([[4, 1]], "body.elided[0]"),
        ([[4, 1, 1], [4, 2, 2]], "body.elided[1][0]"),
        ([[4, 1, True]], "body.elided[0][2]"),
        ({"4": [1, 1]}, "body.elided"),
    ],
)
def test_malformed_elisions_fail_the_body_schema(elided: object, where: str) -> None:
    from registre.attest.entries import BodySchemaError

    builder = recent_output()
    body = body_of(builder, elided=((4, 40, 60),))
    validate_body("context.compaction", body)
    body["elided"] = elided
    with pytest.raises(BodySchemaError) as caught:
        validate_body("context.compaction", body)
    assert caught.value.path == where


def test_a_summary_line_may_not_point_at_a_recent_stand_in_only_because_it_is_elided() -> None:
    """Elisions do not widen what may be folded: the recent turns stay out of the range."""
    builder = recent_output()  # the two most recent turns start at entry 1
    line = SummaryLine("open_threads", "asked to read both files", ((0, 0),))
    verify(builder, body_of(builder, folded=(0, 0), lines=(line,), elided=((4, 40, 60),)))
    line = SummaryLine("tool_outputs", "read a small file", ((0, 2),))
    with pytest.raises(CompactionFoldsRecentTurnsError):
        verify(builder, body_of(builder, folded=(0, 2), lines=(line,), elided=((4, 40, 60),)))


# --- properties --------------------------------------------------------------------------------

_SIZES = st.sampled_from((1, 5, 20, 60, 200, 600))
_OPS = st.one_of(
    st.tuples(st.just("turn"), st.sampled_from(("user", "assistant")), st.integers(1, 60)),
    st.tuples(st.just("tool"), st.booleans(), _SIZES),
    st.tuples(st.just("parallel"), st.integers(2, 3), _SIZES),
    st.tuples(st.just("pin"), st.booleans(), st.integers(1, 12)),
    st.tuples(st.just("unpin"), st.booleans(), st.integers(1, 4)),
)


@st.composite
def small_policies(draw: st.DrawFn) -> Policy:
    high = draw(st.integers(500, 1000))
    return Policy(
        budget_tokens=draw(st.integers(600, 4000)),
        high_water_permille=high,
        low_water_permille=draw(st.integers(200, high)),
        keep_recent_turns=draw(st.integers(0, 6)),
        bulky_tool_output_tokens=draw(st.integers(20, 300)),
        summary_share_permille=draw(st.integers(260, 500)),
    )


def run(builder: ThreadBuilder, ops: list[tuple[object, ...]], check: object) -> None:
    pins: list[str] = []
    for step, (name, flag, size) in enumerate(ops):
        assert isinstance(size, int)
        if name == "turn":
            builder.turn(str(flag), text(step, size))
        elif name == "tool":
            output = "\n".join(text(step + n, 8) for n in range(size))
            builder.tool("bash", text(step, 3), output, is_error=bool(flag))
        elif name == "parallel":
            builder.parallel_tools(
                int(flag),  # type: ignore[call-overload]
                lambda k, step=step, size=size: "\n".join(
                    text(step + k + n, 6) for n in range(size)
                ),
            )
        elif name == "pin":
            pin = builder.pin("definition", " ".join(WORDS[:size]))
            if pin is not None:
                pins.append(pin)
        elif pins:
            builder.unpin(pins.pop(0))
        if callable(check):
            check(builder)


def latest_turn_floor(state: ContextState) -> int:
    """The fewest tokens the latest turn can be shown in: bulky results elided to their
    marker, everything else as shown now."""
    policy_free = 0
    tail = state.tail
    for item in tail[protected_start(tail, 1) :]:
        if item.kind == "tool.result" and not item.stub_only:
            marker = elided_message(item.seq, item.body, 0, 0)
            policy_free += min(message_tokens(marker, COUNTER), item.tokens(COUNTER, -1))
        elif not item.control:
            policy_free += item.tokens(COUNTER, -1)
    return policy_free


@settings(max_examples=60, deadline=None)
@given(policy=small_policies(), ops=st.lists(_OPS, min_size=5, max_size=40))
def test_every_projection_fits_or_the_error_says_why(policy: Policy, ops: list) -> None:
    """After every step (compactions recorded as they fall due): the projection fits the
    budget, pins verbatim, every stand-in keeps its call; or a ContextBudgetError whose
    ``needed`` exceeds the budget and is at least the pins and the latest turn at their
    smallest."""
    builder = ThreadBuilder(policy=policy)
    builder.turn("user", "Why does the import fail?")

    def check(builder: ThreadBuilder) -> None:
        projection = project(builder.state, policy.budget_tokens, policy, COUNTER)
        assert projection.tokens <= policy.budget_tokens
        contents = {message.content for message in projection.messages}
        for pin in builder.state.live_pins():
            assert pin_message(pin).content in contents
        calls = {}
        for message in projection.messages:
            if message.role == "assistant" and message.call_id is not None:
                calls[message.call_id] = message
            elif message.role == "tool":
                assert message.call_id in calls  # a result never without its call
        for item in builder.state.tail:
            if item.elided:
                event("an output shown head and tail")

    try:
        run(builder, ops, check)
    except ContextBudgetError as error:
        event(type(error).__name__)
        assert error.needed > error.budget and error.over_by == error.needed - error.budget
        assert str(error.over_by) in str(error)
        if isinstance(error, RecentTurnsOverBudgetError):
            state = builder.state
            assert error.needed >= live_pin_tokens(state, COUNTER) + latest_turn_floor(state)
    state = verify_entries(builder)
    assert state_snapshot(state) == state_snapshot(builder.state)
    for entry in builder.entries:
        if entry.kind == "context.compaction":
            validate_body(entry.kind, entry.body)
            record = parse_compaction(entry.seq, entry.body)
            assert record.tokens_after < record.tokens_before
            if record.elided:
                event("an elision recorded")


@settings(max_examples=40, deadline=None)
@given(policy=small_policies(), ops=st.lists(_OPS, min_size=5, max_size=30), data=st.data())
def test_restored_snapshots_keep_the_stand_ins(
    policy: Policy, ops: list, data: st.DataObject
) -> None:
    builder = ThreadBuilder(policy=policy)
    builder.turn("user", "Why does the import fail?")
    with contextlib.suppress(ContextBudgetError):
        run(builder, ops, None)
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
    assert project(restored, 10**9, policy, COUNTER) == project(original, 10**9, policy, COUNTER)
