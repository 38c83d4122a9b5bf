"""The MCP server, driven by the official SDK's client over its in-process transport (JSON-RPC
framed, through memory streams), on SQLite and PostgreSQL."""

from __future__ import annotations

import base64
import json
from collections.abc import Awaitable, Callable
from typing import Any

import anyio
import pytest
from mcp import Client
from mcp.client._memory import InMemoryTransport
from mcp.shared.exceptions import MCPError

from registre.adapters.mcp_server import build_server
from registre.attest.canonical_json import canonical_bytes
from registre.attest.tree import verify_inclusion
from registre.ledger import Ledger, Thread

Session = Callable[[Client], Awaitable[None]]


def run_client(ledger: Ledger, session: Session, thread: str | None = "t1") -> None:
    async def main() -> None:
        async with Client(InMemoryTransport(build_server(ledger, thread))) as client:
            await session(client)

    anyio.run(main)


async def ok(client: Client, tool: str, arguments: dict[str, Any]) -> dict[str, Any]:
    result = await client.call_tool(tool, arguments)
    assert not result.is_error, result.content
    data = json.loads(result.content[0].text)  # type: ignore[union-attr]
    assert data == result.structured_content
    assert isinstance(data, dict)
    return data


def test_a_session_records_projects_proves_and_verifies(ledger: Ledger, thread: Thread) -> None:
    seen: dict[str, Any] = {}

    async def session(client: Client) -> None:
        await ok(client, "record_turn", {"role": "user", "text": "Reconcile Q3 impairments."})
        call = {"call_id": "c1", "name": "read_csv", "arguments": {"path": "book.csv", "rows": 40}}
        await ok(client, "record_tool_call", call)
        await ok(
            client,
            "record_tool_result",
            {"call_id": "c1", "content": "ECL 41.2m", "name": "read_csv"},
        )
        read = await ok(
            client,
            "read_source",
            {
                "refs": [
                    {
                        "ref": "r1",
                        "source": "book.csv",
                        "location": "rows 1-40",
                        "passage": "ECL 41.2m",
                    }
                ]
            },
        )
        assert read["accepted"] == ["r1"] and read["rejected"] == []
        upsert = await ok(
            client,
            "evidence_upsert",
            {"statements": [{"text": "Retail ECL is 41.2m", "cites": ["r1"]}]},
        )
        assert upsert["accepted"] == ["ev-1"]
        final = await ok(
            client, "conclude", {"kind": "final", "text": "ECL reconciles.", "cites": ["ev-1"]}
        )
        seen["trace"] = await ok(client, "trace", {"conclusion": final["id"]})
        seen["call"] = await ok(
            client, "context", {"budget": 4000, "model": "m-1", "shape": "openai.chat"}
        )
        seen["expand"] = await ok(client, "expand", {"seq": 1})
        seen["search"] = await ok(client, "search", {"text": "ecl", "kind": "tool.result"})
        seen["checkpoint"] = await ok(client, "checkpoint", {})
        seen["verify"] = await ok(client, "verify", {})
        entry = await client.read_resource("registre://t1/entry/0")
        seen["leaf"] = entry.contents[0].text  # type: ignore[union-attr]
        context = await client.read_resource("registre://t1/context")
        seen["context"] = json.loads(context.contents[0].text)  # type: ignore[union-attr]

    run_client(ledger, session)
    kinds = [e.kind for e in thread.entries()]
    assert kinds == [
        "turn",
        "tool.call",
        "tool.result",
        "source.read",
        "evidence.upsert",
        "conclusion.final",
        "model.call",
    ]
    assert thread.entry(1).body["arguments"] == {"path": "book.csv", "rows": 40}
    assert seen["trace"]["trace"]["item"]["id"] == "cc-1"
    call = seen["call"]
    assert call["call_seq"] == 6
    assert thread.replay_request(6) == call["request"]  # the digest covers what was returned
    entry, proof = seen["expand"]["entry"], seen["expand"]["proof"]
    leaf = seen["expand"]["leaf"].encode()
    assert leaf == thread.entry(1).leaf and entry["kind"] == "tool.call"
    verify_inclusion(
        base64.b64decode(proof["leaf_hash"]),
        1,
        proof["size"],
        [base64.b64decode(h) for h in proof["hashes"]],
        base64.b64decode(proof["root"]),
    )
    assert seen["expand"]["tlog_proof"].startswith("c2sp.org/tlog-proof@v1\nindex 1\n")
    assert [e["seq"] for e in seen["search"]["entries"]] == [2]
    assert seen["checkpoint"]["size"] == 7 and seen["checkpoint"]["note"].startswith(thread.origin)
    assert seen["verify"] == {**seen["verify"], "size": 7, "verified": True}
    assert seen["leaf"].encode() == thread.entry(0).leaf
    assert seen["context"]["messages"][0] == {
        "role": "user",
        "content": "Reconcile Q3 impairments.",
    }


