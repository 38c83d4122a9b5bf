"""Entry body schemas: what the ``body`` of each entry kind may hold (``specs/entries.md``).

:func:`validate_body` is the gate an entry passes before it is signed or written. It returns
``None`` for a well-formed body and otherwise raises :class:`UnknownKindError` (a kind not in
:data:`ENTRY_KINDS`) or :class:`BodySchemaError`, whose message starts with the path of the
offending field and says what was expected, e.g.
``body.arguments: expected an object, got a list``. Both are subclasses of
:class:`~registre.errors.MalformedError` (CLI exit 2).

Rules for every kind, checked before the kind's own schema:

1. the body is a JSON object (a ``dict`` with ``str`` keys) of plain JSON values: ``dict``,
   ``list``, ``str``, ``int``, ``bool`` and ``None`` -- no tuples, no subclasses;
2. **no floats anywhere**: a float's canonical text depends on each language's
   shortest-round-trip printing, which is where independent verifiers disagree; ratios are
   written as integers (per-mille, basis points) or strings. Integers lie within
   +/-(2**53 - 1), the range every JSON reader holds exactly;
3. strings are Unicode text with a UTF-8 form (no lone surrogates);
4. nesting at most :data:`MAX_DEPTH` levels; the body's compact JSON at most
   :data:`MAX_BODY_BYTES`.

The kinds registre defines itself are checked here, strictly: unknown fields are refused,
required fields must be present, texts are capped at :data:`MAX_ENTRY_TEXT_BYTES` and names at
:data:`MAX_ENTRY_NAME_BYTES` (UTF-8 bytes; both defined in :mod:`registre.lifecycle.jsonshape`,
with the lifecycle bodies' own caps). The lifecycle kinds (:data:`LIFECYCLE_KINDS`) are
checked by ``registre.lifecycle.codec.parse_body``; its refusals are re-raised as
:class:`BodySchemaError` with the same message.

This module holds rules 1-4 and the public names; the limits and errors are in
:mod:`registre.attest.entries.body_base`, the field checks in
:mod:`registre.attest.entries.body_fields`,
the schema of each kind in :mod:`registre.attest.entries.body_schemas`. Rules 1-3 are walked first
without writing a path (:func:`_plain`); only a body that fails is walked again, writing
each path, to raise the precise error -- the same verdict and message, sooner.
"""

from __future__ import annotations

import math
import re
from typing import Any

import rfc8785

from registre.attest.canonical_json import MAX_SAFE_INTEGER, NonFiniteNumberError
from registre.attest.entries.body_base import (
    MAX_BODY_BYTES,
    MAX_DEPTH,
    BodySchemaError,
    FloatInBodyError,
    UnknownKindError,
    describe,
    member,
    plain_compact_size,
    utf8_size,
    wrong,
)
from registre.attest.entries.body_schemas import ENTRY_KINDS, SCHEMAS
from registre.lifecycle.codec import parse_body
from registre.lifecycle.errors import LifecycleFormatError

__all__ = [
    "decimal_strings",
    "nests_within",
    "validate_body",
    "validate_schema",
]

_JSON_TYPES = (dict, list, str, int, bool, type(None), float)  # float: to name it in the error
_SURROGATE = re.compile("[\ud800-\udfff]")


# --- rules for every body --------------------------------------------------------------


def _plain(value: dict[object, object] | list[object], depth: int) -> bool:
    """Whether rules 1-2 hold for the container ``value`` at ``depth`` (the body is 0): the
    verdict of :func:`_check_json_value`, without writing a path; False sends the body to
    it, which raises the precise error."""
    return _plain_bound(value, depth) >= 0


_ESCAPED_MAX = 6
"""The most bytes one character takes in compact JSON (``\\u001f``; UTF-8 takes at most 4)."""

_SCALAR_MAX = 17
"""The most bytes a plain scalar other than a string takes (``-9007199254740991``)."""


