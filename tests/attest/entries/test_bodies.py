"""Entry body schemas (specs/entries.md): vectors, the page's examples, and the rules."""

from __future__ import annotations

import copy
import json
import re
from pathlib import Path
from typing import Any

import pytest
from hypothesis import event, given
from hypothesis import strategies as st

from registre.attest.canonical_json import canonical_bytes, parse_canonical
from registre.attest.entries import (
    ENTRY_KINDS,
    LIFECYCLE_KINDS,
    MAX_DEPTH,
    MAX_OBJECT_BYTES,
    BodySchemaError,
    FloatInBodyError,
    UnknownKindError,
    compact_size,
    decimal_strings,
    plain_compact_size,
    validate_body,
)
from registre.errors import MalformedError
from registre.lifecycle.codec import KINDS as CODEC_KINDS
from registre.lifecycle.jsonshape import MAX_ENTRY_NAME_BYTES, MAX_ENTRY_TEXT_BYTES

SPECS = Path(__file__).resolve().parents[3] / "specs"
VECTORS = json.loads((SPECS / "vectors" / "entry-bodies.json").read_text(encoding="utf-8"))
VALID = VECTORS["valid"]
INVALID = VECTORS["invalid"]
OWN_KINDS = sorted(ENTRY_KINDS - LIFECYCLE_KINDS)


def _valid(kind: str) -> dict[str, Any]:
    """A deep copy of the first valid vector body of ``kind``."""
    return copy.deepcopy(next(case["body"] for case in VALID if case["kind"] == kind))


def _refusal(kind: str, body: object) -> BodySchemaError:
    with pytest.raises(BodySchemaError) as caught:
        validate_body(kind, body)
    return caught.value


# --- vectors and the page --------------------------------------------------------------


def test_kinds_are_the_seventeen_of_the_design() -> None:
    assert {
        "turn",
        "tool.call",
        "tool.result",
        "decision",
        "source.read",
        "evidence.upsert",
        "evidence.revise",
        "conclusion.compute",
        "conclusion.final",
        "conclusion.revise",
        "context.pin",
        "context.unpin",
        "context.compaction",
        "model.call",
        "transcript.entry",
        "compaction.imported",
        "imported",
    } == ENTRY_KINDS
    assert frozenset(CODEC_KINDS) == LIFECYCLE_KINDS


@pytest.mark.parametrize("case", VALID, ids=lambda case: case["kind"])
def test_valid_vector_accepted(case: dict[str, Any]) -> None:
    body = copy.deepcopy(case["body"])
    validate_body(case["kind"], body)
    assert body == case["body"]  # validation never changes the body


@pytest.mark.parametrize("case", INVALID, ids=lambda case: f"{case['kind']}:{case['why']}")
def test_invalid_vector_refused_naming_the_field(case: dict[str, Any]) -> None:
    error = _refusal(case["kind"], case["body"])
    assert error.path == case["path"]
    assert str(error).startswith(case["path"] + ": ")


@pytest.mark.parametrize("kind", VECTORS["unknown_kinds"])
def test_unknown_kind_fail(kind: str) -> None:
    with pytest.raises(UnknownKindError, match="unknown entry kind"):
        validate_body(kind, {"role": "user", "text": "hi"})


def test_every_kind_has_a_valid_and_an_invalid_vector() -> None:
    assert {case["kind"] for case in VALID} == ENTRY_KINDS
    assert {case["kind"] for case in INVALID} == ENTRY_KINDS


def test_page_examples_are_the_valid_vectors() -> None:
    page = (SPECS / "entries.md").read_text(encoding="utf-8")
    examples = [json.loads(block) for block in re.findall(r"```json\n(.*?)```", page, re.S)]
    assert sorted(map(canonical_bytes, examples)) == sorted(
        canonical_bytes(case["body"]) for case in VALID
    )


def test_errors_are_malformed_input_exit_2() -> None:
    for error in (_refusal("turn", []), UnknownKindError("x")):
        assert isinstance(error, MalformedError)
        assert error.exit_code == 2


# --- rules for every body ----------------------------------------------------------------


def test_message_names_path_and_expectation() -> None:
    body = _valid("tool.call") | {"arguments": ["ls"]}
    assert str(_refusal("tool.call", body)) == "body.arguments: expected an object, got a list"


@pytest.mark.parametrize("kind", sorted(ENTRY_KINDS))
def test_non_object_body_fail(kind: str) -> None:
    assert str(_refusal(kind, [_valid(kind)])) == "body: expected an object, got a list"


