"""The lifecycle block (specs/context.md section 4.1): what the agent must cite, in view, as
the last message of a projection; its order, its forms, its budget, in version 2 (every
active id named whenever the id list fits) and version 1 (calls recorded before)."""

from __future__ import annotations

import importlib
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from registre.context import (
    ContextEntry,
    ContextState,
    Policy,
    default_counter,
    lifecycle_block,
    lifecycle_view,
    project,
)
from registre.context import lifecycle_block as block_of
from registre.context.lifecycle_block import (
    BLOCK_FORMS,
    BLOCK_SHARE_PERMILLE,
    LISTED_IDS,
    STATEMENT_CHARS,
    LifecycleBlock,
    LifecycleView,
    statement_text,
)
from registre.context.line_counts import line_counter
from registre.context.model import Message
from registre.context.render import MESSAGE_OVERHEAD_TOKENS, message_tokens
from registre.context.tokens import TokenCounter
from registre.lifecycle import (
    ComputeRequest,
    EvidenceReviseRequest,
    FinalRequest,
    LifecycleState,
    PinRequest,
    ReadRequest,
    Request,
    SourceRef,
    Statement,
    UpsertRequest,
    step,
)

COUNTER = default_counter()


def decide(state: LifecycleState, *requests: Request) -> LifecycleState:
    for request in requests:
        _event, state = step(state, request)
    return state


def admitted(count: int, words: int = 6) -> LifecycleState:
    """``count`` evidence entries ev-1..ev-N, each a statement of ``words`` words."""
    refs = (SourceRef("r1", "report.pdf", "p. 1", "a" * 64),)
    statements = tuple(
        Statement(" ".join([f"fact{n}"] + ["figure"] * (words - 1)), ("r1",))
        for n in range(1, count + 1)
    )
    state = decide(LifecycleState.empty(), ReadRequest(refs))
    for start in range(0, count, 50):
        state = decide(state, UpsertRequest(statements[start : start + 50]))
    return state


def story() -> LifecycleState:
    """ev-1..ev-4; cc-1 relies on ev-2, cc-2 (final) on cc-1 and ev-3; ev-2 then superseded
    by ev-5 (cc-1 and cc-2 stale); an open question pinned."""
    state = admitted(4)
    return decide(
        state,
        ComputeRequest("ratio from fact2", ("ev-2",)),
        FinalRequest("the figures reconcile", ("cc-1", "ev-3")),
        EvidenceReviseRequest("ev-2", Statement("fact2 corrected", ("r1",))),
        PinRequest("open_question", "Is Offices in scope?", 0),
        PinRequest("definition", "Stage 2 means SICR", 0),
    )


def test_the_view_orders_most_cited_then_most_recent() -> None:
    state = decide(
        admitted(4),
        ComputeRequest("uses ev-1", ("ev-1",)),
        ComputeRequest("uses ev-1 and ev-3", ("ev-1", "ev-3")),
    )
    view = lifecycle_view(state)
    assert [item[0] for item in view.active] == ["ev-1", "ev-3", "ev-4", "ev-2"]
    assert [item[2] for item in view.active] == [2, 1, 0, 0]
    assert view.stale == ()
    assert view.questions == ()


def test_the_view_lists_active_evidence_stale_conclusions_and_open_questions() -> None:
    view = lifecycle_view(story())
    assert [item[0] for item in view.active] == ["ev-3", "ev-5", "ev-4", "ev-1"]  # ev-2 gone
    assert view.stale == (("cc-1", "compute"), ("cc-2", "final"))
    assert view.questions == ("pin-1",)


def test_the_full_block_reads_as_specified() -> None:
    block = lifecycle_block(lifecycle_view(story()), 12, 1000, COUNTER)
    assert (block.form, block.statements, block.version) == ("statements", 4, 2)
    assert block.message is not None
    assert block.message.content == (
        "[lifecycle at entry 12] a conclusion may cite only the active evidence below\n"
        "active evidence (4): ev-1, ev-3–5 (statements: registre evidence show ID)\n"
        "with statements, most cited and most recent first:\n"
        "- ev-3 (cited by 1): fact3 figure figure figure figure figure\n"
        "- ev-5: fact2 corrected\n"
        "- ev-4: fact4 figure figure figure figure figure\n"
        "- ev-1: fact1 figure figure figure figure figure\n"
        "stale conclusions (evidence they rely on changed): cc-1 compute, cc-2 final\n"
        "open questions (pinned): pin-1"
    )


