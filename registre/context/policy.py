"""The compaction policy: the budget, its marks and the rules a compaction follows.

Ratios are integers per mille, because entry bodies hold no floats (``specs/entries.md``
rule 2). Token thresholds are floored: ``high_water_tokens = budget * high / 1000`` rounded
down, and likewise for the low-water mark and the summary share.

Two versions (``specs/context.md`` section 5). A **version 1** policy is the six fields
every ledger recorded before version 2 existed; it is read from a six-field object and
projects exactly as it did. A **version 2** policy (the default) adds
``output_reserve_tokens``, ``system_share_permille`` and ``recall_share_permille``, and
turns on the refill (``specs/context.md`` section 4.2): the projection uses the budget up to
the output reserve. Its JSON has the nine fields; the version is implied by the field set.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Final

from registre.lifecycle.errors import LifecycleFormatError
from registre.lifecycle.jsonshape import read_object, read_uint

__all__ = [
    "DEFAULT_RECALL_SHARE_PERMILLE",
    "DEFAULT_SYSTEM_SHARE_PERMILLE",
    "OUTPUT_RESERVE_CAP",
    "OUTPUT_RESERVE_PERMILLE",
    "POLICY_FIELDS",
    "POLICY_FIELDS_V2",
    "Policy",
    "default_reserve",
    "parse_policy",
]

POLICY_FIELDS: Final = (
    "budget_tokens",
    "high_water_permille",
    "low_water_permille",
    "keep_recent_turns",
    "bulky_tool_output_tokens",
    "summary_share_permille",
)
"""The fields of a version 1 policy, in order."""

POLICY_FIELDS_V2: Final = (
    *POLICY_FIELDS,
    "output_reserve_tokens",
    "system_share_permille",
    "recall_share_permille",
)
"""The fields of a version 2 policy, in order."""

OUTPUT_RESERVE_CAP: Final = 4096
"""The default output reserve: what providers commonly reserve for a reply (Anthropic's
examples and most SDK defaults use ``max_tokens`` 4096) ..."""
OUTPUT_RESERVE_PERMILLE: Final = 125
"""... capped at an eighth of the budget, so a small budget keeps most of itself for the
context (``docs/design/2026-12-06-context-budget.md``)."""
DEFAULT_SYSTEM_SHARE_PERMILLE: Final = 500
"""A system prompt or policy stays verbatim while it fits half the budget."""
DEFAULT_RECALL_SHARE_PERMILLE: Final = 125
"""The share of the window (``budget - output reserve``) a version 2 policy keeps for the
recalled section by default (a version 1 policy: 0)."""


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
      together (1..1000);
    * ``version``: 2 (the default) with the three fields below, 1 without them (a policy
      recorded before they existed; no refill, the task pin's share fixed at an eighth);
    * ``output_reserve_tokens``: room left for the model's reply; the refill stops there
      and a compaction falls due above it (default ``min(4096, budget // 8)``; less than
      the budget);
    * ``system_share_permille``: a system prompt or policy is pinned whole while its pin
      takes at most this share of the budget (0..1000, default 500);
    * ``recall_share_permille``: the share of ``budget - output_reserve_tokens`` kept for
      recalled entries (0..1000, 0 when there is no recall section).

    Construction raises :class:`~registre.lifecycle.errors.LifecycleFormatError` for values out of
    range.
    """

    budget_tokens: int = 32000
    high_water_permille: int = 800
    low_water_permille: int = 500
    keep_recent_turns: int = 6
    bulky_tool_output_tokens: int = 2000
    summary_share_permille: int = 250
    output_reserve_tokens: int = -1
    system_share_permille: int = DEFAULT_SYSTEM_SHARE_PERMILLE
    recall_share_permille: int = -1
    version: int = 2

    def __post_init__(self) -> None:
        if self.version not in (1, 2):
            raise LifecycleFormatError("policy.version", "expected 1 or 2")
        if self.output_reserve_tokens == -1:
            reserve = 0
            if self.version == 2 and type(self.budget_tokens) is int:
                reserve = default_reserve(self.budget_tokens)
            object.__setattr__(self, "output_reserve_tokens", reserve)
        if self.recall_share_permille == -1:
            share = DEFAULT_RECALL_SHARE_PERMILLE if self.version == 2 else 0
            object.__setattr__(self, "recall_share_permille", share)
        for name in POLICY_FIELDS_V2:
            read_uint(getattr(self, name), f"policy.{name}")
        if self.version == 1 and (
            self.output_reserve_tokens,
            self.system_share_permille,
            self.recall_share_permille,
        ) != (0, DEFAULT_SYSTEM_SHARE_PERMILLE, 0):
            raise LifecycleFormatError("policy.version", "a version 1 policy has six fields")
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
        if self.output_reserve_tokens >= self.budget_tokens:
            raise LifecycleFormatError(
                "policy.output_reserve_tokens",
                f"expected less than the budget ({self.budget_tokens})",
            )
        if self.system_share_permille > 1000:
            raise LifecycleFormatError("policy.system_share_permille", "expected 0..1000")
        if self.recall_share_permille > 1000:
            raise LifecycleFormatError("policy.recall_share_permille", "expected 0..1000")

    def with_budget(self, budget: int) -> Policy:
        """This policy for ``budget`` tokens: an output reserve at its default for the old
        budget is the default for the new one (any other reserve is kept)."""
        reserve = self.output_reserve_tokens
        if self.version == 2 and reserve == default_reserve(self.budget_tokens):
            reserve = default_reserve(budget)
        return replace(self, budget_tokens=budget, output_reserve_tokens=reserve)

    @property
    def refills(self) -> bool:
        """Whether projections refill the context up to the output reserve (version 2)."""
        return self.version == 2

    def window_tokens(self, budget: int | None = None) -> int:
        """``budget`` (default ``budget_tokens``) minus the output reserve, at least 1: what
        the context may fill."""
        budget = self.budget_tokens if budget is None else budget
        return max(1, budget - self.output_reserve_tokens)

    def recall_tokens(self, budget: int | None = None) -> int:
        """``floor(window * recall_share_permille / 1000)``: the recalled section's share."""
        return self.window_tokens(budget) * self.recall_share_permille // 1000

    @property
    def compact_above_tokens(self) -> int:
        """A compaction falls due once the context (pins, summaries, tail: no refill) takes
        more than this: the high-water mark, and for version 2 at most the window less the
        recall share."""
        if self.version == 1:
            return self.high_water_tokens
        return min(self.high_water_tokens, self.window_tokens() - self.recall_tokens())

    @property
    def compact_to_tokens(self) -> int:
        """What a compaction aims for first: the low-water mark, scaled for version 2 by
        ``compact_above_tokens / high_water_tokens`` (so a recall share that lowers the
        compaction mark keeps the ratio between the two marks, and compactions stay as far
        apart as the policy says); at most the compaction mark."""
        mark = self.compact_above_tokens
        if self.version == 1 or mark >= self.high_water_tokens:
            return min(self.low_water_tokens, mark)
        return self.low_water_tokens * mark // max(1, self.high_water_tokens)

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
        """The fields of its version as a JSON object of integers (the ``policy`` of an
        event body): six for version 1, nine for version 2."""
        names = POLICY_FIELDS if self.version == 1 else POLICY_FIELDS_V2
        return {name: getattr(self, name) for name in names}


def default_reserve(budget: int) -> int:
    """The default output reserve for ``budget``: ``min(4096, budget * 125 // 1000)``."""
    return min(OUTPUT_RESERVE_CAP, budget * OUTPUT_RESERVE_PERMILLE // 1000)


def parse_policy(value: object, path: str = "policy") -> Policy:
    """The policy JSON ``value`` encodes: exactly the six integer fields (version 1) or the
    nine (version 2). Raises :class:`~registre.lifecycle.errors.LifecycleFormatError` naming
    the field otherwise."""
    version = 2
    names: tuple[str, ...] = POLICY_FIELDS_V2
    if isinstance(value, dict) and not any(name in value for name in POLICY_FIELDS_V2[6:]):
        version, names = 1, POLICY_FIELDS
    fields = read_object(value, path, names)
    numbers: dict[str, int] = {name: read_uint(fields[name], f"{path}.{name}") for name in names}
    try:
        return Policy(**numbers, version=version)
    except LifecycleFormatError as error:
        raise LifecycleFormatError(error.path.replace("policy", path, 1), error.problem) from None
