"""Canonical bytes: RFC 8785 (JCS) serialisation, and reading signed bytes as received.

Anything registre hashes or signs is hashed or signed as :func:`canonical_bytes` of a JSON
value. A verifier never re-serialises what it received: it reads the bytes with
:func:`parse_canonical`, which parses them strictly and then requires them to be *exactly* the
canonical form of what they contain, so one value has one byte string and one byte string
one value.

:func:`canonical_bytes` refuses what JCS cannot represent unambiguously, each with its own
:class:`~registre.attest.canonical_json.strict_json.JSONFormatError` subclass: non-``str`` keys
(:class:`NonStringKeyError`), integers beyond +/-(2**53 - 1) and floats JCS would write as
such integers (:class:`IntegerRangeError`), NaN and infinities
(:class:`NonFiniteNumberError`), strings or keys with surrogate code points
(:class:`LoneSurrogateError`), nesting deeper than ``max_depth``
(:class:`NestingTooDeepError`), and any type other than exactly ``dict``, ``list``,
``tuple``, ``str``, ``int``, ``float``, ``bool`` or ``None`` (:class:`UnsupportedValueError`;
subclasses such as enums are refused because they can change how they iterate or compare).
Text is written as given: no Unicode normalisation.
"""

from __future__ import annotations

import math
from typing import Any

import rfc8785

from registre.attest.canonical_json.strict_json import (
    DEFAULT_MAX_DEPTH,
    MAX_DEPTH_LIMIT,
    MAX_SAFE_INTEGER,
    IntegerRangeError,
    JSONFormatError,
    LoneSurrogateError,
    NestingTooDeepError,
    NonFiniteNumberError,
    float_in_integer_gap,
    parse_strict,
)

__all__ = [
    "NonCanonicalError",
    "NonStringKeyError",
    "UnsupportedValueError",
    "canonical_bytes",
    "parse_canonical",
]


class NonCanonicalError(JSONFormatError):
    """Bytes that parse, but are not the RFC 8785 canonical form of the value they hold."""


class NonStringKeyError(JSONFormatError):
    """A dict key that is not a ``str``; JSON object keys are strings."""


class UnsupportedValueError(JSONFormatError):
    """A Python value with no single JSON form (bytes, sets, objects, subclasses, ...)."""


class _Refusal(Exception):
    """Raised inside the walk; collects the path on the way out so the hot path builds none."""

    def __init__(self, error: type[JSONFormatError], problem: str, fix: str) -> None:
        super().__init__(problem)
        self.error = error
        self.problem = problem
        self.fix = fix
        self.path: list[str] = []


def canonical_bytes(value: object, *, max_depth: int = DEFAULT_MAX_DEPTH) -> bytes:
    """Return the RFC 8785 canonical UTF-8 bytes of ``value``.

    Guarantees: ``parse_canonical(canonical_bytes(v))`` succeeds and returns a value equal to
    ``v`` (tuples come back as lists, integral floats as ints). Object members are ordered by
    the UTF-16 code units of their keys; numbers use the ECMAScript shortest form.
    Raises a :class:`JSONFormatError` subclass naming the offending place as a path such as
    ``$['body'][2]`` (``position`` is None: there are no bytes yet).
    """
    if not 0 <= max_depth <= MAX_DEPTH_LIMIT:
        raise ValueError(f"max_depth must be between 0 and {MAX_DEPTH_LIMIT}, got {max_depth}")
    try:
        _check(value, 0, max_depth)
    except _Refusal as refusal:
        path = "$" + "".join(reversed(refusal.path))
        raise refusal.error(f"{refusal.problem} at {path}: {refusal.fix}") from None
    return rfc8785.dumps(value)  # type: ignore[arg-type]  # _check proved it is a JSON value


