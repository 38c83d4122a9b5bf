"""Provider-ready requests (registre/context/provider.py, specs/context.md section 8.1): the
shapes of OpenAI Chat Completions, OpenAI Responses and Anthropic Messages, checked against
the official SDKs' own request types, the providers' server-side rules, and the bodies the
real SDK clients send to a loopback server."""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from registre.context import (
    PROVIDER_SHAPES,
    ContextBudgetError,
    ContextState,
    Message,
    Policy,
    Projection,
    anthropic_messages,
    default_counter,
    openai_chat,
    openai_responses,
    project,
    provider_call_id,
    provider_request,
)
from registre.context.provider import ANTHROPIC_OPENING, SYSTEM_NOTE_PREFIX
from tests.context.example import POLICY, worked_example
from tests.context.provider_checks import api_rules, request, sdk_validate, sent_bodies
from tests.context.strategies import policies, run_script, scripts
from tests.context.threads import ThreadBuilder

WIDE = Policy(budget_tokens=100_000)
FLOAT_ARGUMENTS = '{"path":"a.py","ratio":0.5}'


def shapes_of(projection: Projection) -> dict[str, dict[str, Any]]:
    return {
        "openai.chat": projection.as_openai_chat(),
        "openai.responses": projection.as_openai_responses(),
        "anthropic": projection.as_anthropic(),
    }


def accepted(shapes: dict[str, dict[str, Any]]) -> None:
    """Each shape is a valid SDK request and keeps the providers' server-side rules."""
    for shape, data in shapes.items():
        sdk_validate(shape, data)
        api_rules(shape, data)


def investigation() -> Projection:
    """A thread with a system prompt, parallel calls (one with ``arguments_json`` and an id
    Anthropic refuses), an error result, a decision between two turns and a final assistant
    turn ending with whitespace; projected in full."""
    builder = ThreadBuilder(policy=WIDE, compact=False)
    builder.append("turn", "system", {"role": "system", "text": "You are a careful agent."})
    builder.append("turn", "user", {"role": "user", "text": "Why does the parser fail?"})
    builder.append("turn", "assistant", {"role": "assistant", "text": "Let me look."})
    builder.append(
        "tool.call", "agent", {"call_id": "call_a", "name": "bash", "arguments": {"cmd": "ls"}}
    )
    builder.append(
        "tool.call",
        "agent",
        {"call_id": "toolu:b", "name": "read", "arguments_json": FLOAT_ARGUMENTS},
    )
    builder.append(
        "tool.result", "tool:bash", {"call_id": "call_a", "content": "a.py\nb.py", "name": "bash"}
    )
    builder.append(
        "tool.result", "tool:read", {"call_id": "toolu:b", "content": "boom", "is_error": True}
    )
    builder.append("decision", "user", {"text": "Patch modutils."})
    builder.append("turn", "assistant", {"role": "assistant", "text": "Patching now.  "})
    return project(builder.state, WIDE.budget_tokens, WIDE, default_counter())


# --- the three shapes, on the worked example and on the investigation ------------------------


def test_worked_example_shapes() -> None:
    projection = project(worked_example().state, 320, POLICY, default_counter())
    pin, summary, call, result, note, question = projection.messages
    assert (call.name, call.call_id, result.role) == ("bash", "call-2", "tool")
    shapes = shapes_of(projection)
    assert shapes["openai.chat"] == {
        "messages": [
            {"role": "system", "content": pin.content},
            {"role": "system", "content": summary.content},
            {
                "role": "assistant",
                "tool_calls": [
                    {
                        "id": "call-2",
                        "type": "function",
                        "function": {"name": "bash", "arguments": call.content},
                    }
                ],
            },
            {"role": "tool", "tool_call_id": "call-2", "content": result.content},
            {"role": "assistant", "content": note.content},
            {"role": "user", "content": question.content},
        ]
    }
    assert shapes["openai.responses"] == {
        "input": [
            {"type": "message", "role": "system", "content": pin.content},
            {"type": "message", "role": "system", "content": summary.content},
            {
                "type": "function_call",
                "call_id": "call-2",
                "name": "bash",
                "arguments": call.content,
            },
            {"type": "function_call_output", "call_id": "call-2", "output": result.content},
            {"type": "message", "role": "assistant", "content": note.content},
            {"type": "message", "role": "user", "content": question.content},
        ]
    }
    assert shapes["anthropic"] == {
        "system": [
            {"type": "text", "text": pin.content},
            {"type": "text", "text": summary.content},
        ],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": ANTHROPIC_OPENING}]},
            {
                "role": "assistant",
                "content": [
                    {
                        "type": "tool_use",
                        "id": "call-2",
                        "name": "bash",
                        "input": json.loads(call.content),
                    }
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "call-2", "content": result.content}
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": note.content}]},
            {"role": "user", "content": [{"type": "text", "text": question.content}]},
        ],
    }
    accepted(shapes)


