"""results.json follows registre-bench/5, and the checker refuses documents that do not."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from registre.bench.quality import METHODS
from registre.bench.schema import RESULTS, ResultsSchemaError, check_results


def _broken(results: dict[str, Any], change: Any) -> dict[str, Any]:
    document = copy.deepcopy(results)
    change(document)
    return document


def test_a_real_run_follows_the_schema(smoke: tuple[Path, dict[str, Any]]) -> None:
    results = smoke[1]
    check_results(results)
    # every field the schema names, no other; one run for one size and one budget
    assert sorted(results) == sorted(RESULTS)
    (run_fields,) = RESULTS["runs"]
    assert [sorted(run) for run in results["runs"]] == [sorted(k.rstrip("?") for k in run_fields)]


@pytest.mark.parametrize(
    ("change", "path"),
    [
        (lambda d: d.update(schema="registre-bench/2"), "results"),
        (lambda d: d["runs"][0].pop("working_context"), "working_context: missing"),
        (
            lambda d: d["runs"][0]["working_context"]["methods"].pop("rolling_summary"),
            "methods.rolling_summary: missing",
        ),
        (
            lambda d: d["runs"][0]["working_context"]["methods"]["registre"]["fact_recall"].update(
                share="90%"
            ),
            "registre.fact_recall.share: expected",
        ),
        (lambda d: d["runs"][0].pop("pins"), "results.runs[0].pins: missing"),
        (lambda d: d["runs"][0]["bundle"].update(verified="yes"), "bundle.verified: expected bool"),
        (lambda d: d["runs"][0]["context"].update(extra=1), "context.extra: not a field"),
        (lambda d: d["runs"][0]["kinds"].update(turn=1.5), "kinds.turn: expected int"),
        (lambda d: d["config"].update(sizes="200"), "config.sizes: expected a list"),
        (lambda d: d["runs"][0]["merkle"]["ours"].pop("build_s"), "ours.build_s: missing"),
        (lambda d: d["runs"][0].pop("merkle"), r"runs[0].merkle: missing"),
        (lambda d: d["runs"][0].update(lean=True), "pins: present in a lean run"),
        (lambda d: d["runs"][0]["steps"].pop("verify"), "steps.verify: missing"),
        (
            lambda d: d["runs"][0]["steps"]["export"].update(peak_rss_mb="80 MB"),
            "export.peak_rss_mb: expected",
        ),
        (lambda d: d["appends"].pop("single_vs_raw"), "appends.single_vs_raw: missing"),
        (lambda d: d["runs"][0]["bundle"].pop("signatures_s"), "signatures_s: missing"),
        (lambda d: d["runs"][0]["projection"].pop("by_third"), "by_third: missing"),
    ],
)
def test_documents_breaking_the_schema_are_refused(
    smoke: tuple[Path, dict[str, Any]], change: Any, path: str
) -> None:
    with pytest.raises(ResultsSchemaError, match=path.replace("[", r"\[").replace("]", r"\]")):
        check_results(_broken(smoke[1], change))


def test_pymerkle_figures_are_optional(smoke: tuple[Path, dict[str, Any]]) -> None:
    (merkle,) = (run["merkle"] for run in smoke[1]["runs"])
    assert ("theirs" in merkle) == (merkle["pymerkle"] != "not installed")

    def not_installed(document: dict[str, Any]) -> None:
        merkle = document["runs"][0]["merkle"]
        merkle.pop("theirs", None)
        merkle["pymerkle"] = "not installed"

    check_results(_broken(smoke[1], not_installed))

    def partly_there(document: dict[str, Any]) -> None:
        document["runs"][0]["merkle"]["theirs"] = {"build_s": 0.5}

    # optional, not unchecked: figures that are there follow the schema
    with pytest.raises(ResultsSchemaError, match=r"merkle\.theirs\.inclusion_s: missing"):
        check_results(_broken(smoke[1], partly_there))


def test_booleans_are_not_numbers(smoke: tuple[Path, dict[str, Any]]) -> None:
    with pytest.raises(ResultsSchemaError, match="entries: expected int, got bool"):
        check_results(_broken(smoke[1], lambda d: d["runs"][0].update(entries=True)))


def test_the_worked_example_of_the_spec_follows_the_schema() -> None:
    spec = (Path(__file__).parents[2] / "specs" / "bench.md").read_text(encoding="utf-8")
    example = spec.split("```json\n", 1)[1].split("\n```", 1)[0]
    document = json.loads(example)
    check_results(document)
    (run,) = document["runs"]
    assert run["pins"]["checks"] == 376 and run["pins"]["truncation_kept"] == 66
    assert run["projection"]["naive_equal"] == run["projection"]["naive"]["count"] == 12
    context = run["working_context"]
    assert list(context["methods"]) == list(METHODS)
    recalled = {name: m["fact_recall"]["recalled"] for name, m in context["methods"].items()}
    assert context["facts"]["needs"] == 22 and recalled == {
        "registre": 9,
        "truncation": 13,
        "observation_masking": 14,
        "rolling_summary": 8,
    }


def test_lean_runs_and_unmeasured_appends_follow_the_schema(
    smoke: tuple[Path, dict[str, Any]],
) -> None:
    def lean(document: dict[str, Any]) -> None:
        run = document["runs"][0]
        run["lean"] = True
        for name in ("working_context", "pins", "evidence", "merkle"):
            run.pop(name)
        document["appends"] = None

    check_results(_broken(smoke[1], lean))
