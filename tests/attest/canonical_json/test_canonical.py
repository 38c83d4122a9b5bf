"""Canonical bytes (RFC 8785) and the strict JSON reader: specs/canonical.md."""

from __future__ import annotations

import enum
import json
import re
import struct
from collections import OrderedDict
from decimal import Decimal
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from registre.attest import canonical_json as canonical
from registre.attest.canonical_json import (
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
    NonCanonicalError,
    NonFiniteNumberError,
    NonStringKeyError,
    NumberOverflowError,
    TrailingDataError,
    UnsupportedValueError,
    canonical_bytes,
    parse_canonical,
    parse_strict,
)
from registre.errors import MalformedError

SPECS = Path(__file__).resolve().parents[3] / "specs"
VECTORS = json.loads((SPECS / "vectors" / "canonical.json").read_text("utf-8"))
PAGE = (SPECS / "canonical.md").read_text("utf-8")

# --- strategies ------------------------------------------------------------------------

safe_integers = st.integers(-MAX_SAFE_INTEGER, MAX_SAFE_INTEGER)
# Floats JCS writes unambiguously: finite, and not integral values in (2^53-1, 1e21).
writable_floats = st.floats(allow_nan=False, allow_infinity=False).filter(
    lambda f: not MAX_SAFE_INTEGER < abs(f) < 1e21
)
scalars = st.none() | st.booleans() | safe_integers | writable_floats | st.text()
json_values = st.recursive(
    scalars,
    lambda children: (
        st.lists(children, max_size=5) | st.dictionaries(st.text(), children, max_size=5)
    ),
    max_leaves=25,
)
json_objects = st.dictionaries(st.text(), json_values, min_size=1, max_size=5)


def _utf16_units(text: str) -> list[int]:
    """UTF-16 code units computed by hand (independent of the codec rfc8785 uses)."""
    units: list[int] = []
    for char in text:
        point = ord(char)
        if point < 0x10000:
            units.append(point)
        else:
            point -= 0x10000
            units += [0xD800 + (point >> 10), 0xDC00 + (point & 0x3FF)]
    return units


def _data(vector: dict[str, Any]) -> bytes:
    if "input_hex" in vector:
        return bytes.fromhex(vector["input_hex"])
    return str(vector["input"]).encode("utf-8")


# --- round trips -----------------------------------------------------------------------


@given(json_values)
def test_canonical_bytes_round_trip_through_parse_canonical(value: Any) -> None:
    data = canonical_bytes(value)
    parsed = parse_canonical(data)
    assert parsed == value
    assert canonical_bytes(parsed) == data  # also tells True from 1 and "1" from 1


@given(json_values)
def test_canonical_bytes_idempotent_through_parse_strict(value: Any) -> None:
    data = canonical_bytes(value)
    assert canonical_bytes(parse_strict(data)) == data


@given(json_values, st.booleans(), st.sampled_from([None, 0, 2]), st.booleans())
def test_any_spelling_reads_to_the_same_value(
    value: Any, ensure_ascii: bool, indent: int | None, sort_keys: bool
) -> None:
    spelled = json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, sort_keys=sort_keys)
    assert parse_strict(spelled.encode("utf-8")) == value
    assert parse_strict(spelled) == value
    assert canonical_bytes(parse_strict(spelled)) == canonical_bytes(value)


@given(json_values, st.booleans(), st.sampled_from([None, 0, 2]), st.booleans())
def test_every_other_spelling_is_non_canonical(
    value: Any, ensure_ascii: bool, indent: int | None, sort_keys: bool
) -> None:
    spelled = json.dumps(value, ensure_ascii=ensure_ascii, indent=indent, sort_keys=sort_keys)
    received, expected = spelled.encode("utf-8"), canonical_bytes(value)
    if received == expected:
        event("json.dumps spelled it canonically")
        assert parse_canonical(received) == value
        return
    with pytest.raises(NonCanonicalError) as caught:
        parse_canonical(received)
    position = caught.value.position
    assert position is not None
    assert received[:position] == expected[:position]
    assert received[position : position + 1] != expected[position : position + 1]


