"""attest.entry_batch: the batch signer gives the entries sign_entry gives one by one."""

from __future__ import annotations

import hashlib
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import example, given, settings
from hypothesis import strategies as st

from registre.attest.entries import (
    EMPTY_LIFECYCLE,
    ActorNameError,
    BodySchemaError,
    Entry,
    EntryFormatError,
    InvalidActorError,
    InvalidThreadIdError,
    LifecycleHead,
    check_time,
    format_time,
    open_entry,
    sign_entries,
    sign_entry,
)
from registre.attest.entries.batch import _clock_prefix
from registre.attest.notes import Signer
from registre.attest.tree import CompactRange

SIGNER = Signer.from_seed("registre.test/log", bytes(range(32)))
TIME = "2026-11-30T08:30:18.123456Z"
READ = {
    "request": {
        "refs": [
            {"ref": "s1", "source": "report.pdf", "location": "p. 1", "sha256": "ab" * 32},
        ]
    },
    "outcome": {"results": [{"accepted": True, "ref": "s1"}]},
}
PIN = {
    "request": {"kind": "definition", "text": "stage two", "seq": 0},
    "outcome": {"accepted": True, "id": "pin-1"},
}

# text with everything the encoders could disagree on: quotes, backslashes, control
# characters, DEL, non-ASCII and characters beyond U+FFFF (which sort differently in keys)
text = st.text(
    alphabet=st.characters(exclude_categories=("Cs",))
    | st.sampled_from(['"', "\\", "\n", "\x00", "\x1f", "\x7f", "é", "\uff01", "\U0001f600"]),
    max_size=30,
)
# actor names as writers sign them (letters of every plane, digits, _ . - @ + / and ':')
actors = st.from_regex(r"[\w.@+/-]{1,6}(:[\w.@+/-]{1,6}){0,2}", fullmatch=True) | st.just(
    "tool:\U0001d49c.é"
)
arguments = st.dictionaries(
    text | st.sampled_from(["\U0001f600", "\uff01", "\ue000x"]),
    st.none() | st.booleans() | st.integers(-(2**53) + 1, 2**53 - 1) | text,
    max_size=4,
)
items = st.lists(
    st.one_of(
        st.builds(lambda t, a: ("turn", {"role": "user", "text": t or "x"}, a), text, actors),
        st.builds(
            lambda args, a: ("tool.call", {"call_id": "c1", "name": "grep", "arguments": args}, a),
            arguments,
            actors,
        ),
        st.sampled_from([("source.read", READ, "agent"), ("context.pin", PIN, "agent")]),
    ),
    max_size=12,
)


def one_by_one(
    batch: list[tuple[str, Any, str]], frontier: CompactRange, lifecycle: LifecycleHead | None
) -> tuple[list[Entry], list[tuple[int, int, bytes]], LifecycleHead | None]:
    """What the append path did before the batch signer: sign_entry per item."""
    entries, subtrees = [], []
    for kind, body, actor in batch:
        entry = sign_entry(
            SIGNER,
            thread="t1",
            seq=frontier.size,
            kind=kind,
            actor=actor,
            body=body,
            prev_root=frontier.root(),
            time=TIME,
            lifecycle=lifecycle,
        )
        entries.append(entry)
        subtrees.extend(frontier.append(entry.leaf_hash))
        lifecycle = None if lifecycle is None else lifecycle.after(kind, entry.leaf_hash)
    return entries, subtrees, lifecycle


def frontier_of(size: int) -> CompactRange:
    frontier = CompactRange()
    for index in range(size):
        frontier.append(hashlib.sha256(b"%d" % index).digest())
    return frontier


ASTRAL_KEYS = (
    "tool.call",
    {"call_id": "c1", "name": "g", "arguments": {"\U0001f600": 1, "\uff01": 2}},
    "a",
)


@settings(max_examples=60, deadline=None)
@given(batch=items, start=st.integers(0, 40), lifecycle_count=st.integers(-1, 3))
@example(batch=[ASTRAL_KEYS], start=0, lifecycle_count=0)
def test_batch_equals_sign_entry_one_by_one(
    batch: list[tuple[str, Any, str]], start: int, lifecycle_count: int
) -> None:
    lifecycle: LifecycleHead | None = None  # -1: legacy entries, without the field
    if lifecycle_count >= 0:
        lifecycle = EMPTY_LIFECYCLE
        for n in range(lifecycle_count):
            lifecycle = lifecycle.extend(bytes([n]) * 32)
    reference = frontier_of(start)
    expected, expected_subtrees, expected_head = one_by_one(batch, reference, lifecycle)
    frontier = frontier_of(start)
    signed = sign_entries(
        SIGNER, thread="t1", items=batch, frontier=frontier, lifecycle=lifecycle, time=TIME
    )
    assert [e.leaf for e in signed.entries] == [e.leaf for e in expected]
    assert [e.leaf_hash for e in signed.entries] == [e.leaf_hash for e in expected]
    assert signed.entries == expected  # every field, the parsed ones included
    assert signed.subtrees == expected_subtrees
    assert signed.lifecycle == expected_head
    assert (frontier.size, frontier.root()) == (reference.size, reference.root())
    for entry in signed.entries:
        assert open_entry(entry.leaf, [SIGNER.verifier()]) == entry


def test_default_time_is_now_for_each_entry() -> None:
    batch = [("turn", {"role": "user", "text": "hi"}, "agent")] * 3
    signed = sign_entries(
        SIGNER, thread="t1", items=batch, frontier=CompactRange(), lifecycle=EMPTY_LIFECYCLE
    )
    for entry in signed.entries:
        assert open_entry(entry.leaf, [SIGNER.verifier()]).time == entry.time
    assert [e.seq for e in signed.entries] == [0, 1, 2]