def test_investigation_anthropic() -> None:
    projection = investigation()
    b = provider_call_id("toolu:b")
    assert b.startswith("call_") and len(b) == 37
    assert projection.as_anthropic() == {
        "system": [{"type": "text", "text": "You are a careful agent."}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": "Why does the parser fail?"}]},
            {
                "role": "assistant",
                "content": [
                    {"type": "text", "text": "Let me look."},
                    {"type": "tool_use", "id": "call_a", "name": "bash", "input": {"cmd": "ls"}},
                    {
                        "type": "tool_use",
                        "id": b,
                        "name": "read",
                        "input": {"path": "a.py", "ratio": 0.5},
                    },
                ],
            },
            {
                "role": "user",
                "content": [
                    {"type": "tool_result", "tool_use_id": "call_a", "content": "a.py\nb.py"},
                    {
                        "type": "tool_result",
                        "tool_use_id": b,
                        "content": "[error] boom",
                        "is_error": True,
                    },
                    {"type": "text", "text": "[system note] [decision] Patch modutils."},
                ],
            },
            {"role": "assistant", "content": [{"type": "text", "text": "Patching now."}]},
        ],
    }


def test_investigation_openai_chat() -> None:
    b = provider_call_id("toolu:b")
    assert investigation().as_openai_chat() == {
        "messages": [
            {"role": "system", "content": "You are a careful agent."},
            {"role": "user", "content": "Why does the parser fail?"},
            {
                "role": "assistant",
                "content": "Let me look.",
                "tool_calls": [
                    {
                        "id": "call_a",
                        "type": "function",
                        "function": {"name": "bash", "arguments": '{"cmd":"ls"}'},
                    },
                    {
                        "id": b,
                        "type": "function",
                        "function": {"name": "read", "arguments": FLOAT_ARGUMENTS},
                    },
                ],
            },
            {"role": "tool", "tool_call_id": "call_a", "content": "a.py\nb.py"},
            {"role": "tool", "tool_call_id": b, "content": "[error] boom"},
            {"role": "system", "content": "[decision] Patch modutils."},
            {"role": "assistant", "content": "Patching now.  "},
        ]
    }


def test_investigation_openai_responses() -> None:
    b = provider_call_id("toolu:b")
    assert investigation().as_openai_responses() == {
        "input": [
            {"type": "message", "role": "system", "content": "You are a careful agent."},
            {"type": "message", "role": "user", "content": "Why does the parser fail?"},
            {"type": "message", "role": "assistant", "content": "Let me look."},
            {
                "type": "function_call",
                "call_id": "call_a",
                "name": "bash",
                "arguments": '{"cmd":"ls"}',
            },
            {"type": "function_call", "call_id": b, "name": "read", "arguments": FLOAT_ARGUMENTS},
            {"type": "function_call_output", "call_id": "call_a", "output": "a.py\nb.py"},
            {"type": "function_call_output", "call_id": b, "output": "[error] boom"},
            {"type": "message", "role": "system", "content": "[decision] Patch modutils."},
            {"type": "message", "role": "assistant", "content": "Patching now.  "},
        ]
    }


def test_shapes_are_what_the_official_sdks_accept_and_send() -> None:
    """The SDK types validate each shape, and the real clients send exactly shape + model."""
    for projection in (
        investigation(),
        project(worked_example().state, 320, POLICY, default_counter()),
    ):
        shapes = shapes_of(projection)
        accepted(shapes)
        sent = sent_bodies(copy.deepcopy(shapes))
        assert sent == {shape: request(shape, data) for shape, data in shapes.items()}


def test_methods_are_the_provider_functions() -> None:
    projection = investigation()
    assert projection.as_openai_chat() == openai_chat(projection.messages)
    assert projection.as_openai_responses() == openai_responses(projection.messages)
    assert projection.as_anthropic() == anthropic_messages(projection.messages)
    for shape, data in shapes_of(projection).items():
        assert provider_request(projection.messages, shape) == data
    assert set(PROVIDER_SHAPES) == set(shapes_of(projection))
    with pytest.raises(ValueError, match="unknown provider shape"):
        provider_request(projection.messages, "registre")


