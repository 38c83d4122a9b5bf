"""The current task (``specs/context.md`` section 5.1): :class:`TaskScan` read entry by
entry keeps the rule read whole; a restarted session is a new task."""

from __future__ import annotations

import copy

from hypothesis import given
from hypothesis import strategies as st

from registre.context import ContextEntry
from registre.context.task_pin import TASK_PIN_SCAN, TaskScan, stale_task_pins

_KINDS = st.sampled_from(["turn", "turn", "turn", "tool.call", "decision"])
_ROLES = st.sampled_from(["system", "user", "assistant", None])
_TEXTS = st.one_of(st.sampled_from(["", " ", "find the cause", "be brief"]), st.integers())


@st.composite
def entries(draw: st.DrawFn) -> list[ContextEntry]:
    found = []
    start = draw(st.sampled_from([0, 0, TASK_PIN_SCAN - 3]))  # also around the scan's end
    for seq in range(start, start + draw(st.integers(0, 14))):
        body: dict[str, object] = {}
        role, text = draw(_ROLES), draw(_TEXTS)
        if role is not None:
            body["role"] = role
        body["text"] = text if isinstance(text, str) else f"task {text}"
        if draw(st.booleans()) and isinstance(text, int):
            body["text"] = text  # not a string: never a task turn
        found.append(ContextEntry(seq, draw(_KINDS), "agent", body))
    return found


def reference(found: list[ContextEntry]) -> list[int]:
    """The rule read whole: the latest system turn (not the first task's own) whose next
    turn is a user turn starts the current task; else the first system and user turns among
    entries 0..63."""
    turns = [e for e in found if e.kind == "turn" and isinstance(e.body.get("text"), str)]
    first = {}
    for entry in turns:
        if entry.seq < TASK_PIN_SCAN and entry.body.get("role") in ("system", "user"):
            first.setdefault(entry.body["role"], entry.seq)
    restarts = [
        index
        for index in range(len(turns) - 1)
        if turns[index].body.get("role") == "system"
        and turns[index + 1].body.get("role") == "user"
        and turns[index].seq != first.get("system")
    ]
    if restarts:
        return [turns[restarts[-1]].seq, turns[restarts[-1] + 1].seq]
    return sorted(first.values())


@given(entries(), st.integers(0, 14))
def test_the_scan_keeps_the_rule_wherever_it_is_split(found: list[ContextEntry], cut: int) -> None:
    whole, split = TaskScan(), TaskScan()
    for entry in found:
        whole.feed(entry)
    for entry in found[:cut]:
        split.feed(entry)
    split = copy.copy(split)
    for entry in found[cut:]:
        split.feed(entry)
    assert [e.seq for e in whole.turns] == [e.seq for e in split.turns] == reference(found)


def turn(seq: int, role: str, text: str) -> ContextEntry:
    return ContextEntry(seq, "turn", "agent", {"role": role, "text": text})


def test_a_restarted_session_is_a_new_task_and_the_old_task_pins_are_stale() -> None:
    scan = TaskScan()
    for entry in [
        turn(0, "system", "policy"),
        turn(1, "user", "customer 1"),
        turn(2, "assistant", "done"),
        turn(3, "system", "policy"),
        turn(4, "assistant", "a system note answered: no new task"),
        turn(5, "user", "still customer 1"),
    ]:
        scan.feed(entry)
    assert [e.seq for e in scan.turns] == [0, 1]
    assert stale_task_pins([("pin-1", 0, "policy"), ("pin-2", 1, "customer 1")], scan.turns) == []
    scan.feed(turn(6, "system", "policy"))
    scan.feed(turn(7, "user", "customer 2"))
    assert [e.seq for e in scan.turns] == [6, 7]
    live = [("pin-1", 0, "policy"), ("pin-2", 1, "customer 1"), ("pin-3", 7, "customer 2")]
    assert stale_task_pins(live, scan.turns) == ["pin-2"]