def test_default_time_is_format_times_clock() -> None:
    """The batch signer formats the clock itself (entry_batch._clock_prefix): each time is
    what format_time writes, taken between the format_time calls before and after it, and
    they never go back (the same clock, floored to the microsecond)."""
    batch = [("turn", {"role": "user", "text": "hi"}, "agent")] * 200
    before = format_time()
    signed = sign_entries(
        SIGNER, thread="t1", items=batch, frontier=CompactRange(), lifecycle=EMPTY_LIFECYCLE
    )
    after = format_time()
    times = [entry.time for entry in signed.entries]
    assert times == sorted(times)
    assert before <= times[0] and times[-1] <= after
    for moment in times:
        check_time(moment)
        assert len(moment) == len(before) and moment.endswith("Z")
        parsed = datetime.fromisoformat(moment[:-1]).replace(tzinfo=UTC)
        assert format_time(parsed) == moment


@given(st.integers(0, 2**34))
def test_clock_prefix_is_format_times_date_and_time(second: int) -> None:
    moment = datetime.fromtimestamp(second, UTC).replace(microsecond=123456)
    assert _clock_prefix(second) + "123456Z" == format_time(moment)


def test_lifecycle_heads_chain_through_the_batch() -> None:
    batch = [("source.read", READ, "agent"), ("turn", {"role": "user", "text": "x"}, "agent")]
    signed = sign_entries(
        SIGNER,
        thread="t1",
        items=batch * 2,
        frontier=CompactRange(),
        lifecycle=EMPTY_LIFECYCLE,
        time=TIME,
    )
    counts = [e.lifecycle.count for e in signed.entries if e.lifecycle is not None]
    assert counts == [0, 1, 1, 2]
    assert signed.lifecycle.count == 2


@pytest.mark.parametrize(
    ("item", "error"),
    [
        (("turn", {"role": "user", "text": "x"}, ""), InvalidActorError),
        (("turn", {"role": "user", "text": "x"}, "bob smith"), ActorNameError),
        (("turn", {"role": "nobody", "text": "x"}, "agent"), BodySchemaError),
        (("turn", ["not", "an", "object"], "agent"), BodySchemaError),
    ],
)
def test_refused_item_raises_what_sign_entry_raises(
    item: tuple[str, Any, str], error: type[Exception]
) -> None:
    good = ("turn", {"role": "user", "text": "fine"}, "agent")
    with pytest.raises(error):
        sign_entry(
            SIGNER,
            thread="t1",
            seq=1,
            kind=item[0],
            actor=item[2],
            body=item[1],
            prev_root=bytes(32),
            time=TIME,
        )
    with pytest.raises(error):
        sign_entries(
            SIGNER,
            thread="t1",
            items=[good, item],
            frontier=CompactRange(),
            lifecycle=EMPTY_LIFECYCLE,
            time=TIME,
        )


def test_unchecked_body_that_is_not_an_object_refused_when_marked_checked() -> None:
    with pytest.raises(EntryFormatError, match="JSON object"):
        sign_entries(
            SIGNER,
            thread="t1",
            items=[("turn", ["x"], "agent")],
            frontier=CompactRange(),
            lifecycle=EMPTY_LIFECYCLE,
            checked={0},
        )


@pytest.mark.parametrize("thread", ["", "a/b", "x" * 129])
def test_bad_thread_id_refused(thread: str) -> None:
    with pytest.raises(InvalidThreadIdError):
        sign_entries(
            SIGNER,
            thread=thread,
            items=[("turn", {"role": "user", "text": "x"}, "agent")],
            frontier=CompactRange(),
            lifecycle=EMPTY_LIFECYCLE,
        )


def test_bad_time_refused() -> None:
    with pytest.raises(EntryFormatError, match="RFC 3339"):
        sign_entries(
            SIGNER,
            thread="t1",
            items=[("turn", {"role": "user", "text": "x"}, "agent")],
            frontier=CompactRange(),
            lifecycle=EMPTY_LIFECYCLE,
            time="yesterday",
        )


SIGNERS = (
    SIGNER,
    Signer.from_seed("registre.test/other", bytes(range(32))),  # same key, another name
    Signer.from_seed("registre.test/log", bytes(range(1, 33))),  # same name, another key
)


@settings(max_examples=40, deadline=None)
@given(
    thread=st.from_regex(r"[A-Za-z0-9][A-Za-z0-9._:%-]{0,20}", fullmatch=True),
    order=st.permutations(range(len(SIGNERS))),
)
def test_thread_members_are_the_keys_and_the_threads_own(thread: str, order: list[int]) -> None:
    """The members every entry of a thread shares are remembered by (key name, key id,
    thread): for any thread id and keys that share a name or a key, each batch, signed
    twice, is what sign_entry signs."""
    if "%" in thread:
        with pytest.raises(InvalidThreadIdError):
            sign_entries(
                SIGNER,
                thread=thread,
                items=[("turn", {"role": "user", "text": "x"}, "agent")],
                frontier=CompactRange(),
                lifecycle=EMPTY_LIFECYCLE,
            )
        return
    for index in [*order, *order]:
        signer = SIGNERS[index]
        signed = sign_entries(
            signer,
            thread=thread,
            items=[("turn", {"role": "user", "text": "x"}, "agent")],
            frontier=frontier_of(3),
            lifecycle=EMPTY_LIFECYCLE,
            time=TIME,
        )
        expected = sign_entry(
            signer,
            thread=thread,
            seq=3,
            kind="turn",
            actor="agent",
            body={"role": "user", "text": "x"},
            prev_root=frontier_of(3).root(),
            time=TIME,
            lifecycle=EMPTY_LIFECYCLE,
        )
        assert signed.entries == [expected]