@pytest.mark.parametrize("kind", sorted(ENTRY_KINDS))
def test_unknown_top_level_field_fail(kind: str) -> None:
    assert _refusal(kind, _valid(kind) | {"extra": "x"}).path.startswith("body")


@pytest.mark.parametrize(
    ("value", "problem"),
    [
        (0.5, "no float"),
        (1.0, "no float"),  # even an integral float: the body must say 1
        (2**53, "beyond"),
        (-(2**53), "beyond"),
        ("\ud800", "lone surrogate"),
        ((1, 2), "a Python tuple"),
        (b"bytes", "a Python bytes"),
    ],
)
def test_value_smuggled_into_free_object_fail(value: object, problem: str) -> None:
    body = _valid("tool.call")
    body["arguments"] = {"nested": [{"deep": value}]}
    error = _refusal("tool.call", body)
    assert error.path == "body.arguments.nested[0].deep"
    assert problem in str(error)


def test_bool_is_not_an_integer_fail() -> None:
    assert _refusal("model.call", _valid("model.call") | {"at_seq": True}).path == "body.at_seq"


def test_non_string_key_fail() -> None:
    body = _valid("tool.call")
    body["arguments"] = {1: "x"}
    assert "not a string" in str(_refusal("tool.call", body))


def test_odd_keys_are_quoted_in_paths() -> None:
    body = _valid("tool.call")
    body["arguments"] = {"a b": 0.5}
    assert _refusal("tool.call", body).path == 'body.arguments["a b"]'


def test_nesting_limit() -> None:
    def nested(levels: int) -> dict[str, Any]:
        body = _valid("tool.call")
        value: Any = "leaf"
        for _ in range(levels - 2):  # the body and arguments are two levels already
            value = [value]
        body["arguments"] = {"x": value} if levels > 1 else {}
        return body

    validate_body("tool.call", nested(MAX_DEPTH))
    assert "nested deeper" in str(_refusal("tool.call", nested(MAX_DEPTH + 1)))


