"""The baselines measured beside registre: silent truncation loses exactly what it reports,
and the naive re-fold gives registre's projection."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registre.attest.keys import Signer
from registre.bench.baselines import TruncationBaseline, naive_projection, transcript_message
from registre.bench.generate import InvestigationConfig, policy_for, record_investigation
from registre.bench.measure import sample_points
from registre.bench.summary import percentile
from registre.ledger.ledger import Ledger
from registre.ledger.thread import Thread
from registre.lifecycle.context import ContextEntry, default_counter
from registre.lifecycle.context.render import message_tokens

COUNTER = default_counter()
BUDGET = 8000
WORDS = st.text(alphabet="abcdefgh ,.XYZ0123456789", min_size=1, max_size=120)


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Ledger, Thread]:
    folder = tmp_path_factory.mktemp("baselines")
    ledger = Ledger.open(str(folder / "l.db"), Signer.from_seed("bench.test", bytes(32)))
    thread = ledger.create_thread("investigation")
    record_investigation(thread, InvestigationConfig(600, 4, policy_for(BUDGET)))
    return ledger, thread


def _baseline(thread: Thread) -> TruncationBaseline:
    baseline = TruncationBaseline(COUNTER)
    for entry in thread.entries():
        baseline.add(entry)
    return baseline


def test_truncation_really_loses_the_pins_it_reports(recorded: tuple[Ledger, Thread]) -> None:
    _ledger, thread = recorded
    baseline = _baseline(thread)
    live = [pin.text for pin in thread.pins(live=True)]
    lost = baseline.lost(live, BUDGET)
    kept = baseline.kept(BUDGET)
    assert lost, "600 entries at 8k tokens: the oldest pins must fall out of the window"
    assert "Reporting date: 30 September 2025." in lost  # a task parameter of the request
    for text in lost:
        assert not any(text in message.content for message in kept)
    for text in set(live) - set(lost):
        assert any(text in message.content for message in kept)
    # registre carries every live pin word for word at the same budget.
    projection = thread.project(budget=BUDGET, policy=policy_for(BUDGET))
    contents = [message.content for message in projection.messages]
    assert all(any(text in content for content in contents) for text in live)


def test_truncation_window_fits_the_budget_and_is_the_longest_suffix(
    recorded: tuple[Ledger, Thread],
) -> None:
    baseline = _baseline(recorded[1])
    window = baseline.window(BUDGET)
    tokens = [message_tokens(m, COUNTER) for m in baseline.messages]
    assert window.tokens == sum(tokens[window.first :]) <= BUDGET
    assert window.first > 0 and sum(tokens[window.first - 1 :]) > BUDGET
    assert baseline.history_tokens == sum(tokens) > 10 * BUDGET


@given(texts=st.lists(WORDS, min_size=1, max_size=40), budget=st.integers(1, 400))
def test_truncation_window_property(texts: list[str], budget: int) -> None:
    baseline = TruncationBaseline(COUNTER)
    for seq, text in enumerate(texts):
        baseline.add(ContextEntry(seq, "turn", "user", {"role": "user", "text": text}))
    window = baseline.window(budget)
    tokens = [message_tokens(m, COUNTER) for m in baseline.messages]
    assert window.tokens == sum(tokens[window.first :]) <= budget
    if window.first > 0:
        assert sum(tokens[window.first - 1 :]) > budget
    assert window.first_seq == (window.first if window.first < len(texts) else len(texts))


def test_entries_must_come_in_order() -> None:
    baseline = TruncationBaseline(COUNTER)
    with pytest.raises(ValueError, match="expected entry 0"):
        baseline.add(ContextEntry(1, "turn", "user", {"role": "user", "text": "hi"}))


def test_transcript_renders_accepted_pins_and_skips_control_entries() -> None:
    pin = {
        "request": {"kind": "decision", "text": "Use the Q3 tape.", "seq": 0},
        "outcome": {"accepted": True, "id": "pin-1"},
    }
    message = transcript_message("context.pin", pin)
    assert message is not None and message.content == "[pinned decision pin-1] Use the Q3 tape."
    refused = {
        "request": {"kind": "decision", "text": " ", "seq": 0},
        "outcome": {"accepted": False, "reason": "empty_pin", "message": "blank"},
    }
    assert transcript_message("context.pin", refused) is None
    assert transcript_message("model.call", {}) is None


def test_naive_refold_gives_registres_projection(recorded: tuple[Ledger, Thread]) -> None:
    ledger, thread = recorded
    policy = policy_for(BUDGET)
    for at in (thread.head().size - 1, thread.head().size // 2):
        ours = thread.project(at=at, budget=BUDGET, policy=policy)
        assert naive_projection(ledger, thread.id, at, BUDGET, policy, COUNTER) == ours


@given(total=st.integers(1, 10**6), count=st.integers(1, 80))
def test_sample_points_are_increasing_and_end_at_the_total(total: int, count: int) -> None:
    points = sample_points(total, count)
    assert points == sorted(set(points)) and points[-1] == total
    assert all(1 <= p <= total for p in points) and len(points) <= count + 1


def test_percentile_is_nearest_rank() -> None:
    values = list(range(1, 101))
    assert percentile(values, 50) == 50 and percentile(values, 99) == 99
    assert percentile([3.0], 99) == 3.0 and percentile([], 50) is None
