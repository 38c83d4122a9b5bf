"""Entry body schemas: what the ``body`` of each entry kind may hold (``specs/entries.md``).

:func:`validate_body` is the gate an entry passes before it is signed or written. It returns
``None`` for a well-formed body and otherwise raises :class:`UnknownKindError` (a kind not in
:data:`ENTRY_KINDS`) or :class:`BodySchemaError`, whose message starts with the path of the
offending field and says what was expected, e.g.
``body.arguments: expected an object, got a list``. Both are subclasses of
:class:`~registre.attest.errors.MalformedError` (CLI exit 2).

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
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from registre.attest.canonical import parse_canonical
from registre.attest.errors import MalformedError
from registre.attest.strict_json import MAX_SAFE_INTEGER
from registre.lifecycle.codec import KINDS as LIFECYCLE_CODEC_KINDS
from registre.lifecycle.codec import parse_body
from registre.lifecycle.context.lifecycle_block import LIFECYCLE_BLOCK_VERSIONS
from registre.lifecycle.context.model import SECTIONS
from registre.lifecycle.context.policy import parse_policy
from registre.lifecycle.context.provider import PROVIDER_SHAPES
from registre.lifecycle.errors import LifecycleFormatError
from registre.lifecycle.jsonshape import MAX_ENTRY_NAME_BYTES, MAX_ENTRY_TEXT_BYTES, MAX_ITEMS

__all__ = [
    "ENTRY_KINDS",
    "LIFECYCLE_KINDS",
    "MAX_BODY_BYTES",
    "MAX_DEPTH",
    "MAX_ENTRY_NAME_BYTES",
    "MAX_ENTRY_TEXT_BYTES",
    "MAX_ITEMS",
    "MAX_OBJECT_BYTES",
    "BodySchemaError",
    "UnknownKindError",
    "validate_body",
    "validate_schema",
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


# --- describing values and paths -------------------------------------------------------

_JSON_TYPES = (dict, list, str, int, bool, type(None), float)  # float: to name it in the error
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_SHA256_HEX = re.compile(r"[0-9a-f]{64}\Z")
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f]")


def _describe(value: object) -> str:
    """How a value's type reads in a message: 'a list', 'a string', 'null', ..."""
    names = {
        dict: "an object",
        list: "a list",
        str: "a string",
        bool: "a boolean",
        int: "an integer",
        float: "a float",
        type(None): "null",
    }
    return names.get(type(value), f"a Python {type(value).__name__}")


def _member(path: str, key: str) -> str:
    """``body.name`` for identifier-like keys, ``body["odd key"]`` for the rest."""
    if _IDENTIFIER.match(key):
        return f"{path}.{key}"
    return f"{path}[{json.dumps(key)}]"


def _utf8_size(text: str, path: str) -> int:
    try:
        return len(text.encode("utf-8"))
    except UnicodeEncodeError as exc:
        raise BodySchemaError(
            path,
            f"holds lone surrogate U+{ord(text[exc.start]):04X} at character {exc.start}; "
            "strings must be Unicode text with a UTF-8 form",
        ) from None


def _compact_size(value: object) -> int:
    """Size of ``value`` as compact JSON (its canonical size, give or take key order)."""
    return len(json.dumps(value, ensure_ascii=False, separators=(",", ":")).encode("utf-8"))


# --- rules for every body --------------------------------------------------------------


def _check_json_value(value: object, path: str, depth: int) -> None:
    """Rules 1-3 of the module docstring, recursively; ``depth`` counts containers."""
    if type(value) not in _JSON_TYPES:
        raise BodySchemaError(
            path,
            "expected a plain JSON value (object, list, string, integer, boolean or null), "
            f"got {_describe(value)}",
        )
    if isinstance(value, float):
        fix = (
            "carry tool arguments with floats as body.arguments_json"
            if path.startswith("body.arguments")
            else "write an integer (e.g. per-mille) or a string"
        )
        raise BodySchemaError(
            path,
            f"expected no float, got {value!r}: entry bodies hold integers and strings only "
            f"(floats print differently across languages); {fix}",
        )
    if isinstance(value, str):
        _utf8_size(value, path)
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
            key_path = _member(path, key)
            _utf8_size(key, key_path)
            _check_json_value(item, key_path, depth + 1)


# --- field checks: each takes (value, path) and raises BodySchemaError -------------------

