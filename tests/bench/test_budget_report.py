"""report.md opens with "Which budget?": the recommendation is computed from the run, every
table names a run the same way, and the plots read as people read numbers."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from registre.bench.budget_report import (
    RECOMMEND_POINTS,
    budget_choices,
    which_budget_section,
)
from registre.bench.plots import _close_up, plain_number
from registre.bench.quality import METHODS
from registre.bench.report import render_report


def run(budget: int, recall: float | None, *, size: int = 1000, use: float = 0.8) -> dict[str, Any]:
    """A run with just what the budget section reads: registre's recall at ``recall``, the
    baselines' a third below, every method using ``use`` of the budget."""
    methods = {
        name: {
            "fact_recall": {"share": None if recall is None else recall * (1 if i == 0 else 0.6)},
            "tokens": {"mean_use": use},
        }
        for i, name in enumerate(METHODS)
    }
    return {
        "size": size,
        "budget": budget,
        "entries": size + 37,
        "working_context": {"methods": methods},
        "compaction": {"count": 12},
    }


def test_recommends_the_smallest_budget_within_the_points_of_the_best() -> None:
    results = {"runs": [run(8000, 0.90), run(32000, 0.985), run(128000, 1.0)]}
    (choice,) = budget_choices(results)
    assert RECOMMEND_POINTS == 2.0
    assert choice.best == 1.0 and choice.chosen is results["runs"][1]
    text = "\n".join(which_budget_section(results, "budget.png"))
    assert (
        "registre recalled the facts its model calls needed: 90.0% at 8k, 98.5% at 32k and "
        "100.0% at 128k." in text
    )
    assert (
        "**Recommended: 32k**, the smallest budget within 2 points of the best (100.0%; 1.5 "
        "points below it): its model calls sent 25,600 tokens on average, 25% of the 102,400 "
        "that 128k sent, with 12 compactions." in text
    )
    assert "At 32k the best baseline, truncation, recalled 59.1%." in text
    assert "![Fact recall and context tokens against the budget, per method](budget.png)" in text
    assert "| registre | 90.0% / 6,400 | 98.5% / 25,600 | 100.0% / 102,400 |" in text


def test_the_largest_budget_when_smaller_ones_lose_recall() -> None:
    results = {"runs": [run(8000, 0.70), run(32000, 0.95)]}
    text = "\n".join(which_budget_section(results, None))
    assert "**Recommended: 32k**, the largest budget run and the only one within 2 points" in text
    assert "the smaller ones lose recall here (8k 70.0%)" in text and "![" not in text


def test_one_budget_or_none_recommends_nothing_it_cannot() -> None:
    text = "\n".join(which_budget_section({"runs": [run(8000, 0.99, size=200)]}, None))
    assert "Only 8k was run, so there is no budget to choose between" in text
    text = "\n".join(which_budget_section({"runs": [run(8000, None), run(32000, None)]}, None))
    assert "no model call needed a planted fact" in text
    lean = {"size": 10**6, "budget": 8000, "lean": True}
    text = "\n".join(which_budget_section({"runs": [lean]}, None))
    assert "Every run was lean: fact recall was not measured" in text


def test_the_report_opens_with_which_budget_and_labels_runs_one_way(
    smoke: tuple[Path, dict[str, Any]],
) -> None:
    out, results = smoke
    report = (out / "report.md").read_text(encoding="utf-8")
    sections = re.findall(r"^## (.+)$", report, re.M)
    assert sections[:2] == ["Which budget?", "Summary"]
    assert "![Fact recall and context tokens against the budget, per method](budget.png)" in report
    labels = set(re.findall(r"\b[\d,]+ @ \d+k\b", report))
    assert labels == {"200 @ 8k"}, labels  # never the entries written (200 and a few more)
    assert "issue" not in report.lower()
    assert render_report(results, {}).startswith("# registre bench\n")


@pytest.mark.parametrize(
    ("value", "label"),
    [(0.4, "0.4"), (2.0, "2"), (50.0, "50"), (1000.0, "1,000"), (2e5, "200,000")],
)
def test_plot_ticks_are_plain_numbers(value: float, label: str) -> None:
    assert plain_number(value) == label


def test_the_close_up_is_the_last_fifth_of_the_calls() -> None:
    assert _close_up(353, 300) == 70  # not 300 of 353: that is nearly the whole run
    assert _close_up(50, 50) == 20
    assert _close_up(10_000, 300) == 300