def test_tuples_are_written_as_arrays() -> None:
    assert canonical_bytes((1, ("a", None), [])) == b'[1,["a",null],[]]'


def test_bool_is_not_an_integer() -> None:
    assert canonical_bytes([True, False, 1, 0]) == b"[true,false,1,0]"
    assert parse_strict(b"[true,1]") == [True, 1]
    assert type(parse_strict(b"[true,1]")[1]) is int


def test_integral_floats_are_written_as_integers() -> None:
    assert canonical_bytes([1.0, -0.0, 9007199254740991.0, 1e21]) == (
        b"[1,0,9007199254740991,1e+21]"
    )


# --- key order -------------------------------------------------------------------------


@given(st.dictionaries(st.text(), st.integers(0, 9), max_size=8))
def test_keys_sorted_by_utf16_code_units(value: dict[str, int]) -> None:
    pairs = json.loads(canonical_bytes(value), object_pairs_hook=lambda p: p)
    keys = [key for key, _ in pairs]
    assert keys == sorted(value, key=_utf16_units)


def test_rfc8785_sorting_example() -> None:
    vector = next(v for v in VECTORS["canonical"] if v["name"] == "rfc8785-3.2.3-sorting")
    value = parse_strict(vector["input"])
    order = list(json.loads(canonical_bytes(value), object_pairs_hook=OrderedDict))
    assert order == ["\r", "1", "\u0080", "\u00f6", "\u20ac", "\U0001f600", "\ufb33"]


def test_astral_key_sorts_before_high_bmp_key() -> None:
    # By code point U+FF21 < U+1F600; by UTF-16 D83D < FF21, and UTF-16 decides.
    assert canonical_bytes({"\uff21": 1, "\U0001f600": 2}) == '{"😀":2,"Ａ":1}'.encode()
    assert canonical_bytes({"\u20ac": 1, "\r": 2, "1": 3}) == '{"\\r":2,"1":3,"€":1}'.encode()


def test_no_unicode_normalisation() -> None:
    data = canonical_bytes({"e\u0301": 1, "\u00e9": 2})
    assert data == b'{"e\xcc\x81":1,"\xc3\xa9":2}'
    assert parse_canonical(data) == {"e\u0301": 1, "\u00e9": 2}


# --- vectors: specs/vectors/canonical.json ---------------------------------------------


@pytest.mark.parametrize("vector", VECTORS["canonical"], ids=lambda v: v["name"])
def test_canonical_vector(vector: dict[str, Any]) -> None:
    expected = bytes.fromhex(vector["canonical_hex"])
    assert expected == vector["canonical"].encode("utf-8")
    value = parse_strict(vector["input"].encode("utf-8"))
    assert canonical_bytes(value) == expected
    assert parse_canonical(expected) == value


@pytest.mark.parametrize("vector", VECTORS["numbers"], ids=lambda v: v["ieee754_hex"])
def test_number_vector_rfc8785_appendix_b(vector: dict[str, Any]) -> None:
    number = struct.unpack(">d", bytes.fromhex(vector["ieee754_hex"]))[0]
    if "error" in vector:
        with pytest.raises(getattr(canonical, vector["error"])):
            canonical_bytes(number)
        return
    text = vector["canonical"].encode("ascii")
    assert canonical_bytes(number) == text
    assert parse_canonical(text) == number


def test_number_vectors_cover_refusals() -> None:
    refused = {v["error"] for v in VECTORS["numbers"] if "error" in v}
    assert refused == {"NonFiniteNumberError", "IntegerRangeError"}


@pytest.mark.parametrize("vector", VECTORS["refusals"], ids=lambda v: v["name"])
def test_refusal_vector(vector: dict[str, Any]) -> None:
    error_class = getattr(canonical, vector["error"])
    with pytest.raises(error_class) as caught:
        parse_strict(_data(vector))
    assert type(caught.value) is error_class
    assert caught.value.position == vector["position"]
    assert f"(at byte {vector['position']})" in str(caught.value)


@pytest.mark.parametrize("vector", VECTORS["non_canonical"], ids=lambda v: v["name"])
def test_non_canonical_vector(vector: dict[str, Any]) -> None:
    data = _data(vector)
    assert canonical_bytes(parse_strict(data)) == vector["canonical"].encode("utf-8")
    with pytest.raises(NonCanonicalError) as caught:
        parse_canonical(data)
    assert caught.value.position == vector["position"]


