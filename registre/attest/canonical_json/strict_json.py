"""A strict JSON reader: one reading per input, or a specific error with its byte position.

RFC 8259 leaves room for two readers to see different values in the same bytes (duplicate
keys, NaN, huge numbers, lone surrogates, ...). Anything registre hashes or signs must mean
one thing to every reader, so :func:`parse_strict` refuses every such input instead of
guessing. It accepts exactly the RFC 8259 grammar minus the refusals below; every value it
returns can be written by :func:`registre.attest.canonical_json.jcs.canonical_bytes`.

Refusals (each its own :class:`JSONFormatError` subclass, ``position`` = byte offset):

* input over ``max_bytes`` (:class:`InputTooLargeError`), invalid UTF-8
  (:class:`InvalidUTF8Error`, first invalid byte), a byte order mark
  (:class:`ByteOrderMarkError`), empty input (:class:`EmptyInputError`);
* grammar errors (:class:`JSONSyntaxError`), raw control characters in strings
  (:class:`ControlCharacterError`), data after the value (:class:`TrailingDataError`);
* a key repeated in one object (:class:`DuplicateKeyError`);
* ``NaN``/``Infinity``/``-Infinity`` (:class:`NonFiniteNumberError`) and numbers whose value
  overflows a double, like ``1e400`` (:class:`NumberOverflowError`);
* integers outside +/-(2**53 - 1), and any number with a fraction or exponent whose magnitude
  lies strictly between 2**53 - 1 and 10**21 (:class:`IntegerRangeError`) -- JCS would
  write such a value as a bare integer that no reader can hold exactly;
* an escaped surrogate that is not part of a high+low pair, or (for ``str`` input) a raw
  surrogate code point (:class:`LoneSurrogateError`);
* containers nested deeper than ``max_depth`` (:class:`NestingTooDeepError`), checked before
  descending, so hostile nesting never reaches Python's recursion limit;
* with ``max_elements``, more values than that in all (every scalar and container counts one;
  object keys do not) (:class:`TooManyElementsError`), and with ``max_string_length``, a
  string or key of more characters (:class:`StringTooLongError`), each refused as soon as
  the reader reaches it, so the cost of a refusal is bounded by the limit, not the input.

Numbers: a literal without fraction or exponent is returned as ``int``; any other literal as
the nearest ``float`` (``1E2`` -> ``100.0``, ``1.0`` -> ``1.0``). Rounding to the nearest
double is not refused: the canonical form of every number is the shortest text that reads
back as the same double, which :func:`registre.attest.canonical_json.jcs.parse_canonical` enforces.
"""

from __future__ import annotations

import math
import re
from typing import Any, NoReturn

from registre.errors import MalformedError

__all__ = [
    "DEFAULT_MAX_DEPTH",
    "MAX_DEPTH_LIMIT",
    "MAX_SAFE_INTEGER",
    "ByteOrderMarkError",
    "ControlCharacterError",
    "DuplicateKeyError",
    "EmptyInputError",
    "InputTooLargeError",
    "IntegerRangeError",
    "InvalidUTF8Error",
    "JSONFormatError",
    "JSONSyntaxError",
    "LoneSurrogateError",
    "NestingTooDeepError",
    "NonFiniteNumberError",
    "NumberOverflowError",
    "StringTooLongError",
    "TooManyElementsError",
    "TrailingDataError",
    "float_in_integer_gap",
    "parse_strict",
]

MAX_SAFE_INTEGER = 2**53 - 1
"""Largest integer every IEEE-754 double reader holds exactly (RFC 8785 section 3.2.2.3)."""

DEFAULT_MAX_DEPTH = 64
"""Default nesting limit for containers (``[]`` and ``{}`` are depth 1)."""

MAX_DEPTH_LIMIT = 256
"""Largest ``max_depth`` accepted: deeper limits could reach Python's recursion limit."""

_PLAIN_NUMBER_LIMIT = 1e21
"""From this magnitude on, JCS writes numbers with an exponent (``1e+21``)."""


# --- errors ----------------------------------------------------------------------------


class JSONFormatError(MalformedError):
    """JSON text or a value that registre refuses to read or to canonicalise."""


class InputTooLargeError(JSONFormatError):
    """Input longer than the reader's ``max_bytes``."""


class InvalidUTF8Error(JSONFormatError):
    """Bytes that are not valid UTF-8 (RFC 3629), at the first invalid byte."""


