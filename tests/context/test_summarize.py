"""Summarizers: the extractive default and the prompt adapter for an injected model."""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import assume, given

from registre.context import (
    ContextBudgetError,
    ExtractiveSummarizer,
    InventedQuoteError,
    Policy,
    PromptSummarizer,
    Summary,
    SummaryLine,
    check_summary,
    default_counter,
    plan_compaction,
    quoted_spans,
)
from registre.context.compaction import CompactionPlan
from registre.context.summarize import build_prompt, parse_reply
from registre.lifecycle.errors import LifecycleFormatError
from tests.context.example import POLICY, before_compaction
from tests.context.strategies import policies, run_script, scripts

COUNTER = default_counter()


def example_plan() -> CompactionPlan:
    plan = plan_compaction(before_compaction().state, POLICY, COUNTER)
    assert plan is not None
    return plan


def test_extractive_summary_of_the_example() -> None:
    summary = ExtractiveSummarizer().summarize(example_plan().items, example_plan())
    assert [line.to_json() for line in summary.lines] == [
        {
            "section": "findings",
            "text": "assistant: “modutils.py resolves module paths for every import astroid makes, "
            "including namespace packages”…",
            "pointers": [[4, 4]],
        },
        {
            "section": "decisions",
            "text": "task: “Why does astroid 2.9.1 fail on packages without __init__.py?”",
            "pointers": [[0, 0]],
        },
    ]
    assert (ExtractiveSummarizer.name, ExtractiveSummarizer.version) == ("registre.extractive", "3")


def test_extractive_summary_with_room_for_every_item() -> None:
    plan = dataclasses.replace(example_plan(), max_summary_tokens=400)
    summary = ExtractiveSummarizer().summarize(plan.items, plan)
    check_summary(plan, summary, plan.entry_texts(), POLICY, COUNTER)
    assert [(line.section, line.text, line.pointers) for line in summary.lines] == [
        (
            "findings",
            "assistant: “modutils.py resolves module paths for every import astroid makes, "
            "including namespace packages; since 2.9.1 it calls importlib to find specs, so the "
            "bug is likely there.”",
            ((4, 4),),
        ),
        (
            "decisions",
            "task: “Why does astroid 2.9.1 fail on packages without __init__.py?”",
            ((0, 0),),
        ),
        (
            "tool_outputs",
            "2 entries: 1 bash call (cmd ls astroid): 1 returned output; e.g. “__init__.py”",
            ((2, 3),),
        ),
    ]


@given(script=scripts(), policy=policies())
def test_extractive_summaries_pass_the_controller(script: list, policy: Policy) -> None:
    builder = run_script(script, policy, compact=False).builder
    try:
        plan = plan_compaction(builder.state, policy, COUNTER)
    except ContextBudgetError:
        plan = None  # no plan can fit
    # no compaction due, none that fits, or one that only stubs: nothing to summarize
    assume(plan is not None and plan.folded is not None)
    assert plan is not None  # (for the type checker)
    summary = ExtractiveSummarizer().summarize(plan.items, plan)
    check_summary(plan, summary, builder.texts, policy, COUNTER)
    assert ExtractiveSummarizer().summarize(plan.items, plan) == summary  # deterministic


def test_quoted_spans() -> None:
    assert quoted_spans('a “b” c "d" e') == ["b", "d"]
    assert quoted_spans('“a "b" c”') == ['a "b" c']  # straight quotes inside curly ones
    assert quoted_spans('5" screen') == []  # an unclosed mark opens nothing
    assert quoted_spans("“”") == [""]


class FakeModel:
    """Stands in for a language model: remembers the prompt, answers with a fixed reply."""

    def __init__(self, reply: str) -> None:
        self.reply = reply
        self.prompts: list[str] = []

    def __call__(self, prompt: str) -> str:
        self.prompts.append(prompt)
        return self.reply


def test_prompt_summarizer_calls_the_injected_model_and_parses_its_reply() -> None:
    plan = example_plan()
    model = FakeModel(
        "open_threads | 0 | Why astroid “2.9.1” breaks.\n\ntool_outputs | 2-3 | Listed astroid/."
    )
    summarizer = PromptSummarizer(model, name="test.fake", version="7")
    summary = summarizer.summarize(plan.items, plan)
    assert (summarizer.name, summarizer.version) == ("test.fake", "7")
    assert summary == Summary(
        (
            SummaryLine("open_threads", "Why astroid “2.9.1” breaks.", ((0, 0),)),
            SummaryLine("tool_outputs", "Listed astroid/.", ((2, 3),)),
        )
    )
    check_summary(plan, summary, plan.entry_texts(), POLICY, COUNTER)
    assert "SECTION | SEQS | TEXT" in model.prompts[0]
    assert "[0-0 turn user] Why does astroid 2.9.1 fail" in model.prompts[0]


def test_a_model_inventing_a_quote_is_refused() -> None:
    plan = example_plan()
    summary = PromptSummarizer(FakeModel("findings | 4 | It said “the bug is in pylint”."))
    with pytest.raises(InventedQuoteError):
        check_summary(
            plan, summary.summarize(plan.items, plan), plan.entry_texts(), POLICY, COUNTER
        )


@pytest.mark.parametrize(
    ("reply", "problem"),
    [
        ("findings: no bars", "SECTION | SEQS | TEXT"),
        ("misc | 1 | x", "unknown section"),
        ("findings | one | x", "seqs like"),
        ("findings | 5-2 | x", "backwards"),
    ],
)
def test_malformed_reply_fail(reply: str, problem: str) -> None:
    with pytest.raises(LifecycleFormatError, match=problem):
        parse_reply(reply)


def test_prompt_lists_every_item() -> None:
    plan = example_plan()
    prompt = build_prompt(plan.items, plan)
    assert all(f"[{item.seq}-{item.seq} " in prompt for item in plan.items)