# --- the spec page ---------------------------------------------------------------------

_BLOCKS = re.findall(r"^```(\w+)\n(.*?)^```$", PAGE, flags=re.MULTILINE | re.DOTALL)


def _page_examples() -> list[tuple[str, str, str]]:
    examples = []
    for index, (language, body) in enumerate(_BLOCKS):
        if language == "json":
            (jcs_language, jcs), (hex_language, hex_text) = _BLOCKS[index + 1 : index + 3]
            assert (jcs_language, hex_language) == ("jcs", "hex")
            examples.append((body, jcs.rstrip("\n"), hex_text))
    return examples


def _page_refusals() -> list[tuple[str, str, str, int]]:
    lines = [
        line for language, body in _BLOCKS if language == "refusals" for line in body.splitlines()
    ]
    pattern = re.compile(r"^(parse_strict|parse_canonical) (.+) -> (\w+) at byte (\d+)$")
    parsed = []
    for line in lines:
        match = pattern.match(line)
        assert match, f"unreadable refusal line in specs/canonical.md: {line!r}"
        parsed.append((match[1], match[2], match[3], int(match[4])))
    return parsed


def test_page_has_worked_examples() -> None:
    assert len(_page_examples()) >= 3
    assert len(_page_refusals()) >= 5


@pytest.mark.parametrize("example", _page_examples(), ids=lambda e: e[1][:30])
def test_page_worked_example_holds(example: tuple[str, str, str]) -> None:
    source, jcs, hex_text = example
    expected = bytes.fromhex("".join(hex_text.split()))
    assert jcs.encode("utf-8") == expected
    assert canonical_bytes(parse_strict(source)) == expected
    assert parse_canonical(expected) == parse_strict(source)


@pytest.mark.parametrize("refusal", _page_refusals(), ids=lambda r: f"{r[0]}-{r[1]}")
def test_page_refusal_holds(refusal: tuple[str, str, str, int]) -> None:
    function, text, error_name, position = refusal
    read = parse_strict if function == "parse_strict" else parse_canonical
    with pytest.raises(getattr(canonical, error_name)) as caught:
        read(text.encode("utf-8"))
    assert type(caught.value).__name__ == error_name
    assert caught.value.position == position


def test_page_refusals_table_names_every_error_class() -> None:
    named = set(re.findall(r"`(\w+Error)`", PAGE)) - {"MalformedError", "JSONFormatError"}
    exported = {name for name in canonical.__all__ if name.endswith("Error")} - {"JSONFormatError"}
    assert named == exported
    assert {v["error"] for v in VECTORS["refusals"]} <= named


def test_every_error_is_a_malformed_error() -> None:
    for name in canonical.__all__:
        if name.endswith("Error"):
            error_class = getattr(canonical, name)
            assert issubclass(error_class, JSONFormatError)
            assert issubclass(error_class, MalformedError)
            assert error_class.exit_code == 2


# --- tamper cases (THREATS.md row 10: JSON ambiguity) ----------------------------------


def test_duplicate_key_fail() -> None:
    # Python keeps the last value, other readers the first: two meanings for one signature.
    data = b'{"amount":1,"amount":1000}'
    assert json.loads(data) == {"amount": 1000}
    with pytest.raises(DuplicateKeyError) as caught:
        parse_strict(data)
    assert caught.value.position == 12
    assert "'amount'" in str(caught.value)
    assert "once" in str(caught.value)


def test_duplicate_key_spelled_with_escape_fail() -> None:
    with pytest.raises(DuplicateKeyError) as caught:
        parse_strict(b'{"amount":1,"\\u0061mount":1000}')
    assert caught.value.position == 12


@given(json_objects)
def test_duplicate_key_position_property(value: dict[str, Any]) -> None:
    data = canonical_bytes(value)
    key = next(iter(value))
    tampered = data[:-1] + b"," + json.dumps(key).encode() + b":null}"
    with pytest.raises(DuplicateKeyError) as caught:
        parse_strict(tampered)
    assert caught.value.position == len(data)


