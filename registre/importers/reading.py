"""Reading a transcript file as a stream of JSON values, in constant memory where it can.

Three layouts, told apart by the first bytes:

* **JSONL** -- one JSON value a line (blank lines skipped), read a line at a time; places are
  ``line N`` (1-based);
* **a JSON array** (the file starts with ``[``) -- read item by item with a bounded buffer;
  places are ``$[N]``;
* **one JSON document** spread over several lines (the first line is not a whole value) --
  read whole (memory grows with the file); its place is ``$``.

No value may take more than :data:`MAX_VALUE_BYTES` (a JSONL line, an array item): a longer
one is refused by its size before anything decodes it, and memory stays bounded by it -- an
entry body is at most ``MAX_BODY_BYTES`` (2 MiB) anyway (issue 29 item 14). Nesting deeper
than the strict reader's limit is refused with a line, never a ``RecursionError``.

Every value is read with the strict reader
(:func:`registre.attest.canonical_json.strict_json.parse_strict`:
no duplicate keys, NaN, unsafe integers, lone surrogates); a bad value raises
:class:`~registre.importers.core.TranscriptError` naming its place.
"""

from __future__ import annotations

import codecs
import json
from collections.abc import Iterator
from typing import IO, Any

from registre.attest.canonical_json import parse_strict
from registre.attest.entries import MAX_BODY_BYTES
from registre.errors import MalformedError
from registre.importers.core import At

__all__ = ["Layout", "read_values"]

Layout = str
"""``"jsonl"``, ``"array"`` or ``"document"``."""

_CHUNK = 1 << 20
MAX_VALUE_BYTES = 4 * MAX_BODY_BYTES
"""The largest JSONL line or array item read (8 MiB): a source message makes a few entries,
each body at most ``MAX_BODY_BYTES``."""
_WHITESPACE = " \t\r\n"


def _strict(data: bytes | str, at: At) -> Any:
    try:
        return parse_strict(data)
    except MalformedError as exc:
        at.fail(f"invalid JSON: {exc}")


def _line(stream: IO[bytes], number: int) -> bytes:
    """The next line of ``stream``, refused (naming it) past :data:`MAX_VALUE_BYTES`: memory
    never holds more than that of it."""
    line = stream.readline(MAX_VALUE_BYTES + 1)
    if len(line) > MAX_VALUE_BYTES:
        At(number, "").fail(
            f"the line is longer than {MAX_VALUE_BYTES >> 20} MiB; an entry body is at most "
            f"{MAX_BODY_BYTES >> 20} MiB"
        )
    return line


def read_values(stream: IO[bytes]) -> tuple[Layout, Iterator[tuple[Any, At]]]:
    """The file's layout and its values with their places, read lazily from ``stream``."""
    first = stream.readline(MAX_VALUE_BYTES + 1)
    stripped = first.lstrip()
    skipped = 0
    while first and not stripped:  # leading blank lines
        skipped += 1
        first = stream.readline(MAX_VALUE_BYTES + 1)
        stripped = first.lstrip()
    if len(first) > MAX_VALUE_BYTES and not stripped.startswith(b"["):
        At(skipped + 1, "").fail(
            f"the line is longer than {MAX_VALUE_BYTES >> 20} MiB; an entry body is at most "
            f"{MAX_BODY_BYTES >> 20} MiB"
        )
    if stripped.startswith(b"["):
        return "array", _array(first, stream)
    if first and not _whole(first):
        return "document", _document(first, stream)
    return "jsonl", _lines(first, stream)


def _whole(line: bytes) -> bool:
    """Whether ``line`` holds one complete JSON value (so the file is JSONL)."""
    try:
        json.loads(line)
    except RecursionError:
        return True  # one value, nested too deep: the strict reader names it
    except ValueError:
        return False
    return True


def _document(first: bytes, stream: IO[bytes]) -> Iterator[tuple[Any, At]]:
    rest = stream.read()
    at = At(None, "$")
    try:
        value = parse_strict(first + rest)
    except MalformedError as exc:
        if _whole(rest.split(b"\n", 1)[0]):  # JSONL whose first line is broken
            At(1, "").fail(f"invalid JSON: {exc}")
        at.fail(f"invalid JSON: {exc}")
    yield value, at


def _lines(first: bytes, stream: IO[bytes]) -> Iterator[tuple[Any, At]]:
    number = 0
    line = first
    while line:
        number += 1
        if line.strip():
            at = At(number, "")
            yield _strict(line, at), at
        line = _line(stream, number + 1)


def _array(first: bytes, stream: IO[bytes]) -> Iterator[tuple[Any, At]]:
    """Items of a top-level JSON array; the buffer holds about one item (plus a chunk)."""
    decoder = codecs.getincrementaldecoder("utf-8")()
    raw = json.JSONDecoder()
    try:
        buffer = decoder.decode(first)
    except UnicodeDecodeError:
        At(None, "$").fail("invalid JSON: the file is not UTF-8")
    position = buffer.index("[") + 1
    done = False
    index = 0
    expect_item = True  # after "[" or ","
    while True:
        while position < len(buffer) and buffer[position] in _WHITESPACE:
            position += 1
        if position >= len(buffer):
            if done:
                At(None, f"$[{index}]").fail("invalid JSON: the file ends inside the array")
            buffer, position, done = _more(buffer, position, decoder, stream)
            continue
        char = buffer[position]
        if char == "]":
            tail = buffer[position + 1 :] + (
                "" if done else decoder.decode(stream.read(), final=True)
            )
            if tail.strip():
                At(None, "$").fail("invalid JSON: data after the array")
            return
        if char == ",":
            if expect_item:
                At(None, f"$[{index}]").fail("invalid JSON: expected an item, got ','")
            expect_item = True
            position += 1
            continue
        if not expect_item:
            At(None, f"$[{index}]").fail("invalid JSON: expected ',' or ']' between items")
        if len(buffer) - position > MAX_VALUE_BYTES:
            At(None, f"$[{index}]").fail(
                f"the item is larger than {MAX_VALUE_BYTES >> 20} MiB; an entry body is at most "
                f"{MAX_BODY_BYTES >> 20} MiB"
            )
        try:
            _value, end = raw.raw_decode(buffer, position)
        except RecursionError:
            _strict(buffer[position:], At(None, f"$[{index}]"))  # names the nesting
            At(None, f"$[{index}]").fail("invalid JSON: nested too deep")
        except json.JSONDecodeError:
            if done:
                _strict(buffer[position:], At(None, f"$[{index}]"))
                At(None, f"$[{index}]").fail("invalid JSON: the item is cut short")
            buffer, position, done = _more(buffer, position, decoder, stream)
            continue
        if end == len(buffer) and not done:  # a number might go on in the next chunk
            buffer, position, done = _more(buffer, position, decoder, stream)
            continue
        at = At(None, f"$[{index}]")
        yield _strict(buffer[position:end], at), at
        index += 1
        expect_item = False
        position = end


def _more(
    buffer: str, position: int, decoder: codecs.IncrementalDecoder, stream: IO[bytes]
) -> tuple[str, int, bool]:
    chunk = stream.read(_CHUNK)
    try:
        text = decoder.decode(chunk, final=not chunk)
    except UnicodeDecodeError:
        At(None, "$").fail("invalid JSON: the file is not UTF-8")
    return buffer[position:] + text, 0, not chunk