class ByteOrderMarkError(JSONFormatError):
    """Input starting with a byte order mark, which RFC 8259 forbids a writer to add."""


class JSONSyntaxError(JSONFormatError):
    """Text that does not follow the RFC 8259 grammar."""


class EmptyInputError(JSONSyntaxError):
    """Input holding no JSON value at all (empty or only whitespace)."""


class TrailingDataError(JSONSyntaxError):
    """Anything but whitespace after the one top-level value."""


class ControlCharacterError(JSONSyntaxError):
    """A raw control character (U+0000..U+001F) inside a string."""


class DuplicateKeyError(JSONFormatError):
    """An object key that appears more than once in the same object."""


class NonFiniteNumberError(JSONFormatError):
    """NaN or an infinity, which JSON and JCS cannot represent."""


class NumberOverflowError(NonFiniteNumberError):
    """A number literal too large for a double (``1e400``); readers would see infinity."""


class IntegerRangeError(JSONFormatError):
    """An integer, or an integral value JCS writes without exponent, beyond +/-(2**53 - 1)."""


class LoneSurrogateError(JSONFormatError):
    """A UTF-16 surrogate code point that is not part of a valid pair."""


class NestingTooDeepError(JSONFormatError):
    """Containers nested deeper than the reader's or writer's ``max_depth``."""


class TooManyElementsError(JSONFormatError):
    """More values (scalars and containers) than the reader's ``max_elements``."""

    hint = "no document registre writes here holds that many values"


class StringTooLongError(JSONFormatError):
    """A string or object key longer than the reader's ``max_string_length``."""

    hint = "no document registre writes here holds a string that long"


def float_in_integer_gap(number: float) -> bool:
    """Whether JCS would write ``number`` as a bare integer beyond +/-(2**53 - 1).

    Such a float (``1e20`` is written ``100000000000000000000``) would read back as an
    integer that readers cannot hold exactly, so both reader and writer refuse it.
    """
    return MAX_SAFE_INTEGER < abs(number) < _PLAIN_NUMBER_LIMIT


# --- the reader ------------------------------------------------------------------------

_WHITESPACE = re.compile(r"[ \t\n\r]*")
# A string body up to the first character that ends the fast path: quote, backslash or control.
_STRING_CHUNK = re.compile(r'([^"\\\x00-\x1f]*)(["\\\x00-\x1f])')
# An object key without escapes and the ':' after it, with any whitespace around the colon.
_PLAIN_KEY_AND_COLON = re.compile(r'"([^"\\\x00-\x1f]*)"[ \t\n\r]*:[ \t\n\r]*')
# After a member or element: ',' and the whitespace after it (group 1), or the closing bracket.
_OBJECT_STEP = re.compile(r"[ \t\n\r]*(?:(,)[ \t\n\r]*|\})")
_ARRAY_STEP = re.compile(r"[ \t\n\r]*(?:(,)[ \t\n\r]*|\])")
_NUMBER_TOKEN = re.compile(r"[-+0-9.eE]+")
_NUMBER = re.compile(r"-?(?:0|[1-9][0-9]*)(\.[0-9]+)?([eE][-+]?[0-9]+)?")
_HEX4 = re.compile(r"[0-9a-fA-F]{4}")
_SIMPLE_ESCAPES = {
    '"': '"',
    "\\": "\\",
    "/": "/",
    "b": "\b",
    "f": "\f",
    "n": "\n",
    "r": "\r",
    "t": "\t",
}
_LITERALS: dict[str, Any] = {"true": True, "false": False, "null": None}
_MAX_INT_DIGITS = len(str(MAX_SAFE_INTEGER))
_INCOMPLETE = "unexpected end of input: the JSON value is incomplete"


class _Bounds:
    """The element budget left and the longest string allowed, for one parse."""

    __slots__ = ("elements_left", "max_depth", "max_string")

    def __init__(self, max_depth: int, max_elements: int | None, max_string: int | None) -> None:
        self.max_depth = max_depth
        self.elements_left = -1 if max_elements is None else max_elements
        self.max_string = max_string


def _count_element(bounds: _Bounds, i: int) -> None:
    if bounds.elements_left == 0:
        _fail(
            TooManyElementsError,
            "more values than the reader's limit: the document is larger than any it reads",
            i,
        )
    bounds.elements_left -= 1


