"""Step 1's digests by groups of lines (registre.attest.bundles._line_groups) and their readers."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registre.attest.bundles import (
    GROUP_BYTES,
    GROUP_LINES,
    BundleLeaves,
    EntriesChangedError,
    LineGroups,
    group_digest,
)

_LINE = st.binary(min_size=1, max_size=40).filter(lambda b: b"\n" not in b)
_BIG = st.integers(1, 3 * GROUP_BYTES // 2).map(lambda n: b"x" * n)


@given(st.lists(st.one_of(_LINE, _LINE, _LINE, _BIG), max_size=200))
def test_groups_tile_the_lines_and_digest_each_group(lines: list[bytes]) -> None:
    groups = LineGroups(lines)
    assert len(groups) == len(lines)
    covered = 0
    for group in range(groups.groups):
        start, stop = groups.bounds(group)
        assert start == covered and stop > start  # consecutive, none empty
        assert stop - start <= GROUP_LINES
        # a group closes as soon as it reaches GROUP_BYTES: only its last line crosses it
        assert sum(len(line) + 1 for line in lines[start : stop - 1]) < GROUP_BYTES
        assert groups.digest(group) == group_digest(lines[start:stop])
        assert all(groups.group_of(line) == group for line in range(start, stop))
        covered = stop
    assert covered == len(lines)
    with pytest.raises(IndexError):
        groups.group_of(len(lines))
    with pytest.raises(IndexError):
        groups.digest(groups.groups)


@given(st.lists(_LINE, max_size=200), st.data())
def test_a_group_digest_changes_with_any_line(lines: list[bytes], data: st.DataObject) -> None:
    if not lines:
        return
    index = data.draw(st.integers(0, len(lines) - 1))
    other = data.draw(_LINE.filter(lambda line: line != lines[index]))
    changed = [*lines[:index], other, *lines[index + 1 :]]
    before, after = LineGroups(lines), LineGroups(changed)
    group = before.group_of(index)
    if before.bounds(group) == after.bounds(group):
        assert before.digest(group) != after.digest(group)


@given(st.lists(_LINE, min_size=1, max_size=300), st.data())
def test_a_changed_line_is_never_handed_out(lines: list[bytes], data: st.DataObject) -> None:
    """BundleLeaves checks the whole group of a line before giving any line of it: a reader
    gets the lines step 1 hashed, or EntriesChangedError, never a changed line."""
    groups = LineGroups(lines)
    index = data.draw(st.integers(0, len(lines) - 1))
    changed = [*lines[:index], lines[index] + b"!", *lines[index + 1 :]]
    data_bytes = b"".join(line + b"\n" for line in changed)
    leaves = BundleLeaves(lambda: [data_bytes], groups)
    start, stop = groups.bounds(groups.group_of(index))
    read: list[bytes] = []
    with pytest.raises(EntriesChangedError, match=f"lines {start + 1}\\.\\.{stop} "):
        for line in leaves:
            read.append(line)
    assert read == lines[:start]
    with pytest.raises(EntriesChangedError):
        leaves[data.draw(st.integers(start, stop - 1))]
