"""The baselines measured beside registre: silent truncation loses exactly what it reports,
and the naive re-fold gives registre's projection."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registre.attest.notes import Signer
from registre.bench import InvestigationConfig, policy_for, record_investigation
from registre.bench.baselines import (
    MASK_AFTER_TURNS,
    MASK_PLACEHOLDER,
    ObservationMaskingBaseline,
    RollingSummaryBaseline,
    TruncationBaseline,
    first_sentence,
    naive_projection,
    transcript_message,
)
from registre.bench.measure import sample_points
from registre.bench.summary import percentile
from registre.context import ContextEntry, Message, default_counter
from registre.context.render import message_tokens
from registre.ledger.ledger import Ledger
from registre.ledger.thread import Thread

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


def _entries(kinds_and_texts: list[tuple[str, str]]) -> list[ContextEntry]:
    """Hand-made entries: turns (``user``/``assistant``) and tool pairs (``call``/``result``)."""
    entries = []
    for seq, (kind, text) in enumerate(kinds_and_texts):
        if kind in ("user", "assistant"):
            entries.append(ContextEntry(seq, "turn", kind, {"role": kind, "text": text}))
        elif kind == "call":
            body = {"call_id": f"c{seq}", "name": "sql", "arguments": {"q": text}}
            entries.append(ContextEntry(seq, "tool.call", "assistant", body))
        else:
            body = {"call_id": f"c{seq - 1}", "name": "sql", "content": text}
            entries.append(ContextEntry(seq, "tool.result", "tool:sql", body))
    return entries


_STEPS = st.lists(
    st.one_of(
        st.tuples(st.sampled_from(["user", "assistant"]), WORDS),
        st.tuples(st.just("pair"), WORDS),
    ),
    max_size=30,
)


def _flatten(steps: list[tuple[str, str]]) -> list[tuple[str, str]]:
    flat: list[tuple[str, str]] = []
    for kind, text in steps:
        flat += [("call", text), ("result", text * 3)] if kind == "pair" else [(kind, text)]
    return flat


@given(steps=_STEPS, budget=st.integers(1, 600), keep=st.integers(1, 4))
def test_observation_masking_property(steps: list[tuple[str, str]], budget: int, keep: int) -> None:
    transcript = TruncationBaseline(COUNTER)
    entries = _entries(_flatten(steps))
    for entry in entries:
        transcript.add(entry)
    view = ObservationMaskingBaseline(transcript, keep_turns=keep).view(budget)
    # naively: outputs before the keep-th most recent turn masked, then the longest suffix
    starts = [i for i, e in enumerate(entries) if e.kind in ("turn", "tool.call")]
    boundary = starts[-keep] if len(starts) >= keep else 0
    masked = [
        Message("tool", MASK_PLACEHOLDER, m.name, m.call_id)
        if i < boundary and entries[i].kind == "tool.result"
        else m
        for i, m in enumerate(transcript.messages)
    ]
    tokens = [message_tokens(m, COUNTER) for m in masked]
    first = 0
    while sum(tokens[first:]) > budget:
        first += 1
    assert view.messages == tuple(masked[first:]) and view.tokens == tuple(tokens[first:])
    assert view.total <= budget and view.prefix is None


def test_observation_masking_keeps_recent_outputs_and_everything_else(
    recorded: tuple[Ledger, Thread],
) -> None:
    transcript = _baseline(recorded[1])
    masking = ObservationMaskingBaseline(transcript)
    whole = masking.view(10**9)
    boundary = masking.boundary
    assert sum(1 for i in transcript.turn_starts if i >= boundary) == MASK_AFTER_TURNS
    for index, (shown, original) in enumerate(
        zip(whole.messages, transcript.messages, strict=True)
    ):
        if index < boundary and transcript.kinds[index] == "tool.result":
            assert shown.content == MASK_PLACEHOLDER and shown.call_id == original.call_id
        else:
            assert shown == original
    cut = masking.view(BUDGET)
    assert cut.total <= BUDGET and cut.messages == whole.messages[-len(cut.messages) :]
    assert whole.total > BUDGET and transcript.history_tokens > whole.total


def test_first_sentence_stops_at_the_end_of_the_first_sentence() -> None:
    text = "Exception: Offices is off by EUR 3.10m. Every other segment reconciles.\nmore"
    assert first_sentence(text) == "Exception: Offices is off by EUR 3.10m."
    assert first_sentence("\n  Status: open? yes") == "Status: open?"
    assert first_sentence("no stop") == "no stop" and first_sentence("") == ""


def test_rolling_summary_folds_the_old_turns_into_one_line(recorded: tuple[Ledger, Thread]) -> None:
    _ledger, thread = recorded
    policy = policy_for(BUDGET)
    transcript = TruncationBaseline(COUNTER)
    rolling = RollingSummaryBaseline(transcript, policy)
    assistant: dict[int, str] = {}
    for entry in thread.entries():
        transcript.add(entry)
        if entry.kind == "turn" and entry.body["role"] == "assistant":
            assistant[entry.seq] = first_sentence(entry.body["text"])
        if entry.kind != "model.call":
            continue
        view = rolling.view(BUDGET)
        assert view.total <= BUDGET
        if rolling.summary is None:
            assert view.prefix == 0 and not view.lines
            continue
        assert view.prefix == 1 and view.messages[0] == rolling.summary
        assert rolling.summary_tokens <= policy.summary_share_tokens
        ((text, spans),) = view.lines
        assert spans == ((0, rolling.folded_to),)
        assert transcript.seqs[rolling.tail] == rolling.folded_to + 1
        folded = [s for seq, s in sorted(assistant.items()) if seq <= rolling.folded_to]
        assert rolling.sentences == folded[len(folded) - len(rolling.sentences) :]  # the latest
        assert text == " ".join(rolling.sentences)
    assert len(rolling.compactions) >= 3
    assert all(after < before for before, after in rolling.compactions)
