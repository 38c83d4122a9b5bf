"""RFC 8785 canonical JSON text of float-free values, for rendering entries as text.

Entry bodies hold no floats (``specs/entries.md`` rule 2), and for such values RFC 8785 is
simple: object members sorted by the UTF-16 code units of their names, no insignificant
whitespace, integers in decimal, strings with only ``"``, ``\\`` and U+0000..U+001F escaped
(``\\b \\t \\n \\f \\r`` short, the others ``\\u00xx`` in lowercase hex). lifecycle may not import
attest, so this module writes that text itself; ``tests/context`` checks it against
:func:`registre.attest.canonical_json.jcs.canonical_bytes`.

:func:`json_fields` reads the other way: the ``"key": value`` pairs of a JSON text that
carry ids and values, as written there (what a summary quotes of a structured tool output).
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Final

from registre.lifecycle.errors import LifecycleFormatError

__all__ = ["canonical_text", "escape_string", "json_fields"]

_SHORT: Final = {
    '"': '\\"',
    "\\": "\\\\",
    "\b": "\\b",
    "\t": "\\t",
    "\n": "\\n",
    "\f": "\\f",
    "\r": "\\r",
}
_ESCAPES: Final[dict[int, str]] = {
    **{code: f"\\u{code:04x}" for code in range(0x20)},
    **{ord(char): escape for char, escape in _SHORT.items()},
}
_MAX_SAFE: Final = 2**53 - 1


def escape_string(text: str) -> str:
    """``text`` as the inside of an RFC 8785 string literal (without the surrounding quotes)."""
    return text.translate(_ESCAPES)


def canonical_text(value: object, path: str = "value") -> str:
    """The RFC 8785 text of ``value``: ``dict`` (``str`` keys), ``list``, ``tuple``, ``str``,
    ``int`` within +/-(2^53-1), ``bool``, ``None``. Raises
    :class:`~registre.lifecycle.errors.LifecycleFormatError` naming the path of anything else
    (floats included)."""
    parts: list[str] = []
    _write(value, path, parts)
    return "".join(parts)


def _write(value: object, path: str, parts: list[str]) -> None:
    if value is None:
        parts.append("null")
    elif value is True:
        parts.append("true")
    elif value is False:
        parts.append("false")
    elif type(value) is int:
        if not -_MAX_SAFE <= value <= _MAX_SAFE:
            raise LifecycleFormatError(path, f"integer {value} is beyond +/-(2^53-1)")
        parts.append(str(value))
    elif type(value) is str:
        parts.append(f'"{escape_string(value)}"')
    elif isinstance(value, (list, tuple)):
        parts.append("[")
        for index, item in enumerate(value):
            if index:
                parts.append(",")
            _write(item, f"{path}[{index}]", parts)
        parts.append("]")
    elif isinstance(value, Mapping):
        for key in value:
            if type(key) is not str:
                raise LifecycleFormatError(path, f"object key {key!r} is not a string")
        parts.append("{")
        for index, key in enumerate(sorted(value, key=_utf16_units)):
            if index:
                parts.append(",")
            parts.append(f'"{escape_string(key)}":')
            _write(value[key], f"{path}.{key}", parts)
        parts.append("}")
    else:
        raise LifecycleFormatError(
            path, f"expected a float-free JSON value, got a Python {type(value).__name__}"
        )


def _utf16_units(key: str) -> bytes:
    return key.encode("utf-16-be", "surrogatepass")


_IDENTIFIER: Final = re.compile(r"\d|[^\W\d_][_/.:][^\W_]|[a-z][A-Z]")
_FIELD: Final = re.compile(
    r'"((?:[^"\\\n]|\\.){1,60})"\s*:\s*("(?:[^"\\\n]|\\.){0,120}"|-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?|true|false)'
)
_KEYED: Final = re.compile(r'"([^"\\\n]{1,60})"(?=\s*:\s*[{\[])')
_ID_KEY: Final = re.compile(
    r"(?:^|[_\W])(?:ids?|key|code|number|no|ref|reference|uuid|sha\w*)$|Id$|ID$"
)


def json_fields(text: str, limit: int = 6) -> list[str]:
    """From ``text``, if it reads as a JSON object or array, the ``"key": value`` pairs
    (exactly as written in ``text``) that carry ids and values: keys naming an id
    (``user_id``, ``reservationId``, ``code``), then keys of nested values holding a digit
    (``"credit_card_9879898"``) and string values holding a digit or an identifier's marks,
    then numbers, in that order and each in text order; at most ``limit``. Empty for other
    text."""
    stripped = text.lstrip()
    if not stripped.startswith(("{", "[")):
        return []
    ids: list[str] = []
    specific: list[str] = []
    numbers: list[str] = []
    seen: set[str] = set()
    for match in _KEYED.finditer(text):
        if any(char.isdigit() for char in match[1]) and match[0] not in seen:
            seen.add(match[0])
            specific.append(match[0])
    for match in _FIELD.finditer(text):
        whole, key, value = match[0], match[1], match[2]
        if whole in seen:
            continue
        seen.add(whole)
        if value.startswith('"') and len(value) <= 2:
            continue
        if _ID_KEY.search(key):
            ids.append(whole)
        elif value.startswith('"') and _IDENTIFIER.search(value[1:-1]):
            specific.append(whole)
        elif not value.startswith('"') and value not in ("true", "false"):
            numbers.append(whole)
    return (ids + specific + numbers)[:limit]