def test_tool_arguments_with_floats_are_kept_as_canonical_json(
    ledger: Ledger, thread: Thread
) -> None:
    async def session(client: Client) -> None:
        await ok(
            client,
            "record_tool_call",
            {"call_id": "c7", "name": "set", "arguments": {"ratio": 0.25, "n": 2.0}},
        )
        await ok(
            client, "record_tool_call", {"call_id": "c8", "name": "set", "arguments": {"n": 2.0}}
        )

    run_client(ledger, session)
    assert (
        thread.entry(0).body["arguments_json"] == canonical_bytes({"ratio": 0.25, "n": 2}).decode()
    )
    assert thread.entry(1).body["arguments"] == {"n": 2}


BAD_CALLS = [
    ("record_turn", {"role": "bot", "text": "hi"}, "argument role: 'bot' is not one of"),
    ("record_turn", {"role": "user", "text": "hi", "extra": 1}, "'extra' was unexpected"),
    ("record_turn", {"role": "user"}, "'text' is a required property"),
    ("record_turn", {"role": "user", "text": ""}, "argument text:"),
    ("record_turn", {"role": "user", "text": "hi", "thread": "nope"}, "no thread 'nope'"),
    ("record_tool_call", {"call_id": "c", "name": "x", "arguments": [1]}, "argument arguments:"),
    (
        "record_tool_result",
        {"call_id": "c", "content": "x", "is_error": "yes"},
        "argument is_error:",
    ),
    ("record_tool_result", {"call_id": "c9", "content": "x"}, "answers no tool call"),
    ("record_turn", {"role": "user", "text": "hi", "actor": "bob smith"}, "not an actor name"),
    ("context", {"budget": 2.0}, "argument budget: 2.0 is not of type 'integer'"),
    ("context", {"budget": 0}, "argument budget: 0 is less than the minimum of 1"),
    ("context", {"budget": 100, "model": "m", "at": 0}, "not both"),
    ("context", {"budget": 100, "shape": "xml"}, "argument shape:"),
    ("expand", {"seq": 99}, "no entry 99"),
    ("expand", {"seq": True}, "argument seq: True is not of type 'integer'"),
    ("search", {"limit": 5000}, "argument limit:"),
    (
        "read_source",
        {"refs": [{"ref": "r", "source": "s", "location": "l"}]},
        "give either passage or sha256",
    ),
    (
        "read_source",
        {"refs": [{"ref": "r", "source": "s", "location": "l", "sha256": "XYZ"}]},
        "argument refs/0/sha256:",
    ),
    ("evidence_upsert", {"statements": [{"text": "t"}]}, "'cites' is a required property"),
    ("conclude", {"kind": "guess", "text": "t", "cites": []}, "argument kind:"),
    ("pin", {"kind": "decision", "text": "t", "seq": -1}, "argument seq:"),
    ("no_such_tool", {}, "no tool named 'no_such_tool'"),
]


@pytest.mark.parametrize(
    ("tool", "arguments", "says"), BAD_CALLS, ids=[f"{c[0]}-{i}" for i, c in enumerate(BAD_CALLS)]
)
def test_bad_input_is_one_sentence_and_leaves_the_ledger_unchanged(
    ledger: Ledger, thread: Thread, tool: str, arguments: dict[str, Any], says: str
) -> None:
    thread.append("turn", {"role": "user", "text": "hello"}, "user")
    before = thread.head()

    async def session(client: Client) -> None:
        result = await client.call_tool(tool, arguments)
        assert result.is_error
        (block,) = result.content
        text = block.text  # type: ignore[union-attr]
        assert says in text, text
        assert "\n" not in text and "Traceback" not in text

    run_client(ledger, session)
    assert thread.head() == before


def test_a_call_without_thread_on_a_server_without_one_is_refused(
    ledger: Ledger, thread: Thread
) -> None:
    async def session(client: Client) -> None:
        result = await client.call_tool("record_turn", {"role": "user", "text": "hi"})
        assert result.is_error and "say which thread" in result.content[0].text  # type: ignore[union-attr]
        await ok(client, "record_turn", {"role": "user", "text": "hi", "thread": "t1"})

    run_client(ledger, session, thread=None)
    assert thread.head().size == 1


