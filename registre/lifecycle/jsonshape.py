"""Strict readers for JSON values, each naming the field path of what it refuses.

JSON values here are what a strict JSON parser returns: ``dict`` (string keys), ``list``,
``str``, ``int``, ``bool`` and ``None``. Floats are never accepted, ``bool`` is never an
integer, strings must be valid Unicode (no lone surrogates) and objects must have exactly
the fields asked for. Every failure raises :class:`~registre.lifecycle.errors.LifecycleFormatError`
whose message starts with the path (``body.request.statements[2].cites``).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Final, TypeVar

from registre.lifecycle.errors import LifecycleFormatError

__all__ = [
    "MAX_BATCH",
    "MAX_CITES",
    "MAX_ENTRY_NAME_BYTES",
    "MAX_ENTRY_TEXT_BYTES",
    "MAX_ITEMS",
    "MAX_LIFECYCLE_NAME_BYTES",
    "MAX_LIFECYCLE_TEXT_BYTES",
    "MAX_UINT",
    "read_bool",
    "read_id",
    "read_list",
    "read_name",
    "read_object",
    "read_text",
    "read_uint",
]

T = TypeVar("T")

# Size caps on strings, in UTF-8 bytes: each defined here once. Lifecycle bodies
# (specs/lifecycle.md "Entry bodies") and the bodies registre defines itself
# (specs/entries.md section 2: turn, tool.call, tool.result, decision, context.compaction,
# model.call; checked by registre.attest.entries.bodies) have different caps.
MAX_LIFECYCLE_TEXT_BYTES: Final = 65536
"""Cap on a text of a lifecycle body: a statement, conclusion or pin text, an unpin reason, a
rejection message (64 KiB). The default cap of :func:`read_text`."""
MAX_LIFECYCLE_NAME_BYTES: Final = 1024
"""Cap on a name of a lifecycle body: a reference id (also as a citation), a source name, a
location (1 KiB). The cap of :func:`read_name`."""
MAX_ENTRY_TEXT_BYTES: Final = 1 << 20
"""Cap on a *text* field of a body registre defines (turn text, tool output, summary line,
``arguments_json``): 1 MiB (``specs/entries.md`` section 2)."""
MAX_ENTRY_NAME_BYTES: Final = 256
"""Cap on a *name* field of a body registre defines (tool name, call id, model name, summarizer
name and version, token counter): 256 bytes (``specs/entries.md`` section 2)."""
MAX_ITEMS: Final = 100_000
"""Longest list inside an entry body (summary lines, pointer spans, stubs)."""
MAX_BATCH: Final = 1000
"""Cap on the references of one read and the statements of one upsert."""
MAX_CITES: Final = 1000
"""Cap on the citations of one statement or conclusion."""
MAX_UINT: Final = 2**53 - 1
"""Largest integer accepted (the JSON interoperable range of RFC 8785)."""

_CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def read_object(value: object, path: str, fields: tuple[str, ...]) -> dict[str, object]:
    """``value`` as an object with exactly ``fields`` (no more, no fewer)."""
    if not isinstance(value, dict):
        raise LifecycleFormatError(path, f"expected an object with fields {_names(fields)}")
    for key in value:
        if not isinstance(key, str):
            raise LifecycleFormatError(path, f"object keys must be strings, got {key!r}")
        if key not in fields:
            raise LifecycleFormatError(
                f"{path}.{key}", f"unknown field; the allowed fields are {_names(fields)}"
            )
    for name in fields:
        if name not in value:
            raise LifecycleFormatError(f"{path}.{name}", "missing field")
    return value


def read_list(
    value: object,
    path: str,
    item: Callable[[object, str], T],
    *,
    max_items: int,
    min_items: int = 0,
    what: str,
    distinct: bool = False,
) -> tuple[T, ...]:
    """``value`` as a list of ``min_items..max_items`` items read by ``item``."""
    if not isinstance(value, list):
        raise LifecycleFormatError(path, f"expected a list of {what}")
    if len(value) < min_items:
        raise LifecycleFormatError(path, f"expected a non-empty list of {what}")
    if len(value) > max_items:
        raise LifecycleFormatError(
            path, f"{len(value)} items exceed the cap of {max_items}; split the request"
        )
    items = tuple(item(element, f"{path}[{index}]") for index, element in enumerate(value))
    if distinct:
        seen: set[T] = set()
        for index, element in enumerate(items):
            if element in seen:
                raise LifecycleFormatError(
                    f"{path}[{index}]", f"{element!r} appears twice; list each once"
                )
            seen.add(element)
    return items


def read_text(value: object, path: str, max_bytes: int = MAX_LIFECYCLE_TEXT_BYTES) -> str:
    """A string of at most ``max_bytes`` UTF-8 bytes (may be empty or blank)."""
    if not isinstance(value, str):
        raise LifecycleFormatError(path, f"expected a string, got {_type_name(value)}")
    try:
        size = len(value.encode("utf-8"))
    except UnicodeEncodeError as error:
        raise LifecycleFormatError(
            path, f"contains a lone surrogate at character {error.start}; send valid Unicode"
        ) from None
    if size > max_bytes:
        raise LifecycleFormatError(path, f"{size} bytes exceed the cap of {max_bytes} bytes")
    return value


def read_name(value: object, path: str) -> str:
    """A non-empty string of at most ``MAX_LIFECYCLE_NAME_BYTES`` bytes without control
    characters."""
    text = read_text(value, path, MAX_LIFECYCLE_NAME_BYTES)
    if not text:
        raise LifecycleFormatError(path, "expected a non-empty string")
    control = _CONTROL.search(text)
    if control is not None:
        raise LifecycleFormatError(
            path, f"contains control character U+{ord(control.group()):04X} at {control.start()}"
        )
    return text


def read_id(value: object, path: str, prefixes: tuple[str, ...]) -> str:
    """An identifier ``<prefix>-N`` (N a decimal without leading zeros, 1 <= N <= 2^53-1)."""
    if not isinstance(value, str):
        raise LifecycleFormatError(path, f"expected an id string, got {_type_name(value)}")
    prefix, dash, number = value.partition("-")
    if (
        not dash
        or prefix not in prefixes
        or not number.isascii()
        or not number.isdigit()
        or number.startswith("0")
        or len(number) > 16
        or int(number) > MAX_UINT
    ):
        shapes = " or ".join(f"'{p}-N'" for p in prefixes)
        raise LifecycleFormatError(
            path, f"expected an id of the form {shapes} (N >= 1, no leading zeros), got {value!r}"
        )
    return value


def read_uint(value: object, path: str) -> int:
    """An integer in 0..2^53-1 (booleans and floats refused)."""
    if type(value) is not int:
        raise LifecycleFormatError(path, f"expected an integer, got {_type_name(value)}")
    if not 0 <= value <= MAX_UINT:
        raise LifecycleFormatError(path, f"expected an integer in 0..{MAX_UINT}, got {value}")
    return value


def read_bool(value: object, path: str) -> bool:
    """``true`` or ``false``."""
    if not isinstance(value, bool):
        raise LifecycleFormatError(path, f"expected true or false, got {_type_name(value)}")
    return value


def _names(fields: tuple[str, ...]) -> str:
    return ", ".join(f'"{name}"' for name in fields)


def _type_name(value: object) -> str:
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "a boolean"
    if isinstance(value, int):
        return "an integer"
    if isinstance(value, float):
        return "a number with a fraction or exponent (floats are not accepted)"
    if isinstance(value, str):
        return "a string"
    if isinstance(value, list):
        return "a list"
    if isinstance(value, dict):
        return "an object"
    return type(value).__name__
