"""Issue 29 item 14: hostile transcript files are refused by size and depth before they are
decoded -- one TranscriptError naming the place, in bounded memory and linear time."""

from __future__ import annotations

import io
import tracemalloc

import pytest

from registre.importers import TranscriptError, open_transcript
from registre.importers.reading import MAX_VALUE_BYTES, read_values

DEEP = 100_000


def _drain(data: bytes) -> None:
    opened = open_transcript(io.BytesIO(data))
    for _value in opened.values:
        pass


@pytest.mark.parametrize(
    "data",
    [
        b"[" * DEEP + b"]" * DEEP + b"\n",
        b'{"role":"user","content":"hi"}\n' + b"[" * DEEP + b"]" * DEEP + b"\n",
        b"[" + b"[" * DEEP + b"]" * DEEP + b"]",
        b'[{"role":"user","content":"hi"},' + b"[" * DEEP + b"]" * DEEP + b"]",
    ],
    ids=["first-line", "later-line", "first-item", "later-item"],
)
def test_deeply_nested_transcript_crashes_import_fail(data: bytes) -> None:
    with pytest.raises(TranscriptError, match=r"invalid JSON|nest"):
        _drain(data)


def _big(layout: str) -> bytes:
    text = b'{"role":"user","content":"' + b"x" * (MAX_VALUE_BYTES + (4 << 20)) + b'"}'
    return text + b"\n" if layout == "line" else b"[" + text + b"]"


@pytest.mark.parametrize("layout", ["line", "item"])
def test_oversized_value_blows_up_import_fail(layout: str) -> None:
    """A value past the cap is refused by its size, with memory near the cap: never the whole
    value decoded (or re-decoded chunk after chunk)."""
    data = _big(layout)
    tracemalloc.start()
    try:
        with pytest.raises(TranscriptError, match=r"larger than|longer than"):
            _layout, values = read_values(io.BytesIO(data))
            for _value in values:
                pass
        _now, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 6 * MAX_VALUE_BYTES  # the file is held by the test; decoding it would be more
