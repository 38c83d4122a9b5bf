"""Canonical JSON (``specs/canonical.md``): RFC 8785 bytes, and the strict parser that refuses
what JCS cannot represent unambiguously (duplicate keys, lone surrogates, NaN, integers
outside the I-JSON range).

:mod:`.jcs` writes and re-reads canonical bytes; :mod:`.strict_json` is the parser every
hashed or signed input goes through.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from registre._lazy import lazy_face

if TYPE_CHECKING:
    from registre.attest.canonical_json.jcs import (
        NonCanonicalError,
        NonStringKeyError,
        UnsupportedValueError,
        canonical_bytes,
        parse_canonical,
    )
    from registre.attest.canonical_json.strict_json import (
        DEFAULT_MAX_DEPTH,
        MAX_DEPTH_LIMIT,
        MAX_SAFE_INTEGER,
        ByteOrderMarkError,
        ControlCharacterError,
        DuplicateKeyError,
        EmptyInputError,
        InputTooLargeError,
        IntegerRangeError,
        InvalidUTF8Error,
        JSONFormatError,
        JSONSyntaxError,
        LoneSurrogateError,
        NestingTooDeepError,
        NonFiniteNumberError,
        NumberOverflowError,
        StringTooLongError,
        TooManyElementsError,
        TrailingDataError,
        float_in_integer_gap,
        parse_strict,
    )

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
    "NonCanonicalError",
    "NonFiniteNumberError",
    "NonStringKeyError",
    "NumberOverflowError",
    "StringTooLongError",
    "TooManyElementsError",
    "TrailingDataError",
    "UnsupportedValueError",
    "canonical_bytes",
    "float_in_integer_gap",
    "parse_canonical",
    "parse_strict",
]

__getattr__, __dir__ = lazy_face(
    __name__,
    {
        "jcs": (
            "NonCanonicalError",
            "NonStringKeyError",
            "UnsupportedValueError",
            "canonical_bytes",
            "parse_canonical",
        ),
        "strict_json": (
            "ByteOrderMarkError",
            "ControlCharacterError",
            "DEFAULT_MAX_DEPTH",
            "DuplicateKeyError",
            "EmptyInputError",
            "InputTooLargeError",
            "IntegerRangeError",
            "InvalidUTF8Error",
            "JSONFormatError",
            "JSONSyntaxError",
            "LoneSurrogateError",
            "MAX_DEPTH_LIMIT",
            "MAX_SAFE_INTEGER",
            "NestingTooDeepError",
            "NonFiniteNumberError",
            "NumberOverflowError",
            "StringTooLongError",
            "TooManyElementsError",
            "TrailingDataError",
            "float_in_integer_gap",
            "parse_strict",
        ),
    },
)
