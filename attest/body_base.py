"""What every body check shares: the limits, the two errors, and how values and paths read.

Part of the body schemas (:mod:`registre.attest.bodies`, ``specs/entries.md``):
:class:`BodySchemaError` messages start with the path of the offending field and say what
was expected, e.g. ``body.arguments: expected an object, got a list``; :func:`member` and
:func:`describe` write those paths and type names.
"""

from __future__ import annotations

import json
import re

from registre.attest.errors import MalformedError
from registre.lifecycle.codec import KINDS as LIFECYCLE_CODEC_KINDS

__all__ = [
    "LIFECYCLE_KINDS",
    "MAX_BODY_BYTES",
    "MAX_DEPTH",
    "MAX_OBJECT_BYTES",
    "BodySchemaError",
    "UnknownKindError",
    "compact_size",
    "describe",
    "member",
    "member_suffix",
    "utf8_size",
    "wrong",
]

MAX_OBJECT_BYTES = 1 << 20
"""Largest free-form object (tool arguments), as compact JSON: 1 MiB."""

MAX_BODY_BYTES = 2 << 20
"""Largest body as a whole, as compact JSON: 2 MiB."""

MAX_DEPTH = 32
"""Deepest nesting of objects and lists in a body (the body itself is depth 1)."""

LIFECYCLE_KINDS: frozenset[str] = frozenset(LIFECYCLE_CODEC_KINDS)
"""Kinds whose bodies ``registre.lifecycle.codec`` defines and checks."""


class UnknownKindError(MalformedError):
    """An entry kind registre does not define; the entry is refused before it is written."""


class BodySchemaError(MalformedError):
    """A body that does not follow its kind's schema. ``path`` names the offending field."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        super().__init__(f"{path}: {problem}")


_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_NAMES = {
    dict: "an object",
    list: "a list",
    str: "a string",
    bool: "a boolean",
    int: "an integer",
    float: "a float",
    type(None): "null",
}


def describe(value: object) -> str:
    """How a value's type reads in a message: 'a list', 'a string', 'null', ..."""
    return _NAMES.get(type(value), f"a Python {type(value).__name__}")


def member_suffix(key: str) -> str:
    """What :func:`member` appends to a path: ``.name`` for identifier-like keys,
    ``["odd key"]`` for the rest."""
    if _IDENTIFIER.match(key):
        return f".{key}"
    return f"[{json.dumps(key)}]"


def member(path: str, key: str) -> str:
    """``body.name`` for identifier-like keys, ``body["odd key"]`` for the rest."""
    return path + member_suffix(key)


def utf8_size(text: str, path: str) -> int:
    """The UTF-8 size of ``text``; BodySchemaError (at ``path``) if it holds a lone
    surrogate, which has no UTF-8 form."""
    if text.isascii():
        return len(text)
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise BodySchemaError(
            path,
            f"holds lone surrogate U+{ord(text[exc.start]):04X} at character {exc.start}; "
            "strings must be Unicode text with a UTF-8 form",
        ) from None


def compact_size(value: object) -> int:
    """Size of ``value`` as compact JSON (its canonical size, give or take key order)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


def wrong(path: str, expected: str, value: object) -> BodySchemaError:
    """The error for a value of the wrong type: ``PATH: expected X, got a Y``."""
    return BodySchemaError(path, f"expected {expected}, got {describe(value)}")