def _check_string(bounds: _Bounds, value: str, i: int) -> None:
    if bounds.max_string is not None and len(value) > bounds.max_string:
        _fail(
            StringTooLongError,
            f"a string of {len(value)} characters: at most {bounds.max_string} are read here",
            i,
        )


class _Failure(Exception):
    """Raised inside the reader with a character index; parse_strict converts it to bytes."""

    def __init__(self, error: type[JSONFormatError], message: str, index: int) -> None:
        super().__init__(message)
        self.error = error
        self.message = message
        self.index = index


def _fail(error: type[JSONFormatError], message: str, index: int) -> NoReturn:
    raise _Failure(error, message, index)


def _fail_expected(text: str, i: int, message: str) -> NoReturn:
    """Fail at the next non-whitespace character, or at the end of an incomplete input."""
    i = _skip_whitespace(text, i)
    _fail(JSONSyntaxError, message if i < len(text) else _INCOMPLETE, i)


def _skip_whitespace(text: str, i: int) -> int:
    if i < len(text) and text[i] in " \t\n\r":
        return _WHITESPACE.match(text, i).end()  # type: ignore[union-attr]  # always matches
    return i


def _read_value(text: str, i: int, depth: int, bounds: _Bounds) -> tuple[Any, int]:
    """Read the value starting exactly at ``i``; return it and the index just after it."""
    char = text[i]
    if bounds.elements_left >= 0:
        _count_element(bounds, i)
    if char == '"':
        value, end = _read_string(text, i)
        _check_string(bounds, value, i)
        return value, end
    if char == "{" or char == "[":
        if depth >= bounds.max_depth:
            _fail(
                NestingTooDeepError,
                f"containers nested deeper than {bounds.max_depth} levels: "
                "flatten the structure or raise max_depth",
                i,
            )
        if char == "{":
            return _read_object(text, i, depth + 1, bounds)
        return _read_array(text, i, depth + 1, bounds)
    if char in "-0123456789":
        return _read_number(text, i)
    for word in ("true", "false", "null"):
        if text.startswith(word, i):
            return _LITERALS[word], i + len(word)
    for word in ("NaN", "Infinity"):
        if text.startswith(word, i):
            _fail(
                NonFiniteNumberError,
                f"{word} is not a JSON number: write the value as a finite number or a string",
                i,
            )
    _fail(JSONSyntaxError, f"unexpected character {char!r}: expected a JSON value", i)


def _read_object(text: str, start: int, depth: int, bounds: _Bounds) -> tuple[Any, int]:
    result: dict[str, Any] = {}
    i = _skip_whitespace(text, start + 1)
    if text[i] == "}":
        return result, i + 1
    while True:
        key_start = i
        member = _PLAIN_KEY_AND_COLON.match(text, i)
        if member is not None:  # the common case: a key without escapes
            key, i = member.group(1), member.end()
        else:
            key, i = _read_key_and_colon(text, i)
        _check_string(bounds, key, key_start)
        if key in result:
            _fail(
                DuplicateKeyError,
                f"duplicate object key {key!r}: each key may appear once in an object",
                key_start,
            )
        result[key], i = _read_value(text, i, depth, bounds)
        step = _OBJECT_STEP.match(text, i)
        if step is None:
            _fail_expected(text, i, "expected ',' or '}' after an object member")
        i = step.end()
        if step.group(1) is None:  # '}'
            return result, i


def _read_key_and_colon(text: str, i: int) -> tuple[str, int]:
    if text[i] != '"':
        _fail(JSONSyntaxError, "expected a string key in double quotes", i)
    key, i = _read_string(text, i)
    i = _skip_whitespace(text, i)
    if text[i] != ":":
        _fail(JSONSyntaxError, "expected ':' after an object key", i)
    return key, _skip_whitespace(text, i + 1)


def _read_array(text: str, start: int, depth: int, bounds: _Bounds) -> tuple[Any, int]:
    result: list[Any] = []
    i = _skip_whitespace(text, start + 1)
    if text[i] == "]":
        return result, i + 1
    while True:
        value, i = _read_value(text, i, depth, bounds)
        result.append(value)
        step = _ARRAY_STEP.match(text, i)
        if step is None:
            _fail_expected(text, i, "expected ',' or ']' after an array element")
        i = step.end()
        if step.group(1) is None:  # ']'
            return result, i