def test_the_version_1_block_reads_as_specified() -> None:
    block = lifecycle_block(lifecycle_view(story()), 12, 1000, COUNTER, version=1)
    assert block.form == "statements"
    assert block.statements == 4
    assert block.message is not None
    assert block.message.role == "system"
    assert block.message.content == (
        "[lifecycle at entry 12] a conclusion may cite only the active evidence below\n"
        "active evidence (4, most cited and most recent first):\n"
        "- ev-3 (cited by 1): fact3 figure figure figure figure figure\n"
        "- ev-5: fact2 corrected\n"
        "- ev-4: fact4 figure figure figure figure figure\n"
        "- ev-1: fact1 figure figure figure figure figure\n"
        "stale conclusions (evidence they rely on changed): cc-1 compute, cc-2 final\n"
        "open questions (pinned): pin-1"
    )


def named(text: str) -> set[int]:
    """The evidence numbers ``text`` names, ranges (``ev-3–5``) expanded."""
    numbers: set[int] = set()
    for first, last in re.findall(r"(?<![\w-])ev-(\d+)(?:–(\d+))?(?![\w-])", text):
        numbers.update(range(int(first), int(last or first) + 1))
    return numbers


def test_every_active_id_is_named_while_the_list_fits_then_the_most_cited_and_recent() -> None:
    state = admitted(300)
    for target in ("ev-7", "ev-8", "ev-100", "ev-250"):  # holes in the runs; ev-301..304
        state = decide(state, EvidenceReviseRequest(target, Statement("corrected", ("r1",))))
    state = decide(state, ComputeRequest("from ev-5", ("ev-5",)))
    view = lifecycle_view(state)
    active = {int(item[0][3:]) for item in view.active}
    assert len(active) == 300
    full = lifecycle_block(view, 99, 800, COUNTER)
    assert full.form == "statements" and 0 < full.statements < 300
    assert full.message is not None and full.tokens <= 800
    lines = full.message.content.splitlines()
    assert lines[1] == (
        "active evidence (300): ev-1–6, ev-9–99, ev-101–249, ev-251–304 "
        "(statements: registre evidence show ID)"
    )
    assert named(full.message.content) == active
    assert lines[3].startswith("- ev-5 (cited by 1): fact5 ")  # most cited, then newest
    assert lines[4].startswith("- ev-304: corrected")
    ids = lifecycle_block(view, 99, 70, COUNTER)  # the list, but no statement, fits
    assert (ids.form, ids.statements) == ("ids", 0)
    assert ids.message is not None and named(ids.message.content) == active
    state = admitted(300)
    for number in range(2, 300, 2):  # 151 active, in 150 runs: the list no longer fits
        state = decide(state, EvidenceReviseRequest(f"ev-{number}", None))
    view = lifecycle_view(state)
    some = lifecycle_block(view, 99, 200, COUNTER)
    assert some.form == "some_ids" and some.tokens <= 200
    assert some.message is not None
    shown = named(some.message.content)
    newest = sorted((int(item[0][3:]) for item in view.active), reverse=True)
    assert shown == set(newest[: len(shown)]) and 10 < len(shown) < 151
    assert f"(the other {151 - len(shown)}: registre evidence list)" in some.message.content


def test_what_does_not_fit_shrinks_to_a_pointer_then_ids_then_a_count() -> None:
    """Version 2: fewer statements, then the id list alone, then the count; version 1 (below)
    listed at most 16 ids."""
    view = lifecycle_view(admitted(60))
    full = lifecycle_block(view, 99, 10_000, COUNTER)
    assert (full.form, full.statements) == ("statements", 60)
    some = lifecycle_block(view, 99, 200, COUNTER)
    assert some.form == "statements" and 0 < some.statements < 60 and some.tokens <= 200
    ids = lifecycle_block(view, 99, 50, COUNTER)
    assert ids.form == "ids" and ids.message is not None
    assert ids.message.content.splitlines()[1] == (
        "active evidence (60): ev-1–60 (statements: registre evidence show ID)"
    )
    count = lifecycle_block(view, 99, 40, COUNTER)
    assert count.form == "count" and count.message is not None
    assert count.message.content == (
        "[lifecycle at entry 99] 60 active evidence entries, 0 stale conclusions, "
        "0 open questions (registre evidence list)"
    )
    none = lifecycle_block(view, 99, 30, COUNTER)
    assert (none.form, none.message, none.tokens) == ("none", None, 0)


