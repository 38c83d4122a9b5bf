"""The field checks of the body schemas: each takes ``(value, path)`` and raises
:class:`~registre.attest.entries.body_base.BodySchemaError` naming the first problem.

Part of :mod:`registre.attest.entries.bodies` (``specs/entries.md``). Texts are capped at
:data:`~registre.lifecycle.jsonshape.MAX_ENTRY_TEXT_BYTES`, names at
:data:`~registre.lifecycle.jsonshape.MAX_ENTRY_NAME_BYTES` (UTF-8 bytes), lists at
:data:`~registre.lifecycle.jsonshape.MAX_ITEMS` items. A check builds the path of an item
only to raise, and the policy check remembers the policies it passed (a pure verdict on a
few integers, the same for every entry of a run): both change the time, not the verdict.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from registre.attest.canonical_json import parse_canonical
from registre.attest.entries.body_base import (
    MAX_OBJECT_BYTES,
    BodySchemaError,
    compact_size,
    member,
    utf8_size,
    wrong,
)
from registre.context.lifecycle_block import LIFECYCLE_BLOCK_VERSIONS
from registre.context.policy import parse_policy
from registre.errors import MalformedError
from registre.lifecycle.errors import LifecycleFormatError
from registre.lifecycle.jsonshape import MAX_ENTRY_NAME_BYTES, MAX_ENTRY_TEXT_BYTES, MAX_ITEMS

__all__ = [
    "SEQ",
    "SHORT_TEXT",
    "TEXT",
    "Check",
    "arguments_json",
    "block_version",
    "boolean",
    "elisions",
    "entry_json",
    "free_object",
    "integer",
    "list_of",
    "name",
    "one_of",
    "policy",
    "recalls",
    "seqs",
    "sha256_hex",
    "source",
    "spans",
    "text",
]

Check = Callable[[object, str], None]
"""A field check: returns None or raises BodySchemaError for ``(value, path)``."""

_SHA256_HEX = re.compile(r"[0-9a-f]{64}\Z")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")
_MAX_POLICIES = 256


def text(*, max_bytes: int = MAX_ENTRY_TEXT_BYTES, allow_empty: bool = False) -> Check:
    """A string of at most ``max_bytes`` UTF-8 bytes (non-empty unless ``allow_empty``)."""

    def check(value: object, path: str) -> None:
        if not isinstance(value, str):
            raise wrong(path, "a string", value)
        if not value and not allow_empty:
            raise BodySchemaError(path, "expected a non-empty string, got an empty one")
        if value.isascii() and len(value) <= max_bytes:
            return  # ASCII: one byte a character, no lone surrogate
        size = utf8_size(value, path)
        if size > max_bytes:
            raise BodySchemaError(
                path, f"expected at most {max_bytes} bytes of UTF-8 text, got {size}"
            )

    return check


TEXT = text()
SHORT_TEXT = text(max_bytes=MAX_ENTRY_NAME_BYTES)


def name(value: object, path: str) -> None:
    """A name or identifier: 1 to MAX_ENTRY_NAME_BYTES bytes, no control characters."""
    SHORT_TEXT(value, path)
    control = _CONTROL.search(str(value))
    if control:
        raise BodySchemaError(
            path, f"expected a name without control characters, got U+{ord(control[0]):04X}"
        )


def one_of(*choices: str) -> Check:
    """One of these strings exactly."""
    allowed = frozenset(choices)

    def check(value: object, path: str) -> None:
        if type(value) is str and value in allowed:
            return
        if value not in choices:
            wanted = " or ".join(json.dumps(choice) for choice in choices)
            raise BodySchemaError(path, f"expected {wanted}, got {json.dumps(value)}")

    return check


def integer(minimum: int) -> Check:
    """An integer (not a boolean) at least ``minimum``."""

    def check(value: object, path: str) -> None:
        if type(value) is not int:
            raise wrong(path, "an integer", value)
        if value < minimum:
            raise BodySchemaError(path, f"expected an integer >= {minimum}, got {value}")

    return check


SEQ = integer(0)


def block_version(value: object, path: str) -> None:
    """A lifecycle block version this reader knows."""
    if type(value) is not int or value not in LIFECYCLE_BLOCK_VERSIONS:
        known = " or ".join(str(version) for version in LIFECYCLE_BLOCK_VERSIONS)
        raise BodySchemaError(
            path,
            f"expected {known} (a lifecycle block version), got {json.dumps(value)}",
        )


def boolean(value: object, path: str) -> None:
    """true or false."""
    if type(value) is not bool:
        raise wrong(path, "a boolean", value)


def sha256_hex(value: object, path: str) -> None:
    """A SHA-256 digest as 64 lowercase hex digits."""
    if not isinstance(value, str):
        raise wrong(path, "a string", value)
    if not _SHA256_HEX.match(value):
        raise BodySchemaError(path, "expected a SHA-256 digest as 64 lowercase hex digits")


def free_object(value: object, path: str) -> None:
    """Any JSON object within the size cap (the rules for every body still apply)."""
    if not isinstance(value, dict):
        raise wrong(path, "an object", value)
    size = compact_size(value)
    if size > MAX_OBJECT_BYTES:
        raise BodySchemaError(
            path, f"expected at most {MAX_OBJECT_BYTES} bytes as compact JSON, got {size}"
        )


def _items(value: object, path: str, what: str) -> list[Any]:
    """``value`` as a list of 1 to :data:`MAX_ITEMS` items (``what``: one item, named)."""
    if not isinstance(value, list):
        raise wrong(path, "a list", value)
    if not value:
        raise BodySchemaError(path, f"expected at least one {what}, got an empty list")
    if len(value) > MAX_ITEMS:
        raise BodySchemaError(path, f"expected at most {MAX_ITEMS} items, got {len(value)}")
    return value


def seqs(value: object, path: str) -> None:
    """A non-empty, strictly increasing list of sequence numbers (so each has one spelling)."""
    value = _items(value, path, "sequence number")
    previous = -1
    for index, item in enumerate(value):
        if type(item) is not int or item <= previous:
            SEQ(item, f"{path}[{index}]")
            raise BodySchemaError(
                f"{path}[{index}]",
                f"expected a number greater than {previous} (sorted, no repeats), got {item}",
            )
        previous = item


def spans(value: object, path: str) -> None:
    """A non-empty list of spans ``[first, last]`` (first <= last), sorted, neither
    overlapping nor touching, so each set of pointers has one spelling."""
    value = _items(value, path, "span [first, last]")
    previous = -2
    for index, span in enumerate(value):
        if (
            type(span) is list
            and len(span) == 2
            and type(span[0]) is int
            and type(span[1]) is int
            and previous + 1 < span[0] <= span[1]
        ):
            previous = span[1]  # the checks below would pass: the first is >= 0 too
            continue
        _span(span, f"{path}[{index}]", previous)
        previous = span[1]


def _span(span: Any, span_path: str, previous: int) -> None:
    """One span ``[first, last]`` after ``previous``, every check in order."""
    if not isinstance(span, list) or len(span) != 2:
        raise BodySchemaError(span_path, "expected a span [first, last]")
    SEQ(span[0], f"{span_path}[0]")
    SEQ(span[1], f"{span_path}[1]")
    if span[0] > span[1]:
        raise BodySchemaError(f"{span_path}[1]", f"expected a number >= {span[0]}, got {span[1]}")
    if span[0] <= previous + 1:
        raise BodySchemaError(
            span_path,
            f"expected a span starting after {previous + 1} (sorted spans that neither "
            "overlap nor touch: write [[2,5]], not [[2,3],[4,5]])",
        )


def elisions(value: object, path: str) -> None:
    """A non-empty list of ``[seq, head_chars, tail_chars]`` by strictly increasing seq."""
    value = _items(value, path, "elision")
    previous = -1
    for index, elision in enumerate(value):
        item_path = f"{path}[{index}]"
        if not isinstance(elision, list) or len(elision) != 3:
            raise BodySchemaError(item_path, "expected [seq, head_chars, tail_chars]")
        for position, number in enumerate(elision):
            SEQ(number, f"{item_path}[{position}]")
        if elision[0] <= previous:
            raise BodySchemaError(
                f"{item_path}[0]",
                f"expected a number greater than {previous} (sorted, no repeats), got {elision[0]}",
            )
        previous = elision[0]


def recalls(value: object, path: str) -> None:
    """A model call's recalls: a non-empty list of ``{"seq", "sha256", "bytes"?}`` by
    strictly increasing seq, ``bytes`` a range ``[start, end]`` with start < end (whether it
    lies inside the entry's text is the verifier's check, ``specs/context.md`` section 4.2)."""
    value = _items(value, path, "recall")
    previous = -1
    for index, item in enumerate(value):
        item_path = f"{path}[{index}]"
        if not isinstance(item, dict):
            raise wrong(item_path, "an object", item)
        for key in item:
            if key not in ("seq", "sha256", "bytes"):
                raise BodySchemaError(
                    member(item_path, key),
                    "unknown field; the fields allowed here are seq, sha256, bytes",
                )
        for key in ("seq", "sha256"):
            if key not in item:
                raise BodySchemaError(member(item_path, key), "required field is missing")
        SEQ(item["seq"], f"{item_path}.seq")
        if item["seq"] <= previous:
            raise BodySchemaError(
                f"{item_path}.seq",
                f"expected a number greater than {previous} (sorted, no repeats), "
                f"got {item['seq']}",
            )
        previous = item["seq"]
        sha256_hex(item["sha256"], f"{item_path}.sha256")
        if "bytes" in item:
            span = item["bytes"]
            span_path = f"{item_path}.bytes"
            if not isinstance(span, list) or len(span) != 2:
                raise BodySchemaError(span_path, "expected a byte range [start, end]")
            SEQ(span[0], f"{span_path}[0]")
            SEQ(span[1], f"{span_path}[1]")
            if span[0] >= span[1]:
                raise BodySchemaError(
                    f"{span_path}[1]", f"expected a number > {span[0]}, got {span[1]}"
                )


_POLICIES_PASSED: set[tuple[tuple[str, int], ...]] = set()


def policy(value: object, path: str) -> None:
    """The compaction policy: exactly the six integer fields of
    ``registre.context.Policy``. A policy of integers that passed is remembered
    (by its items, in order, each an ``int`` exactly): the verdict depends on nothing else."""
    remembered: tuple[tuple[str, int], ...] | None = None
    if type(value) is dict and all(type(number) is int for number in value.values()):
        remembered = tuple(value.items())
        if remembered in _POLICIES_PASSED:
            return
    try:
        parse_policy(value, path)
    except LifecycleFormatError as exc:
        raise BodySchemaError(exc.path, exc.problem) from None
    if remembered is not None:
        if len(_POLICIES_PASSED) >= _MAX_POLICIES:
            _POLICIES_PASSED.clear()
        _POLICIES_PASSED.add(remembered)


def list_of(item_check: Check, *, max_items: int = MAX_ITEMS) -> Check:
    """A list of at most ``max_items`` items, each passing ``item_check``."""

    def check(value: object, path: str) -> None:
        if not isinstance(value, list):
            raise wrong(path, "a list", value)
        if len(value) > max_items:
            raise BodySchemaError(path, f"expected at most {max_items} items, got {len(value)}")
        for index, item in enumerate(value):
            item_check(item, f"{path}[{index}]")

    return check


def _canonical_object(value: str, path: str, what: str) -> object:
    """The JSON value whose RFC 8785 text is ``value`` (BodySchemaError if it is none)."""
    try:
        return parse_canonical(value.encode("utf-8"))
    except MalformedError as exc:
        raise BodySchemaError(path, f"expected the {what} of an object: {exc}") from None


def arguments_json(value: object, path: str) -> None:
    """Tool arguments holding a non-integer number, as their RFC 8785 canonical JSON text."""
    if not isinstance(value, str):
        raise wrong(path, "a string", value)
    TEXT(value, path)
    arguments = _canonical_object(value, path, "RFC 8785 canonical JSON text")
    if not isinstance(arguments, dict):
        raise wrong(path, "the JSON text of an object", arguments)
    if not _holds_float(arguments):
        raise BodySchemaError(
            path,
            "holds no non-integer number; write these arguments as the object "
            "body.arguments instead (arguments_json is only for arguments with floats)",
        )


def entry_json(value: object, path: str) -> None:
    """A mirrored transcript line: the RFC 8785 canonical JSON text of an object (any numbers,
    floats too: the text is signed as a string)."""
    if not isinstance(value, str):
        raise wrong(path, "a string", value)
    TEXT(value, path)
    line = _canonical_object(value, path, "RFC 8785 canonical JSON text")
    if not isinstance(line, dict):
        raise wrong(path, "the JSON text of an object", line)


def _holds_float(value: object) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_holds_float(item) for item in value.values())
    if isinstance(value, list):
        return any(_holds_float(item) for item in value)
    return False


_SOURCE_FIELDS = ("format", "fill", "message", "message_json")
_FILL_FIELDS = ("text", "content", "call_id", "name", "input", "arguments")


def source(value: object, path: str) -> None:
    """Where an imported entry came from (specs/entries.md section 6): ``format`` (a name),
    ``fill`` (the message leaves the entry supplies: body field -> RFC 6901 JSON Pointer), on a
    message's first entry the rest of the message verbatim: ``message`` (an object) or
    ``message_json`` (its RFC 8785 text, when it holds non-integer numbers)."""
    if not isinstance(value, dict):
        raise wrong(path, "an object", value)
    for key in value:
        if key not in _SOURCE_FIELDS:
            raise BodySchemaError(
                member(path, key),
                "unknown field; the fields allowed here are format, fill, message, message_json",
            )
    if "format" not in value:
        raise BodySchemaError(f"{path}.format", "required field is missing")
    name(value["format"], f"{path}.format")
    if "message" in value and "message_json" in value:
        raise BodySchemaError(path, "expected at most one of the fields message and message_json")
    if "message" in value and not isinstance(value["message"], dict):
        raise wrong(f"{path}.message", "an object", value["message"])
    if "message_json" in value:
        message = value["message_json"]
        if not isinstance(message, str):
            raise wrong(f"{path}.message_json", "a string", message)
        parsed = _canonical_object(message, f"{path}.message_json", "RFC 8785 text")
        if not isinstance(parsed, dict):
            raise wrong(f"{path}.message_json", "the JSON text of an object", parsed)
    if "fill" in value:
        fills = value["fill"]
        if not isinstance(fills, dict):
            raise wrong(f"{path}.fill", "an object", fills)
        for field, where in fills.items():
            fill_path = member(f"{path}.fill", field)
            if field not in _FILL_FIELDS:
                raise BodySchemaError(
                    fill_path,
                    "unknown field; the fields allowed here are " + ", ".join(_FILL_FIELDS),
                )
            if not isinstance(where, str) or not where.startswith("/"):
                raise BodySchemaError(
                    fill_path, "expected an RFC 6901 JSON Pointer into the message, e.g. /content"
                )