def test_text_cap_is_one_mebibyte_of_utf8() -> None:
    validate_body("turn", {"role": "user", "text": "x" * MAX_ENTRY_TEXT_BYTES})
    validate_body("turn", {"role": "user", "text": "é" * (MAX_ENTRY_TEXT_BYTES // 2)})
    error = _refusal("turn", {"role": "user", "text": "é" * (MAX_ENTRY_TEXT_BYTES // 2 + 1)})
    assert error.path == "body.text"
    assert f"at most {MAX_ENTRY_TEXT_BYTES} bytes" in str(error)


def test_name_cap_and_control_characters() -> None:
    body = _valid("tool.call")
    validate_body("tool.call", body | {"name": "n" * MAX_ENTRY_NAME_BYTES})
    too_long = body | {"name": "n" * (MAX_ENTRY_NAME_BYTES + 1)}
    assert _refusal("tool.call", too_long).path == "body.name"
    assert "U+000A" in str(_refusal("tool.call", body | {"name": "bash\nrm"}))
    assert "U+0085" in str(_refusal("tool.call", body | {"call_id": "c\x85"}))


def test_free_object_cap() -> None:
    body = _valid("tool.call")
    body["arguments"] = {"a": "x" * (MAX_OBJECT_BYTES - 8)}  # {"a":"..."} is 8 more bytes
    validate_body("tool.call", body)
    body["arguments"] = {"a": "x" * (MAX_OBJECT_BYTES - 7)}
    assert _refusal("tool.call", body).path == "body.arguments"


def test_whole_body_cap() -> None:
    line = {"section": "findings", "text": "x" * (MAX_ENTRY_TEXT_BYTES - 100), "pointers": [[2, 2]]}
    body = _valid("context.compaction") | {"summary": [line, line, line]}
    error = _refusal("context.compaction", body)
    assert error.path == "body"
    assert "compact JSON" in str(error)


# --- kind-specific rules -------------------------------------------------------------------


def test_missing_required_field_fail() -> None:
    for kind in OWN_KINDS:
        body = _valid(kind)
        first = next(iter(body))
        assert _refusal(kind, {k: v for k, v in body.items() if k != first}).path == (
            f"body.{first}"
        )


def test_null_for_an_optional_field_fail() -> None:
    assert _refusal("tool.call", _valid("tool.call") | {"audit_ref": None}).path == (
        "body.audit_ref"
    )


def test_arguments_json_round_trips_the_value() -> None:
    value = {"ratio": 0.1, "n": [1e21, 5e-324]}
    body = _valid("tool.call")
    del body["arguments"]
    body["arguments_json"] = canonical_bytes(value).decode()
    validate_body("tool.call", body)
    assert body["arguments_json"] == '{"n":[1e+21,5e-324],"ratio":0.1}'  # accepted unchanged
    assert parse_canonical(body["arguments_json"].encode()) == value  # the very floats


@pytest.mark.parametrize(
    "text",
    ['{"ratio": 0.25}', '{"ratio":2.5E-1}', '{"b":0.5,"a":1}', "[0.5]", '{"n":1}', "0.5", ""],
)
def test_arguments_json_must_be_the_one_canonical_form_fail(text: str) -> None:
    body = {"call_id": "c1", "name": "f", "arguments_json": text}
    assert _refusal("tool.call", body).path == "body.arguments_json"


def test_both_or_neither_arguments_fail() -> None:
    body = _valid("tool.call")
    del body["arguments"]
    assert "exactly one" in str(_refusal("tool.call", body))


def test_compaction_pointer_outside_folded_range_fail() -> None:
    body = _valid("context.compaction")
    low = body["folded"]["from"]
    body["summary"][1]["pointers"] = [[low - 1, low]]
    error = _refusal("context.compaction", body)
    assert error.path == "body.summary[1].pointers[0]"
    assert "inside the folded range" in str(error)


def test_compaction_span_reaching_past_the_range_fail() -> None:
    body = _valid("context.compaction")
    high = body["folded"]["to"]
    body["summary"][0]["pointers"] = [[high, high + 1]]
    assert _refusal("context.compaction", body).path == "body.summary[0].pointers[0]"


def test_compaction_folding_nothing_has_no_summary() -> None:
    body = _valid("context.compaction")
    del body["folded"]
    validate_body("context.compaction", body | {"summary": []})
    assert _refusal("context.compaction", body).path == "body.folded"


def test_compaction_fold_without_summary_fail() -> None:
    body = _valid("context.compaction") | {"summary": []}
    assert _refusal("context.compaction", body).path == "body.summary"


@pytest.mark.parametrize("kind", ["context.compaction", "model.call"])
def test_policy_is_the_six_integers(kind: str) -> None:
    body = _valid(kind)
    assert _refusal(kind, body | {"policy": body["policy"] | {"extra": 1}}).path == (
        "body.policy.extra"
    )
    assert _refusal(kind, body | {"policy": body["policy"] | {"budget_tokens": 0}}).path == (
        "body.policy.budget_tokens"
    )


def test_repeated_pointer_fail() -> None:
    body = _valid("decision") | {"refs": [3, 3]}
    assert _refusal("decision", body).path == "body.refs[1]"


def test_lifecycle_refusal_keeps_its_path_and_message() -> None:
    body = _valid("context.pin")
    body["request"]["seq"] = -1
    error = _refusal("context.pin", body)
    assert error.path == "body.request.seq"
    assert str(error).startswith("body.request.seq: ")


# --- properties ----------------------------------------------------------------------------

_scalars = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**60), max_value=2**60),
    st.floats(allow_nan=True),
    st.text(max_size=8),
    st.binary(max_size=2),
)
_values = st.recursive(
    _scalars,
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.tuples(inner),
        st.dictionaries(st.one_of(st.text(max_size=4), st.integers()), inner, max_size=4),
    ),
    max_leaves=12,
)


@given(kind=st.sampled_from(sorted(ENTRY_KINDS)), body=_values)
def test_arbitrary_values_raise_only_malformed(kind: str, body: object) -> None:
    try:
        validate_body(kind, body)
    except MalformedError:
        event("refused")
        return
    event("accepted")
    assert parse_canonical(canonical_bytes(body)) == body  # whatever is accepted can be signed


@given(
    kind=st.sampled_from(sorted(ENTRY_KINDS)),
    data=st.data(),
    replacement=_values,
)
def test_replacing_any_field_raises_only_malformed(
    kind: str, data: st.DataObject, replacement: object
) -> None:
    body = _valid(kind)
    # Walk to a random place in the body and put an arbitrary value there.
    target: Any = body
    while True:
        keys = list(target) if isinstance(target, dict) else list(range(len(target)))
        if not keys:
            break
        key = data.draw(st.sampled_from(keys))
        if isinstance(target[key], dict | list) and data.draw(st.booleans()):
            target = target[key]
            continue
        target[key] = replacement
        break
    try:
        validate_body(kind, body)
    except MalformedError:
        event("refused")
        return
    event("accepted")
    assert parse_canonical(canonical_bytes(body)) == body  # whatever is accepted can be signed


_json_without_floats = st.recursive(
    st.one_of(
        st.none(),
        st.booleans(),
        st.integers(min_value=-(2**53) + 1, max_value=2**53 - 1),
        st.text(max_size=8),
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(st.text(max_size=4), inner, max_size=4)
    ),
    max_leaves=12,
)


@given(
    value=st.dictionaries(
        st.text(max_size=6),
        st.one_of(_json_without_floats, st.text(alphabet=st.characters(codec="utf-8"))),
        max_size=5,
    )
)
def test_the_fast_compact_size_is_json_dumps_size(value: dict[str, Any]) -> None:
    """The body check's size (a C encoder made once) is ``json.dumps``'s, for every plain
    value: non-ASCII text, escapes, control characters, nesting; and one failed call (an
    unserializable value) leaves nothing behind that changes the next."""
    assert plain_compact_size(value) == compact_size(value)
    with pytest.raises(TypeError):
        plain_compact_size({"a": [value, object()]})
    assert plain_compact_size([value, value]) == compact_size([value, value])


@given(arguments=st.dictionaries(st.text(max_size=6), _json_without_floats, max_size=5))
def test_any_float_free_arguments_accepted(arguments: dict[str, Any]) -> None:
    validate_body("tool.call", {"call_id": "c1", "name": "f", "arguments": arguments})


@given(
    arguments=st.dictionaries(st.text(max_size=6), _json_without_floats, max_size=5),
    fraction=st.floats(allow_nan=False, allow_infinity=False).filter(
        lambda x: not x.is_integer() and abs(x) < 2**53
    ),
    key=st.text(max_size=6),
)
def test_a_float_anywhere_in_arguments_is_refused_at_its_path(
    arguments: dict[str, Any], fraction: float, key: str
) -> None:
    arguments[key] = [fraction]
    body = {"call_id": "c1", "name": "f", "arguments": arguments}
    error = _refusal("tool.call", body)
    assert error.path.endswith("[0]")
    assert "no float" in str(error)
    del body["arguments"]
    body["arguments_json"] = canonical_bytes(arguments).decode("utf-8")
    validate_body("tool.call", body)  # ...and is carried by arguments_json instead


# --- the fast walks give the reference verdicts ------------------------------------------

_odd_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**54), 2**54)
    | st.floats(allow_nan=False)
    | st.text(alphabet="ab\ud800é😀", max_size=4)
    | st.tuples(st.integers(0, 3)),
    lambda inner: (
        st.lists(inner, max_size=3)
        | st.dictionaries(st.text(alphabet="a\udc00b", max_size=2) | st.integers(0, 2), inner)
    ),
    max_leaves=10,
) | st.integers(28, 36).map(lambda depth: _nest(depth))