_Check = Callable[[object, str], None]


def _wrong(path: str, expected: str, value: object) -> BodySchemaError:
    """The error for a value of the wrong type: ``PATH: expected X, got a Y``."""
    return BodySchemaError(path, f"expected {expected}, got {_describe(value)}")


def _text(*, max_bytes: int = MAX_ENTRY_TEXT_BYTES, allow_empty: bool = False) -> _Check:
    def check(value: object, path: str) -> None:
        if not isinstance(value, str):
            raise _wrong(path, "a string", value)
        if not value and not allow_empty:
            raise BodySchemaError(path, "expected a non-empty string, got an empty one")
        size = _utf8_size(value, path)
        if size > max_bytes:
            raise BodySchemaError(
                path, f"expected at most {max_bytes} bytes of UTF-8 text, got {size}"
            )

    return check


_TEXT = _text()
_SHORT_TEXT = _text(max_bytes=MAX_ENTRY_NAME_BYTES)


def _name(value: object, path: str) -> None:
    """A name or identifier: 1 to MAX_ENTRY_NAME_BYTES bytes, no control characters."""
    _SHORT_TEXT(value, path)
    control = _CONTROL.search(str(value))
    if control:
        raise BodySchemaError(
            path, f"expected a name without control characters, got U+{ord(control[0]):04X}"
        )


def _one_of(*choices: str) -> _Check:
    def check(value: object, path: str) -> None:
        if value not in choices:
            wanted = " or ".join(json.dumps(choice) for choice in choices)
            raise BodySchemaError(path, f"expected {wanted}, got {json.dumps(value)}")

    return check


def _integer(minimum: int) -> _Check:
    def check(value: object, path: str) -> None:
        if type(value) is not int:
            raise _wrong(path, "an integer", value)
        if value < minimum:
            raise BodySchemaError(path, f"expected an integer >= {minimum}, got {value}")

    return check


_SEQ = _integer(0)


def _block_version(value: object, path: str) -> None:
    if type(value) is not int or value not in LIFECYCLE_BLOCK_VERSIONS:
        known = " or ".join(str(version) for version in LIFECYCLE_BLOCK_VERSIONS)
        raise BodySchemaError(
            path,
            f"expected {known} (a lifecycle block version), got {json.dumps(value)}",
        )


def _boolean(value: object, path: str) -> None:
    if type(value) is not bool:
        raise _wrong(path, "a boolean", value)


def _sha256_hex(value: object, path: str) -> None:
    if not isinstance(value, str):
        raise _wrong(path, "a string", value)
    if not _SHA256_HEX.match(value):
        raise BodySchemaError(path, "expected a SHA-256 digest as 64 lowercase hex digits")


def _free_object(value: object, path: str) -> None:
    """Any JSON object within the size cap (the rules for every body still apply)."""
    if not isinstance(value, dict):
        raise _wrong(path, "an object", value)
    size = _compact_size(value)
    if size > MAX_OBJECT_BYTES:
        raise BodySchemaError(
            path, f"expected at most {MAX_OBJECT_BYTES} bytes as compact JSON, got {size}"
        )


def _items(value: object, path: str, what: str) -> list[Any]:
    """``value`` as a list of 1 to :data:`MAX_ITEMS` items (``what``: one item, named)."""
    if not isinstance(value, list):
        raise _wrong(path, "a list", value)
    if not value:
        raise BodySchemaError(path, f"expected at least one {what}, got an empty list")
    if len(value) > MAX_ITEMS:
        raise BodySchemaError(path, f"expected at most {MAX_ITEMS} items, got {len(value)}")
    return value


def _seqs(value: object, path: str) -> None:
    """A non-empty, strictly increasing list of sequence numbers (so each has one spelling)."""
    value = _items(value, path, "sequence number")
    previous = -1
    for index, item in enumerate(value):
        _SEQ(item, f"{path}[{index}]")
        if item <= previous:
            raise BodySchemaError(
                f"{path}[{index}]",
                f"expected a number greater than {previous} (sorted, no repeats), got {item}",
            )
        previous = item