def test_a_lifecycle_refusal_is_a_tool_error_naming_the_entry_that_records_it(
    ledger: Ledger, thread: Thread
) -> None:
    async def session(client: Client) -> None:
        result = await client.call_tool(
            "conclude", {"kind": "final", "text": "Done.", "cites": ["ev-9"]}
        )
        assert result.is_error
        assert "recorded as seq 0" in result.content[0].text  # type: ignore[union-attr]

    run_client(ledger, session)
    assert thread.entry(0).kind == "conclusion.final"
    assert thread.entry(0).body["outcome"]["accepted"] is False


def test_a_bad_resource_uri_is_an_mcp_error(ledger: Ledger, thread: Thread) -> None:
    async def session(client: Client) -> None:
        for uri in ("registre://t1/entry/5", "registre://t1/entry/01", "registre://t9/context"):
            with pytest.raises(MCPError):
                await client.read_resource(uri)
        templates = await client.list_resource_templates()
        assert {t.uri_template for t in templates.resource_templates} == {
            "registre://{thread}/entry/{seq}",
            "registre://{thread}/context",
        }
        listed = await client.list_resources()
        assert [str(r.uri) for r in listed.resources] == ["registre://t1/context"]

    run_client(ledger, session)


def _objects(schema: Any) -> list[dict[str, Any]]:
    found = []
    if isinstance(schema, dict):
        if schema.get("type") == "object" and "properties" in schema:
            found.append(schema)
        for value in schema.values():
            found.extend(_objects(value))
    elif isinstance(schema, list):
        for value in schema:
            found.extend(_objects(value))
    return found


def test_every_input_schema_is_strict(ledger: Ledger, thread: Thread) -> None:
    async def session(client: Client) -> None:
        listed = await client.list_tools()
        names = {tool.name for tool in listed.tools}
        assert {
            "record_turn",
            "record_tool_call",
            "record_tool_result",
            "context",
            "expand",
            "search",
            "read_source",
            "evidence_upsert",
            "evidence_revise",
            "conclude",
            "trace",
            "checkpoint",
            "verify",
        } <= names
        for tool in listed.tools:
            objects = _objects(tool.input_schema)
            assert objects and all(o["additionalProperties"] is False for o in objects), tool.name

    run_client(ledger, session)


def test_search_filters_by_text_kind_and_range_within_a_limit(
    ledger: Ledger, thread: Thread
) -> None:
    for text in ("alpha", "beta", "Alphabet", "gamma"):
        thread.append("turn", {"role": "user", "text": text}, "user")
    found: dict[str, Any] = {}

    async def session(client: Client) -> None:
        found["text"] = await ok(client, "search", {"text": "ALPHA"})
        found["range"] = await ok(client, "search", {"from_seq": 1, "to_seq": 2})
        found["limit"] = await ok(client, "search", {"kind": "turn", "limit": 1})
        found["past"] = await ok(client, "search", {"from_seq": 9})

    run_client(ledger, session)
    assert [e["seq"] for e in found["text"]["entries"]] == [0, 2]
    assert not found["text"]["limit_reached"]
    assert [e["seq"] for e in found["range"]["entries"]] == [1, 2]
    assert [e["seq"] for e in found["limit"]["entries"]] == [0]
    assert found["limit"]["limit_reached"]
    assert found["past"]["entries"] == []


def test_revising_evidence_leaves_the_conclusion_stale_and_pins_carry_text(
    ledger: Ledger, thread: Thread
) -> None:
    seen: dict[str, Any] = {}

    async def session(client: Client) -> None:
        ref = {"ref": "r1", "source": "book.csv", "location": "row 4", "sha256": "ab" * 32}
        await ok(client, "read_source", {"refs": [ref]})
        await ok(
            client, "evidence_upsert", {"statements": [{"text": "ECL 41.2m", "cites": ["r1"]}]}
        )
        await ok(client, "conclude", {"kind": "final", "text": "Reconciled.", "cites": ["ev-1"]})
        seen["revise"] = await ok(client, "evidence_revise", {"id": "ev-1", "replacement": None})
        await ok(client, "record_turn", {"role": "user", "text": "Never restate Q2."})
        seen["pin"] = await ok(
            client, "pin", {"kind": "decision", "text": "Never restate Q2.", "seq": 4}
        )
        seen["context"] = await ok(client, "context", {"budget": 2000})

    run_client(ledger, session)
    assert seen["revise"] == {"seq": 3, "id": "ev-1", "successor": None, "stale": ["cc-1"]}
    assert seen["pin"] == {"seq": 5, "id": "pin-1"}
    assert [c.id for c in thread.conclusions.list(stale=True)] == ["cc-1"]
    contents = [m["content"] for m in seen["context"]["request"]["messages"]]
    assert "[pinned decision pin-1] Never restate Q2." in contents