def _nest(depth: int) -> object:
    value: object = 1
    for _ in range(depth):
        value = [value]
    return value


def _reference(body: object) -> str | None:
    """Rules 1-3 of validate_body by the walk that writes every path: its error, or None."""
    from registre.attest.entries import bodies

    try:
        bodies._check_json_value(body, "body", 0)
    except BodySchemaError as error:
        return str(error)
    return None


@given(value=_odd_values)
def test_rules_walk_is_the_reference_walk(value: object) -> None:
    """validate_body first walks without writing paths; on any doubt the path-writing walk
    raises: the verdict and the message are the reference's."""
    body = {"arguments": {"x": value}, "call_id": "c", "name": "t"}
    expected = _reference(body)
    try:
        validate_body("tool.call", body)
    except BodySchemaError as error:
        if expected is not None:
            assert str(error) == expected
        return
    assert expected is None


@given(value=_odd_values)
def test_the_size_bound_is_the_rules_walk_and_never_under(value: object) -> None:
    """The walk that spares validate_body writing a body out: -1 exactly where the
    path-writing walk refuses (rules 1-2), else never less than the compact JSON size."""
    from registre.attest.entries import bodies

    body = {"x": value, "\u00e9\n": ['\x00"\\', "\U0001f600"]}
    bound = bodies._plain_bound(body, 0)
    assert (bound >= 0) == (_reference(body) is None)
    if bound >= 0:
        assert bound >= compact_size(body)