def parse_canonical(
    data: bytes | bytearray | memoryview,
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_bytes: int | None = None,
) -> Any:
    """Read signed bytes as received: parse strictly, then require the exact canonical form.

    Returns the value. Raises every refusal of :func:`parse_strict`, and
    :class:`NonCanonicalError` (``position`` = first byte that differs from the canonical
    form) for any other spelling of the same value: whitespace, key order, escapes such as
    ``\\u0041`` for ``A``, ``1.0`` or ``1E2`` for ``1`` and ``100``.
    """
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"parse_canonical reads bytes, not {type(data).__name__}")
    received = bytes(data)
    value = parse_strict(received, max_depth=max_depth, max_bytes=max_bytes)
    expected: bytes = rfc8785.dumps(value)  # parse_strict only returns writable values
    if expected != received:
        position = _first_difference(received, expected)
        raise NonCanonicalError(
            f"not in RFC 8785 canonical form: found {_excerpt(received, position)} where "
            f"the canonical form has {_excerpt(expected, position)}; the signer must hash "
            "and sign canonical_bytes(value), and a verifier must not re-serialise",
            position,
        )
    return value


def _check(value: object, depth: int, max_depth: int) -> None:
    """Refuse anything JCS cannot write unambiguously (raises :class:`_Refusal`)."""
    if type(value) is str:
        _check_text(value, "string")
    elif type(value) is int:
        if not -MAX_SAFE_INTEGER <= value <= MAX_SAFE_INTEGER:
            raise _Refusal(
                IntegerRangeError,
                f"integer {value} is beyond +/-(2^53-1)",
                "JSON readers hold numbers as doubles and would change it; send it as a string",
            )
    elif type(value) is float:
        _check_float(value)
    elif type(value) is dict or type(value) is list or type(value) is tuple:
        if depth >= max_depth:
            raise _Refusal(
                NestingTooDeepError,
                f"containers nested deeper than {max_depth} levels",
                "flatten the structure (readers refuse deeper nesting)",
            )
        if isinstance(value, dict):
            _check_object(value, depth + 1, max_depth)
        else:
            _check_array(value, depth + 1, max_depth)
    elif value is not None and type(value) is not bool:
        raise _Refusal(
            UnsupportedValueError,
            f"value of type {type(value).__name__} has no JSON form",
            "convert it to a plain dict, list, str, int, float, bool or None",
        )


def _check_object(value: dict[object, object], depth: int, max_depth: int) -> None:
    for key, member in value.items():
        try:
            if type(key) is not str:
                raise _Refusal(
                    NonStringKeyError,
                    f"object key {key!r} of type {type(key).__name__} is not a plain str",
                    "JSON object keys are strings; convert the key explicitly",
                )
            _check_text(key, "object key")
            _check(member, depth, max_depth)
        except _Refusal as refusal:
            refusal.path.append(f"[{key!r}]")
            raise


def _check_array(value: list[object] | tuple[object, ...], depth: int, max_depth: int) -> None:
    for index, element in enumerate(value):
        try:
            _check(element, depth, max_depth)
        except _Refusal as refusal:
            refusal.path.append(f"[{index}]")
            raise


def _check_text(text: str, what: str) -> None:
    try:
        text.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise _Refusal(
            LoneSurrogateError,
            f"{what} holds lone surrogate U+{ord(text[exc.start]):04X} (character {exc.start})",
            "surrogates have no UTF-8 form; use the real character (e.g. '\\U0001F600', "
            "not '\\ud83d\\ude00')",
        ) from None


def _check_float(number: float) -> None:
    if not math.isfinite(number):
        raise _Refusal(
            NonFiniteNumberError,
            f"float {number!r} is not finite",
            "JSON has no NaN or infinity; send a finite number or a string",
        )
    if float_in_integer_gap(number):
        raise _Refusal(
            IntegerRangeError,
            f"float {number!r} would be written as an integer beyond +/-(2^53-1)",
            "readers cannot hold it exactly; send it as a string",
        )


def _first_difference(left: bytes, right: bytes) -> int:
    for index, (a, b) in enumerate(zip(left, right, strict=False)):
        if a != b:
            return index
    return min(len(left), len(right))


def _excerpt(data: bytes, position: int) -> str:
    """Up to 12 bytes from ``position``, shown as a Python bytes literal."""
    if position >= len(data):
        return "the end of the input"
    return repr(data[position : position + 12])
