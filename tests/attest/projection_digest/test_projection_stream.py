"""attest.projection_stream: the model-call check carried forward accepts exactly what the
full rebuild (``project`` + RFC 8785 of the whole projection) accepts, and its pieces write
the same bytes as ``canonical_bytes``."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from registre.attest.canonical_json import LoneSurrogateError, canonical_bytes
from registre.attest.projection_digest import (
    ModelCallChecker,
    flat_json,
    message_bytes,
    projection_digest,
    run_bytes,
    verify_model_call,
)
from registre.attest.projection_digest.stream import _push, _run_bytes
from registre.context import (
    DEFAULT_COUNTER_NAME,
    LIFECYCLE_BLOCK_VERSION,
    STATUSES,
    ContextBudgetError,
    ContextEntry,
    ContextState,
    ExtractiveSummarizer,
    ManifestRun,
    Message,
    Policy,
    counter_registry,
    default_counter,
    prepare_compaction,
    project,
)
from registre.context.policy import parse_policy
from registre.context.projection import _push as project_push
from registre.errors import RegistreError
from registre.lifecycle import PinRequest, ReadRequest, Statement, UnpinRequest, UpsertRequest
from tests.bundles import Thread, ref

COMPACT_POLICY = Policy(
    budget_tokens=700,
    keep_recent_turns=1,
    bulky_tool_output_tokens=60,
    summary_share_permille=400,
)
BUDGETS = (40, 200, 700, 5000)
WORDS = ("alpha", "beta", "gamma", "delta", "x\ty", "é", "漢字", 'a"b', "c\\d", "e\nf")

step = st.one_of(
    st.tuples(st.just("turn"), st.integers(1, 30)),
    st.tuples(st.just("tool"), st.integers(1, 120)),
    st.tuples(st.just("pin"), st.integers(1, 8)),
    st.tuples(st.just("unpin"), st.just(0)),
    st.tuples(st.just("evidence"), st.integers(1, 12)),
    st.tuples(st.just("compact"), st.just(0)),
    st.tuples(st.just("call"), st.integers(0, 2 * len(BUDGETS) - 1)),
    st.tuples(st.just("refold"), st.integers(0, 2 * len(BUDGETS) - 1)),
)


def words(count: int, salt: int) -> str:
    return " ".join(WORDS[(salt * 7 + k * 3) % len(WORDS)] for k in range(count))


def reference_digest(
    body: dict[str, Any], state: ContextState, lifecycle: Any | None
) -> str | None:
    """The digest of the full rebuild, or None when the context is over the budget."""
    policy = Policy(**body["policy"])
    try:
        projection = project(state, body["budget_tokens"], policy, default_counter(), lifecycle)
    except ContextBudgetError:
        return None
    return projection_digest(projection)


def call_body(choice: int, at: int) -> dict[str, Any]:
    budget = BUDGETS[choice % len(BUDGETS)]
    body: dict[str, Any] = {
        "model": "test/model",
        "at_seq": at,
        "budget_tokens": budget,
        "policy": Policy(budget_tokens=budget).to_json(),
        "token_counter": DEFAULT_COUNTER_NAME,
        "projection_sha256": "0" * 64,
    }
    if choice >= len(BUDGETS):
        body["lifecycle_block"] = LIFECYCLE_BLOCK_VERSION
    return body


def accepts(check: Any, *args: Any) -> bool:
    try:
        check(*args)
    except RegistreError:
        return False
    return True


@given(st.lists(step, max_size=60))
def test_carried_check_accepts_exactly_what_the_full_rebuild_accepts(
    steps: list[tuple[str, int]],
) -> None:
    thread = Thread()
    checker = ModelCallChecker(counter_registry(()))  # one per replay, as the verifier keeps
    registry = counter_registry(())
    pins: list[str] = []
    sources = 0
    for index, (kind, size) in enumerate(steps):
        if kind == "turn":
            thread.turn(words(size, index), role=("user", "assistant")[index % 2])
        elif kind == "tool":
            call_id = f"c{index}"
            thread.append("tool.call", {"call_id": call_id, "name": "grep", "arguments": {}})
            content = words(size, index)
            thread.append("tool.result", {"call_id": call_id, "name": "grep", "content": content})
        elif kind == "pin" and thread.size:
            thread.decide(PinRequest("definition", words(size, index), thread.size - 1))
            pins.append(f"pin-{len(pins) + 1}")
        elif kind == "unpin" and pins:
            thread.decide(UnpinRequest(pins.pop(0), "done"))
        elif kind == "evidence":
            sources += 1
            thread.decide(ReadRequest((ref(f"s{sources}"),)))
            thread.decide(UpsertRequest((Statement(words(size, index), (f"s{sources}",)),)))
        elif kind == "compact":
            assert thread.context is not None
            try:
                body = prepare_compaction(
                    thread.context,
                    COMPACT_POLICY,
                    default_counter(),
                    ExtractiveSummarizer(),
                    thread.texts,
                )
            except RegistreError:
                body = None
            if body is not None:
                thread.append("context.compaction", body, actor="registre")
                event("compacted")
        elif kind in ("call", "refold") and thread.size:
            state = thread.context
            assert state is not None
            if kind == "refold":  # a call projecting an earlier prefix: a new state object
                at = size % thread.size
                state = ContextState.replay(
                    ContextEntry(e.seq, e.kind, e.actor, e.body) for e in thread.entries[: at + 1]
                )
            body = call_body(size, state.at)
            lifecycle = thread.state if "lifecycle_block" in body and kind == "call" else None
            if "lifecycle_block" in body and lifecycle is None:
                continue  # the lifecycle state at an earlier prefix: not kept here
            expected = reference_digest(body, state, lifecycle)
            carried_digest = checker.digest(body, state, lifecycle)
            if carried_digest is None and expected is not None:
                # a version 2 policy refills folded entries: project itself lays them out,
                # so the carried check defers to the full rebuild (never a different digest)
                assert parse_policy(body["policy"], "body.policy").refills and state.folded
                event("refill: the full check decides")
            else:
                assert carried_digest == expected
                event("over the budget" if expected is None else "digest carried")
            for digest in {expected or "1" * 64, "f" * 64}:
                body["projection_sha256"] = digest
                full = accepts(verify_model_call, body, state, registry, lifecycle)
                carried = accepts(checker.check, body, state, lifecycle)
                assert carried == full
                assert full == (digest == expected)


@given(
    st.text(st.characters(codec="utf-8"), max_size=40),
    st.sampled_from(["system", "user", "assistant", "tool"]),
    st.none() | st.text(max_size=10),
    st.none() | st.text(max_size=10),
)
def test_message_bytes_are_canonical_bytes(
    content: str, role: str, name: str | None, call_id: str | None
) -> None:
    message = Message(role, content, name, call_id)
    assert message_bytes(message) == canonical_bytes(message.to_json())


def test_message_with_a_lone_surrogate_is_refused_as_canonical_bytes_refuses_it() -> None:
    with pytest.raises(LoneSurrogateError):
        message_bytes(Message("user", "broken \ud83d here"))


@given(
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    st.sampled_from(STATUSES),
    st.none() | st.integers(0, 10**6),
    st.none() | st.integers(0, 10**6),
    st.none() | st.integers(0, 10**6),
    st.none() | st.sampled_from(["pin-1", "pin-22", "pin\n", "é", 'a"b']),
)
def test_run_bytes_are_canonical_bytes(
    first: int,
    last: int,
    status: str,
    message: int | None,
    compaction: int | None,
    line: int | None,
    pin: str | None,
) -> None:
    run = ManifestRun(first, last, status, message, compaction, line, pin)
    assert run_bytes(run) == canonical_bytes(run.to_json())


small = st.integers(0, 3)
manifest_run = st.builds(
    lambda first, length, status, message, compaction, line, pin: ManifestRun(
        first, first + length, status, message, compaction, line, pin
    ),
    st.integers(0, 12),
    small,
    st.sampled_from(STATUSES),
    st.none() | small,
    st.none() | small,
    st.none() | small,
    st.none() | st.sampled_from(["pin-1", "é"]),
)


@given(st.lists(manifest_run, max_size=12))
def test_runs_merged_as_tuples_are_the_runs_project_merges(runs: list[ManifestRun]) -> None:
    """The parts' run merging (fields as tuples) writes the manifest ``project`` writes
    (its ``_push``, by ``run_continues``), run for run."""
    merged: list[ManifestRun] = []
    for run in runs:
        project_push(merged, run)
    pending = None
    done: list[bytes] = []
    for run in runs:
        fields = (run.first, run.last, run.status, run.message, run.compaction, run.line, run.pin)
        pending = _push(pending, fields, done)
    if pending is not None:
        done.append(_run_bytes(pending))
    assert done == [run_bytes(run) for run in merged]


@given(
    st.dictionaries(
        st.sampled_from(["version", "form", "tokens", "message", "é", "a\nb", 'q"']),
        st.integers(-(2**54), 2**54)
        | st.booleans()
        | st.none()
        | st.sampled_from(["statements", "ids", "none", "", "x y", "é", "a-1"]),
        max_size=5,
    )
)
def test_flat_json_is_canonical_bytes(value: dict[str, object]) -> None:
    try:
        expected = canonical_bytes(value).decode()
    except RegistreError as error:
        with pytest.raises(type(error)):
            flat_json(value)
        return
    assert flat_json(value) == expected


block_text = st.text(st.sampled_from(["a", "\n", "–", '"', "\\", "\t", "漢", "\ud83d"]), max_size=8)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["system", "user"]),
            block_text,
            st.sampled_from(["", '\nsame rest – "x"', "\nother\n"]),
            st.none() | st.just("n"),
            st.none() | st.just("c1"),
        ),
        max_size=6,
    )
)
def test_block_message_bytes_kept_from_the_call_before_are_message_bytes(
    messages: list[tuple[str, str, str, str | None, str | None]],
) -> None:
    """The lifecycle block's message bytes, their text after the first line break kept
    from one call to the next, are message_bytes's (or its refusal) every time."""
    checker = ModelCallChecker(counter_registry(()))
    for role, head, rest, name, call_id in messages:
        message = Message(role, head + rest, name, call_id)
        try:
            expected = message_bytes(message)
        except LoneSurrogateError:
            with pytest.raises(LoneSurrogateError):
                checker._block_bytes(message)
            continue
        assert checker._block_bytes(message) == expected
