"""The extractive summarizer's remembered per-line readings give what reading afresh gives.

``line_rank``, ``demote``, the compact option and the older-line texts are pure functions of
line texts, remembered (``functools.lru_cache``) because a refold reads the live summaries'
lines again at every compaction. Each is checked here against the code it replaced, kept
verbatim below, on arbitrary texts, and the whole summarizer against itself with its memos
cleared and warm.
"""

from __future__ import annotations

import copy

from hypothesis import given
from hypothesis import strategies as st

from registre.context import (
    ContextBudgetError,
    ExtractiveSummarizer,
    Policy,
    default_counter,
    plan_compaction,
)
from registre.context.excerpt import (
    distinct,
    has_exception,
    has_strong_figure,
    older_line_variants,
    plain_part,
    render,
    sentences,
    split_segments,
)
from registre.context.extractive import budget, lines, reader
from registre.context.extractive.lines import OTHER, Candidate, Option
from tests.context.strategies import policies, run_script, scripts
from tests.context.threads import ThreadBuilder

COUNTER = default_counter()

# --- the code the memos replaced, verbatim --------------------------------------------------


def _old_demote(candidates: list[Candidate]) -> None:
    retired = {
        match[1]
        for candidate in candidates
        for match in lines._RETIRED.finditer(plain_part(candidate.options[0].text))
    }
    newest: dict[tuple[str, str], Candidate] = {}
    for candidate in candidates:
        named = lines._NAMED.match(plain_part(candidate.options[0].text))
        if named is not None and named[1] in retired:
            candidate.rank = max(candidate.rank, OTHER)
        template = lines._statement(candidate.options[0].text)
        if template:
            key = (candidate.section, template)
            other = newest.get(key)
            if other is None or other.newest < candidate.newest:
                newest[key] = candidate
    for candidate in candidates:
        template = lines._statement(candidate.options[0].text)
        if template and newest[(candidate.section, template)] is not candidate:
            candidate.rank = max(candidate.rank, OTHER)


def _old_compact_option(candidate: Candidate) -> int:
    options = candidate.options
    first = next((piece for mark, piece in split_segments(options[0].text) if mark), "")
    spans = sentences(first)
    if not spans:
        return 0
    texts = [first[start:end] for start, end in spans]
    key = next(
        (text for text in texts if has_strong_figure(text)),
        next((text for text in texts if has_exception(text)), texts[0]),
    )
    best = 0
    for number, option in enumerate(options):
        if any(key in piece for mark, piece in split_segments(option.text) if mark):
            best = number
    return best


def _old_older_texts(text: str) -> list[str]:
    texts = distinct(render(segments) for segments in older_line_variants(text))
    return [text for text in texts if text.strip()]


# --- texts that look like summary lines -----------------------------------------------------

_WORDS = st.sampled_from(
    [
        "ev-1",
        "ev-2",
        "superseded by",
        "retracted",
        "evidence ev-1:",
        "conclusion cn-3:",
        "Stage 2",
        "12.5%",
        "$3.2bn",
        "failed",
        "error",
        "exception",
        "not reconciled",
        "the",
        "segment",
        "CRE",
        "42",
        ".",
        "\n",
        "…",
        "task:",
    ]
)
_PLAIN = st.lists(_WORDS, max_size=8).map(" ".join)
_QUOTED = st.tuples(st.sampled_from(["“", '"']), _PLAIN).map(
    lambda pair: f"{pair[0]}{pair[1]}{'”' if pair[0] == '“' else pair[0]}"
)
TEXTS = st.lists(st.one_of(_PLAIN, _QUOTED, st.text(max_size=12)), max_size=5).map(" ".join)
SECTIONS = st.sampled_from(["findings", "decisions", "dead_ends", "tool_outputs", "open_threads"])


@st.composite
def candidates(draw: st.DrawFn) -> Candidate:
    texts = draw(st.lists(TEXTS, min_size=1, max_size=4))
    seq = draw(st.integers(0, 30))
    options = tuple(Option(text, ((seq, seq + draw(st.integers(0, 3))),)) for text in texts)
    return Candidate(draw(SECTIONS), options, draw(st.integers(0, 6)))


@given(st.lists(candidates(), max_size=12))
def test_demote_is_the_old_demote(found: list[Candidate]) -> None:
    old = copy.deepcopy(found)
    _old_demote(old)
    lines.demote(found)
    assert [c.rank for c in found] == [c.rank for c in old]


@given(candidates())
def test_compact_option_is_the_old_one(candidate: Candidate) -> None:
    assert budget._compact_option(candidate) == _old_compact_option(candidate)


@given(TEXTS)
def test_older_texts_are_the_old_ones(text: str) -> None:
    assert list(reader._older_texts(text)) == _old_older_texts(text)


@given(SECTIONS, TEXTS)
def test_line_rank_is_remembered_unchanged(section: str, text: str) -> None:
    assert lines.line_rank(section, text) == lines._line_rank.__wrapped__(section, text)


def _clear() -> None:
    for memo in (lines._line_rank, lines._words, reader._older_texts, budget._compact_index):
        memo.cache_clear()


@given(scripts(), policies())
def test_summaries_do_not_depend_on_what_was_remembered(
    script: list[tuple[str, int, int, bool]], policy: Policy
) -> None:
    """At every step of a thread that compacts as it goes (refolds reading old lines again),
    the summary of the plan due is the same with the memos warm and cleared."""
    summarizer = ExtractiveSummarizer()

    def check(builder: ThreadBuilder) -> None:
        try:
            plan = plan_compaction(builder.state, policy, COUNTER)
        except ContextBudgetError:
            return
        if plan is None or plan.folded is None:
            return
        warm = summarizer.summarize(plan.items, plan)
        _clear()
        assert summarizer.summarize(plan.items, plan) == warm

    run_script(script, policy, on_step=check)
