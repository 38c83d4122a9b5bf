"""A system prompt or policy stays verbatim while it fits its share (issue 28, item 3):
the automatic task pin takes a system turn whole up to ``system_share_permille`` of the
budget (default half) under a version 2 policy, an eighth under version 1
(``specs/context.md`` section 5.1)."""

from __future__ import annotations

import pytest

from registre.context import Policy, plan_compaction, task_pins_due
from tests.context.threads import ThreadBuilder

RULES = " ".join(
    f"Rule {n}: agents must verify the booking id and the payment method before change {n}."
    for n in range(90)
)


@pytest.mark.parametrize(("version", "pinned"), [(2, True), (1, False)])
def test_a_long_policy_prompt_is_pinned_whole_while_it_fits_half_the_budget(
    version: int, pinned: bool
) -> None:
    policy = Policy(budget_tokens=8000, version=version)
    builder = ThreadBuilder(policy=policy, compact=False)
    builder.turn("system", RULES)
    builder.turn("user", "Please move my flight to Friday.")
    for number in range(300):
        builder.turn("assistant", f"Checking option {number} for reservation QX{number:04d}.")
        builder.turn("user", f"And option {number + 1}, is it cheaper than {100 + number} EUR?")
    plan = plan_compaction(builder.state, policy, builder.counter)
    assert plan is not None and plan.folded is not None
    due = task_pins_due(builder.entries, builder.state, plan, builder.counter)
    assert ((0, RULES) in due) is pinned
    assert (1, "Please move my flight to Friday.") in due


def test_a_policy_over_its_share_is_not_pinned() -> None:
    policy = Policy(budget_tokens=8000, system_share_permille=100)
    builder = ThreadBuilder(policy=policy, compact=False)
    builder.turn("system", RULES)
    for number in range(600):
        builder.turn("user", f"Question {number} about fare class Y{number}?")
    plan = plan_compaction(builder.state, policy, builder.counter)
    assert plan is not None
    due = task_pins_due(builder.entries, builder.state, plan, builder.counter)
    assert all(seq != 0 for seq, _text in due)