def _read_string(text: str, start: int) -> tuple[str, int]:
    """Read the string whose opening quote is at ``start``."""
    match = _STRING_CHUNK.match(text, start + 1)
    if match is None:
        _fail(JSONSyntaxError, "unterminated string: add the closing '\"'", start)
    if match.group(2) == '"':  # the common case: no escapes
        return match.group(1), match.end()
    parts: list[str] = []
    while True:
        parts.append(match.group(1))
        stop = match.group(2)
        i = match.end()  # just after the stop character
        if stop == '"':
            return "".join(parts), i
        if stop != "\\":
            _fail(
                ControlCharacterError,
                f"raw control character U+{ord(stop):04X} in a string: escape it as "
                f"\\u{ord(stop):04x}",
                i - 1,
            )
        decoded, i = _read_escape(text, i - 1)
        parts.append(decoded)
        match = _STRING_CHUNK.match(text, i)
        if match is None:
            _fail(JSONSyntaxError, "unterminated string: add the closing '\"'", start)


def _read_escape(text: str, backslash: int) -> tuple[str, int]:
    """Decode the escape sequence starting at ``backslash``; surrogates must come in pairs."""
    kind = text[backslash + 1]
    if kind != "u":
        if kind not in _SIMPLE_ESCAPES:
            _fail(
                JSONSyntaxError,
                f"invalid escape '\\{kind}': JSON allows \\\" \\\\ \\/ \\b \\f \\n \\r \\t "
                "and \\uXXXX",
                backslash,
            )
        return _SIMPLE_ESCAPES[kind], backslash + 2
    unit = _hex4(text, backslash)
    if 0xDC00 <= unit <= 0xDFFF:
        _fail(LoneSurrogateError, _lone_surrogate_message(unit), backslash)
    if not 0xD800 <= unit <= 0xDBFF:
        return chr(unit), backslash + 6
    low_start = backslash + 6
    if text.startswith("\\u", low_start) and _HEX4.match(text, low_start + 2):
        low = int(text[low_start + 2 : low_start + 6], 16)
        if 0xDC00 <= low <= 0xDFFF:
            return chr(0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00)), low_start + 6
    _fail(LoneSurrogateError, _lone_surrogate_message(unit), backslash)


def _hex4(text: str, backslash: int) -> int:
    if _HEX4.match(text, backslash + 2) is None:
        _fail(JSONSyntaxError, "invalid \\u escape: write exactly four hex digits", backslash)
    return int(text[backslash + 2 : backslash + 6], 16)


def _lone_surrogate_message(unit: int) -> str:
    return (
        f"lone surrogate \\u{unit:04x} in a string: a surrogate must be a high "
        "(D800-DBFF) immediately followed by a low (DC00-DFFF); "
        "write the character itself in UTF-8"
    )


def _read_number(text: str, start: int) -> tuple[int | float, int]:
    if text.startswith("-Infinity", start):
        _fail(
            NonFiniteNumberError,
            "-Infinity is not a JSON number: write the value as a finite number or a string",
            start,
        )
    token_match = _NUMBER_TOKEN.match(text, start)
    token = token_match.group() if token_match else text[start]
    number = _NUMBER.fullmatch(token)
    if number is None:
        _fail(
            JSONSyntaxError,
            f"malformed number {token!r}: JSON numbers look like -12, 0.5 or 1e-7 "
            "(no leading zeros, '+' sign, or bare '.')",
            start,
        )
    end = start + len(token)
    if number.group(1) is None and number.group(2) is None:
        digits = len(token) - token.startswith("-")
        integer = int(token) if digits <= _MAX_INT_DIGITS else MAX_SAFE_INTEGER + 1
        if -MAX_SAFE_INTEGER <= integer <= MAX_SAFE_INTEGER:
            return integer, end
        _fail(IntegerRangeError, _integer_range_message(token), start)
    value = float(token)
    if math.isinf(value):
        _fail(
            NumberOverflowError,
            f"number {_shorten(token)} overflows a 64-bit float: "
            "numbers must be finite doubles; send larger values as strings",
            start,
        )
    if float_in_integer_gap(value):
        _fail(IntegerRangeError, _integer_range_message(token), start)
    return value, end


def _integer_range_message(token: str) -> str:
    return (
        f"number {_shorten(token)} is an integer beyond +/-(2^53-1), which a JSON reader "
        "cannot hold exactly: send it as a string (or, for 1e21 and above, as a float "
        "with an exponent)"
    )


