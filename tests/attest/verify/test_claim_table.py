"""Step 7's packed admissions (registre.attest.verify._claim_table) answer as the dict they
replace."""

from __future__ import annotations

import sys

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registre.attest.verify import Admitted, AdmittedTable

_IDS = st.one_of(
    st.integers(1, 3000).map(lambda n: f"ev-{n}"),
    st.sampled_from(["ev-9007199254740991", "ev-01", "ev-0", "ev-", "cc-3", "ev-1a", "x", "ev-٣"]),
    st.integers(10**6, 10**20).map(lambda n: f"ev-{n}"),
)
_ADMITTED = st.builds(
    Admitted, st.integers(0, 2**40), st.lists(st.sampled_from(["r1", "r2", "ev-1"])).map(tuple)
)


@given(st.lists(st.tuples(_IDS, _ADMITTED), max_size=60), st.lists(_IDS, max_size=20))
def test_the_table_answers_as_a_dict(writes: list[tuple[str, Admitted]], probes: list[str]) -> None:
    table, plain = AdmittedTable("ev"), {}
    for key, value in writes:
        table[key] = value
        plain[key] = value
        assert len(table) == len(plain)
    assert table == plain and dict(table) == plain and set(table) == set(plain)
    for key in [*plain, *probes, "cc-1", ""]:
        assert (key in table) == (key in plain)
        assert table.get(key) == plain.get(key)
        if key not in plain:
            with pytest.raises(KeyError):
                table[key]


def test_far_or_odd_ids_do_not_grow_the_arrays() -> None:
    table = AdmittedTable("ev")
    table["ev-9007199254740991"] = Admitted(5, ("r1",))
    table["ev-100000"] = Admitted(6, ())
    assert len(table._seqs) == 0 and len(table) == 2
    for number in range(1, 5001):
        table[f"ev-{number}"] = Admitted(number, ("r1",))
    assert len(table._seqs) == 5001 and len(table._others) == 2
    packed = sys.getsizeof(table._seqs) + sys.getsizeof(table._cites)
    assert packed / 5000 < 20  # bytes an id, against ~120 in a dict of Admitted
