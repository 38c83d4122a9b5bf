"""What every body check shares: the limits, the two errors, and how values and paths read.

Part of the body schemas (:mod:`registre.attest.entries.bodies`, ``specs/entries.md``):
:class:`BodySchemaError` messages start with the path of the offending field and say what
was expected, e.g. ``body.arguments: expected an object, got a list``; :func:`member` and
:func:`describe` write those paths and type names.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from registre.errors import MalformedError
from registre.kinds import LIFECYCLE_KIND_NAMES

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
    "plain_compact_size",
    "utf8_size",
    "wrong",
]

MAX_OBJECT_BYTES = 1 << 20
"""Largest free-form object (tool arguments), as compact JSON: 1 MiB."""

MAX_BODY_BYTES = 2 << 20
"""Largest body as a whole, as compact JSON: 2 MiB."""

MAX_DEPTH = 32
"""Deepest nesting of objects and lists in a body (the body itself is depth 1)."""

LIFECYCLE_KINDS: frozenset[str] = frozenset(LIFECYCLE_KIND_NAMES)
"""Kinds whose bodies ``registre.lifecycle.codec`` defines and checks (:mod:`registre.kinds`)."""


class UnknownKindError(MalformedError):
    """An entry kind registre does not define; the entry is refused before it is written."""


class BodySchemaError(MalformedError):
    """A body that does not follow its kind's schema. ``path`` names the offending field."""

    def __init__(self, path: str, problem: str) -> None:
        self.path = path
        super().__init__(f"{path}: {problem}")


class FloatInBodyError(BodySchemaError):
    """A float in an entry body (rule 2 of ``specs/entries.md`` section 2): its hint names
    :func:`registre.attest.entries.decimal_strings`, which writes each float as its canonical
    decimal string (``{"ratio": 0.25}`` -> ``{"ratio": "0.25"}``)."""


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


def _refuse(value: object) -> object:
    raise TypeError(f"Object of type {type(value).__name__} is not JSON serializable")


def c_compact_encoder(
    reference: Callable[[Any], str], *, sort_keys: bool, default: Callable[[Any], Any]
) -> Callable[[Any], str] | None:
    """Compact JSON text (``","`` and ``":"``, non-ASCII written as is) from the C encoder,
    made once: ``json.dumps`` and ``JSONEncoder.encode`` build a new one at every call. None
    when the private constructor is missing, takes other arguments, or writes another text
    than ``reference`` (the encoder it stands for) on a probe. It keeps no circular-reference
    memo (a memo left behind by a failed call would refuse the next value), so it is for
    values known to nest a bounded number of levels; ``default`` is called for a value of
    another type (it must raise TypeError, as ``json``'s does)."""
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:
        return None
    try:
        chunks = make(
            None, default, json.encoder.encode_basestring, None, ":", ",", sort_keys, False, False
        )
    except TypeError:  # another signature of the private constructor
        return None
    join = "".join

    def text(value: Any) -> str:
        return join(chunks(value, 0))

    probe = {"z": [1, -2, True, None, '"\\\n\x00\x7f\u00e9\uffff'], "a": {"b": "c", "": 0}}
    try:
        agrees = text(probe) == reference(probe)
    except Exception:  # pragma: no cover - a C encoder that cannot take the probe
        agrees = False
    return text if agrees else None


def _plain_dumps(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"))


_PLAIN_TEXT = c_compact_encoder(_plain_dumps, sort_keys=False, default=_refuse)


def plain_compact_size(value: object) -> int:
    """:func:`compact_size` of a value that passed rules 1 and 2 of
    :func:`registre.attest.entries.bodies.validate_body` (plain JSON values, no float, Unicode
    strings, bounded nesting), a few times faster; for any other value, use
    :func:`compact_size`."""
    if _PLAIN_TEXT is None:  # pragma: no cover - no C encoder in this Python
        return compact_size(value)
    text = _PLAIN_TEXT(value)
    return len(text) if text.isascii() else len(text.encode("utf-8"))


def wrong(path: str, expected: str, value: object) -> BodySchemaError:
    """The error for a value of the wrong type: ``PATH: expected X, got a Y``."""
    return BodySchemaError(path, f"expected {expected}, got {describe(value)}")
