"""Persisting the fold: snapshots restore to the same state; bad ones are refused."""

from __future__ import annotations

import json

import pytest

from registre.context import default_counter, project, restore_state, state_snapshot
from registre.lifecycle.errors import LifecycleFormatError
from tests.context.example import POLICY, worked_example


def test_snapshot_of_the_example_holds_no_folded_entry() -> None:
    builder = worked_example()
    snapshot = state_snapshot(builder.state)
    assert snapshot["boundary"] == 5
    assert snapshot["stubbed"] == [6]
    assert snapshot["header"] == ["pin-1"]
    assert "so the bug is likely there" not in json.dumps(snapshot)  # entry 4's unquoted words
    restored = restore_state(snapshot, builder.entries[5:], builder.entries[:5])
    counter = default_counter()
    assert project(restored, 320, POLICY, counter) == project(builder.state, 320, POLICY, counter)


def test_tail_that_does_not_match_the_snapshot_fail() -> None:
    builder = worked_example()
    snapshot = state_snapshot(builder.state)
    with pytest.raises(ValueError, match="tail entry 4 where entry 5 was expected"):
        restore_state(snapshot, builder.entries[4:])
    with pytest.raises(ValueError, match="the tail ends at 8"):
        restore_state(snapshot, builder.entries[5:9])


@pytest.mark.parametrize(
    ("change", "path"),
    [
        ({"format": "registre.context-state/0"}, "snapshot.format"),
        ({"header": ["pin-9"]}, "snapshot.header"),
        ({"next_pin": "2"}, "snapshot.next_pin"),
        ({"extra": 1}, "snapshot"),
    ],
)
def test_malformed_snapshot_fail(change: dict[str, object], path: str) -> None:
    builder = worked_example()
    snapshot = state_snapshot(builder.state) | change
    with pytest.raises(LifecycleFormatError) as caught:
        restore_state(snapshot, builder.entries[5:])
    assert caught.value.path == path
