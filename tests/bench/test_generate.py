"""The investigation generator: deterministic per seed, exact planned size, a realistic mix of
kinds and storyline events, all recorded through the real thread API."""

from __future__ import annotations

import hashlib
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from registre.attest.entries import Entry
from registre.attest.notes import Signer
from registre.bench import (
    InvestigationConfig,
    InvestigationStats,
    investigation_steps,
    policy_for,
    record_investigation,
)
from registre.bench.facts import FACT_KINDS, Fact
from registre.bench.investigation import storyline_counts
from registre.bench.textgen import MAX_OUTPUT_BYTES
from registre.context import entry_text
from registre.context.task_pin import TASK_PIN_ACTOR
from registre.ledger.ledger import Ledger
from registre.ledger.thread import Thread

SIGNER = Signer.from_seed("bench.test", bytes(range(32)))


def _record(folder: Path, entries: int, seed: int, budget: int = 8000) -> tuple[Thread, Any]:
    ledger = Ledger.open(str(folder / f"s{seed}-n{entries}-b{budget}.db"), SIGNER)
    thread = ledger.create_thread("investigation")
    config = InvestigationConfig(entries, seed, policy_for(budget))
    return thread, record_investigation(thread, config)


def _bodies(thread: Thread) -> list[tuple[str, str, dict[str, Any]]]:
    return [(e.kind, e.actor, e.body) for e in thread.entries()]


@pytest.fixture(scope="module")
def thousand(tmp_path_factory: pytest.TempPathFactory) -> tuple[Thread, InvestigationStats]:
    """One 1,000-entry investigation at an 8k budget, shared by the mix tests."""
    return _record(tmp_path_factory.mktemp("thousand"), 1000, seed=11)


def test_same_seed_gives_the_same_entry_bodies(tmp_path: Path) -> None:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first, _ = _record(tmp_path / "a", 160, seed=5)
    second, _ = _record(tmp_path / "b", 160, seed=5)
    assert _bodies(first) == _bodies(second)
    # Times differ, bodies do not: the leaves are different byte strings.
    assert [e.leaf for e in first.entries()] != [e.leaf for e in second.entries()]


def test_another_seed_gives_another_investigation(tmp_path: Path) -> None:
    first, _ = _record(tmp_path, 160, seed=5)
    other, _ = _record(tmp_path, 160, seed=6)
    assert _bodies(first) != _bodies(other)


def test_every_budget_sees_the_same_investigation(tmp_path: Path) -> None:
    small, _ = _record(tmp_path, 300, seed=2, budget=8000)
    large, _ = _record(tmp_path, 300, seed=2, budget=128000)

    def content(thread: Thread) -> list[tuple[str, str]]:
        # Sequence numbers shift with the compactions; kinds, actors and words do not.
        skipped = ("context.compaction", "model.call")
        return [
            (e.kind, str(e.body.get("text", e.body.get("content", ""))))
            for e in thread.entries()
            if e.kind not in skipped and not _task_pin(e)
        ]

    assert content(small) == content(large)
    assert small.head().size > large.head().size  # more compactions at the smaller budget


@pytest.mark.parametrize("entries", [100, 137, 400])
def test_planned_size_is_met_exactly(tmp_path: Path, entries: int) -> None:
    thread, stats = _record(tmp_path, entries, seed=entries)
    assert stats.planned == entries
    kinds = Counter(e.kind for e in thread.entries())
    task_pins = sum(1 for e in thread.entries() if _task_pin(e))  # specs/context.md 5.1
    assert thread.head().size == stats.written
    assert stats.written == entries - stats.refused_calls + stats.compactions + task_pins
    assert kinds["context.compaction"] == stats.compactions
    assert kinds["model.call"] == stats.model_calls


def test_below_the_minimum_size_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 100"):
        InvestigationConfig(99)


def test_a_step_must_run_before_the_next_is_built() -> None:
    _investigation, steps = investigation_steps(InvestigationConfig(100))
    next(steps)
    with pytest.raises(RuntimeError, match="run each step"):
        next(steps)