def test_a_body_over_the_cap_is_measured_and_refused() -> None:
    """A body the bound cannot clear is written out and measured, before its schema (rule 3
    before rule 4): at the cap, the schema's error; one byte over, the size error with the
    exact size."""
    from registre.attest.entries import MAX_BODY_BYTES

    room = MAX_BODY_BYTES - compact_size({"a": ""})
    with pytest.raises(BodySchemaError, match="unknown field"):
        validate_body("turn", {"a": "x" * room})
    with pytest.raises(BodySchemaError, match=f"got {MAX_BODY_BYTES + 1}$"):
        validate_body("turn", {"a": "x" * (room + 1)})
    with pytest.raises(BodySchemaError, match=f"got {MAX_BODY_BYTES + 1}$"):
        validate_body("turn", {"a": "\u00e9" * ((room + 1) // 2) + "x" * ((room + 1) % 2)})


@given(value=_odd_values)
def test_nests_within_counts_every_container(value: object) -> None:
    from registre.attest.entries import nests_within

    def depth(item: object) -> int:
        if isinstance(item, dict):
            return 1 + max(map(depth, item.values()), default=0)
        if isinstance(item, list):
            return 1 + max(map(depth, item), default=0)
        return 0

    for room in range(0, 40, 3):
        assert nests_within(value, room) == (depth(value) <= room)


def test_remembered_policy_does_not_pass_a_boolean_fail() -> None:
    from registre.attest.entries import validate_schema

    body = _valid("model.call")
    validate_schema("model.call", body)  # remembered
    field = next(iter(body["policy"]))
    body["policy"][field] = True if body["policy"][field] == 1 else body["policy"][field] + 10**20
    with pytest.raises(BodySchemaError):
        validate_schema("model.call", body)


@given(
    spans=st.lists(
        st.lists(st.integers(-2, 12) | st.booleans(), min_size=1, max_size=3), max_size=5
    )
)
def test_span_lists_give_the_reference_error(spans: list[Any]) -> None:
    """The inline span check raises what the step-by-step one does (the first bad span)."""
    from registre.attest.entries import SEQ
    from registre.attest.entries import spans as check_spans

    def reference() -> str | None:
        if not spans:
            return "p: expected at least one span [first, last], got an empty list"
        previous = -2
        try:
            for index, span in enumerate(spans):
                path = f"p[{index}]"
                if len(span) != 2:
                    raise BodySchemaError(path, "expected a span [first, last]")
                SEQ(span[0], f"{path}[0]")
                SEQ(span[1], f"{path}[1]")
                if span[0] > span[1]:
                    raise BodySchemaError(
                        f"{path}[1]", f"expected a number >= {span[0]}, got {span[1]}"
                    )
                if span[0] <= previous + 1:
                    raise BodySchemaError(path, "starting after")
                previous = span[1]
        except BodySchemaError as error:
            return str(error)
        return None

    expected = reference()
    try:
        check_spans(spans, "p")
    except BodySchemaError as error:
        assert expected is not None
        assert (
            str(error).split(" (")[0].startswith(expected.split(" (")[0].split("starting after")[0])
        )
        return
    assert expected is None


def test_float_in_body_error_hint_names_the_helper() -> None:
    """A float is FloatInBodyError (a BodySchemaError); its hint names decimal_strings, and for
    tool arguments arguments_json too."""
    call = {"call_id": "c7", "name": "set_threshold", "arguments": {"ratio": 0.25}}
    with pytest.raises(FloatInBodyError) as info:
        validate_body("tool.call", call)
    assert str(info.value).startswith("body.arguments.ratio: expected no float, got 0.25")
    assert info.value.hint is not None
    assert "registre.attest.entries.decimal_strings(arguments)" in info.value.hint
    assert "arguments_json" in info.value.hint
    decision = {"text": "Threshold raised", "ratio": 0.25}
    with pytest.raises(FloatInBodyError) as info:
        validate_body("decision", decision)
    assert info.value.hint is not None
    assert info.value.hint.startswith("convert them with registre.attest.entries.decimal_strings")
    call["arguments"] = decimal_strings(call["arguments"])
    assert call["arguments"] == {"ratio": "0.25"}
    validate_body("tool.call", call)


def test_decimal_strings_writes_each_float_as_its_canonical_text() -> None:
    value = {"ratio": 0.25, "n": [1, 2.0, 1e21, 1e-7, (0.1 + 0.2,)], "s": "0.5", "b": True}
    assert decimal_strings(value) == {
        "ratio": "0.25",
        "n": [1, "2", "1e+21", "1e-7", ["0.30000000000000004"]],
        "s": "0.5",
        "b": True,
    }
    assert value["ratio"] == 0.25  # a copy: the caller's value is left as it was
    with pytest.raises(MalformedError):
        decimal_strings({"x": float("nan")})


@given(number=st.floats(allow_nan=False, allow_infinity=False))
def test_decimal_strings_round_trip_to_the_same_double(number: float) -> None:
    text = decimal_strings(number)
    assert isinstance(text, str) and float(text) == number
    if abs(number) < 2**53:
        assert text == canonical_bytes(number).decode("ascii")