def test_shapes_are_fresh_and_deterministic() -> None:
    first, again = investigation(), investigation()
    data = first.as_anthropic()
    data["messages"][1]["content"][1]["input"]["cmd"] = "rm -rf /"
    assert first.as_anthropic() == again.as_anthropic() != data


# --- steps, ids and notes ----------------------------------------------------------------------


def call(call_id: str, name: str = "bash", arguments: str = '{"cmd":"ls"}') -> Message:
    return Message("assistant", arguments, name, call_id)


def result(call_id: str, content: str = "out", name: str | None = None) -> Message:
    return Message("tool", content, name, call_id)


USER = Message("user", "go")


def test_call_ids_providers_refuse_are_mapped_alike_in_call_and_result() -> None:
    long_id = "x" * 41
    assert provider_call_id("call_1-A") == "call_1-A"
    for odd in ("toolu:1", long_id, "a b", "é"):
        expected = "call_" + hashlib.sha256(odd.encode()).hexdigest()[:32]
        assert provider_call_id(odd) == expected
    chat = openai_chat([USER, call("Bash:12"), result("Bash:12")])["messages"]
    assert chat[1]["tool_calls"][0]["id"] == chat[2]["tool_call_id"] == provider_call_id("Bash:12")


def test_unanswered_call_and_unmatched_result_become_notes() -> None:
    messages = [USER, call("c1"), call("c2"), result("c2"), result("c9", "late", "grep")]
    chat = openai_chat(messages)["messages"]
    assert chat == [
        {"role": "user", "content": "go"},
        {"role": "system", "content": '[tool call bash c1] {"cmd":"ls"}'},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "c2",
                    "type": "function",
                    "function": {"name": "bash", "arguments": '{"cmd":"ls"}'},
                }
            ],
        },
        {"role": "tool", "tool_call_id": "c2", "content": "out"},
        {"role": "system", "content": "[tool result grep c9] late"},
    ]
    accepted(
        {
            "openai.chat": openai_chat(messages),
            "openai.responses": openai_responses(messages),
            "anthropic": anthropic_messages(messages),
        }
    )


def test_a_result_after_something_else_is_not_paired() -> None:
    """Providers want the results right after the calls: a message between them makes both
    notes, in their places."""
    messages = [USER, call("c1"), Message("system", "[evidence.upsert] {}"), result("c1")]
    assert openai_responses(messages)["input"][1:] == [
        {"type": "message", "role": "system", "content": '[tool call bash c1] {"cmd":"ls"}'},
        {"type": "message", "role": "system", "content": "[evidence.upsert] {}"},
        {"type": "message", "role": "system", "content": "[tool result c1] out"},
    ]


@pytest.mark.parametrize(
    ("bad", "why"),
    [
        (call("c1", name="mcp.server.tool"), "a name no provider takes"),
        (call("c1", arguments="[1, 2]"), "arguments that are not an object"),
        (call("c1", arguments="NaN"), "arguments that are not JSON"),
        (call("c1", arguments='{"a": 1e400}'), "a number out of range"),
        (call("c1", arguments='{"a": 9007199254740992}'), "an integer out of range"),
    ],
)
def test_calls_no_provider_takes_become_notes(bad: Message, why: str) -> None:
    messages = [USER, bad, result("c1")]
    data = openai_chat(messages)["messages"]
    assert [m["role"] for m in data] == ["user", "system", "system"], why
    assert data[1]["content"] == f"[tool call {bad.name} c1] {bad.content}"


def test_a_repeated_call_id_is_used_once() -> None:
    messages = [USER, call("c1"), result("c1"), call("c1"), result("c1", "again")]
    anthropic = anthropic_messages(messages)["messages"]
    uses = [b for m in anthropic for b in m["content"] if b["type"] == "tool_use"]
    assert len(uses) == 1
    assert anthropic[-1]["content"][-2:] == [
        {"type": "text", "text": SYSTEM_NOTE_PREFIX + '[tool call bash c1] {"cmd":"ls"}'},
        {"type": "text", "text": SYSTEM_NOTE_PREFIX + "[tool result c1] again"},
    ]