def test_version_1_shrinks_to_a_pointer_then_16_ids_then_a_count() -> None:
    view = lifecycle_view(admitted(60))

    def lifecycle_block(*args: Any) -> LifecycleBlock:
        return block_of(*args, version=1)

    full = lifecycle_block(view, 99, 10_000, COUNTER)
    assert (full.form, full.statements) == ("statements", 60)
    some = lifecycle_block(view, 99, 200, COUNTER)
    assert some.form == "statements"
    assert 0 < some.statements < 60
    assert some.tokens <= 200
    assert some.message is not None
    rest = 60 - some.statements
    last = some.message.content.splitlines()[-1]
    assert last.startswith(f"and {rest} more active: ev-{60 - some.statements}, ")
    assert last.endswith(f", … ({rest - LISTED_IDS} more) (registre evidence list)")
    ids = lifecycle_block(view, 99, 120, COUNTER)
    assert ids.form == "ids"
    assert ids.message is not None
    assert ids.message.content.splitlines()[1].startswith("active evidence (60): ev-60, ev-59, ")
    count = lifecycle_block(view, 99, 40, COUNTER)
    assert count.form == "count"
    assert count.message is not None
    assert count.message.content == (
        "[lifecycle at entry 99] 60 active evidence entries, 0 stale conclusions, "
        "0 open questions (registre evidence list)"
    )
    none = lifecycle_block(view, 99, 30, COUNTER)
    assert (none.form, none.message, none.tokens) == ("none", None, 0)


def test_an_empty_lifecycle_shows_no_block() -> None:
    for version in (1, 2):
        block = lifecycle_block(lifecycle_view(LifecycleState.empty()), 3, 1000, COUNTER, version)
        assert (block.form, block.message, block.version) == ("none", None, version)
    with pytest.raises(ValueError, match="no lifecycle block version 3"):
        lifecycle_block(lifecycle_view(story()), 3, 1000, COUNTER, 3)


def test_long_statements_are_cut_at_a_word_and_whitespace_is_collapsed() -> None:
    assert statement_text("two\n lines\tjoined ") == "two lines joined"
    long = "word " * 100
    cut = statement_text(long)
    assert cut.endswith("word…")
    assert len(cut) <= STATEMENT_CHARS + 1


def fold(texts: list[str]) -> ContextState:
    entries = [
        ContextEntry(seq, "turn", "user", {"role": "user", "text": text})
        for seq, text in enumerate(texts)
    ]
    return ContextState.replay(entries)


def test_the_block_is_the_last_message_and_the_stable_prefix_is_unchanged() -> None:
    state = fold(["Reconcile the Q3 figures.", "Start with the impairment."])
    policy = Policy(budget_tokens=2000)
    plain = project(state, 2000, policy, COUNTER)
    with_block = project(state, 2000, policy, COUNTER, story())
    assert with_block.messages[:-1] == plain.messages
    assert with_block.messages[-1].content.startswith("[lifecycle at entry 1]")
    assert with_block.manifest.runs == plain.manifest.runs
    assert with_block.manifest.stable_prefix_messages == plain.manifest.stable_prefix_messages
    assert with_block.tokens == plain.tokens + with_block.message_tokens[-1]
    data = with_block.to_json()
    assert data["lifecycle_block"] == {
        "version": 2,
        "form": "statements",
        "statements": 4,
        "tokens": with_block.message_tokens[-1],
        "message": len(with_block.messages) - 1,
    }
    assert "lifecycle_block" not in plain.to_json()


def test_the_block_never_makes_a_projection_refuse() -> None:
    state = fold(["x " * 40])
    plain = project(state, 10_000, Policy(budget_tokens=10_000), COUNTER)
    exact = plain.tokens  # a budget the context fills exactly: no room for the block
    projection = project(state, exact, Policy(budget_tokens=exact), COUNTER, story())
    assert projection.messages == plain.messages
    assert projection.block is not None
    assert projection.block.form == "none"
    assert projection.to_json()["lifecycle_block"] == {
        "version": 2,
        "form": "none",
        "statements": 0,
        "tokens": 0,
    }


