"""context.pin and context.unpin, the live pin set and its digest."""

from __future__ import annotations

import hashlib

import pytest

from registre.lifecycle import (
    Accepted,
    LifecycleState,
    PinRequest,
    Rejected,
    UnpinRequest,
    decide,
    pin_set_items,
    pin_set_sha256,
)
from tests.lifecycle.builders import run


def pinned() -> LifecycleState:
    state, _ = run(
        LifecycleState.empty(),
        PinRequest("definition", "ARR means annual recurring revenue.", 4),
        PinRequest("task_parameter", "Report in EUR.", 1),
        PinRequest("open_question", "Is 2022 restated?", 9),
    )
    return state


def test_pins_are_live_in_pin_order() -> None:
    state = pinned()
    assert [p.id for p in state.live_pins()] == ["pin-1", "pin-2", "pin-3"]
    assert pin_set_items(state) == [
        ["pin-1", "definition", 4, "ARR means annual recurring revenue."],
        ["pin-2", "task_parameter", 1, "Report in EUR."],
        ["pin-3", "open_question", 9, "Is 2022 restated?"],
    ]


def test_unpin_records_the_reason_and_keeps_order() -> None:
    state, [event] = run(pinned(), UnpinRequest("pin-2", "The user changed currency."))
    assert event.outcome == Accepted("pin-2")
    assert [p.id for p in state.live_pins()] == ["pin-1", "pin-3"]
    unpinned = state.pin("pin-2")
    assert unpinned is not None and unpinned.status == "unpinned"
    assert unpinned.unpin_reason == "The user changed currency."
    assert decide(state, PinRequest("decision", "Use EUR.", 10)) == Accepted("pin-4")


@pytest.mark.parametrize(
    ("request_", "reason"),
    [
        (PinRequest("decision", " \n", 3), "empty_pin"),
        (UnpinRequest("pin-7", "gone"), "unknown_pin"),
        (UnpinRequest("pin-1", "\t"), "empty_reason"),
    ],
)
def test_pin_rejections(request_: PinRequest | UnpinRequest, reason: str) -> None:
    outcome = decide(pinned(), request_)
    assert isinstance(outcome, Rejected) and outcome.reason == reason


def test_unpinning_twice_is_refused() -> None:
    state, _ = run(pinned(), UnpinRequest("pin-1", "done"))
    before = state.copy()
    state, [event] = run(state, UnpinRequest("pin-1", "done again"))
    assert isinstance(event.outcome, Rejected) and event.outcome.reason == "inactive_pin"
    assert state == before


def test_pin_set_sha256_follows_the_documented_encoding() -> None:
    state = pinned()
    expected = hashlib.sha256(b"registre/pins/v1\n")
    for item in pin_set_items(state):
        for field in item:
            data = str(field).encode("utf-8")
            expected.update(len(data).to_bytes(8, "big") + data)
    assert pin_set_sha256(state) == expected.hexdigest()


def test_pin_set_digest_changes_with_an_unpin_and_ignores_unpinned_pins() -> None:
    state = pinned()
    full = pin_set_sha256(state)
    state, _ = run(state, UnpinRequest("pin-3", "answered"))
    assert pin_set_sha256(state) != full
    fresh, _ = run(
        LifecycleState.empty(),
        PinRequest("definition", "ARR means annual recurring revenue.", 4),
        PinRequest("task_parameter", "Report in EUR.", 1),
    )
    assert pin_set_sha256(fresh) == pin_set_sha256(state)