def _spans(value: object, path: str) -> None:
    """A non-empty list of spans ``[first, last]`` (first <= last), sorted, neither
    overlapping nor touching, so each set of pointers has one spelling."""
    value = _items(value, path, "span [first, last]")
    previous = -2
    for index, span in enumerate(value):
        span_path = f"{path}[{index}]"
        if not isinstance(span, list) or len(span) != 2:
            raise BodySchemaError(span_path, "expected a span [first, last]")
        _SEQ(span[0], f"{span_path}[0]")
        _SEQ(span[1], f"{span_path}[1]")
        if span[0] > span[1]:
            raise BodySchemaError(
                f"{span_path}[1]", f"expected a number >= {span[0]}, got {span[1]}"
            )
        if span[0] <= previous + 1:
            raise BodySchemaError(
                span_path,
                f"expected a span starting after {previous + 1} (sorted spans that neither "
                "overlap nor touch: write [[2,5]], not [[2,3],[4,5]])",
            )
        previous = span[1]


def _elisions(value: object, path: str) -> None:
    """A non-empty list of ``[seq, head_chars, tail_chars]`` by strictly increasing seq."""
    value = _items(value, path, "elision")
    previous = -1
    for index, elision in enumerate(value):
        item_path = f"{path}[{index}]"
        if not isinstance(elision, list) or len(elision) != 3:
            raise BodySchemaError(item_path, "expected [seq, head_chars, tail_chars]")
        for position, number in enumerate(elision):
            _SEQ(number, f"{item_path}[{position}]")
        if elision[0] <= previous:
            raise BodySchemaError(
                f"{item_path}[0]",
                f"expected a number greater than {previous} (sorted, no repeats), got {elision[0]}",
            )
        previous = elision[0]


def _policy(value: object, path: str) -> None:
    """The compaction policy: exactly the six integer fields of
    ``registre.lifecycle.context.Policy``."""
    try:
        parse_policy(value, path)
    except LifecycleFormatError as exc:
        raise BodySchemaError(exc.path, exc.problem) from None


def _list_of(item_check: _Check, *, max_items: int = MAX_ITEMS) -> _Check:
    def check(value: object, path: str) -> None:
        if not isinstance(value, list):
            raise _wrong(path, "a list", value)
        if len(value) > max_items:
            raise BodySchemaError(path, f"expected at most {max_items} items, got {len(value)}")
        for index, item in enumerate(value):
            item_check(item, f"{path}[{index}]")

    return check


def _arguments_json(value: object, path: str) -> None:
    """Tool arguments holding a non-integer number, as their RFC 8785 canonical JSON text."""
    if not isinstance(value, str):
        raise _wrong(path, "a string", value)
    _TEXT(value, path)
    try:
        arguments = parse_canonical(value.encode("utf-8"))
    except MalformedError as exc:
        raise BodySchemaError(
            path, f"expected the RFC 8785 canonical JSON text of an object: {exc}"
        ) from None
    if not isinstance(arguments, dict):
        raise _wrong(path, "the JSON text of an object", arguments)
    if not _holds_float(arguments):
        raise BodySchemaError(
            path,
            "holds no non-integer number; write these arguments as the object "
            "body.arguments instead (arguments_json is only for arguments with floats)",
        )


def _entry_json(value: object, path: str) -> None:
    """A mirrored transcript line: the RFC 8785 canonical JSON text of an object (any numbers,
    floats too: the text is signed as a string)."""
    if not isinstance(value, str):
        raise _wrong(path, "a string", value)
    _TEXT(value, path)
    try:
        line = parse_canonical(value.encode("utf-8"))
    except MalformedError as exc:
        raise BodySchemaError(
            path, f"expected the RFC 8785 canonical JSON text of an object: {exc}"
        ) from None
    if not isinstance(line, dict):
        raise _wrong(path, "the JSON text of an object", line)


def _holds_float(value: object) -> bool:
    if isinstance(value, float):
        return True
    if isinstance(value, dict):
        return any(_holds_float(item) for item in value.values())
    if isinstance(value, list):
        return any(_holds_float(item) for item in value)
    return False