@settings(max_examples=60, deadline=None)
@given(
    evidence=st.integers(0, 80),
    words=st.integers(1, 60),
    budget=st.integers(20, 4000),
    retracted=st.sets(st.integers(1, 80), max_size=30),
    version=st.sampled_from([1, 2]),
)
def test_every_block_fits_its_allowance(
    evidence: int, words: int, budget: int, retracted: set[int], version: int
) -> None:
    state = fold(["Reconcile."])
    lifecycle = admitted(evidence, words)
    for number in sorted(n for n in retracted if n <= evidence):
        lifecycle = decide(lifecycle, EvidenceReviseRequest(f"ev-{number}", None))
    base = project(state, max(budget, 20), Policy(budget_tokens=max(budget, 20)), COUNTER)
    projection = project(state, budget, Policy(budget_tokens=budget), COUNTER, lifecycle, version)
    assert projection.tokens <= budget
    block = projection.block
    assert block is not None and block.version == version
    assert block.tokens <= budget * BLOCK_SHARE_PERMILLE // 1000
    assert projection.messages[: len(base.messages)] == base.messages
    if evidence and block.message is not None:
        forms = ("statements", "ids", "count") if version == 1 else BLOCK_FORMS[:4]
        assert block.form in forms
    if version == 2 and block.form in ("statements", "ids") and block.message is not None:
        active = {int(item[0][3:]) for item in lifecycle_view(lifecycle).active}
        assert named(block.message.content) == active  # every active id, no other


# --- the block laid out from kept line counts is the block laid out by counting ------------


def _reference_block(view: LifecycleView, at: int, allowance: int, counter: TokenCounter) -> object:
    """lifecycle_block as first written: the estimate by a loop over the statements, each
    candidate block rendered and counted whole."""
    lb = importlib.import_module("registre.context.lifecycle_block")

    if view.empty or allowance <= 0:
        return lb._none(1)

    def sized(text: str) -> tuple[Message, int]:
        message = Message("system", text)
        return message, message_tokens(message, counter)

    ids_message, ids_tokens = sized(lb._render(view, at, 0))
    if ids_tokens > allowance:
        count_message, count_tokens = sized(lb._count_line(view, at))
        if count_tokens > allowance:
            return lb._none(1)
        return lb.LifecycleBlock("count", count_message, count_tokens, 0, 1)
    active = view.active
    head, _statements, after = lb._lines(view, at, 1)
    if len(active) > 1:
        after = after[1:]
    used = MESSAGE_OVERHEAD_TOKENS - 1 + sum(counter.count(line) + 1 for line in head + after)
    full = counter.count(lb._rest_line(active, 1)) + 1 if len(active) > 1 else 0
    shown = 0
    for candidate in range(1, len(active) + 1):
        used += counter.count(lb._statement_line(active[candidate - 1])) + 1
        left = len(active) - candidate
        more = full if left > LISTED_IDS else 0
        if 0 < left <= LISTED_IDS:
            more = counter.count(lb._rest_line(active, candidate)) + 1
        if used + more > allowance:
            break
        shown = candidate
    while shown > 0:
        message, tokens = sized(lb._render(view, at, shown))
        if tokens <= allowance:
            return lb.LifecycleBlock("statements", message, tokens, shown, 1)
        shown -= 1
    return lb.LifecycleBlock("ids", ids_message, ids_tokens, 0, 1)


class _CharCounter:
    """A counter whose counts do not add up over lines (no LineCounter for it)."""

    name = "test.chars/1"

    def count(self, text: str) -> int:
        return (len(text) + 3) // 4


_STATEMENT = st.one_of(
    st.text(alphabet="ab cd\n\t", max_size=30),
    st.text(alphabet=st.characters(codec="utf-8"), max_size=12),
    st.builds(lambda n: "word " * n, st.integers(0, 60)),
)


@settings(max_examples=150, deadline=None)
@given(
    active=st.lists(
        st.tuples(
            st.from_regex(r"ev-[0-9]{1,3}( |\n)?", fullmatch=True), _STATEMENT, st.integers(0, 3)
        ),
        max_size=45,
    ),
    stale=st.lists(st.tuples(st.sampled_from(["cc-1", "cc-2 "]), st.just("final")), max_size=2),
    questions=st.lists(st.sampled_from(["pin-1", "pin-2"]), max_size=2),
    at=st.integers(0, 10**6),
    allowance=st.integers(-5, 3000),
    which=st.sampled_from(["default", "lines", "chars"]),
)
def test_the_block_from_kept_line_counts_is_the_block_counted_whole(
    active: list[tuple[str, str, int]],
    stale: list[tuple[str, str]],
    questions: list[str],
    at: int,
    allowance: int,
    which: str,
) -> None:
    # the default counter (its block counter adds lines up), the same wrapped as the
    # verifier's model-call check passes it, and a counter whose counts do not add up
    counters = {"default": COUNTER, "lines": line_counter(COUNTER), "chars": _CharCounter()}
    counter: TokenCounter = counters[which]
    view = LifecycleView(tuple(active), tuple(stale), tuple(questions))
    expected = _reference_block(view, at, allowance, counter)
    assert lifecycle_block(view, at, allowance, counter, 1) == expected
    assert lifecycle_block(view, at + 1, allowance // 2, counter, 1) == _reference_block(
        view, at + 1, allowance // 2, counter
    )  # the counts kept with the view serve the next call