@pytest.mark.parametrize(
    ("data", "position"),
    [(b"[NaN]", 1), (b'{"x":Infinity}', 5), (b"[1,-Infinity]", 3), (b"NaN", 0)],
)
def test_nan_fail(data: bytes, position: int) -> None:
    json.loads(data)  # the standard library would accept it
    with pytest.raises(NonFiniteNumberError) as caught:
        parse_strict(data)
    assert type(caught.value) is NonFiniteNumberError
    assert caught.value.position == position


@pytest.mark.parametrize("number", [float("nan"), float("inf"), float("-inf")])
def test_non_finite_float_not_writable_fail(number: float) -> None:
    with pytest.raises(NonFiniteNumberError):
        canonical_bytes({"x": [number]})


@pytest.mark.parametrize(
    ("data", "position"),
    [
        (b'{"seq":9007199254740993}', 7),
        (b"[-9007199254740992]", 1),
        (b"[" + b"9" * 5000 + b"]", 1),  # beyond int()'s digit limit: refused, not crashed
        (b"[1e20]", 1),
        (b"[9007199254740993.0]", 1),
        (b"[-123456789012345678.5e2]", 1),
    ],
)
def test_huge_integer_fail(data: bytes, position: int) -> None:
    with pytest.raises(IntegerRangeError) as caught:
        parse_strict(data)
    assert caught.value.position == position


@pytest.mark.parametrize(
    "value", [2**53, -(2**53), 10**30, 2.0**53, -1e20, 999999999999999900000.0]
)
def test_huge_integer_not_writable_fail(value: float) -> None:
    with pytest.raises(IntegerRangeError):
        canonical_bytes([value])


def test_integer_range_edges_accepted() -> None:
    edges = [MAX_SAFE_INTEGER, -MAX_SAFE_INTEGER, 1e21, -1e300, 1e300]
    data = canonical_bytes(edges)
    assert data == b"[9007199254740991,-9007199254740991,1e+21,-1e+300,1e+300]"
    assert parse_canonical(data) == edges


@pytest.mark.parametrize(
    ("data", "position"),
    [(b"[1e400]", 1), (b"[-1e400]", 1), (b'{"x":1' + b"0" * 400 + b".5}", 5)],
)
def test_number_overflow_fail(data: bytes, position: int) -> None:
    with pytest.raises(NumberOverflowError) as caught:
        parse_strict(data)
    assert isinstance(caught.value, NonFiniteNumberError)
    assert caught.value.position == position


@pytest.mark.parametrize(
    ("data", "position"),
    [
        (b'["\\ud800"]', 2),
        (b'["\\udc00"]', 2),
        (b'["\\ude00\\ud83d"]', 2),  # the pair in the wrong order
        (b'["ok\\ud83d"]', 4),  # high surrogate at the end
        (b'["\\ud83dx"]', 2),
        (b'["\\ud83d\\u0041"]', 2),
        (b'["\\ud83d\\ud83d\\ude00"]', 2),
        (b'{"\\udfff":1}', 2),
        ('["é\\ud800"]'.encode(), 4),
    ],
)
def test_lone_surrogate_fail(data: bytes, position: int) -> None:
    with pytest.raises(LoneSurrogateError) as caught:
        parse_strict(data)
    assert caught.value.position == position


def test_lone_surrogate_in_str_input_fail() -> None:
    with pytest.raises(LoneSurrogateError) as caught:
        parse_strict('["é\ud800"]')
    assert caught.value.position == 4


@pytest.mark.parametrize("value", ["\ud800", {"k": ["ok", "a\udfffb"]}, {"\ud83d": 1}])
def test_lone_surrogate_not_writable_fail(value: Any) -> None:
    with pytest.raises(LoneSurrogateError):
        canonical_bytes(value)


@given(st.text().filter(lambda t: not re.search(r'["\\\x00-\x1f]', t)))
def test_lone_surrogate_position_property(prefix: str) -> None:
    data = b'["' + prefix.encode() + b'\\udabc"]'
    with pytest.raises(LoneSurrogateError) as caught:
        parse_strict(data)
    assert caught.value.position == 2 + len(prefix.encode())


