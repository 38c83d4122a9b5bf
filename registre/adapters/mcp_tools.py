"""The MCP server's tools and resources, framework-free: strict schemas and what each does.

Each :class:`ToolSpec` is a name, a description, a strict JSON Schema for its arguments
(``additionalProperties: false`` everywhere, integers that are integers, enums for every
closed set) and a function of the ledger and the checked arguments that returns plain JSON
data. :func:`call_tool` checks the arguments against the schema **before** anything runs, so
a bad call raises :class:`ToolInputError` (one sentence naming the argument) and leaves the
ledger exactly as it was; registre's own refusals (:class:`registre.errors.RegistreError`)
propagate with their message. :mod:`registre.adapters.mcp_server` turns both into MCP tool
errors.

Every tool takes an optional ``thread``; without it the server's default thread
(``registre mcp serve --thread ID``) is used. Lifecycle refusals (a conclusion citing retracted
evidence, ...) are decisions of the rules: they are recorded on the ledger like acceptances,
and the tool error names the entry that records them.

Resources: ``registre://THREAD/entry/SEQ`` is entry SEQ's signed leaf, byte for byte (RFC
8785 JSON); ``registre://THREAD/context`` the working context at the policy's default budget.
"""

from __future__ import annotations

import base64
import dataclasses
import json
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final

from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from jsonschema.exceptions import best_match  # type: ignore[import-untyped]
from jsonschema.validators import extend  # type: ignore[import-untyped]

from registre.adapters.records import tool_call_body
from registre.attest.entries import actor_name
from registre.errors import MalformedError, RegistreError
from registre.kinds import TOOL_CALL, TOOL_RESULT, TURN
from registre.ledger import (
    BatchResult,
    Ledger,
    LifecycleRefusedError,
    StepResult,
    Thread,
    source_ref,
    verify_database,
)
from registre.ledger.exchange.proof_text import format_inclusion_proof

__all__ = [
    "RESOURCE_TEMPLATES",
    "TOOLS",
    "NoThreadError",
    "ToolInputError",
    "ToolSpec",
    "UnknownResourceError",
    "UnknownToolError",
    "call_tool",
    "error_sentence",
    "read_resource",
]

SHAPES: Final = ("registre", "openai.chat", "openai.responses", "anthropic")
MAX_SEARCH_RESULTS: Final = 200


class ToolInputError(MalformedError):
    """Tool arguments that do not follow the tool's input schema; nothing was run."""


class UnknownToolError(MalformedError):
    """A tool name the server does not offer."""


class UnknownResourceError(MalformedError):
    """A resource URI that is not ``registre://THREAD/entry/SEQ`` or ``registre://THREAD/context``."""


class NoThreadError(MalformedError):
    """A call without ``thread`` on a server started without a default thread."""


Run = Callable[[Ledger, Thread, dict[str, Any]], dict[str, Any]]


@dataclass(frozen=True)
class ToolSpec:
    """One tool: ``schema`` is its strict input schema; ``run`` does the work."""

    name: str
    description: str
    schema: dict[str, Any]
    run: Run


# --- schemas -------------------------------------------------------------------------------


def _integer(minimum: int = 0) -> dict[str, Any]:
    return {"type": "integer", "minimum": minimum}


_TEXT: Final = {"type": "string", "minLength": 1}
_NAME: Final = {"type": "string", "minLength": 1, "maxLength": 256}
_OPTIONAL_NAME: Final = {"type": "string", "minLength": 1, "maxLength": 256}
_ACTOR: Final = {"type": "string", "minLength": 1, "maxLength": 256, "description": "Who acts."}
_CITES: Final = {"type": "array", "items": _NAME, "maxItems": 10000}
_STATEMENT: Final = {
    "type": "object",
    "properties": {"text": _TEXT, "cites": _CITES},
    "required": ["text", "cites"],
    "additionalProperties": False,
}


def _schema(properties: Mapping[str, Any], required: tuple[str, ...] = ()) -> dict[str, Any]:
    """An object schema with ``thread`` added, no other property allowed."""
    props = {"thread": {**_NAME, "description": "Thread id (default: the server's thread)."}}
    props.update(properties)
    return {
        "type": "object",
        "properties": props,
        "required": list(required),
        "additionalProperties": False,
    }