def _reference_block_v2(
    view: LifecycleView, at: int, allowance: int, counter: TokenCounter
) -> object:
    """Version 2 as first written: the estimate by a loop over the statements, each
    candidate block rendered and counted whole (the id-list, some-ids and count forms are
    the module's own)."""
    lb = importlib.import_module("registre.context.lifecycle_block")

    if view.empty or allowance <= 0:
        return lb._none(2)

    def sized(lines: list[str]) -> tuple[Message, int]:
        message = Message("system", "\n".join(lines))
        return message, message_tokens(message, counter)

    head = lb._HEADER.format(at=at)
    after = lb._after_v2(view)
    active = view.active
    if not active:
        message, tokens = sized([head, "active evidence: none", *after])
        if tokens <= allowance:
            return lb.LifecycleBlock("ids", message, tokens, 0, 2)
        return lb._count_v2(view, at, allowance, counter)
    ids = tuple(item[0] for item in active)
    frame = [head, lb._all_ids_line(ids)]
    ids_message, ids_tokens = sized([*frame, *after])
    if ids_tokens > allowance:
        return lb._some_ids_v2(view, ids, at, allowance, counter)
    used = MESSAGE_OVERHEAD_TOKENS - 1
    used += sum(counter.count(line) + 1 for line in [*frame, lb._STATEMENTS, *after])
    shown = 0
    for item in active:
        used += counter.count(lb._statement_line(item)) + 1
        if used > allowance:
            break
        shown += 1
    while shown > 0:
        statements = [lb._statement_line(item) for item in active[:shown]]
        message, tokens = sized([*frame, lb._STATEMENTS, *statements, *after])
        if tokens <= allowance:
            return lb.LifecycleBlock("statements", message, tokens, shown, 2)
        shown -= 1
    return lb.LifecycleBlock("ids", ids_message, ids_tokens, 0, 2)


@settings(max_examples=150, deadline=None)
@given(
    active=st.lists(
        st.tuples(
            st.from_regex(r"ev-[0-9]{1,3}( |\n)?", fullmatch=True), _STATEMENT, st.integers(0, 3)
        ),
        max_size=45,
    ),
    stale=st.lists(st.tuples(st.sampled_from(["cc-1", "cc-2 "]), st.just("final")), max_size=2),
    questions=st.lists(st.sampled_from(["pin-1", "pin-2", "pin-3\n"]), max_size=2),
    at=st.integers(0, 10**6),
    allowance=st.integers(-5, 3000),
    which=st.sampled_from(["default", "lines", "chars"]),
    first=st.sampled_from([None, 1, 2]),
)
def test_the_version_2_block_from_kept_line_counts_is_the_block_counted_whole(
    active: list[tuple[str, str, int]],
    stale: list[tuple[str, str]],
    questions: list[str],
    at: int,
    allowance: int,
    which: str,
    first: int | None,
) -> None:
    # as for version 1: a counter that adds lines up, the same wrapped, and one that does
    # not; the counts kept with the view may come from a version 1 block or a larger one
    counters = {"default": COUNTER, "lines": line_counter(COUNTER), "chars": _CharCounter()}
    counter: TokenCounter = counters[which]
    view = LifecycleView(tuple(active), tuple(stale), tuple(questions))
    if first is not None:
        lifecycle_block(view, at, allowance * 2, counter, first)
    expected = _reference_block_v2(view, at, allowance, counter)
    assert lifecycle_block(view, at, allowance, counter, 2) == expected
    assert lifecycle_block(view, at + 1, allowance // 2, counter, 2) == _reference_block_v2(
        view, at + 1, allowance // 2, counter
    )  # the counts kept with the view serve the next call
