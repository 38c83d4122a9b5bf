"""context.pin and context.unpin, the live pin set and its digest."""

from __future__ import annotations

import hashlib

import pytest
from hypothesis import given
from hypothesis import strategies as st

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
from registre.lifecycle.errors import LifecycleFormatError
from registre.lifecycle.model import PinnedItem
from registre.lifecycle.pins import with_left_out_pin
from registre.lifecycle.state import Tables
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


# --- a pin table restored without its unpinned pins (a context snapshot) ---------------------

_pin_steps = st.lists(
    st.one_of(
        st.builds(lambda text: PinRequest("definition", text, 1), st.sampled_from(["A.", " "])),
        st.builds(
            lambda number, reason: UnpinRequest(f"pin-{number}", reason),
            st.integers(1, 8),
            st.sampled_from(["done", ""]),
        ),
    ),
    max_size=14,
)
_asked = st.one_of(
    st.builds(lambda number: f"pin-{number}", st.integers(-1, 10)),
    st.sampled_from(["pin-01", "pin-", "pin-x", "pin-1 ", "pin-٣", "x", ""]),
)


def _as_restored(state: LifecycleState) -> LifecycleState:
    """``state``'s pin table as a context snapshot restores it: live pins and next_pin only."""
    tables = state.tables()
    live = {pin_id: tables.pins[pin_id] for pin_id in tables.live_pins}
    return LifecycleState(
        Tables(pins=live, live_pins=dict(tables.live_pins), next_pin=tables.next_pin)
    )


def _decided(state: LifecycleState, request: UnpinRequest) -> object:
    """The outcome, or the type of the error a malformed request raises."""
    try:
        return decide(state, request)
    except LifecycleFormatError as error:
        return type(error)


@given(steps=_pin_steps, asked=_asked, reason=st.sampled_from(["again", ""]))
def test_an_unpin_decides_on_a_restored_table_as_on_the_full_one(
    steps: list[PinRequest | UnpinRequest], asked: str, reason: str
) -> None:
    full, _ = run(LifecycleState.empty(), *steps)
    restored = _as_restored(full)
    request = UnpinRequest(asked, reason)
    before = restored.tables().copy()
    assert _decided(with_left_out_pin(restored, asked), request) == _decided(full, request)
    assert restored.tables() == before  # the placeholder goes into a copy


def test_a_left_out_pin_comes_back_as_an_unpinned_placeholder() -> None:
    full, _ = run(
        LifecycleState.empty(),
        PinRequest("definition", "ARR means annual recurring revenue.", 4),
        UnpinRequest("pin-1", "superseded"),
        PinRequest("task_parameter", "Report in EUR.", 1),
    )
    restored = _as_restored(full)
    assert restored.pin("pin-1") is None
    back = with_left_out_pin(restored, "pin-1")
    assert back.pin("pin-1") == PinnedItem("pin-1", "definition", "", -1, status="unpinned")
    assert [pin.id for pin in back.live_pins()] == ["pin-2"]
    assert with_left_out_pin(restored, "pin-2") is restored  # held: nothing to put back
    assert with_left_out_pin(restored, "pin-3") is restored  # never made
    assert decide(back, UnpinRequest("pin-1", "again")) == Rejected(
        "inactive_pin", "Pin 'pin-1' is already unpinned."
    )