def _strict_integers() -> type[Draft202012Validator]:
    """Draft 2020-12, except that ``integer`` means an int (not ``2.0``, not a boolean)."""
    checker = Draft202012Validator.TYPE_CHECKER.redefine(
        "integer", lambda _checker, value: type(value) is int
    )
    validator: type[Draft202012Validator] = extend(Draft202012Validator, type_checker=checker)
    return validator


_VALIDATOR: Final = _strict_integers()


# --- results -------------------------------------------------------------------------------


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _batch(result: BatchResult) -> dict[str, Any]:
    return {
        "seq": result.seq,
        "accepted": list(result.accepted),
        "rejected": [
            {"index": index, "reason": item.reason, "message": item.message}
            for index, item in result.rejected
        ],
    }


def _step(result: StepResult) -> dict[str, Any]:
    data: dict[str, Any] = {"seq": result.seq, "id": result.id}
    if result.successor is not None or result.stale:
        data["successor"] = result.successor
        data["stale"] = list(result.stale)
    return data


def _record(value: object) -> Any:
    """A frozen dataclass of the lifecycle views (nested ones too) as JSON data."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _record(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, tuple | list):
        return [_record(item) for item in value]
    return value


# --- tools ---------------------------------------------------------------------------------


def _record_turn(_ledger: Ledger, thread: Thread, args: dict[str, Any]) -> dict[str, Any]:
    body = {"role": args["role"], "text": args["text"]}
    entry = thread.append(TURN, body, args.get("actor", args["role"]))
    return {"seq": entry.seq}


def _record_tool_call(_ledger: Ledger, thread: Thread, args: dict[str, Any]) -> dict[str, Any]:
    body = tool_call_body(args["call_id"], args["name"], args["arguments"])
    entry = thread.append(TOOL_CALL, body, args.get("actor", "assistant"))
    return {"seq": entry.seq}


def _record_tool_result(_ledger: Ledger, thread: Thread, args: dict[str, Any]) -> dict[str, Any]:
    body: dict[str, Any] = {"call_id": args["call_id"], "content": args["content"]}
    if args.get("is_error"):
        body["is_error"] = True
    if "name" in args:
        body["name"] = args["name"]
    actor = args.get("actor", actor_name(f"tool:{args['name']}") if "name" in args else "tool")
    entry = thread.append(TOOL_RESULT, body, actor)
    return {"seq": entry.seq}


def _shaped(projection: Any, shape: str) -> dict[str, Any]:
    if shape == "openai.chat":
        return dict(projection.as_openai_chat())
    if shape == "openai.responses":
        return dict(projection.as_openai_responses())
    if shape == "anthropic":
        return dict(projection.as_anthropic())
    return dict(projection.to_json())


def _context(_ledger: Ledger, thread: Thread, args: dict[str, Any]) -> dict[str, Any]:
    shape = args.get("shape", "registre")
    budget = args["budget"]
    if "model" in args:
        if "at" in args:
            raise ToolInputError(
                "context: give either model (record a model call at the head) or at (read an "
                "earlier context), not both"
            )
        projection, call = thread.model_call(args["model"], budget, shape=shape)
        return {
            "call_seq": call.seq,
            "projection_sha256": call.body["projection_sha256"],
            "tokens": projection.tokens,
            "request": _shaped(projection, shape),
        }
    projection = thread.project(args.get("at"), budget, lifecycle_block=True)
    return {"at": projection.at, "tokens": projection.tokens, "request": _shaped(projection, shape)}


def _compact(_ledger: Ledger, thread: Thread, args: dict[str, Any]) -> dict[str, Any]:
    entry = thread.compact(args.get("budget"))
    return {"seq": None if entry is None else entry.seq}


def _expand(_ledger: Ledger, thread: Thread, args: dict[str, Any]) -> dict[str, Any]:
    entry, proof = thread.expand(args["seq"], args.get("size"))
    note = thread.checkpoint(proof.size).note
    return {
        "leaf": entry.leaf.decode("utf-8"),
        "entry": {"seq": entry.seq, "kind": entry.kind, "actor": entry.actor, "body": entry.body},
        "proof": {
            "size": proof.size,
            "leaf_hash": _b64(proof.leaf_hash),
            "root": _b64(proof.root),
            "hashes": [_b64(h) for h in proof.hashes],
        },
        "tlog_proof": format_inclusion_proof(entry.seq, proof.hashes, note),
    }


def _search(_ledger: Ledger, thread: Thread, args: dict[str, Any]) -> dict[str, Any]:
    """Entries ``from_seq..to_seq`` (clipped to the thread) matching every filter given, at
    most ``limit`` of them, oldest first; ``limit_reached`` says more may match."""
    size = thread.head().size
    start = min(args.get("from_seq", 0), size)
    stop = max(start, min(size, args.get("to_seq", size - 1) + 1))
    limit = args.get("limit", 20)
    needle = args.get("text", "").casefold()
    kind = args.get("kind")
    found: list[dict[str, Any]] = []
    for entry in thread.entries(start, stop):
        if kind is not None and entry.kind != kind:
            continue
        if needle and needle not in json.dumps(entry.body, ensure_ascii=False).casefold():
            continue
        found.append(
            {"seq": entry.seq, "kind": entry.kind, "actor": entry.actor, "body": entry.body}
        )
        if len(found) == limit:
            break
    return {"entries": found, "limit_reached": len(found) == limit}


def _read_source(_ledger: Ledger, thread: Thread, args: dict[str, Any]) -> dict[str, Any]:
    refs = []
    for index, ref in enumerate(args["refs"]):
        if ("passage" in ref) == ("sha256" in ref):
            raise ToolInputError(f"refs[{index}]: give either passage or sha256, not both")
        refs.append(
            source_ref(
                ref["ref"],
                ref["source"],
                ref["location"],
                passage=ref.get("passage"),
                sha256=ref.get("sha256"),
            )
        )
    return _batch(thread.read_source(refs, actor=args.get("actor", "agent"), partial=True))


def _evidence_upsert(_ledger: Ledger, thread: Thread, args: dict[str, Any]) -> dict[str, Any]:
    statements = args["statements"]
    return _batch(
        thread.evidence.upsert(statements, actor=args.get("actor", "agent"), partial=True)
    )


def _evidence_revise(_ledger: Ledger, thread: Thread, args: dict[str, Any]) -> dict[str, Any]:
    actor = args.get("actor", "agent")
    return _step(thread.evidence.revise(args["id"], args["replacement"], actor=actor))


def _conclude(_ledger: Ledger, thread: Thread, args: dict[str, Any]) -> dict[str, Any]:
    actor = args.get("actor", "agent")
    return _step(thread.conclude(args["kind"], args["text"], args["cites"], actor=actor))


def _pin(_ledger: Ledger, thread: Thread, args: dict[str, Any]) -> dict[str, Any]:
    actor = args.get("actor", "agent")
    return _step(thread.pin(args["kind"], args["text"], args["seq"], actor=actor))


def _trace(_ledger: Ledger, thread: Thread, args: dict[str, Any]) -> dict[str, Any]:
    return {"trace": _record(thread.trace(args["conclusion"]))}


def _checkpoint(_ledger: Ledger, thread: Thread, _args: dict[str, Any]) -> dict[str, Any]:
    stored = thread.checkpoint()
    return {"size": stored.size, "root": _b64(stored.root), "note": stored.note}


def _verify(ledger: Ledger, thread: Thread, _args: dict[str, Any]) -> dict[str, Any]:
    (report,) = verify_database(ledger, thread=thread.id)
    return {
        "thread": report.thread,
        "size": report.size,
        "root": _b64(report.root),
        "checkpoints": report.checkpoints,
        "verified": True,
    }


_SHAPE_PROP: Final = {"type": "string", "enum": list(SHAPES)}
_SOURCE_REF: Final = {
    "type": "object",
    "properties": {
        "ref": _NAME,
        "source": _NAME,
        "location": _NAME,
        "passage": {"type": "string"},
        "sha256": {"type": "string", "pattern": "^[0-9a-f]{64}$"},
    },
    "required": ["ref", "source", "location"],
    "additionalProperties": False,
}

TOOLS: Final[tuple[ToolSpec, ...]] = (
    ToolSpec(
        "record_turn",
        "Record a user, assistant or system message as a signed `turn` entry.",
        _schema(
            {"role": {"enum": ["user", "assistant", "system"]}, "text": _TEXT, "actor": _ACTOR},
            ("role", "text"),
        ),
        _record_turn,
    ),
    ToolSpec(
        "record_tool_call",
        "Record the agent calling a tool (a `tool.call` entry); arguments is a JSON object.",
        _schema(
            {"call_id": _NAME, "name": _NAME, "arguments": {"type": "object"}, "actor": _ACTOR},
            ("call_id", "name", "arguments"),
        ),
        _record_tool_call,
    ),
    ToolSpec(
        "record_tool_result",
        "Record what a tool returned (a `tool.result` entry answering call_id).",
        _schema(
            {
                "call_id": _NAME,
                "content": {"type": "string"},
                "is_error": {"type": "boolean"},
                "name": _OPTIONAL_NAME,
                "actor": _ACTOR,
            },
            ("call_id", "content"),
        ),
        _record_tool_result,
    ),
    ToolSpec(
        "context",
        "The working context at a token budget (summaries, pins, the recent tail, the "
        "lifecycle block), as registre JSON or a provider request shape. With model, records "
        "a `model.call` entry with the SHA-256 of exactly that request (compacting first if "
        "due), so the call can be replayed and proved later.",
        _schema(
            {
                "budget": _integer(1),
                "shape": _SHAPE_PROP,
                "model": _NAME,
                "at": _integer(0),
            },
            ("budget",),
        ),
        _context,
    ),
    ToolSpec(
        "compact",
        "Append the compaction the policy calls for now (null seq when none is due).",
        _schema({"budget": _integer(1)}),
        _compact,
    ),
    ToolSpec(
        "expand",
        "The entry behind a summary pointer: its signed leaf and its RFC 9162 inclusion proof "
        "against a signed checkpoint (C2SP tlog-proof text).",
        _schema({"seq": _integer(0), "size": _integer(1)}, ("seq",)),
        _expand,
    ),
    ToolSpec(
        "search",
        "Entries whose body contains text (case-insensitive), of a kind, in a seq range.",
        _schema(
            {
                "text": {"type": "string"},
                "kind": _NAME,
                "from_seq": _integer(0),
                "to_seq": _integer(0),
                "limit": {"type": "integer", "minimum": 1, "maximum": MAX_SEARCH_RESULTS},
            }
        ),
        _search,
    ),
    ToolSpec(
        "read_source",
        "Register passage references (a `source.read` entry); each ref gives the passage "
        "text or its SHA-256. Items are accepted or rejected one by one.",
        _schema(
            {
                "refs": {"type": "array", "items": _SOURCE_REF, "minItems": 1},
                "actor": _ACTOR,
            },
            ("refs",),
        ),
        _read_source,
    ),
    ToolSpec(
        "evidence_upsert",
        "Propose evidence statements citing registered references (an `evidence.upsert`).",
        _schema(
            {"statements": {"type": "array", "items": _STATEMENT, "minItems": 1}, "actor": _ACTOR},
            ("statements",),
        ),
        _evidence_upsert,
    ),
    ToolSpec(
        "evidence_revise",
        "Supersede evidence id by replacement, or retract it (replacement null).",
        _schema(
            {
                "id": _NAME,
                "replacement": {"anyOf": [_STATEMENT, {"type": "null"}]},
                "actor": _ACTOR,
            },
            ("id", "replacement"),
        ),
        _evidence_revise,
    ),
    ToolSpec(
        "conclude",
        "Record a compute or final conclusion citing evidence ids (a final may cite computes).",
        _schema(
            {
                "kind": {"enum": ["compute", "final"]},
                "text": _TEXT,
                "cites": _CITES,
                "actor": _ACTOR,
            },
            ("kind", "text", "cites"),
        ),
        _conclude,
    ),
    ToolSpec(
        "pin",
        "Pin text taken from entry seq so every later context carries it verbatim.",
        _schema(
            {
                "kind": {"enum": ["definition", "decision", "task_parameter", "open_question"]},
                "text": _TEXT,
                "seq": _integer(0),
                "actor": _ACTOR,
            },
            ("kind", "text", "seq"),
        ),
        _pin,
    ),
    ToolSpec(
        "trace",
        "The tree from a conclusion to the evidence and source reads behind it.",
        _schema({"conclusion": _NAME}, ("conclusion",)),
        _trace,
    ),
    ToolSpec(
        "checkpoint",
        "Sign (or return) the C2SP checkpoint of the thread at its head.",
        _schema({}),
        _checkpoint,
    ),
    ToolSpec(
        "verify",
        "Recompute every leaf hash, signature, prev binding, subtree hash and checkpoint of "
        "the thread from the database.",
        _schema({}),
        _verify,
    ),
)

_BY_NAME: Final = {tool.name: tool for tool in TOOLS}


def check_arguments(tool: ToolSpec, arguments: Mapping[str, Any]) -> dict[str, Any]:
    """``arguments`` if they follow ``tool.schema``; else ToolInputError, one sentence naming
    the argument (the first error jsonschema ranks best)."""
    error = best_match(_VALIDATOR(tool.schema).iter_errors(dict(arguments)))
    if error is None:
        return dict(arguments)
    where = "/".join(str(part) for part in error.absolute_path)
    problem = error.message if len(error.message) <= 300 else error.message[:297] + "..."
    at = f"argument {where}: " if where else ""
    raise ToolInputError(f"{tool.name}: {at}{problem}")


def call_tool(
    ledger: Ledger, name: str, arguments: Mapping[str, Any], default_thread: str | None
) -> dict[str, Any]:
    """Run tool ``name`` with ``arguments`` on ``ledger``; return its JSON result.

    Raises UnknownToolError, ToolInputError or NoThreadError before anything runs, and what
    the ledger API raises (each a RegistreError whose refusal left the ledger unchanged, or,
    for a lifecycle refusal, recorded only the refusal)."""
    tool = _BY_NAME.get(name)
    if tool is None:
        raise UnknownToolError(f"no tool named {name!r}; the tools are {', '.join(_BY_NAME)}")
    args = check_arguments(tool, arguments)
    thread_id = args.pop("thread", default_thread)
    if thread_id is None:
        raise NoThreadError(
            f"{name}: say which thread (argument thread): this server has no default thread"
        )
    return tool.run(ledger, ledger.thread(thread_id), args)


def error_sentence(exc: RegistreError) -> str:
    """What a client is told of a refusal: the error's one sentence; for a lifecycle refusal
    also the reason code and the entry that records it."""
    if isinstance(exc, LifecycleRefusedError):
        return f"{exc} (refused {exc.reason}; recorded as seq {exc.seq})"
    return str(exc)


# --- resources -----------------------------------------------------------------------------

RESOURCE_TEMPLATES: Final = (
    ("registre://{thread}/entry/{seq}", "entry", "Entry SEQ's signed leaf (RFC 8785 JSON)."),
    ("registre://{thread}/context", "context", "The working context at the default budget."),
)
_RESOURCE = re.compile(
    r"registre://(?P<thread>[^/]+)/(?:entry/(?P<seq>0|[1-9][0-9]{0,15})|context)\Z"
)


def read_resource(ledger: Ledger, uri: str) -> str:
    """The text of resource ``uri`` (module docstring). UnknownResourceError for another URI;
    UnknownThreadError and EntryNotFoundError as the ledger raises them."""
    match = _RESOURCE.match(uri)
    if match is None:
        raise UnknownResourceError(
            f"no resource {uri[:200]!r}: use registre://THREAD/entry/SEQ or registre://THREAD/context"
        )
    thread = ledger.thread(match["thread"])
    if match["seq"] is not None:
        return thread.entry(int(match["seq"])).leaf.decode("utf-8")
    projection = thread.project(lifecycle_block=True)
    return json.dumps(projection.to_json(), ensure_ascii=False)
