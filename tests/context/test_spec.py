"""specs/context.md: the worked example's numbers and JSON, and the counter examples."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from registre.attest.projection_digest import projection_digest
from registre.context import ContextState, context_tokens, default_counter, project
from registre.context.compaction import plan_compaction
from tests.context.example import POLICY, before_compaction, worked_example

PAGE = (Path(__file__).resolve().parents[2] / "specs" / "context.md").read_text(encoding="utf-8")
EXAMPLE = PAGE[PAGE.index("## 10. Worked example") :]
BLOCKS = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", EXAMPLE, re.S)]
COUNTER = default_counter()


def test_policy_and_thresholds() -> None:
    policy = json.loads(re.search(r"Policy `(\{.*?\})`", EXAMPLE, re.S).group(1))  # type: ignore[union-attr]
    assert policy == POLICY.to_json()
    assert (POLICY.high_water_tokens, POLICY.low_water_tokens) == (224, 192)
    assert POLICY.summary_share_tokens == 128


def test_entry_table_tokens() -> None:
    state = before_compaction().state
    rows = re.findall(r"^\| (\d+)(?:–(\d+))? \| .*? \| ([\d, ]+) \|$", EXAMPLE, re.M)
    table = {}
    for first, last, tokens in rows:
        seqs = range(int(first), int(last or first) + 1)
        table.update(zip(seqs, map(int, tokens.split(", ")), strict=True))
    assert table == {item.seq: item.tokens(COUNTER, -1) for item in state.tail}
    assert context_tokens(state, COUNTER) == 253


def test_plan_of_the_example() -> None:
    plan = plan_compaction(before_compaction().state, POLICY, COUNTER)
    assert plan is not None
    assert (plan.folded, plan.stubbed, plan.max_summary_tokens) == ((0, 4), (6,), 104)


def test_compaction_body_is_the_one_recorded() -> None:
    assert worked_example().entries[9].body == BLOCKS[0]


def test_projection_and_digest() -> None:
    state = worked_example().state
    projection = project(state, 320, POLICY, COUNTER)
    assert projection.to_json() == BLOCKS[1]
    assert projection.message_tokens == (19, 89, 25, 19, 14, 11)
    digest = re.search(r"whose digest is\n`([0-9a-f]{64})`", EXAMPLE).group(1)  # type: ignore[union-attr]
    assert projection_digest(projection) == digest
    assert project(ContextState.replay(worked_example().entries), 320, POLICY, COUNTER) == (
        projection
    )


@pytest.mark.parametrize(
    ("text", "tokens"),
    re.findall(r"^\| `(.+?)` \| (\d+) \|$", PAGE[PAGE.index("## 9.") :], re.M),
)
def test_counter_table(text: str, tokens: str) -> None:
    assert COUNTER.count(text) == int(tokens)