def _plain_bound(value: dict[object, object] | list[object], depth: int) -> int:
    """:func:`_plain`'s walk, returning -1 where it says False and otherwise an upper bound
    of the container's compact JSON size in bytes (each character of a string or key at
    most :data:`_ESCAPED_MAX` bytes, each other scalar :data:`_SCALAR_MAX`): a body whose
    bound is within :data:`MAX_BODY_BYTES` keeps rule 3 without being written out."""
    if depth >= MAX_DEPTH:
        return -1
    size = 2
    if type(value) is dict:
        for key in value:
            if type(key) is not str or (not key.isascii() and _SURROGATE.search(key)):
                return -1
            size += _ESCAPED_MAX * len(key) + 4  # quotes, colon, comma
        items: object = value.values()
    else:
        items = value
    for item in items:  # type: ignore[attr-defined]
        kind = type(item)
        if kind is str:
            if not item.isascii() and _SURROGATE.search(item):
                return -1
            size += _ESCAPED_MAX * len(item) + 3
        elif kind is int:
            if not -MAX_SAFE_INTEGER <= item <= MAX_SAFE_INTEGER:
                return -1
            size += _SCALAR_MAX + 1
        elif kind is dict or kind is list:
            inner = _plain_bound(item, depth + 1)
            if inner < 0:
                return -1
            size += inner + 1
        elif kind is not bool and item is not None:
            return -1
        else:
            size += _SCALAR_MAX + 1
    return size


def _float_hint(path: str) -> str:
    """What to do about a float at ``path``: the helper, and for tool arguments the field
    that keeps them numbers."""
    if path.startswith("body.arguments"):
        return (
            "convert them with registre.attest.entries.decimal_strings(arguments) "
            '(0.25 -> "0.25"), or keep them numbers in body.arguments_json, their RFC 8785 text'
        )
    return (
        "convert them with registre.attest.entries.decimal_strings(body) "
        '(0.25 -> "0.25"), or write integers (per-mille, basis points)'
    )


def decimal_strings(value: Any) -> Any:
    """``value`` with every float written as its canonical decimal string: the RFC 8785
    (ECMAScript shortest round-trip) text of the number, as a string. ``{"ratio": 0.25}``
    becomes ``{"ratio": "0.25"}``, ``1e21`` ``"1e+21"``, ``2.0`` ``"2"``; integers, strings,
    booleans and None stay as they are; dicts and lists are copied (tuples become lists).

    Entry bodies hold no floats (``specs/entries.md`` section 2, rule 2: a float's text
    differs across languages, a string's does not), so this is what to do with a value that
    has some before it goes into a body; the string is the number any JSON reader of the
    original saw. NonFiniteNumberError for NaN and infinities, which JSON cannot write.
    """
    kind = type(value)
    if kind is float:
        if not math.isfinite(value):
            raise NonFiniteNumberError(f"float {value!r} is not finite: JSON cannot write it")
        return rfc8785.dumps(value).decode("ascii")
    if kind is dict:
        return {key: decimal_strings(item) for key, item in value.items()}
    if kind is list or kind is tuple:
        return [decimal_strings(item) for item in value]
    return value


def _check_json_value(value: object, path: str, depth: int) -> None:
    """Rules 1-3 of the module docstring, recursively; ``depth`` counts containers."""
    if type(value) not in _JSON_TYPES:
        raise BodySchemaError(
            path,
            "expected a plain JSON value (object, list, string, integer, boolean or null), "
            f"got {describe(value)}",
        )
    if isinstance(value, float):
        raise FloatInBodyError(
            path,
            f"expected no float, got {value!r}: entry bodies hold integers and strings only "
            "(floats print differently across languages)",
        ).with_hint(_float_hint(path))
    if isinstance(value, str):
        utf8_size(value, path)
    elif isinstance(value, int) and not isinstance(value, bool):
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            raise BodySchemaError(
                path,
                f"integer {value} is beyond +/-(2^53-1); JSON readers cannot hold it "
                "exactly, write it as a string",
            )
    elif isinstance(value, list | dict):
        if depth >= MAX_DEPTH:
            raise BodySchemaError(path, f"nested deeper than {MAX_DEPTH} levels")
        if isinstance(value, list):
            for index, item in enumerate(value):
                _check_json_value(item, f"{path}[{index}]", depth + 1)
            return
        for key, item in value.items():
            if type(key) is not str:
                raise BodySchemaError(path, f"object key {key!r} is not a string")
            key_path = member(path, key)
            utf8_size(key, key_path)
            _check_json_value(item, key_path, depth + 1)