def test_surrogate_pair_escape_accepted() -> None:
    assert parse_strict(b'["\\ud83d\\ude00", "\\uD83D\\uDE00"]') == ["\U0001f600"] * 2


@pytest.mark.parametrize(
    "data",
    [
        b'["\xff"]',
        b'["\xc3"]',
        b'["\xe2\x82"]',
        b'["\xc0\xaf"]',  # overlong "/"
        b'["\xed\xa0\x80"]',  # encoded surrogate
        b'["\xf4\x90\x80\x80"]',  # beyond U+10FFFF
        '["déjà"]'.encode() + b"\x80",
        b"\x80",
    ],
)
def test_invalid_utf8_fail(data: bytes) -> None:
    with pytest.raises(UnicodeDecodeError) as decode_error:
        data.decode("utf-8")
    with pytest.raises(InvalidUTF8Error) as caught:
        parse_strict(data)
    assert caught.value.position == decode_error.value.start
    assert "UTF-8" in str(caught.value)


def test_byte_order_mark_fail() -> None:
    for data in (b"\xef\xbb\xbf{}", "\ufeff{}"):
        with pytest.raises(ByteOrderMarkError) as caught:
            parse_strict(data)
        assert caught.value.position == 0


@pytest.mark.parametrize(
    ("data", "position"),
    [
        (b'["a\tb"]', 3),
        (b'{"\x00":1}', 2),
        # U+001F, the last control character: the range ends there, not one before
        (b'["a\x1fb"]', 3),
        (b'{"\x1f":1}', 2),
        (b'{"k\\n\x1f":1}', 5),
        (b'["\\u0041\x1f"]', 8),
    ],
)
def test_control_character_in_string_fail(data: bytes, position: int) -> None:
    with pytest.raises(ControlCharacterError) as caught:
        parse_strict(data)
    assert caught.value.position == position


@pytest.mark.parametrize(
    ("data", "position"), [(b'{"a":1}{}', 7), (b"[] x", 3), (b"1 2", 2), (b'"a""b"', 3)]
)
def test_trailing_data_fail(data: bytes, position: int) -> None:
    with pytest.raises(TrailingDataError) as caught:
        parse_strict(data)
    assert caught.value.position == position


@pytest.mark.parametrize("data", [b"", b" \n\t\r", ""])
def test_empty_input_fail(data: bytes | str) -> None:
    with pytest.raises(EmptyInputError):
        parse_strict(data)


@pytest.mark.parametrize(
    ("data", "position"),
    [
        (b"[1,", 3),
        (b'{"a"}', 4),
        (b'{"a":1,}', 7),
        (b"[1 2]", 3),
        (b"[tru]", 1),
        (b"[-]", 1),
        (b"[1.]", 1),
        (b"[1.e5]", 1),
        (b"[.5]", 1),
        (b"[0x10]", 2),
        (b'["\\u00g1"]', 2),
        (b'["\\a"]', 2),
        (b'"abc', 0),
        (b"nan", 0),
    ],
)
def test_syntax_error_fail(data: bytes, position: int) -> None:
    with pytest.raises(JSONSyntaxError) as caught:
        parse_strict(data)
    assert caught.value.position == position


def test_deep_nesting_fail() -> None:
    # A million brackets are refused at the 65th, long before Python's recursion limit.
    with pytest.raises(NestingTooDeepError) as caught:
        parse_strict(b"[" * 1_000_000)
    assert caught.value.position == 64
    with pytest.raises(NestingTooDeepError) as caught:
        parse_strict(b'{"a":' * 65 + b"1" + b"}" * 65)
    assert caught.value.position == 5 * 64  # the 65th "{"


def test_nesting_limit_is_exact() -> None:
    assert parse_strict(b"[" * 64 + b"]" * 64) is not None
    assert parse_strict(b"[[1]]", max_depth=2) == [[1]]
    with pytest.raises(NestingTooDeepError):
        parse_strict(b"[[1]]", max_depth=1)
    assert parse_strict(b"7", max_depth=0) == 7
    with pytest.raises(NestingTooDeepError):
        parse_strict(b"[]", max_depth=0)
    deepest = b"[" * canonical.MAX_DEPTH_LIMIT + b"]" * canonical.MAX_DEPTH_LIMIT
    assert parse_strict(deepest, max_depth=canonical.MAX_DEPTH_LIMIT) is not None