def _source(value: object, path: str) -> None:
    """Where an imported entry came from (specs/entries.md section 6): ``format`` (a name),
    ``fill`` (the message leaves the entry supplies: body field -> RFC 6901 JSON Pointer), on a
    message's first entry the rest of the message verbatim: ``message`` (an object) or
    ``message_json`` (its RFC 8785 text, when it holds non-integer numbers)."""
    if not isinstance(value, dict):
        raise _wrong(path, "an object", value)
    for key in value:
        if key not in ("format", "fill", "message", "message_json"):
            raise BodySchemaError(
                _member(path, key),
                "unknown field; the fields allowed here are format, fill, message, message_json",
            )
    if "format" not in value:
        raise BodySchemaError(f"{path}.format", "required field is missing")
    _name(value["format"], f"{path}.format")
    if "message" in value and "message_json" in value:
        raise BodySchemaError(path, "expected at most one of the fields message and message_json")
    if "message" in value and not isinstance(value["message"], dict):
        raise _wrong(f"{path}.message", "an object", value["message"])
    if "message_json" in value:
        text = value["message_json"]
        if not isinstance(text, str):
            raise _wrong(f"{path}.message_json", "a string", text)
        try:
            parsed = parse_canonical(text.encode("utf-8"))
        except MalformedError as exc:
            raise BodySchemaError(
                f"{path}.message_json", f"expected the RFC 8785 text of an object: {exc}"
            ) from None
        if not isinstance(parsed, dict):
            raise _wrong(f"{path}.message_json", "the JSON text of an object", parsed)
    if "fill" in value:
        fills = value["fill"]
        if not isinstance(fills, dict):
            raise _wrong(f"{path}.fill", "an object", fills)
        for field, where in fills.items():
            fill_path = _member(f"{path}.fill", field)
            if field not in _FILL_FIELDS:
                raise BodySchemaError(
                    fill_path,
                    "unknown field; the fields allowed here are " + ", ".join(_FILL_FIELDS),
                )
            if not isinstance(where, str) or not where.startswith("/"):
                raise BodySchemaError(
                    fill_path, "expected an RFC 6901 JSON Pointer into the message, e.g. /content"
                )


_FILL_FIELDS = ("text", "content", "call_id", "name", "input", "arguments")


# --- records ---------------------------------------------------------------------------


class _Field(NamedTuple):
    name: str
    check: _Check
    required: bool = True


_Rule = Callable[[Mapping[str, Any], str], None]
"""A check across the fields of one record, run after each field passed its own check."""


def _record(*fields: _Field, rules: tuple[_Rule, ...] = ()) -> _Check:
    """An object with exactly these fields: required ones present, no others."""
    by_name = {field.name: field for field in fields}

    def check(value: object, path: str) -> None:
        if not isinstance(value, dict):
            raise _wrong(path, "an object", value)
        for key in value:
            if key not in by_name:
                allowed = ", ".join(by_name)
                raise BodySchemaError(
                    _member(path, key), f"unknown field; the fields allowed here are {allowed}"
                )
        for field in fields:
            if field.name in value:
                field.check(value[field.name], _member(path, field.name))
            elif field.required:
                raise BodySchemaError(_member(path, field.name), "required field is missing")
        for rule in rules:
            rule(value, path)

    return check


def _exactly_one_of(first: str, second: str) -> _Rule:
    def rule(record: Mapping[str, Any], path: str) -> None:
        if (first in record) == (second in record):
            raise BodySchemaError(path, f"expected exactly one of the fields {first} and {second}")

    return rule


def _range_ordered(record: Mapping[str, Any], path: str) -> None:
    if record["from"] > record["to"]:
        raise BodySchemaError(
            f"{path}.to", f"expected a number >= from ({record['from']}), got {record['to']}"
        )


def _summary_needs_folded(record: Mapping[str, Any], path: str) -> None:
    """A summary stands for a folded range: lines exactly when ``folded`` is present."""
    if "folded" in record and not record["summary"]:
        raise BodySchemaError(
            f"{path}.summary", "expected at least one line: a folded range is summarized"
        )
    if "folded" not in record and record["summary"]:
        raise BodySchemaError(
            f"{path}.folded", "required field is missing: summary lines stand for a folded range"
        )


def _pointers_inside_folded(record: Mapping[str, Any], path: str) -> None:
    if "folded" not in record:
        return
    low, high = record["folded"]["from"], record["folded"]["to"]
    for line_index, line in enumerate(record["summary"]):
        for index, (first, last) in enumerate(line["pointers"]):
            if first < low or last > high:
                raise BodySchemaError(
                    f"{path}.summary[{line_index}].pointers[{index}]",
                    f"expected a span inside the folded range [{low}, {high}], "
                    f"got [{first}, {last}]",
                )


