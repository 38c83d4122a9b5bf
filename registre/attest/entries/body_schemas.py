"""The schema of each entry kind registre defines itself (``specs/entries.md``).

Part of :mod:`registre.attest.entries.bodies`: :data:`SCHEMAS` maps a kind to the check of its body
(rule 4 of :func:`~registre.attest.entries.bodies.validate_body`); :data:`ENTRY_KINDS` adds the
lifecycle kinds, whose bodies ``registre.lifecycle.codec`` checks. A record is strict:
unknown fields are refused, required fields must be present. Each record is compiled once
into one closure, which writes a field's path (``body.summary``) only to raise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, NamedTuple

from registre import kinds
from registre.attest.entries.body_base import (
    LIFECYCLE_KINDS,
    BodySchemaError,
    member,
    member_suffix,
    wrong,
)
from registre.attest.entries.body_fields import (
    SEQ,
    TEXT,
    Check,
    arguments_json,
    block_version,
    boolean,
    elisions,
    entry_json,
    free_object,
    integer,
    list_of,
    name,
    one_of,
    policy,
    recalls,
    seqs,
    sha256_hex,
    source,
    spans,
    text,
)
from registre.context.model import SECTIONS
from registre.context.provider import PROVIDER_SHAPES

__all__ = ["ENTRY_KINDS", "SCHEMAS"]


class _Field(NamedTuple):
    name: str
    check: Check
    required: bool = True


_Rule = Callable[[Mapping[str, Any], str], None]
"""A check across the fields of one record, run after each field passed its own check."""


def _record(*fields: _Field, rules: tuple[_Rule, ...] = ()) -> Check:
    """An object with exactly these fields: required ones present, no others."""
    allowed = frozenset(field.name for field in fields)
    listed = ", ".join(field.name for field in fields)
    compiled = tuple(
        (field.name, member_suffix(field.name), field.check, field.required) for field in fields
    )

    def check(value: object, path: str) -> None:
        if not isinstance(value, dict):
            raise wrong(path, "an object", value)
        if not value.keys() <= allowed:
            for key in value:
                if key not in allowed:
                    raise BodySchemaError(
                        member(path, key), f"unknown field; the fields allowed here are {listed}"
                    )
        for field_name, suffix, field_check, required in compiled:
            if field_name in value:
                field_check(value[field_name], path + suffix)
            elif required:
                raise BodySchemaError(path + suffix, "required field is missing")
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


SCHEMAS: dict[str, Check] = {
    kinds.TURN: _record(
        _Field("role", one_of("user", "assistant", "system")),
        _Field("text", TEXT),
        _Field("source", source, required=False),
    ),
    kinds.TOOL_CALL: _record(
        _Field("call_id", name),
        _Field("name", name),
        _Field("arguments", free_object, required=False),
        _Field("arguments_json", arguments_json, required=False),
        _Field("audit_ref", name, required=False),
        _Field("call_ref", name, required=False),
        _Field("source", source, required=False),
        rules=(_exactly_one_of("arguments", "arguments_json"),),
    ),
    kinds.TOOL_RESULT: _record(
        _Field("call_id", name),
        _Field("content", text(allow_empty=True)),
        _Field("is_error", boolean, required=False),
        _Field("name", name, required=False),
        _Field("call_ref", name, required=False),
        _Field("source", source, required=False),
    ),
    kinds.IMPORTED: _record(
        _Field("type", name),
        _Field("role", one_of("user", "assistant", "system"), required=False),
        _Field("text", TEXT, required=False),
        _Field("sha256", sha256_hex, required=False),
        _Field("source", source),
    ),
    kinds.DECISION: _record(
        _Field("text", TEXT),
        _Field("refs", seqs, required=False),
    ),
    kinds.CONTEXT_COMPACTION: _record(
        _Field(
            "folded",
            _record(_Field("from", SEQ), _Field("to", SEQ), rules=(_range_ordered,)),
            required=False,
        ),
        _Field("stubbed", seqs, required=False),
        _Field("elided", elisions, required=False),
        _Field(
            "summary",
            list_of(
                _record(
                    _Field("section", one_of(*SECTIONS)),
                    _Field("text", TEXT),
                    _Field("pointers", spans),
                )
            ),
        ),
        _Field("summarizer", _record(_Field("name", name), _Field("version", name))),
        _Field("policy", policy),
        _Field("token_counter", name),
        _Field("tokens_before", integer(0)),
        _Field("tokens_after", integer(0)),
        _Field("pin_set_sha256", sha256_hex),
        rules=(_summary_needs_folded, _pointers_inside_folded),
    ),
    kinds.TRANSCRIPT_ENTRY: _record(
        _Field("framework", name),
        _Field("session", name),
        _Field("subpath", name, required=False),
        _Field("entry_json", entry_json),
    ),
    kinds.COMPACTION_IMPORTED: _record(
        _Field("framework", name),
        _Field("session", name),
        _Field("event", one_of("pre_compact", "boundary", "summary")),
        _Field("trigger", name, required=False),
        _Field("uuid", name, required=False),
        _Field(
            "folded",
            _record(_Field("from", SEQ), _Field("to", SEQ), rules=(_range_ordered,)),
            required=False,
        ),
        _Field("pre_tokens", integer(0), required=False),
        _Field("summary", TEXT, required=False),
        _Field("context_sha256", sha256_hex, required=False),
        _Field("pins", list_of(name), required=False),
    ),
    kinds.MODEL_CALL: _record(
        _Field("model", name),
        _Field("projection_sha256", sha256_hex),
        _Field("at_seq", SEQ),
        _Field("budget_tokens", integer(1)),
        _Field("policy", policy),
        _Field("token_counter", name),
        _Field("shape", one_of(*PROVIDER_SHAPES), required=False),
        _Field("lifecycle_block", block_version, required=False),
        _Field("recalled", recalls, required=False),
    ),
}
"""The check of the body of each kind registre defines itself (lifecycle kinds aside)."""

ENTRY_KINDS: frozenset[str] = frozenset(SCHEMAS) | LIFECYCLE_KINDS
"""Every entry kind registre defines; any other kind is refused."""
