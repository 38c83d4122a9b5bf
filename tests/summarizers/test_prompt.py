"""The summarizers' prompt and reply reading, without a network: what the system prompt asks
for, how items are shown, and which replies are read."""

from __future__ import annotations

import pytest

from registre.context import (
    SECTIONS,
    SUMMARY_LINE_KIND,
    FoldItem,
    Policy,
    Summary,
    SummaryLine,
    plan_compaction,
)
from registre.lifecycle.errors import LifecycleFormatError
from registre.summarizers import (
    SYSTEM_PROMPT,
    UnusableReplyError,
    read_reply,
    render_item,
    user_prompt,
)
from tests.context.threads import ThreadBuilder


def test_the_system_prompt_asks_for_the_format() -> None:
    assert "SECTION | SEQS | TEXT" in SYSTEM_PROMPT
    for section in SECTIONS:
        assert f"- {section}: " in SYSTEM_PROMPT
    for asked in (
        "must lie within the folded range",
        "“curly quotes”",
        "verbatim",
        "token allowance",
        "figures with their units",
        "exceptions",
        "decisions with their reasons",
        "the user's instructions",
    ):
        assert asked in SYSTEM_PROMPT


def test_the_user_prompt_gives_the_range_the_allowance_and_every_item() -> None:
    policy = Policy(budget_tokens=400, keep_recent_turns=2, bulky_tool_output_tokens=60)
    builder = ThreadBuilder(policy=policy, compact=False)
    builder.turn("user", "Reconcile the segments; report any over EUR 1m.")
    for number in range(8):
        builder.tool("sql", f"select * from risk_mart where segment = {number}", "ok\n" * 12)
        builder.turn("assistant", f"Segment {number} reconciled within tolerance.")
    plan = plan_compaction(builder.state, policy, builder.counter)
    assert plan is not None and plan.folded is not None
    first, last = plan.folded
    prompt = user_prompt(plan.items, plan)
    assert f"Folded range: entries {first}-{last}." in prompt
    assert f"must fit in {plan.max_summary_tokens} tokens" in prompt
    assert "[seq 0 | turn | user | role user]\nReconcile the segments" in prompt
    assert "[seq 1 | tool.call | assistant | tool sql, result at 2]" in prompt
    assert "[seq 2 | tool.result | tool:sql | call at 1]\nok\nok" in prompt
    assert prompt.count("[seq ") == len(plan.items)


def test_an_item_is_cut_saying_how_much() -> None:
    item = FoldItem(7, "tool.result", "tool:bash", "x" * 2500, ((7, 7),), partner=6)
    shown = render_item(item, 2000)
    assert shown == "[seq 7 | tool.result | tool:bash | call at 6]\n" + "x" * 2000 + (
        "\n[... 500 more characters]"
    )


def test_a_summary_line_folded_again_shows_its_pointers() -> None:
    item = FoldItem(
        30, SUMMARY_LINE_KIND, "registre", "Offices over tolerance", ((3, 4), (9, 9)), "findings"
    )
    shown = render_item(item)
    assert shown == "[summary line | findings | points at 3-4, 9]\nOffices over tolerance"


def test_replies_are_read_with_or_without_a_code_fence() -> None:
    lines = "findings | 3-4, 9 | Offices “over tolerance”\ndecisions | 0 | report above EUR 1m"
    expected = Summary(
        (
            SummaryLine("findings", "Offices “over tolerance”", ((3, 4), (9, 9))),
            SummaryLine("decisions", "report above EUR 1m", ((0, 0),)),
        )
    )
    assert read_reply(lines) == expected
    assert read_reply(f"```\n{lines}\n```\n") == expected
    assert read_reply(f"```text\n{lines}\n```") == expected


@pytest.mark.parametrize("reply", [None, "", " \n\n"])
def test_an_empty_reply_is_unusable(reply: str | None) -> None:
    with pytest.raises(UnusableReplyError):
        read_reply(reply)


def test_a_reply_out_of_format_names_its_line() -> None:
    with pytest.raises(LifecycleFormatError, match="reply line 2"):
        read_reply("findings | 3 | fine\nHere is your summary:")
