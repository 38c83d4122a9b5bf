"""The lifecycle block's view kept with the lifecycle state (registre.context.block_view):
after any sequence of lifecycle events (admissions, supersessions, retractions, computes
and finals citing evidence, conclusion revisions, pins and unpins) it equals the view built
from scratch, its id ranges are the ranges of its ids, and the blocks laid out from it are
byte for byte the blocks laid out from the view built from scratch."""

from __future__ import annotations

import random

from hypothesis import given, settings
from hypothesis import strategies as st

from registre.context import default_counter, lifecycle_block
from registre.context.block_view import (
    LifecycleView,
    _citers_of,
    _number_of,
    _order_key,
    build_lifecycle_view,
    id_ranges,
    lifecycle_view,
    statement_line,
)
from registre.context.lifecycle_block import _ids_line, _ids_line_tokens
from registre.context.line_counts import block_counter
from registre.context.tokens import DefaultTokenCounter, TokenCounter
from registre.lifecycle import (
    ComputeRequest,
    ConclusionReviseRequest,
    EvidenceReviseRequest,
    FinalRequest,
    LifecycleState,
    PinRequest,
    ReadRequest,
    Request,
    SourceRef,
    Statement,
    UnpinRequest,
    UpsertRequest,
    step,
)

COUNTER = default_counter()
_REFS = (SourceRef("r1", "report.pdf", "p. 1", "a" * 64), SourceRef("r2", "memo", "s. 2", "b" * 64))


class _CharCounter:
    """A counter that does not add lines up (one token per 4 characters)."""

    name = "test.chars/1"

    def count(self, text: str) -> int:
        return (len(text) + 3) // 4


_ACTIONS = (
    "upsert",
    "upsert",
    "supersede",
    "retract",
    "compute",
    "final",
    "revise_conclusion",
    "retract_conclusion",
    "pin",
    "unpin",
    "bad",
)


def _request(state: LifecycleState, action: str, rng: random.Random) -> Request:
    """A request for ``action`` on ``state``, citing what it holds (mostly admissible)."""
    tables = state.tables()
    active = [e.id for e in tables.evidence.values() if e.status == "active"]
    computes = [
        c.id
        for c in tables.conclusions.values()
        if c.kind == "compute" and c.status == "active" and not c.stale
    ]
    conclusions = [c.id for c in tables.conclusions.values() if c.status == "active"]
    words = " ".join(rng.choice(["loss", "stage", "2", "ECL", "  ", "\n", "é"]) for _ in range(6))
    statement = Statement(f"fact {rng.randrange(10**6)} {words}", (rng.choice(["r1", "r2"]),))
    if action == "upsert" or (not active and action in ("supersede", "retract", "compute")):
        count = rng.randint(1, 4)
        return UpsertRequest(tuple(statement for _ in range(count)))
    if action == "supersede":
        return EvidenceReviseRequest(rng.choice(active), statement)
    if action == "retract":
        return EvidenceReviseRequest(rng.choice(active), None)
    if action == "compute":
        cites = tuple(rng.sample(active, rng.randint(1, min(3, len(active)))))
        return ComputeRequest("a ratio", cites)
    if action == "final" and (computes or active):
        cites = tuple(rng.sample(computes, min(len(computes), rng.randint(0, 2))))
        if active:
            cites += tuple(rng.sample(active, min(len(active), rng.randint(0, 2))))
        return FinalRequest("the answer", cites or (rng.choice(computes or active),))
    if action in ("revise_conclusion", "retract_conclusion") and conclusions:
        replacement = None
        if action == "revise_conclusion" and active:
            replacement = Statement("revised", (rng.choice(active),))
        return ConclusionReviseRequest(rng.choice(conclusions), replacement)
    if action == "pin":
        kind = rng.choice(["open_question", "open_question", "definition"])
        return PinRequest(kind, f"question {rng.randrange(100)}?", 0)
    live = list(tables.live_pins)
    if action == "unpin" and live:
        return UnpinRequest(rng.choice(live), "answered")
    # refused: an unknown id (nothing changes but the outcome)
    return EvidenceReviseRequest(f"ev-{tables.next_evidence + 5}", None)


def _check(
    kept: LifecycleView, state: LifecycleState, at: int, counters: list[TokenCounter]
) -> None:
    scratch = build_lifecycle_view(state)
    assert kept == scratch
    assert kept.ids == tuple(item[0] for item in scratch.active)
    assert kept.ranges is not None
    assert kept.ranges.text == ", ".join(id_ranges(kept.ids))
    assert kept.ranges.count == len(id_ranges(kept.ids))
    if kept.active:
        assert kept.ids is not None
        line = _ids_line(kept, kept.ids)
        assert line == _ids_line(scratch, kept.ids)  # the kept ranges, the ids' own
        default = block_counter(DefaultTokenCounter())
        assert _ids_line_tokens(kept, default) == DefaultTokenCounter().count(line)
    for counter in counters:
        for allowance in (0, 60, 200, 900, 4000):
            for version in (1, 2):
                got = lifecycle_block(kept, at, allowance, counter, version)
                want = lifecycle_block(
                    LifecycleView(scratch.active, scratch.stale, scratch.questions),
                    at,
                    allowance,
                    counter,
                    version,
                )
                assert got == want