def _shorten(token: str) -> str:
    return token if len(token) <= 40 else f"{token[:20]}...({len(token)} characters)"


# --- entry point -----------------------------------------------------------------------


def parse_strict(
    data: bytes | bytearray | memoryview | str,
    *,
    max_depth: int = DEFAULT_MAX_DEPTH,
    max_bytes: int | None = None,
    max_elements: int | None = None,
    max_string_length: int | None = None,
) -> Any:
    """Read one JSON value from ``data`` (UTF-8 bytes, or ``str``) and refuse all ambiguity.

    Returns ``dict``/``list``/``str``/``int``/``float``/``bool``/``None`` values only; every
    one of them is accepted by :func:`registre.attest.canonical_json.jcs.canonical_bytes`. Raises a
    :class:`JSONFormatError` subclass (see the module docstring) whose ``position`` is the
    byte offset of the problem in the UTF-8 form of the input. ``max_depth`` must be between
    0 (scalars only) and :data:`MAX_DEPTH_LIMIT`, else :class:`ValueError` (a caller bug).
    ``max_bytes``, ``max_elements`` and ``max_string_length`` (``None``: unbounded) bound the
    input, the number of values and the characters of one string or key.
    """
    if not 0 <= max_depth <= MAX_DEPTH_LIMIT:
        raise ValueError(f"max_depth must be between 0 and {MAX_DEPTH_LIMIT}, got {max_depth}")
    if (max_elements is not None and max_elements < 0) or (
        max_string_length is not None and max_string_length < 0
    ):
        raise ValueError("max_elements and max_string_length must be non-negative")
    bounds = _Bounds(max_depth, max_elements, max_string_length)
    text, size = _decode(data, max_bytes)
    if text.startswith("\ufeff"):
        raise ByteOrderMarkError(
            "input starts with a byte order mark (U+FEFF): remove it; JSON is plain UTF-8", 0
        )
    try:
        i = _skip_whitespace(text, 0)
        if i == len(text):
            raise EmptyInputError("no JSON value: the input is empty or only whitespace", size)
        try:
            value, i = _read_value(text, i, 0, bounds)
        except IndexError:
            raise JSONSyntaxError(_INCOMPLETE, size) from None
        i = _skip_whitespace(text, i)
        if i != len(text):
            _fail(
                TrailingDataError,
                "data after the JSON value: the input must hold exactly one value",
                i,
            )
    except _Failure as failure:
        position = len(text[: failure.index].encode("utf-8"))
        raise failure.error(failure.message, position) from None
    return value


def _decode(data: bytes | bytearray | memoryview | str, max_bytes: int | None) -> tuple[str, int]:
    """Return the text and its UTF-8 size; refuse oversize input, bad UTF-8, raw surrogates."""
    if isinstance(data, str):
        if max_bytes is not None and len(data) > max_bytes:  # each character is >= 1 byte
            _too_large(max_bytes)
        try:
            size = len(data.encode("utf-8"))
        except UnicodeEncodeError as exc:
            position = len(data[: exc.start].encode("utf-8"))
            raise LoneSurrogateError(
                f"lone surrogate U+{ord(data[exc.start]):04X} in the text: it has no UTF-8 "
                "form; use the character it was meant to pair into",
                position,
            ) from None
        if max_bytes is not None and size > max_bytes:
            _too_large(max_bytes)
        return data, size
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"parse_strict reads bytes or str, not {type(data).__name__}")
    raw = bytes(data)
    if max_bytes is not None and len(raw) > max_bytes:
        _too_large(max_bytes)
    try:
        return raw.decode("utf-8"), len(raw)
    except UnicodeDecodeError as exc:
        lead, follow = raw[exc.start], raw[exc.start + 1 : exc.start + 2]
        surrogate = lead == 0xED and b"\xa0" <= follow <= b"\xbf"
        hint = ", an encoded UTF-16 surrogate" if surrogate else ""
        raise InvalidUTF8Error(
            f"invalid UTF-8 sequence starting with byte 0x{lead:02x} ({exc.reason}{hint}): "
            "send the text encoded as UTF-8",
            exc.start,
        ) from None


def _too_large(max_bytes: int) -> NoReturn:
    raise InputTooLargeError(
        f"input longer than the limit of {max_bytes} bytes: split it or raise max_bytes",
        max_bytes,
    )
