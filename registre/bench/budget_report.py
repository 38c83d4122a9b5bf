"""``report.md``'s opening section, "Which budget?": fact recall and context tokens against
the budget for every method, and a recommendation computed from the run.

For each size whose runs measured quality (not lean), the recommendation is the smallest
budget at which registre's fact recall is within :data:`RECOMMEND_POINTS` percentage points
of its best recall over the budgets run, with what that budget's model calls sent on average
beside what the largest budget's sent, and the best baseline's recall at that budget. The
figures are the run's own (``specs/bench.md`` section 4); nothing is asserted.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final

from registre.bench.quality import METHODS
from registre.bench.report_cells import cell_budget, cell_share, table

__all__ = [
    "METHOD_NAMES",
    "RECOMMEND_POINTS",
    "BudgetChoice",
    "budget_choices",
    "mean_tokens",
    "which_budget_section",
]

RECOMMEND_POINTS: Final = 2.0
"""How far (percentage points of fact recall) below the best a recommended budget may be."""

METHOD_NAMES: Final = {
    "registre": "registre",
    "truncation": "truncation",
    "observation_masking": "observation masking",
    "rolling_summary": "rolling summary",
}

Run = Mapping[str, Any]


def mean_tokens(run: Run, method: str) -> float:
    """Tokens the ``method``'s context held at a model call, on average, in ``run``."""
    share = run["working_context"]["methods"][method]["tokens"]["mean_use"] or 0.0
    return float(share) * int(run["budget"])


def _recall(run: Run, method: str = "registre") -> float | None:
    share = run["working_context"]["methods"][method]["fact_recall"]["share"]
    return None if share is None else float(share)


@dataclass(frozen=True)
class BudgetChoice:
    """The recommendation for the runs of one ``size`` (their budgets ascending):
    ``chosen`` is None when no run had fact needs to recall."""

    size: int
    runs: tuple[Run, ...]
    best: float | None
    chosen: Run | None


def budget_choices(results: Mapping[str, Any]) -> list[BudgetChoice]:
    """One :class:`BudgetChoice` per size that measured quality, smallest size first."""
    sizes: dict[int, list[Run]] = {}
    for run in results["runs"]:
        if "working_context" in run:
            sizes.setdefault(int(run["size"]), []).append(run)
    choices = []
    for size in sorted(sizes):
        runs = tuple(sorted(sizes[size], key=lambda run: int(run["budget"])))
        recalls = [r for r in (_recall(run) for run in runs) if r is not None]
        best = max(recalls) if recalls else None
        chosen = None
        if best is not None:
            floor = best - RECOMMEND_POINTS / 100 - 1e-9
            chosen = next(run for run in runs if (_recall(run) or 0.0) >= floor)
        choices.append(BudgetChoice(size, runs, best, chosen))
    return choices


def _tokens(value: float) -> str:
    return f"{value:,.0f}"


def _best_baseline(run: Run) -> tuple[str, float | None]:
    baselines = [(_recall(run, name), name) for name in METHODS[1:]]
    known = [(share, name) for share, name in baselines if share is not None]
    if not known:
        return "-", None
    share, name = max(known)
    return METHOD_NAMES[name], share


def _paragraph(choice: BudgetChoice) -> str:
    runs = choice.runs
    parts = [f"{cell_share(_recall(run))} at {cell_budget(run['budget'])}" for run in runs]
    recalls = parts[0] if len(parts) == 1 else ", ".join(parts[:-1]) + f" and {parts[-1]}"
    start = (
        f"At {choice.size:,} entries registre recalled the facts its model calls needed: {recalls}."
    )
    chosen = choice.chosen
    if chosen is None or choice.best is None:
        return (
            f"At {choice.size:,} entries no model call needed a planted fact: fact recall, and "
            "so a recommendation, has nothing to go on."
        )
    budget = cell_budget(chosen["budget"])
    baseline, baseline_share = _best_baseline(chosen)
    against = (
        ""
        if baseline_share is None
        else f" At {budget} the best baseline, {baseline}, recalled {cell_share(baseline_share)}."
    )
    if len(runs) == 1:
        return (
            f"{start} Only {budget} was run, so there is no budget to choose between: run "
            f"several (`--budgets 8k,32k,128k`).{against}"
        )
    largest = runs[-1]
    sent, most = mean_tokens(chosen, "registre"), mean_tokens(largest, "registre")
    if chosen is largest:
        smaller = ", ".join(
            f"{cell_budget(run['budget'])} {cell_share(_recall(run))}" for run in runs[:-1]
        )
        return (
            f"{start} **Recommended: {budget}**, the largest budget run and the only one "
            f"within {RECOMMEND_POINTS:g} points of the best ({cell_share(choice.best)}): the "
            f"smaller ones lose recall here ({smaller}). Its model calls sent {_tokens(sent)} "
            f"tokens on average.{against}"
        )
    lost = (choice.best - (_recall(chosen) or 0.0)) * 100
    cost = f"{sent / most:.0%} of the {_tokens(most)} that {cell_budget(largest['budget'])} sent"
    below = "the best itself" if lost < 0.05 else f"{lost:.1f} points below it"
    count = int(chosen["compaction"]["count"])
    return (
        f"{start} **Recommended: {budget}**, the smallest budget within "
        f"{RECOMMEND_POINTS:g} points of the best ({cell_share(choice.best)}; {below}): its "
        f"model calls sent {_tokens(sent)} tokens on average, {cost}, with {count:,} "
        f"compaction{'' if count == 1 else 's'}.{against}"
    )


def _table(choice: BudgetChoice) -> list[str]:
    """Per method, each budget's fact recall and mean tokens per model call."""
    header = [
        f"method ({choice.size:,} entries)",
        *(f"{cell_budget(run['budget'])}: fact recall / tokens per call" for run in choice.runs),
    ]
    rows = [
        [
            METHOD_NAMES[name],
            *(
                f"{cell_share(_recall(run, name))} / {_tokens(mean_tokens(run, name))}"
                for run in choice.runs
            ),
        ]
        for name in METHODS
    ]
    return table(header, rows)


def which_budget_section(results: Mapping[str, Any], plot: str | None) -> list[str]:
    """The section's Markdown lines, heading included; ``plot``: the file name of the
    recall and tokens chart, when it was drawn."""
    lines = ["## Which budget?", ""]
    choices = budget_choices(results)
    if not choices:
        lines += [
            "Every run was lean: fact recall was not measured, so no budget is recommended. "
            "Run a size at or below `--lean-above` to compare budgets.",
            "",
        ]
        return lines
    for choice in choices:
        lines += [_paragraph(choice), ""]
    lines += [
        f"*Recommended*: the smallest budget whose fact recall is within {RECOMMEND_POINTS:g} "
        "percentage points of the best any budget reached for registre at that size (fact "
        "recall and tokens as in the method; the baselines at the same budgets for "
        "comparison).",
        "",
    ]
    if plot is not None:
        lines += [f"![Fact recall and context tokens against the budget, per method]({plot})", ""]
    for choice in choices:
        lines += [*_table(choice), ""]
    return lines
