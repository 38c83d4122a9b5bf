"""The suites end to end on tiny fixtures: the protocol, the scores, refusals counted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from registre.bench.real.compare import render_comparison
from registre.bench.real.locomo import load_locomo
from registre.bench.real.locomo_run import LocomoConfig, run_locomo
from registre.bench.real.outputs import write_real_outputs
from registre.bench.real.replay import baseline_rooms
from registre.bench.real.report import render_real_report
from registre.bench.real.transcript_run import (
    TranscriptConfig,
    load_entries,
    run_transcripts,
    steps_of,
)
from registre.context import RecentTurnsOverBudgetError
from registre.ledger import Thread
from tests.bench.real.fixtures import agent_transcript, locomo_sample, write_json

HUGE = 200_000


def _row(results: dict[str, Any], budget: int, method: str, group: str = "all") -> dict[str, Any]:
    key = "group" if results["suite"] == "locomo" else "kind"
    rows: list[dict[str, Any]] = results["rows"]
    (row,) = [
        r for r in rows if r["budget"] == budget and r["method"] == method and r[key] == group
    ]
    return row


@pytest.fixture(scope="module")
def locomo(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("locomo")
    conversations = load_locomo(write_json(folder / "tiny.json", [locomo_sample()]))
    return run_locomo(conversations, LocomoConfig(budgets=(250, HUGE)), folder / "out")


def test_without_a_budget_every_method_holds_every_evidence_turn(
    locomo: dict[str, Any],
) -> None:
    for method in locomo["methods"]:
        row = _row(locomo, HUGE, method)
        assert row["calls"] == 2 and row["refused"] == 0
        assert row["evidence"] == 1.0, method
        assert row["answer"] == 1.0, method


def test_a_small_budget_loses_the_old_turn_that_bm25_finds(locomo: dict[str, Any]) -> None:
    old = _row(locomo, 250, "truncation", "single-hop")  # the greyhound question, turn D1:3
    assert old["evidence"] == 0.0
    assert _row(locomo, 250, "bm25", "single-hop")["evidence"] == 1.0
    recent = _row(locomo, 250, "truncation", "temporal")  # the boathouse, turn D3:11
    assert recent["evidence"] == 1.0
    for method in locomo["methods"]:
        row = _row(locomo, 250, method)
        assert 0.0 <= row["fill"] <= 1.0
        assert row["fill"] > 0.0 or row["refused"] == row["calls"]  # nothing sent: refused


def test_results_and_report(locomo: dict[str, Any], tmp_path: Path) -> None:
    paths = write_real_outputs(locomo, tmp_path)
    report = paths["report"].read_text(encoding="utf-8")
    assert (
        "| budget | registre | truncation | observation masking | rolling summary | BM25 alone |"
        in report
    )
    assert json.loads(paths["results"].read_text(encoding="utf-8"))["suite"] == "locomo"
    assert {d["method"] for d in locomo["details"]} == set(locomo["methods"])
    assert locomo["conversations"] == [
        {"sample_id": "tiny-1", "turns": 36, "sessions": 3, "questions": 2}
    ]


def test_refused_calls_are_counted_and_score_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def refuse(*args: object, **kwargs: object) -> None:
        raise RecentTurnsOverBudgetError("too big", needed=10, budget=5)

    monkeypatch.setattr(Thread, "model_call", refuse)
    conversations = load_locomo(write_json(tmp_path / "tiny.json", locomo_sample()))
    results = run_locomo(conversations, LocomoConfig(budgets=(HUGE,)), tmp_path / "out")
    row = _row(results, HUGE, "registre")
    assert (row["calls"], row["refused"]) == (2, 2)
    assert (row["evidence"], row["answer"], row["fill"]) == (0.0, 0.0, 0.0)
    assert _row(results, HUGE, "truncation")["refused"] == 0


@pytest.fixture(scope="module")
def agent(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    folder = tmp_path_factory.mktemp("agent")
    path = write_json(folder / "agent.json", agent_transcript())
    return run_transcripts([path], TranscriptConfig(budgets=(300, HUGE)), folder / "out")


def test_agent_steps_and_probes(agent: dict[str, Any], tmp_path: Path) -> None:
    fmt, entries = load_entries(write_json(tmp_path / "a.json", agent_transcript()))
    assert fmt == "openai"
    assert len(steps_of(entries)) == 14  # 13 tool calls, then the final answer
    (described,) = agent["transcripts"]
    assert described["calls"] == 14 and described["policy_sentences"] == 2
    kinds = {row["kind"] for row in agent["rows"]}
    assert {"all", "id", "number", "far"} <= kinds


def test_without_a_budget_every_probe_and_policy_sentence_is_recalled(
    agent: dict[str, Any],
) -> None:
    for method in agent["methods"]:
        row = _row(agent, HUGE, method)
        assert row["probes"] == (1.0 if method != "masking" else row["probes"]), method
        assert row["policy"] == 1.0, method
        assert row["refused"] == 0
    # observation masking hides the old tool output that gave the customer id
    assert _row(agent, HUGE, "masking", "id")["probes"] < 1.0


def test_a_small_budget_loses_the_old_id(agent: dict[str, Any]) -> None:
    far = _row(agent, 300, "truncation", "far")  # cust_77410, read 12 steps before its reuse
    assert far["probes"] == 0.0
    assert _row(agent, 300, "truncation", "id")["probes"] < 1.0


def test_old_beside_new(locomo: dict[str, Any], agent: dict[str, Any]) -> None:
    better = json.loads(json.dumps(locomo))
    for row in better["rows"]:
        if row["method"] == "registre" and row["group"] == "all" and row["budget"] == 250:
            row["evidence"] = 0.75
    old = _row(locomo, 250, "registre")["evidence"]
    table = render_comparison(locomo, better)
    line = next(line for line in table.splitlines() if line.startswith("| 250 |"))
    others = [
        100 * _row(locomo, 250, name)["evidence"] for name in ("truncation", "masking", "bm25")
    ]
    expected = " / ".join(f"{value:.1f}%" for value in others)
    assert f"| {100 * old:.1f}% → 75.0% / {expected} |" in line
    with pytest.raises(ValueError, match="cannot compare"):
        render_comparison(locomo, agent)
    other = json.loads(json.dumps(locomo))
    other["conversations"][0]["questions"] = 1
    with pytest.raises(ValueError, match="different conversations"):
        render_comparison(locomo, other)


def test_baselines_get_the_room_registre_leaves_for_the_answer(tmp_path: Path) -> None:
    assert baseline_rooms((4000, 8000), False) == {"4000": 3500, "8000": 7000}
    assert baseline_rooms((4000,), True) == {"4000": 4000}
    conversations = load_locomo(write_json(tmp_path / "tiny.json", locomo_sample()))
    results = run_locomo(conversations, LocomoConfig(budgets=(800,)), tmp_path / "out")
    assert results["baseline_room"] == {"800": 700}
    for method in ("truncation", "masking", "rolling", "bm25"):
        assert _row(results, 800, method)["fill"] <= 700 / 800
    assert "The baselines send at most 700 tokens" in render_real_report(results)


def test_the_package_face_is_lazy_and_complete() -> None:
    import registre.bench.real as face

    for name in face.__all__:
        assert callable(getattr(face, name)), name
    with pytest.raises(AttributeError):
        _ = face.nothing_here