def test_deep_value_not_writable_fail() -> None:
    nested: list[Any] = []
    for _ in range(100_000):
        nested = [nested]
    with pytest.raises(NestingTooDeepError):
        canonical_bytes(nested)
    loop: list[Any] = []
    loop.append(loop)
    with pytest.raises(NestingTooDeepError):
        canonical_bytes(loop)
    assert canonical_bytes([[]], max_depth=2) == b"[[]]"
    with pytest.raises(NestingTooDeepError):
        canonical_bytes([[]], max_depth=1)


@pytest.mark.parametrize("max_depth", [-1, canonical.MAX_DEPTH_LIMIT + 1])
def test_max_depth_out_of_range_is_a_caller_error(max_depth: int) -> None:
    with pytest.raises(ValueError, match="max_depth"):
        parse_strict(b"1", max_depth=max_depth)
    with pytest.raises(ValueError, match="max_depth"):
        canonical_bytes(1, max_depth=max_depth)


def test_oversize_input_fail() -> None:
    data = b'["' + b"a" * 96 + b'"]'
    assert parse_strict(data, max_bytes=100) == ["a" * 96]
    with pytest.raises(InputTooLargeError) as caught:
        parse_strict(data + b" ", max_bytes=100)
    assert caught.value.position == 100
    text = '["' + "é" * 48 + '"]'  # 100 bytes but 52 characters
    assert parse_strict(text, max_bytes=100) == ["é" * 48]
    with pytest.raises(InputTooLargeError):
        parse_strict(text, max_bytes=99)
    with pytest.raises(InputTooLargeError):
        parse_canonical(data, max_bytes=99)


@pytest.mark.parametrize(
    ("received", "position"),
    [
        (b'{"a": 1}', 5),
        (b' {"a":1}', 0),
        (b'{"b":1,"a":2}', 2),
        (b'["\\u0041"]', 2),
        (b"[1.0]", 2),
        (b"[1E2]", 2),
        (b"[-0]", 1),
    ],
)
def test_non_canonical_spelling_fail(received: bytes, position: int) -> None:
    assert parse_strict(received) is not None  # valid JSON, but not the signed form
    with pytest.raises(NonCanonicalError) as caught:
        parse_canonical(received)
    assert caught.value.position == position
    assert "canonical" in str(caught.value)


# --- writer refusals -------------------------------------------------------------------


class Colour(enum.Enum):
    RED = "red"


class Level(enum.IntEnum):
    HIGH = 3


class Tag(str):
    pass


@pytest.mark.parametrize(
    "value",
    [
        b"bytes",
        {1, 2},
        frozenset(),
        Decimal("1.5"),
        object(),
        Colour.RED,
        Level.HIGH,
        Tag("x"),
        OrderedDict(a=1),
        range(3),
        1 + 2j,
    ],
    # repr, but stable across processes (pytest-xdist collects in each worker)
    ids=lambda value: "object()" if type(value) is object else repr(value),
)
def test_unsupported_value_fail(value: object) -> None:
    with pytest.raises(UnsupportedValueError) as caught:
        canonical_bytes({"body": [1, value]})
    assert "$['body'][1]" in str(caught.value)
    assert caught.value.position is None


@pytest.mark.parametrize("key", [1, None, True, 1.5, ("a",), Tag("a")], ids=repr)
def test_non_string_key_fail(key: object) -> None:
    with pytest.raises(NonStringKeyError) as caught:
        canonical_bytes({"outer": {key: "v"}})
    assert "$['outer']" in str(caught.value)


def test_writer_error_names_the_path() -> None:
    with pytest.raises(NonFiniteNumberError) as caught:
        canonical_bytes({"body": {"items": [0, 1, {"score": float("nan")}]}})
    assert "$['body']['items'][2]['score']" in str(caught.value)


# --- the reader against the standard library -------------------------------------------

