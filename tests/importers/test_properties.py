"""Properties of import (specs/entries.md section 6): any valid conversation of the provider
formats -- reused ids, parallel calls, thinking, images, nulls -- imports, writes back equal
message for message, and re-imports to identical bodies; mutated files raise only
TranscriptError."""

from __future__ import annotations

import base64
import json
from typing import Any

from hypothesis import event, given
from hypothesis import strategies as st

from registre.attest.canonical_json import canonical_bytes
from registre.importers import TranscriptError, parse_bytes
from registre.ledger.exchange.writeback import write_chunks
from tests.importers.helpers import FIXTURE_FORMATS, fixture

_TEXT = st.text(st.characters(exclude_categories=("Cs",)), max_size=12)
_IDS = st.sampled_from(["call_1", "call_2", "toolu_a"])  # few ids: reuse is common
_NAMES = st.sampled_from(["bash", "read_file"])
_JSON = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-1000, 1000)
    | _TEXT
    | st.floats(-1e6, 1e6, allow_nan=False, width=32),  # beyond 2**53 is refused, by design
    lambda inner: st.lists(inner, max_size=3) | st.dictionaries(_TEXT, inner, max_size=3),
    max_leaves=6,
)
_ARGS = st.dictionaries(st.sampled_from(["path", "n", "x"]), _JSON, max_size=3)
_PNG = base64.b64encode(b"\x89PNG fake").decode()


@st.composite
def _openai(draw: st.DrawFn) -> list[dict[str, Any]]:
    """A chat-completions conversation: every call answered, ids reused across steps."""
    messages: list[dict[str, Any]] = [{"role": "system", "content": draw(_TEXT)}]
    for _ in range(draw(st.integers(0, 4))):
        user: dict[str, Any] = {"role": "user", "content": draw(_TEXT)}
        if draw(st.booleans()):
            user["content"] = [
                {"type": "text", "text": draw(_TEXT)},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{_PNG}"}},
            ]
        messages.append(user)
        ids = draw(st.lists(_IDS, unique=True, max_size=3))
        calls = [
            {
                "index": index,
                "id": call_id,
                "type": "function",
                "function": {"name": draw(_NAMES), "arguments": json.dumps(draw(_ARGS))},
            }
            for index, call_id in enumerate(ids)
        ]
        assistant: dict[str, Any] = {
            "role": "assistant",
            "content": draw(st.none() | _TEXT),
            "refusal": None,
            "function_call": None,
            "tool_calls": calls or None,
        }
        messages.append(assistant)
        for call_id in draw(st.permutations(ids)):
            messages.append({"role": "tool", "tool_call_id": call_id, "content": draw(_TEXT)})
    return messages


@st.composite
def _anthropic(draw: st.DrawFn) -> dict[str, Any]:
    """An Anthropic conversation with thinking, images and reused tool_use ids."""
    messages: list[dict[str, Any]] = []
    for _ in range(draw(st.integers(0, 4))):
        user: list[dict[str, Any]] = [{"type": "text", "text": draw(_TEXT)}]
        if draw(st.booleans()):
            user.append(
                {
                    "type": "image",
                    "source": {"type": "base64", "media_type": "image/png", "data": _PNG},
                }
            )
        messages.append({"role": "user", "content": user if draw(st.booleans()) else draw(_TEXT)})
        blocks: list[dict[str, Any]] = []
        if draw(st.booleans()):
            blocks.append({"type": "thinking", "thinking": draw(_TEXT), "signature": "c2ln"})
        blocks.append({"type": "text", "text": draw(_TEXT), "citations": None})
        ids = draw(st.lists(_IDS, unique=True, max_size=3))
        blocks += [
            {"type": "tool_use", "id": i, "name": draw(_NAMES), "input": draw(_ARGS)} for i in ids
        ]
        messages.append({"role": "assistant", "content": blocks})
        if ids:
            results = [
                {
                    "type": "tool_result",
                    "tool_use_id": i,
                    "content": draw(_TEXT),
                    **({"is_error": True} if draw(st.booleans()) else {}),
                }
                for i in draw(st.permutations(ids))
            ]
            messages.append({"role": "user", "content": results})
    document: dict[str, Any] = {"messages": messages}
    if draw(st.booleans()):
        document["system"] = draw(_TEXT)
    return document


@given(_openai())
def test_openai_conversations_write_back_equal(messages: list[dict[str, Any]]) -> None:
    data = b"".join(json.dumps(m).encode() + b"\n" for m in messages)
    entries = parse_bytes(data, "openai")
    event(f"reused ids: {sum(1 for e in entries if 'call_ref' in e.body) > 0}")
    text = "".join(write_chunks([(e.kind, e.body) for e in entries], "openai"))
    assert [json.loads(line) for line in text.split("\n") if line] == messages
    assert parse_bytes(text.encode(), "openai") == entries
    array = parse_bytes(json.dumps(messages).encode(), "openai")  # one JSON array: same bodies
    assert [e.body for e in array] == [e.body for e in entries]


@given(_anthropic())
def test_anthropic_conversations_write_back_equal(document: dict[str, Any]) -> None:
    entries = parse_bytes(json.dumps(document).encode(), "anthropic")
    text = "".join(write_chunks([(e.kind, e.body) for e in entries], "anthropic"))
    assert json.loads(text) == document
    assert parse_bytes(text.encode(), "anthropic") == entries


_mutation = st.tuples(
    st.sampled_from(["delete", "insert", "flip"]),
    st.floats(0, 1),
    st.sampled_from([b"{", b"}", b"[", b'"', b",", b":", b"\n", b"null", b"1.5", b"\\"]),
)


@given(
    name=st.sampled_from(sorted(n for n, f in FIXTURE_FORMATS.items() if f != "tau-bench")),
    mutations=st.lists(_mutation, min_size=1, max_size=3),
)
def test_mutated_files_raise_only_transcript_errors(
    name: str, mutations: list[tuple[str, float, bytes]]
) -> None:
    data = bytearray(fixture(name))
    for action, where, piece in mutations:
        at = int(where * len(data))
        if action == "delete":
            del data[at : at + len(piece)]
        elif action == "insert":
            data[at:at] = piece
        else:
            data[at : at + len(piece)] = piece
    try:
        entries = parse_bytes(bytes(data))
    except TranscriptError:
        event("refused")
        return
    event("accepted")
    for entry in entries:
        canonical_bytes(entry.body)


@given(_anthropic(), st.booleans())
def test_claude_code_sessions_write_back_equal(document: dict[str, Any], sidechain: bool) -> None:
    records: list[dict[str, Any]] = [{"type": "summary", "summary": "s", "leafUuid": "u0"}]
    parent = None
    for number, message in enumerate(document["messages"]):
        uid = f"u{number}"
        records.append(
            {
                "parentUuid": parent,
                "isSidechain": sidechain and number % 2 == 1,
                "sessionId": "s1",
                "type": message["role"],
                "message": message,
                "uuid": uid,
                "timestamp": "2025-09-01T10:00:00Z",
                "costUSD": 0.25,
            }
        )
        parent = uid
    data = b"".join(json.dumps(r).encode() + b"\n" for r in records)
    entries = parse_bytes(data, "claude-code")
    text = "".join(write_chunks([(e.kind, e.body) for e in entries], "claude-code"))
    assert [json.loads(line) for line in text.split("\n") if line] == records
    assert parse_bytes(text.encode(), "claude-code") == entries
