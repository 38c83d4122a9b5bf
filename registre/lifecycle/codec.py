"""JSON forms of lifecycle requests, outcomes and ledger entry bodies.

A lifecycle ledger entry's body is ``{"request": REQUEST, "outcome": OUTCOME}``; the shapes
per kind are in ``specs/lifecycle.md``. :func:`parse_body` is the validator the entry layer
calls: it accepts exactly those shapes and raises
:class:`~registre.lifecycle.errors.LifecycleFormatError` naming the field path of the first problem
(``body.request.statements[2].cites: ...``). It checks shape only; whether the outcome is the
one the rules give is :func:`registre.lifecycle.machine.apply`'s job.

Round trip guarantee: ``parse_request(r.kind, request_to_json(r)) == r`` for every valid
request ``r``, likewise for outcomes and bodies. Sizes are capped (see
:mod:`registre.lifecycle.jsonshape`): 64 KiB per text, 1 KiB per reference id, source or location,
1000 references per read, 1000 statements per upsert, 1000 citations per statement.

Identifiers (reference ids and ``ev-N``/``cc-N`` ids, wherever they are read) and source
names are interned (:func:`sys.intern`): the same id read again is the same string object, so
a state or an index that holds an id in many citations (a long thread cites each reference
many times, each from a body of its own) holds its characters once. Values are unchanged.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Final

from registre.kinds import LIFECYCLE_KIND_NAMES
from registre.lifecycle.errors import LifecycleFormatError
from registre.lifecycle.jsonshape import (
    MAX_BATCH,
    MAX_CITES,
    MAX_UINT,
    read_bool,
    read_id,
    read_list,
    read_name,
    read_object,
    read_text,
    read_uint,
)
from registre.lifecycle.model import (
    PIN_KINDS,
    Accepted,
    ComputeRequest,
    ConclusionReviseRequest,
    Event,
    EvidenceReviseRequest,
    FinalRequest,
    Outcome,
    PinKind,
    PinRequest,
    ReadOutcome,
    ReadRequest,
    Registered,
    Rejected,
    Request,
    Revised,
    SourceRef,
    Statement,
    UnpinRequest,
    UpsertOutcome,
    UpsertRequest,
)
from registre.lifecycle.reasons import REASONS

__all__ = [
    "KINDS",
    "event_to_body",
    "normalize_request",
    "outcome_to_json",
    "parse_body",
    "parse_outcome",
    "parse_request",
    "request_to_json",
]

KINDS: Final = LIFECYCLE_KIND_NAMES
"""The ledger entry kinds whose bodies lifecycle defines (:data:`registre.kinds.ENTRY_KINDS`)."""

_SHA256_DIGITS: Final = frozenset("0123456789abcdef")


# --- to JSON -------------------------------------------------------------------------------


def request_to_json(request: Request) -> dict[str, object]:
    """The JSON object for ``request`` (fresh lists and dicts; no validation beyond types of
    the containers — :func:`normalize_request` validates)."""
    if isinstance(request, ReadRequest):
        return {"refs": [_ref_json(ref, f"request.refs[{i}]") for i, ref in _each(request.refs)]}
    if isinstance(request, UpsertRequest):
        return {
            "statements": [
                _statement_json(s, f"request.statements[{i}]") for i, s in _each(request.statements)
            ]
        }
    if isinstance(request, (EvidenceReviseRequest, ConclusionReviseRequest)):
        replacement = request.replacement
        return {
            "id": request.id,
            "replacement": None
            if replacement is None
            else _statement_json(replacement, "request.replacement"),
        }
    if isinstance(request, (ComputeRequest, FinalRequest)):
        return {"text": request.text, "cites": _list(request.cites)}
    if isinstance(request, PinRequest):
        return {"kind": request.pin_kind, "text": request.text, "seq": request.seq}
    if isinstance(request, UnpinRequest):
        return {"id": request.id, "reason": request.reason}
    raise LifecycleFormatError("request", f"expected a lifecycle request, got {request!r:.80}")


def outcome_to_json(outcome: Outcome | Registered) -> dict[str, object]:
    """The JSON object for ``outcome`` (or for one item of a batch outcome)."""
    if isinstance(outcome, (ReadOutcome, UpsertOutcome)):
        return {"results": [_result_json(result) for result in outcome.results]}
    if isinstance(outcome, (Rejected, Accepted, Registered)):
        return _result_json(outcome)
    if isinstance(outcome, Revised):
        return {
            "accepted": True,
            "id": outcome.id,
            "successor": outcome.successor,
            "stale": list(outcome.stale),
        }
    raise LifecycleFormatError("outcome", f"expected a lifecycle outcome, got {outcome!r:.80}")


def _result_json(result: Accepted | Registered | Rejected) -> dict[str, object]:
    if isinstance(result, Rejected):
        return {"accepted": False, "reason": result.reason, "message": result.message}
    if isinstance(result, Accepted):
        return {"accepted": True, "id": result.id}
    if isinstance(result, Registered):
        return {"accepted": True, "ref": result.ref}
    raise LifecycleFormatError("outcome", f"expected a lifecycle result, got {result!r:.80}")


def event_to_body(event: Event) -> dict[str, object]:
    """The ledger entry body ``{"request": ..., "outcome": ...}`` for ``event``."""
    return {"request": request_to_json(event.request), "outcome": outcome_to_json(event.outcome)}


def _each(items: object) -> list[tuple[int, object]]:
    if not isinstance(items, (tuple, list)):
        raise LifecycleFormatError("request", f"expected a tuple of items, got {items!r:.80}")
    return list(enumerate(items))


def _list(items: object) -> object:
    return list(items) if isinstance(items, (tuple, list)) else items


def _ref_json(ref: object, path: str) -> object:
    if not isinstance(ref, SourceRef):
        raise LifecycleFormatError(path, f"expected a SourceRef, got {ref!r:.80}")
    return {"ref": ref.ref, "source": ref.source, "location": ref.location, "sha256": ref.sha256}


def _statement_json(statement: object, path: str) -> object:
    if not isinstance(statement, Statement):
        raise LifecycleFormatError(path, f"expected a Statement, got {statement!r:.80}")
    return {"text": statement.text, "cites": _list(statement.cites)}


# --- from JSON -----------------------------------------------------------------------------


def parse_body(kind: str, body: object) -> Event:
    """The event recorded in a ledger entry of ``kind`` with ``body``.

    Raises :class:`LifecycleFormatError` (path starting ``kind`` or ``body``) for a kind that
    is not a lifecycle kind or any deviation from the body shape: unknown or missing field,
    wrong type, a value out of range or over a size cap, or an outcome whose shape does not
    fit the request (e.g. a different number of batch results).
    """
    if kind not in KINDS:
        raise LifecycleFormatError("kind", f"{kind!r} is not a lifecycle entry kind ({KINDS})")
    fields = read_object(body, "body", ("request", "outcome"))
    request = parse_request(kind, fields["request"], "body.request")
    return Event(request, parse_outcome(request, fields["outcome"], "body.outcome"))


def normalize_request(request: Request) -> Request:
    """``request`` validated as its JSON form would be (path ``request...``), with every
    collection a tuple. Raises :class:`LifecycleFormatError` if it is malformed."""
    kind = getattr(request, "kind", None)
    if not isinstance(kind, str) or kind not in KINDS:
        raise LifecycleFormatError("request", f"expected a lifecycle request, got {request!r:.80}")
    return parse_request(kind, request_to_json(request), "request")


def parse_request(kind: str, value: object, path: str = "request") -> Request:
    """The request of ``kind`` that JSON ``value`` encodes."""
    parser = _REQUEST_PARSERS.get(kind) if isinstance(kind, str) else None
    if parser is None:
        raise LifecycleFormatError("kind", f"{kind!r} is not a lifecycle entry kind ({KINDS})")
    return parser(value, path)


def parse_outcome(request: Request, value: object, path: str = "outcome") -> Outcome:
    """The outcome JSON ``value`` encodes, read as an outcome of ``request``."""
    if isinstance(request, ReadRequest):
        fields = read_object(value, path, ("results",))
        results = _results(fields["results"], f"{path}.results", len(request.refs), "references")
        return ReadOutcome(tuple(_read_result(item, p) for item, p in results))
    if isinstance(request, UpsertRequest):
        fields = read_object(value, path, ("results",))
        count = len(request.statements)
        results = _results(fields["results"], f"{path}.results", count, "statements")
        return UpsertOutcome(tuple(_accepted_or_rejected(item, p, "ev") for item, p in results))
    if isinstance(request, EvidenceReviseRequest):
        return _revised_or_rejected(value, path, "ev")
    if isinstance(request, ConclusionReviseRequest):
        return _revised_or_rejected(value, path, "cc")
    if isinstance(request, (ComputeRequest, FinalRequest)):
        return _accepted_or_rejected(value, path, "cc")
    return _accepted_or_rejected(value, path, "pin")


def _read_refs(value: object, path: str) -> Request:
    fields = read_object(value, path, ("refs",))
    refs = read_list(
        fields["refs"],
        f"{path}.refs",
        _source_ref,
        max_items=MAX_BATCH,
        min_items=1,
        what="source references",
    )
    return ReadRequest(refs)


def _source_ref(value: object, path: str) -> SourceRef:
    fields = read_object(value, path, ("ref", "source", "location", "sha256"))
    digest = fields["sha256"]
    if not (isinstance(digest, str) and len(digest) == 64 and set(digest) <= _SHA256_DIGITS):
        raise LifecycleFormatError(
            f"{path}.sha256", "expected the SHA-256 of the passage as 64 lowercase hex digits"
        )
    return SourceRef(
        ref=_name(fields["ref"], f"{path}.ref"),
        source=_name(fields["source"], f"{path}.source"),
        location=read_name(fields["location"], f"{path}.location"),
        sha256=digest,
    )


def _statement(value: object, path: str, cite: Callable[[object, str], str]) -> Statement:
    fields = read_object(value, path, ("text", "cites"))
    return Statement(
        text=read_text(fields["text"], f"{path}.text"),
        cites=_cites(fields["cites"], f"{path}.cites", cite),
    )


def _cites(value: object, path: str, cite: Callable[[object, str], str]) -> tuple[str, ...]:
    return read_list(value, path, cite, max_items=MAX_CITES, what="distinct strings", distinct=True)


def _evidence_statement(value: object, path: str) -> Statement:
    return _statement(value, path, _name)


def _conclusion_statement(value: object, path: str) -> Statement:
    return _statement(value, path, _cited_id)


def _cited_id(value: object, path: str) -> str:
    return _id(value, path, ("ev", "cc"))


def _name(value: object, path: str) -> str:
    """:func:`read_name`, interned (module docstring)."""
    return sys.intern(read_name(value, path))


def _id(value: object, path: str, prefixes: tuple[str, ...]) -> str:
    """:func:`read_id`, interned (module docstring)."""
    return sys.intern(read_id(value, path, prefixes))


def _upsert(value: object, path: str) -> Request:
    fields = read_object(value, path, ("statements",))
    statements = read_list(
        fields["statements"],
        f"{path}.statements",
        _evidence_statement,
        max_items=MAX_BATCH,
        min_items=1,
        what="statements",
    )
    return UpsertRequest(statements)


def _evidence_revise(value: object, path: str) -> Request:
    fields = read_object(value, path, ("id", "replacement"))
    replacement = fields["replacement"]
    return EvidenceReviseRequest(
        id=_id(fields["id"], f"{path}.id", ("ev",)),
        replacement=None
        if replacement is None
        else _evidence_statement(replacement, f"{path}.replacement"),
    )


def _compute(value: object, path: str) -> Request:
    statement = _conclusion_statement(value, path)
    return ComputeRequest(statement.text, statement.cites)


def _final(value: object, path: str) -> Request:
    statement = _conclusion_statement(value, path)
    return FinalRequest(statement.text, statement.cites)


def _conclusion_revise(value: object, path: str) -> Request:
    fields = read_object(value, path, ("id", "replacement"))
    replacement = fields["replacement"]
    return ConclusionReviseRequest(
        id=_id(fields["id"], f"{path}.id", ("cc",)),
        replacement=None
        if replacement is None
        else _conclusion_statement(replacement, f"{path}.replacement"),
    )


def _pin(value: object, path: str) -> Request:
    fields = read_object(value, path, ("kind", "text", "seq"))
    pin_kind = fields["kind"]
    if not isinstance(pin_kind, str) or pin_kind not in _PIN_KINDS:
        raise LifecycleFormatError(
            f"{path}.kind", f"expected one of {', '.join(PIN_KINDS)}, got {pin_kind!r:.80}"
        )
    return PinRequest(
        pin_kind=_PIN_KINDS[pin_kind],
        text=read_text(fields["text"], f"{path}.text"),
        seq=read_uint(fields["seq"], f"{path}.seq"),
    )


_PIN_KINDS: Final[dict[str, PinKind]] = {
    "definition": "definition",
    "decision": "decision",
    "task_parameter": "task_parameter",
    "open_question": "open_question",
}


def _unpin(value: object, path: str) -> Request:
    fields = read_object(value, path, ("id", "reason"))
    return UnpinRequest(
        id=read_id(fields["id"], f"{path}.id", ("pin",)),
        reason=read_text(fields["reason"], f"{path}.reason"),
    )


_REQUEST_PARSERS: Final[dict[str, Callable[[object, str], Request]]] = {
    "source.read": _read_refs,
    "evidence.upsert": _upsert,
    "evidence.revise": _evidence_revise,
    "conclusion.compute": _compute,
    "conclusion.final": _final,
    "conclusion.revise": _conclusion_revise,
    "context.pin": _pin,
    "context.unpin": _unpin,
}


# --- outcomes ------------------------------------------------------------------------------


def _results(value: object, path: str, count: int, what: str) -> list[tuple[object, str]]:
    if not isinstance(value, list):
        raise LifecycleFormatError(path, f"expected a list of results, one per request {what}")
    if len(value) != count:
        raise LifecycleFormatError(
            path, f"expected {count} results, one per request {what}, got {len(value)}"
        )
    return [(item, f"{path}[{index}]") for index, item in enumerate(value)]


def _is_accepted(value: object, path: str) -> bool:
    if not isinstance(value, dict) or "accepted" not in value:
        raise LifecycleFormatError(path, 'expected an object with an "accepted" field')
    return read_bool(value["accepted"], f"{path}.accepted")


def _rejected(value: object, path: str) -> Rejected:
    fields = read_object(value, path, ("accepted", "reason", "message"))
    reason = fields["reason"]
    if not isinstance(reason, str) or reason not in REASONS:
        raise LifecycleFormatError(
            f"{path}.reason", f"expected a reason code of specs/lifecycle.md, got {reason!r:.80}"
        )
    return Rejected(reason, read_text(fields["message"], f"{path}.message"))


def _read_result(value: object, path: str) -> Registered | Rejected:
    if not _is_accepted(value, path):
        return _rejected(value, path)
    fields = read_object(value, path, ("accepted", "ref"))
    return Registered(read_name(fields["ref"], f"{path}.ref"))


def _accepted_or_rejected(value: object, path: str, prefix: str) -> Accepted | Rejected:
    if not _is_accepted(value, path):
        return _rejected(value, path)
    fields = read_object(value, path, ("accepted", "id"))
    return Accepted(_id(fields["id"], f"{path}.id", (prefix,)))


def _revised_or_rejected(value: object, path: str, prefix: str) -> Revised | Rejected:
    if not _is_accepted(value, path):
        return _rejected(value, path)
    fields = read_object(value, path, ("accepted", "id", "successor", "stale"))
    successor = fields["successor"]

    def stale_id(item: object, item_path: str) -> str:
        return _id(item, item_path, ("cc",))

    return Revised(
        id=_id(fields["id"], f"{path}.id", (prefix,)),
        successor=None if successor is None else _id(successor, f"{path}.successor", (prefix,)),
        stale=read_list(
            fields["stale"],
            f"{path}.stale",
            stale_id,
            max_items=MAX_UINT,
            what="conclusion ids",
            distinct=True,
        ),
    )