def nests_within(value: object, room: int) -> bool:
    """Whether ``value`` nests at most ``room`` containers (objects, lists) deep, ``value``
    itself counting: a body passes rule 2's nesting when ``nests_within(body, MAX_DEPTH)``."""
    level: list[Any] = [value] if isinstance(value, dict | list) else []
    while level:
        if room == 0:
            return False
        room -= 1
        inner: list[Any] = []
        for container in level:
            items = container.values() if isinstance(container, dict) else container
            inner += [item for item in items if isinstance(item, dict | list)]
        level = inner
    return True


def validate_body(kind: str, body: object) -> None:
    """Check that ``body`` is a well-formed body for an entry of kind ``kind``.

    Returns ``None``; never changes ``body``. Raises :class:`UnknownKindError` for a kind not
    in :data:`ENTRY_KINDS`, and :class:`BodySchemaError` (message ``PATH: problem``, ``path``
    attribute) for the first rule the body breaks, checked in this order:

    1. the body is an object;
    2. every value in it is a plain JSON value without floats, safe integers only, valid
       Unicode strings, nesting at most :data:`MAX_DEPTH`;
    3. it is at most :data:`MAX_BODY_BYTES` as compact JSON;
    4. it follows its kind's schema (``specs/entries.md``; lifecycle kinds: the schema of
       ``registre.lifecycle.codec.parse_body``).
    """
    if kind not in ENTRY_KINDS:
        known = ", ".join(sorted(ENTRY_KINDS))
        raise UnknownKindError(f"unknown entry kind {kind!r}; the kinds are: {known}")
    if not isinstance(body, dict):
        raise wrong("body", "an object", body)
    bound = _plain_bound(body, 0) if type(body) is dict else -1
    if bound < 0:
        _check_json_value(body, "body", 0)
    if not 0 <= bound <= MAX_BODY_BYTES:  # the body is not surely within the cap: measure it
        size = plain_compact_size(body)
        if size > MAX_BODY_BYTES:
            raise BodySchemaError(
                "body", f"expected at most {MAX_BODY_BYTES} bytes as compact JSON, got {size}"
            )
    validate_schema(kind, body)


def validate_schema(kind: str, body: object) -> None:
    """Rule 4 of :func:`validate_body` alone: ``kind`` is one of :data:`ENTRY_KINDS` and
    ``body`` an object following its schema (UnknownKindError, BodySchemaError).

    :func:`validate_body` is rules 1-3 (every value plain JSON, no float, safe integers,
    Unicode strings, nesting, size), then this. A reader that has proved rules 1-3 another
    way -- the bundle verifier's fast path proves them from the canonical text it parsed
    (:mod:`registre.attest.entries._leaf_open`) -- calls this alone, to the same verdict.
    """
    schema = SCHEMAS.get(kind)
    if schema is not None:
        if not isinstance(body, dict):
            raise wrong("body", "an object", body)
        schema(body, "body")
        return
    if kind not in ENTRY_KINDS:
        known = ", ".join(sorted(ENTRY_KINDS))
        raise UnknownKindError(f"unknown entry kind {kind!r}; the kinds are: {known}")
    if not isinstance(body, dict):
        raise wrong("body", "an object", body)
    try:
        parse_body(kind, body)
    except LifecycleFormatError as exc:
        raise BodySchemaError(exc.path, exc.problem) from None
