"""The ``context.compaction`` body read as a :class:`CompactionRecord` (``specs/context.md``
section 7), and written back with :func:`record_to_body`.

:func:`parse_compaction` checks the shape (raising
:class:`~registre.lifecycle.errors.LifecycleFormatError` with the field path) and the rules that
need nothing but the body: a summary is present exactly when a range is folded
(:class:`CompactionEmptySummaryError`); every pointer lies inside the folded range
(:class:`CompactionPointerError`, THREATS row 19). The rules that need the thread (where
ranges may start and end, pins, tokens, quotes) are those of
:func:`registre.context.events.validate_compaction`.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Final

from registre.context.errors import CompactionEmptySummaryError, CompactionPointerError
from registre.context.model import SECTIONS, Span, SummaryLine, coalesce
from registre.context.policy import Policy, parse_policy
from registre.lifecycle.errors import LifecycleFormatError
from registre.lifecycle.jsonshape import (
    MAX_ENTRY_NAME_BYTES,
    MAX_ENTRY_TEXT_BYTES,
    MAX_ITEMS,
    read_list,
    read_name,
    read_text,
    read_uint,
)

__all__ = [
    "COMPACTION_FIELDS",
    "CompactionRecord",
    "parse_compaction",
    "record_to_body",
]

_HEX64: Final = re.compile(r"[0-9a-f]{64}\Z")

COMPACTION_FIELDS: Final = (
    "folded",
    "stubbed",
    "elided",
    "summary",
    "summarizer",
    "policy",
    "token_counter",
    "tokens_before",
    "tokens_after",
    "pin_set_sha256",
)
_OPTIONAL: Final = frozenset(("folded", "stubbed", "elided"))

Elision = tuple[int, int, int]
"""``(seq, head_chars, tail_chars)``: tool result ``seq`` shown as its first ``head_chars``
and last ``tail_chars`` characters (:func:`~registre.context.render.elided_message`)."""


@dataclass(frozen=True, slots=True)
class CompactionRecord:
    """A recorded compaction at ledger entry ``seq``: ``folded`` is the inclusive range folded
    into ``lines`` (``None`` when it only stubs), ``stubbed`` the tool results it replaces by
    stubs, in increasing order; ``elided`` the tool results it shows head and tail only, by
    increasing seq."""

    seq: int
    folded: Span | None
    stubbed: tuple[int, ...]
    lines: tuple[SummaryLine, ...]
    summarizer_name: str
    summarizer_version: str
    policy: Policy
    token_counter: str
    tokens_before: int
    tokens_after: int
    pin_set_sha256: str
    elided: tuple[Elision, ...] = ()


def parse_compaction(seq: int, body: object) -> CompactionRecord:
    """The compaction recorded by entry ``seq`` with ``body`` (module docstring)."""
    fields = _fields(body)
    folded = _folded(fields["folded"]) if "folded" in fields else None
    stubbed = _stubbed(fields["stubbed"]) if "stubbed" in fields else ()
    elided = _elided(fields["elided"]) if "elided" in fields else ()
    lines = read_list(
        fields["summary"], "body.summary", _line, max_items=MAX_ITEMS, what="summary lines"
    )
    summarizer = fields["summarizer"]
    if not isinstance(summarizer, dict) or set(summarizer) != {"name", "version"}:
        raise LifecycleFormatError("body.summarizer", 'expected {"name", "version"}')
    digest = fields["pin_set_sha256"]
    if not isinstance(digest, str) or not _HEX64.match(digest):
        raise LifecycleFormatError("body.pin_set_sha256", "expected 64 lowercase hex digits")
    record = CompactionRecord(
        seq=seq,
        folded=folded,
        stubbed=stubbed,
        lines=lines,
        summarizer_name=_short_name(summarizer["name"], "body.summarizer.name"),
        summarizer_version=_short_name(summarizer["version"], "body.summarizer.version"),
        policy=parse_policy(fields["policy"], "body.policy"),
        token_counter=_short_name(fields["token_counter"], "body.token_counter"),
        tokens_before=read_uint(fields["tokens_before"], "body.tokens_before"),
        tokens_after=read_uint(fields["tokens_after"], "body.tokens_after"),
        pin_set_sha256=digest,
        elided=elided,
    )
    _check_summary_matches_range(record)
    return record


def record_to_body(record: CompactionRecord) -> dict[str, object]:
    """The body that :func:`parse_compaction` reads back as ``record`` (optional fields
    omitted when empty)."""
    body: dict[str, object] = {}
    if record.folded is not None:
        body["folded"] = {"from": record.folded[0], "to": record.folded[1]}
    if record.stubbed:
        body["stubbed"] = list(record.stubbed)
    if record.elided:
        body["elided"] = [list(elision) for elision in record.elided]
    body.update(
        {
            "summary": [line.to_json() for line in record.lines],
            "summarizer": {"name": record.summarizer_name, "version": record.summarizer_version},
            "policy": record.policy.to_json(),
            "token_counter": record.token_counter,
            "tokens_before": record.tokens_before,
            "tokens_after": record.tokens_after,
            "pin_set_sha256": record.pin_set_sha256,
        }
    )
    return body


# --- pieces --------------------------------------------------------------------------------


def _fields(body: object) -> dict[str, object]:
    if not isinstance(body, dict):
        raise LifecycleFormatError("body", "expected an object")
    for key in body:
        if key not in COMPACTION_FIELDS:
            raise LifecycleFormatError(
                f"body.{key}",
                f"unknown field; the allowed fields are {', '.join(COMPACTION_FIELDS)}",
            )
    for key in COMPACTION_FIELDS:
        if key not in body and key not in _OPTIONAL:
            raise LifecycleFormatError(f"body.{key}", "missing field")
    return body


def _folded(value: object) -> Span:
    if not isinstance(value, dict) or set(value) != {"from", "to"}:
        raise LifecycleFormatError("body.folded", 'expected {"from": seq, "to": seq}')
    first = read_uint(value["from"], "body.folded.from")
    last = read_uint(value["to"], "body.folded.to")
    if first > last:
        raise LifecycleFormatError("body.folded.to", f"expected a number >= from ({first})")
    return (first, last)


def _stubbed(value: object) -> tuple[int, ...]:
    seqs = read_list(
        value, "body.stubbed", read_uint, max_items=MAX_ITEMS, min_items=1, what="sequence numbers"
    )
    for index in range(1, len(seqs)):
        if seqs[index] <= seqs[index - 1]:
            raise LifecycleFormatError(
                f"body.stubbed[{index}]", "expected strictly increasing sequence numbers"
            )
    return seqs


def _elided(value: object) -> tuple[Elision, ...]:
    elisions = read_list(
        value, "body.elided", _elision, max_items=MAX_ITEMS, min_items=1, what="elisions"
    )
    for index in range(1, len(elisions)):
        if elisions[index][0] <= elisions[index - 1][0]:
            raise LifecycleFormatError(
                f"body.elided[{index}]", "expected strictly increasing sequence numbers"
            )
    return elisions


def _elision(value: object, path: str) -> Elision:
    if not isinstance(value, list) or len(value) != 3:
        raise LifecycleFormatError(path, "expected [seq, head_chars, tail_chars]")
    return (
        read_uint(value[0], f"{path}[0]"),
        read_uint(value[1], f"{path}[1]"),
        read_uint(value[2], f"{path}[2]"),
    )


def _line(value: object, path: str) -> SummaryLine:
    if not isinstance(value, dict) or set(value) != {"section", "text", "pointers"}:
        raise LifecycleFormatError(path, 'expected {"section", "text", "pointers"}')
    section = value["section"]
    if section not in SECTIONS:
        raise LifecycleFormatError(f"{path}.section", f"expected one of {', '.join(SECTIONS)}")
    pointers = read_list(
        value["pointers"],
        f"{path}.pointers",
        _span,
        max_items=MAX_ITEMS,
        min_items=1,
        what="spans",
    )
    if coalesce(pointers) != pointers:
        raise LifecycleFormatError(
            f"{path}.pointers",
            "expected sorted spans that neither overlap nor touch "
            "(write [[2,5]], not [[2,3],[4,5]])",
        )
    text = read_text(value["text"], f"{path}.text", MAX_ENTRY_TEXT_BYTES)
    return SummaryLine(str(section), text, pointers)


def _span(value: object, path: str) -> Span:
    if not isinstance(value, list) or len(value) != 2:
        raise LifecycleFormatError(path, "expected a span [first, last]")
    first = read_uint(value[0], f"{path}[0]")
    last = read_uint(value[1], f"{path}[1]")
    if first > last:
        raise LifecycleFormatError(f"{path}[1]", f"expected a number >= {first}")
    return (first, last)


def _short_name(value: object, path: str) -> str:
    name = read_name(value, path)
    if len(name.encode("utf-8")) > MAX_ENTRY_NAME_BYTES:
        raise LifecycleFormatError(path, f"expected at most {MAX_ENTRY_NAME_BYTES} bytes")
    return name


def _check_summary_matches_range(record: CompactionRecord) -> None:
    if record.folded is None:
        if record.lines:
            raise CompactionEmptySummaryError(
                f"compaction at seq {record.seq} has summary lines but folds no range; a "
                "summary stands for a folded range"
            )
        return
    if not record.lines:
        raise CompactionEmptySummaryError(
            f"compaction at seq {record.seq} folds entries {record.folded[0]}-"
            f"{record.folded[1]} without a summary line; every fold is summarized"
        )
    first, last = record.folded
    for index, line in enumerate(record.lines):
        for span in line.pointers:
            if span[0] < first or span[1] > last:
                raise CompactionPointerError(
                    f"compaction at seq {record.seq}: summary[{index}] points at "
                    f"{span[0]}-{span[1]}, outside the folded range {first}-{last}"
                )
