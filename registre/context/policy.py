"""The compaction policy: the budget, its marks and the rules a compaction follows.

Ratios are integers per mille, because entry bodies hold no floats (``specs/entries.md``
rule 2). Token thresholds are floored: ``high_water_tokens = budget * high / 1000`` rounded
down, and likewise for the low-water mark and the summary share.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from registre.lifecycle.errors import LifecycleFormatError
from registre.lifecycle.jsonshape import read_object, read_uint

__all__ = ["POLICY_FIELDS", "Policy", "parse_policy"]

POLICY_FIELDS: Final = (
    "budget_tokens",
    "high_water_permille",
    "low_water_permille",
    "keep_recent_turns",
    "bulky_tool_output_tokens",
    "summary_share_permille",
)


@dataclass(frozen=True, slots=True)
class Policy:
    """When and how to compact.

    * ``budget_tokens``: the context budget compaction plans for (>= 1);
    * ``high_water_permille``: compact once the context passes this share of the budget;
    * ``low_water_permille``: a compaction aims to bring the context down to this share
      (1 <= low <= high <= 1000);
    * ``keep_recent_turns``: the most recent turns (``specs/context.md`` section 5) that are
      never folded or stubbed;
    * ``bulky_tool_output_tokens``: a tool result above this many tokens may become a stub;
    * ``summary_share_permille``: the share of the budget all live summaries may take
      together (1..1000).

    Construction raises :class:`~registre.lifecycle.errors.LifecycleFormatError` for values out of
    range.
    """

    budget_tokens: int = 32000
    high_water_permille: int = 800
    low_water_permille: int = 500
    keep_recent_turns: int = 6
    bulky_tool_output_tokens: int = 2000
    summary_share_permille: int = 250

    def __post_init__(self) -> None:
        for name in POLICY_FIELDS:
            read_uint(getattr(self, name), f"policy.{name}")
        if self.budget_tokens < 1:
            raise LifecycleFormatError("policy.budget_tokens", "expected at least 1 token")
        if not 1 <= self.high_water_permille <= 1000:
            raise LifecycleFormatError("policy.high_water_permille", "expected 1..1000")
        if not 1 <= self.low_water_permille <= self.high_water_permille:
            raise LifecycleFormatError(
                "policy.low_water_permille",
                f"expected 1..high_water_permille ({self.high_water_permille})",
            )
        if not 1 <= self.summary_share_permille <= 1000:
            raise LifecycleFormatError("policy.summary_share_permille", "expected 1..1000")
        if self.bulky_tool_output_tokens < 1:
            raise LifecycleFormatError("policy.bulky_tool_output_tokens", "expected at least 1")

    @property
    def high_water_tokens(self) -> int:
        """``floor(budget * high_water_permille / 1000)``."""
        return self.budget_tokens * self.high_water_permille // 1000

    @property
    def low_water_tokens(self) -> int:
        """``floor(budget * low_water_permille / 1000)``."""
        return self.budget_tokens * self.low_water_permille // 1000

    @property
    def summary_share_tokens(self) -> int:
        """``floor(budget * summary_share_permille / 1000)``: all live summaries together."""
        return self.budget_tokens * self.summary_share_permille // 1000

    def to_json(self) -> dict[str, object]:
        """The six fields as a JSON object of integers (the ``policy`` of an event body)."""
        return {name: getattr(self, name) for name in POLICY_FIELDS}


def parse_policy(value: object, path: str = "policy") -> Policy:
    """The policy JSON ``value`` encodes: exactly the six integer fields. Raises
    :class:`~registre.lifecycle.errors.LifecycleFormatError` naming the field otherwise."""
    fields = read_object(value, path, POLICY_FIELDS)
    numbers = {name: read_uint(fields[name], f"{path}.{name}") for name in POLICY_FIELDS}
    try:
        return Policy(**numbers)
    except LifecycleFormatError as error:
        raise LifecycleFormatError(error.path.replace("policy", path, 1), error.problem) from None
