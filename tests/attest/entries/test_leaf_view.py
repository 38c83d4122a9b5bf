"""attest.leaf_view: a LeafView indexes and slices as a list of the same leaves does, and the
views built on it (BundleLeaves and its LeafRange slices) keep their own contiguous slices."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registre.attest.bundles import BundleLeaves, LeafRange, LineGroups
from registre.attest.entries import LeafView


class Listed(LeafView):
    __slots__ = ("_items",)

    def __init__(self, items: list[bytes]) -> None:
        self._items = items

    def __len__(self) -> int:
        return len(self._items)

    def _leaf(self, index: int) -> bytes:
        assert 0 <= index < len(self._items)  # the base checks the bounds
        return self._items[index]


leaves = st.lists(st.binary(max_size=4), max_size=12)
bound = st.none() | st.integers(-15, 15)


@given(leaves, st.integers(-15, 15), bound, bound, st.none() | st.integers(-4, 4).filter(bool))
def test_a_view_indexes_and_slices_as_a_list(
    items: list[bytes], index: int, start: int | None, stop: int | None, step: int | None
) -> None:
    view = Listed(items)
    assert list(view) == items and len(view) == len(items)
    if -len(items) <= index < len(items):
        assert view[index] == items[index]
    else:
        with pytest.raises(IndexError):
            view[index]
    assert list(view[start:stop:step]) == items[start:stop:step]


@given(st.lists(st.binary(min_size=1, max_size=6).filter(lambda b: b"\n" not in b), max_size=10),
       bound, bound, bound, bound)  # fmt: skip
def test_bundle_leaves_slices_are_ranges_that_read_as_a_list(
    items: list[bytes], start: int | None, stop: int | None, inner: int | None, end: int | None
) -> None:
    data = b"".join(item + b"\n" for item in items)
    hashes = LineGroups(items)
    bundle = BundleLeaves(lambda: iter([data[:3], data[3:]]) if data else iter([]), hashes)
    part = bundle[start:stop]
    assert isinstance(part, LeafRange) and list(part) == items[start:stop]
    again = part[inner:end]
    assert isinstance(again, LeafRange) and list(again) == items[start:stop][inner:end]
    assert [again[i] for i in range(len(again))] == items[start:stop][inner:end]
    assert list(bundle[::-1]) == items[::-1]