@settings(max_examples=60, deadline=None)
@given(
    actions=st.lists(st.sampled_from(_ACTIONS), min_size=1, max_size=60),
    seed=st.integers(0, 2**32 - 1),
    every=st.integers(1, 5),
)
def test_the_kept_view_is_the_view_built_from_scratch(
    actions: list[str], seed: int, every: int
) -> None:
    rng = random.Random(seed)
    counters: list[TokenCounter] = [COUNTER, _CharCounter()]
    state = LifecycleState.empty()
    _event, state = step(state, ReadRequest(_REFS))
    views: list[LifecycleView] = []
    for index, action in enumerate(actions):
        _event, state = step(state, _request(state, action, rng))
        if index % every == 0:  # views asked for now and then: several changes at once
            kept = lifecycle_view(state)
            views.append(kept)
            _check(kept, state, index, counters)
    kept = lifecycle_view(state)
    _check(kept, state, len(actions), counters)
    assert lifecycle_view(state) is kept  # nothing changed: the same view, its counts kept


def test_a_copy_of_the_state_keeps_a_view_of_its_own() -> None:
    state = LifecycleState.empty()
    for request in (
        ReadRequest(_REFS),
        UpsertRequest(tuple(Statement(f"fact {n}", ("r1",)) for n in range(5))),
    ):
        _event, state = step(state, request)
    before = lifecycle_view(state)
    fork = state.copy()
    _event, fork = step(fork, EvidenceReviseRequest("ev-3", None))
    assert lifecycle_view(state) is before
    assert [item[0] for item in lifecycle_view(fork).active] == ["ev-5", "ev-4", "ev-2", "ev-1"]
    assert lifecycle_view(fork).ranges is not None
    assert lifecycle_view(fork).ranges.text == "ev-1–2, ev-4–5"  # type: ignore[union-attr]
    copy = fork.copy()  # a copy starts with no kept view and no change notes
    assert (copy.tables().changed, copy.tables().derived) == (None, {})
    assert copy == fork  # neither is part of the content
    assert lifecycle_view(copy) == lifecycle_view(fork)


def test_the_kept_view_lays_out_every_form_as_the_view_built_from_scratch() -> None:
    # hundreds of active ids in a hundred ranges: at small allowances only some ids fit
    # (the kept costs' running sums), then the id list, then statements
    _event, state = step(LifecycleState.empty(), ReadRequest(_REFS))
    statements = tuple(Statement(f"fact {n} loss", ("r1",)) for n in range(300))
    for start in range(0, 300, 50):
        _event, state = step(state, UpsertRequest(statements[start : start + 50]))
    lifecycle_view(state)  # kept from here on: the changes below are applied to it
    for number in range(2, 300, 3):
        _event, state = step(state, EvidenceReviseRequest(f"ev-{number}", None))
    _event, state = step(state, ComputeRequest("ratio", ("ev-7", "ev-299")))
    kept = lifecycle_view(state)
    scratch = build_lifecycle_view(state)
    plain = LifecycleView(scratch.active, scratch.stale, scratch.questions)
    forms = set()
    for allowance in range(20, 3000, 23):
        for counter in (COUNTER, _CharCounter()):
            block = lifecycle_block(kept, 7, allowance, counter)
            assert block == lifecycle_block(plain, 7, allowance, counter)
            forms.add(block.form)
    assert forms == {"none", "count", "some_ids", "ids", "statements"}


@given(
    st.lists(st.tuples(st.integers(0, 2**20), st.integers(1, 2**53 - 1)), max_size=30),
)
def test_the_kept_order_key_orders_as_the_pair_it_packs(entries: list[tuple[int, int]]) -> None:
    """A kept view sorts its active entries by one int, not by ``(-citers, -number)``: the
    same order, and both halves read back."""
    keys = [_order_key(citers, number) for citers, number in entries]
    by_int = sorted(range(len(entries)), key=lambda i: (keys[i], i))
    by_pair = sorted(range(len(entries)), key=lambda i: (-entries[i][0], -entries[i][1], i))
    assert by_int == by_pair
    for key, (citers, number) in zip(keys, entries, strict=True):
        assert (_citers_of(key), _number_of(key)) == (citers, number)


@given(
    st.lists(
        st.tuples(
            st.sampled_from(["ev-1", "ev-2", "ev-30"]), st.text(max_size=12), st.integers(0, 3)
        ),
        max_size=12,
    ),
    st.lists(st.integers(0, 13), max_size=20),
)
def test_statement_texts_kept_by_a_view_are_its_lines_joined(
    active: list[tuple[str, str, int]], asked: list[int]
) -> None:
    """The text a view keeps per number of statements shown is those statement lines,
    joined by line breaks, however often and in whatever order it is asked for."""
    view = LifecycleView(tuple(active), (), ())
    for shown in asked:
        lines = [statement_line(item) for item in active[:shown]]
        assert view.statements_text(shown) == "\n".join(lines)