def test_mix_of_kinds_is_within_bounds(thousand: tuple[Thread, InvestigationStats]) -> None:
    thread, _stats = thousand
    kinds = Counter(e.kind for e in thread.entries())
    share = {kind: count / thread.head().size for kind, count in kinds.items()}
    assert 0.25 <= share["model.call"] <= 0.45  # one before every action of the agent
    assert share["tool.call"] == share["tool.result"]
    assert 0.12 <= share["tool.call"] <= 0.30
    assert 0.05 <= share["turn"] <= 0.20
    lifecycle = sum(
        share.get(k, 0)
        for k in ("source.read", "evidence.upsert", "evidence.revise", "conclusion.compute")
    )
    assert 0.05 <= lifecycle <= 0.25
    assert 0.005 <= share["context.compaction"] <= 0.10  # 8k budget: compacts often
    for kind in (
        "decision",
        "context.pin",
        "context.unpin",
        "conclusion.revise",
        "conclusion.final",
    ):
        assert kinds[kind] >= 1, kind


def test_storyline_events_happen(thousand: tuple[Thread, InvestigationStats]) -> None:
    thread, stats = thousand
    assert stats.hypotheses >= 12 and stats.committee_detours == 2
    assert stats.evidence_superseded >= 1 and stats.evidence_retracted >= 1
    assert stats.stale_events >= 1 and stats.repaired >= 1
    assert stats.refused_finals + stats.finals >= 1 and stats.finals == 1
    pins = thread.pins()
    assert {p.kind for p in pins} == {"definition", "decision", "task_parameter", "open_question"}
    assert any(not p.live for p in pins)  # some answered or superseded, and unpinned
    assert not [p for p in pins if p.live and p.kind == "open_question"]  # all answered
    finals = [c for c in thread.conclusions.list() if c.kind == "final" and c.status == "active"]
    assert len(finals) == 1 and not finals[0].stale
    assert storyline_counts(1000)["hypothesis"] == 12


def test_tool_outputs_are_mostly_small_with_a_long_tail(
    thousand: tuple[Thread, InvestigationStats],
) -> None:
    sizes = sorted(
        len(e.body["content"].encode()) for e in thousand[0].entries() if e.kind == "tool.result"
    )
    median, p95 = sizes[len(sizes) // 2], sizes[int(len(sizes) * 0.95)]
    assert 200 <= median <= 3000
    assert p95 >= 3 * median  # a heavy tail, as in real agent traffic
    assert sizes[-1] <= MAX_OUTPUT_BYTES + 200  # cut by the tool runner, with a note


def test_read_passages_are_registered_with_their_sha256(
    thousand: tuple[Thread, InvestigationStats],
) -> None:
    thread = thousand[0]
    results = {e.seq: e.body["content"] for e in thread.entries() if e.kind == "tool.result"}
    references = thread.references()
    assert references
    for reference in references:
        seq = int(reference.location.split()[1].rstrip(","))
        passages = results[seq].split("\n\n")
        digests = {hashlib.sha256(p.encode()).hexdigest() for p in passages}
        assert reference.sha256 in digests


def test_planted_facts_are_in_their_entries_and_needed_later(tmp_path: Path) -> None:
    ledger = Ledger.open(str(tmp_path / "facts.db"), SIGNER)
    thread = ledger.create_thread("investigation")
    investigation, steps = investigation_steps(InvestigationConfig(800, 3, policy_for(8000)))
    needs: list[tuple[int, Fact]] = []
    for step in steps:
        step.run(thread)
        needs += [(thread.head().size, fact) for fact in step.needs]
    facts = investigation.facts.facts
    assert {fact.kind for fact in facts} == set(FACT_KINDS)
    assert investigation.stats.facts == len(facts)
    for fact in facts:
        entry = thread.entry(fact.seq)
        assert fact.text in entry_text(entry.kind, entry.body)
        assert all(key in fact.text for key in fact.keys)
    assert len(needs) == investigation.stats.fact_needs > len(facts)
    assert all(fact.seq < position for position, fact in needs)  # needed after it was stated
    assert {fact.kind for _position, fact in needs} == set(FACT_KINDS)
    ages = sorted(position - fact.seq for position, fact in needs)
    assert ages[-1] > 200  # some needs reach far back


def test_facts_are_planted_alike_at_every_budget(tmp_path: Path) -> None:
    def planted(budget: int) -> list[tuple[str, str]]:
        ledger = Ledger.open(str(tmp_path / f"b{budget}.db"), SIGNER)
        thread = ledger.create_thread("investigation")
        investigation, steps = investigation_steps(InvestigationConfig(300, 2, policy_for(budget)))
        for step in steps:
            step.run(thread)
        return [(fact.kind, fact.text) for fact in investigation.facts.facts]

    assert planted(8000) == planted(128000)


def _task_pin(entry: Entry) -> bool:
    """An automatic task pin: written by the controller before a compaction, on top of the
    planned entries, like the compaction itself."""
    return entry.kind == "context.pin" and entry.actor == TASK_PIN_ACTOR