_SCHEMAS: dict[str, _Check] = {
    "turn": _record(
        _Field("role", _one_of("user", "assistant", "system")),
        _Field("text", _TEXT),
        _Field("source", _source, required=False),
    ),
    "tool.call": _record(
        _Field("call_id", _name),
        _Field("name", _name),
        _Field("arguments", _free_object, required=False),
        _Field("arguments_json", _arguments_json, required=False),
        _Field("audit_ref", _name, required=False),
        _Field("call_ref", _name, required=False),
        _Field("source", _source, required=False),
        rules=(_exactly_one_of("arguments", "arguments_json"),),
    ),
    "tool.result": _record(
        _Field("call_id", _name),
        _Field("content", _text(allow_empty=True)),
        _Field("is_error", _boolean, required=False),
        _Field("name", _name, required=False),
        _Field("call_ref", _name, required=False),
        _Field("source", _source, required=False),
    ),
    "imported": _record(
        _Field("type", _name),
        _Field("role", _one_of("user", "assistant", "system"), required=False),
        _Field("text", _TEXT, required=False),
        _Field("sha256", _sha256_hex, required=False),
        _Field("source", _source),
    ),
    "decision": _record(
        _Field("text", _TEXT),
        _Field("refs", _seqs, required=False),
    ),
    "context.compaction": _record(
        _Field(
            "folded",
            _record(_Field("from", _SEQ), _Field("to", _SEQ), rules=(_range_ordered,)),
            required=False,
        ),
        _Field("stubbed", _seqs, required=False),
        _Field("elided", _elisions, required=False),
        _Field(
            "summary",
            _list_of(
                _record(
                    _Field("section", _one_of(*SECTIONS)),
                    _Field("text", _TEXT),
                    _Field("pointers", _spans),
                )
            ),
        ),
        _Field("summarizer", _record(_Field("name", _name), _Field("version", _name))),
        _Field("policy", _policy),
        _Field("token_counter", _name),
        _Field("tokens_before", _integer(0)),
        _Field("tokens_after", _integer(0)),
        _Field("pin_set_sha256", _sha256_hex),
        rules=(_summary_needs_folded, _pointers_inside_folded),
    ),
    "transcript.entry": _record(
        _Field("framework", _name),
        _Field("session", _name),
        _Field("subpath", _name, required=False),
        _Field("entry_json", _entry_json),
    ),
    "compaction.imported": _record(
        _Field("framework", _name),
        _Field("session", _name),
        _Field("event", _one_of("pre_compact", "boundary", "summary")),
        _Field("trigger", _name, required=False),
        _Field("uuid", _name, required=False),
        _Field(
            "folded",
            _record(_Field("from", _SEQ), _Field("to", _SEQ), rules=(_range_ordered,)),
            required=False,
        ),
        _Field("pre_tokens", _integer(0), required=False),
        _Field("summary", _TEXT, required=False),
        _Field("context_sha256", _sha256_hex, required=False),
        _Field("pins", _list_of(_name), required=False),
    ),
    "model.call": _record(
        _Field("model", _name),
        _Field("projection_sha256", _sha256_hex),
        _Field("at_seq", _SEQ),
        _Field("budget_tokens", _integer(1)),
        _Field("policy", _policy),
        _Field("token_counter", _name),
        _Field("shape", _one_of(*PROVIDER_SHAPES), required=False),
        _Field("lifecycle_block", _block_version, required=False),
    ),
}

ENTRY_KINDS: frozenset[str] = frozenset(_SCHEMAS) | LIFECYCLE_KINDS
"""Every entry kind registre defines; any other kind is refused."""


def validate_body(kind: str, body: object) -> None:
    """_Check that ``body`` is a well-formed body for an entry of kind ``kind``.

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
        raise _wrong("body", "an object", body)
    _check_json_value(body, "body", 0)
    size = _compact_size(body)
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
    (:mod:`registre.attest.verify_entries`) -- calls this alone, to the same verdict.
    """
    if kind not in ENTRY_KINDS:
        known = ", ".join(sorted(ENTRY_KINDS))
        raise UnknownKindError(f"unknown entry kind {kind!r}; the kinds are: {known}")
    if not isinstance(body, dict):
        raise _wrong("body", "an object", body)
    schema = _SCHEMAS.get(kind)
    if schema is not None:
        schema(body, "body")
        return
    try:
        parse_body(kind, body)
    except LifecycleFormatError as exc:
        raise BodySchemaError(exc.path, exc.problem) from None
