"""lifecycle's RFC 8785 writer for float-free values equals attest's canonical encoder."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from registre.attest.canonical_json import canonical_bytes
from registre.context.jsontext import canonical_text
from registre.lifecycle.errors import LifecycleFormatError

_SCALARS = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53) + 1, 2**53 - 1)
    | st.text(st.characters(exclude_categories=("Cs",)))
)
VALUES = st.recursive(
    _SCALARS,
    lambda inner: (
        st.lists(inner, max_size=4)
        | st.dictionaries(st.text(st.characters(exclude_categories=("Cs",))), inner, max_size=4)
    ),
    max_leaves=20,
)


@given(VALUES)
def test_canonical_text_is_rfc8785(value: object) -> None:
    assert canonical_text(value).encode("utf-8") == canonical_bytes(value)


def test_keys_sort_by_utf16_code_units() -> None:
    # U+FF61 sorts after U+1F600 in code points but before it in UTF-16 code units.
    value = {"\U0001f600": 1, "\uff61": 2}
    assert canonical_text(value).encode() == canonical_bytes(value)
    assert canonical_text(value).index("\U0001f600") < canonical_text(value).index("\uff61")


@pytest.mark.parametrize("value", [0.5, {"a": [1.0]}, 2**53, b"x", (1, {2: 3})])
def test_values_outside_float_free_json_fail(value: object) -> None:
    with pytest.raises(LifecycleFormatError):
        canonical_text(value)