json_alphabet = st.sampled_from([*'{}[]",:-+.0123456789eEtrufalsnNI \\/u\n\x01', "é", "😀"])


AMBIGUITIES = (
    DuplicateKeyError,
    NonFiniteNumberError,
    IntegerRangeError,
    LoneSurrogateError,
    NestingTooDeepError,
)


def _agree_with_stdlib(data: bytes) -> None:
    """parse_strict reads what json.loads reads, and refuses valid JSON only for an ambiguity."""
    try:
        stdlib: Any = json.loads(data.decode("utf-8"))
    except (ValueError, RecursionError):  # bad UTF-8 or JSON the stdlib refuses: so must we
        with pytest.raises(JSONFormatError) as caught:
            parse_strict(data)
        position = caught.value.position
        assert position is not None and 0 <= position <= len(data)
        return
    try:
        ours = parse_strict(data)
    except JSONFormatError as error:
        assert isinstance(error, AMBIGUITIES), f"valid JSON refused: {error}"
        return
    assert canonical_bytes(ours) == canonical_bytes(stdlib)


@given(st.text(json_alphabet, max_size=40) | json_values.map(json.dumps))
def test_reader_agrees_with_the_stdlib_except_named_ambiguities(text: str) -> None:
    _agree_with_stdlib(text.encode("utf-8"))


@given(json_values.map(canonical_bytes), st.data())
def test_reader_agrees_with_the_stdlib_on_mutated_input(data: bytes, draw: st.DataObject) -> None:
    position = draw.draw(st.integers(0, len(data)))
    insert = draw.draw(
        st.binary(max_size=3)
        | st.sampled_from([b'"', b"\\", b"\\ud800", b"{", b"]", b",", b'"":1,', b"NaN", b"1e400"])
    )
    cut = draw.draw(st.integers(0, 2))
    _agree_with_stdlib(data[:position] + insert + data[position + cut :])


@given(st.binary(max_size=64))
def test_arbitrary_bytes_only_raise_malformed_error(data: bytes) -> None:
    try:
        parse_strict(data)
    except MalformedError as error:
        assert error.position is not None


def test_wrong_input_type_is_a_caller_error() -> None:
    with pytest.raises(TypeError):
        parse_strict(123)  # type: ignore[arg-type]
    with pytest.raises(TypeError):
        parse_canonical("{}")  # type: ignore[arg-type]


def test_bytearray_and_memoryview_accepted() -> None:
    assert parse_strict(bytearray(b"[1]")) == [1]
    assert parse_canonical(memoryview(b'{"a":1}')) == {"a": 1}


# --- element and string bounds (issue 13 item 10) --------------------------------------


def test_max_elements_counts_every_value_and_stops_at_the_limit() -> None:
    document = b'{"a":[1,2,{"b":null}],"c":"x"}'  # values: {} [] 1 2 {} null "x" = 7
    assert parse_strict(document, max_elements=7) == json.loads(document)
    with pytest.raises(canonical.TooManyElementsError) as info:
        parse_strict(document, max_elements=6)
    assert info.value.position == document.index(b'"x"')


def test_max_elements_refuses_a_huge_list_where_the_limit_is_reached() -> None:
    document = b"[" + b"0," * 999_999 + b"0]"
    with pytest.raises(canonical.TooManyElementsError) as info:
        parse_strict(document, max_elements=1000)
    assert info.value.position == 1 + 2 * 999  # the 1,000th zero is value 1,001


def test_max_string_length_bounds_values_and_keys() -> None:
    assert parse_strict(b'{"abc":"defg"}', max_string_length=4) == {"abc": "defg"}
    with pytest.raises(canonical.StringTooLongError):
        parse_strict(b'{"abc":"defgh"}', max_string_length=4)
    with pytest.raises(canonical.StringTooLongError):
        parse_strict(b'{"abcde":1}', max_string_length=4)
    with pytest.raises(canonical.StringTooLongError):
        parse_strict(b'{"ab\\u0063de":1}', max_string_length=4)  # escaped key, same rule


def test_negative_bounds_are_a_caller_bug() -> None:
    with pytest.raises(ValueError, match="non-negative"):
        parse_strict(b"1", max_elements=-1)