def test_anthropic_alternates_and_leaves_out_blank_text() -> None:
    messages = [
        Message("system", "prompt"),
        Message("system", "  "),
        Message("assistant", "first"),
        Message("assistant", "second"),
        Message("user", " \n"),
        Message("system", "late note"),
        Message("user", "question"),
        call("c1"),
        result("c1", "   "),
    ]
    assert anthropic_messages(messages) == {
        "system": [{"type": "text", "text": "prompt"}],
        "messages": [
            {"role": "user", "content": [{"type": "text", "text": ANTHROPIC_OPENING}]},
            {
                "role": "assistant",
                "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}],
            },
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "[system note] late note"},
                    {"type": "text", "text": "question"},
                ],
            },
            {
                "role": "assistant",
                "content": [
                    {"type": "tool_use", "id": "c1", "name": "bash", "input": {"cmd": "ls"}}
                ],
            },
            {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1"}]},
        ],
    }


def test_anthropic_of_nothing_but_system_messages() -> None:
    assert anthropic_messages([Message("system", "pin")]) == {
        "system": [{"type": "text", "text": "pin"}],
        "messages": [{"role": "user", "content": [{"type": "text", "text": ANTHROPIC_OPENING}]}],
    }
    assert anthropic_messages([]) == {
        "messages": [{"role": "user", "content": [{"type": "text", "text": ANTHROPIC_OPENING}]}]
    }


def test_an_unknown_role_is_refused() -> None:
    with pytest.raises(ValueError, match="role 'developer'"):
        openai_chat([Message("developer", "x")])


# --- properties --------------------------------------------------------------------------------


def check_counts(messages: list[Message], shapes: dict[str, dict[str, Any]]) -> None:
    """Nothing is dropped: every message is one chat message, tool call or merged content,
    one Responses item, and (unless blank) one Anthropic block."""
    chat = shapes["openai.chat"]["messages"]
    assert sum(len(m.get("tool_calls", ())) + ("content" in m) for m in chat) == len(messages)
    assert len(shapes["openai.responses"]["input"]) == len(messages)
    anthropic = shapes["anthropic"]
    blocks = len(anthropic.get("system", ())) + sum(
        len(m["content"]) for m in anthropic["messages"]
    )
    visible = sum(
        len(m.get("tool_calls", ()))
        + (m["role"] == "tool" or bool(str(m.get("content") or "").strip()))
        for m in chat
    )
    opening = anthropic["messages"][0]["content"][0] == {"type": "text", "text": ANTHROPIC_OPENING}
    assert blocks == visible + opening


@given(scripts(), policies())
def test_every_shape_of_a_random_projection_is_accepted(script: list[Any], policy: Policy) -> None:
    builder = run_script(script, policy).builder
    try:
        projection = project(builder.state, policy.budget_tokens, policy, builder.counter)
    except ContextBudgetError:
        assume(False)
        return
    shapes = shapes_of(projection)
    accepted(shapes)
    check_counts(list(projection.messages), shapes)
    replayed = ContextState.replay(builder.entries)
    again = project(replayed, policy.budget_tokens, policy, builder.counter)
    assert shapes_of(again) == shapes


_IDS = st.sampled_from(["c1", "c2", "c3", "Bash:12", "x" * 50, "toolu_01"])
_NAMES = st.sampled_from(["bash", "read_file", "bad name", "a.b", "n" * 65])
_TEXTS = st.sampled_from(["hello", "  ", "", "[error] boom", "ends  ", "two\nlines"]) | st.text(
    max_size=12
)
_ARGUMENTS = st.sampled_from(
    ['{"cmd":"ls"}', '{"r":0.25,"n":[1,2]}', "{}", "[1]", "not json", '{"a":1e400}', "NaN"]
)
_MESSAGES = st.one_of(
    st.builds(Message, st.sampled_from(["system", "user", "assistant"]), _TEXTS),
    st.builds(lambda a, n, i: Message("assistant", a, n, i), _ARGUMENTS, _NAMES, _IDS),
    st.builds(lambda c, n, i: Message("tool", c, n, i), _TEXTS, st.none() | _NAMES, _IDS),
)


@given(st.lists(_MESSAGES, max_size=14))
def test_every_shape_of_random_messages_is_accepted(messages: list[Message]) -> None:
    """Whatever the messages (orphans, repeated and odd ids, bad names, blank texts), each
    shape is one the API accepts, and nothing is dropped."""
    shapes = {shape: provider_request(messages, shape) for shape in PROVIDER_SHAPES}
    accepted(shapes)
    check_counts(messages, shapes)
