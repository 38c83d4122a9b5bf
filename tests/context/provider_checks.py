"""Checks of provider request shapes, for the provider tests.

* :func:`sdk_validate`: the shape, with a model name (and Anthropic's ``max_tokens``), is a
  valid request of the official SDK's own parameter types
  (``openai.types.chat.completion_create_params``, ``openai.types.responses.
  response_create_params``, ``anthropic.types.message_create_params``): pydantic validates it
  with extra keys forbidden at every level, every lazily validated iterable is consumed, and
  the validated value must equal the input (nothing dropped or coerced);
* :func:`api_rules`: the rules the providers' servers add to the types (the SDK types do not
  say them): tool calls answered right after, ids unique and well-formed, Anthropic's
  alternation, user first, tool results first in their message, no blank text, no trailing
  whitespace at the end of a final assistant message;
* :func:`serving` and :func:`sent_bodies`: a loopback HTTP server that speaks just enough of
  each API for the real SDK clients, recording the JSON bodies they send.
"""

from __future__ import annotations

import asyncio
import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache
from typing import Any

import anthropic
import openai
from aiohttp import web
from anthropic.types.message_create_params import MessageCreateParamsNonStreaming
from openai.types.chat.completion_create_params import CompletionCreateParamsNonStreaming
from openai.types.responses.response_create_params import ResponseCreateParamsNonStreaming
from pydantic import ConfigDict, TypeAdapter

MODEL = "test-model"
MAX_TOKENS = 64
_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_ANTHROPIC_ID = re.compile(r"[A-Za-z0-9_-]+")

_PARAMS: dict[str, Any] = {
    "openai.chat": CompletionCreateParamsNonStreaming,
    "openai.responses": ResponseCreateParamsNonStreaming,
    "anthropic": MessageCreateParamsNonStreaming,
}


def request(shape: str, data: dict[str, Any]) -> dict[str, Any]:
    """The whole request body: the shape plus the model (and ``max_tokens``)."""
    extra: dict[str, Any] = {"model": MODEL}
    if shape == "anthropic":
        extra["max_tokens"] = MAX_TOKENS
    return {**extra, **data}


@cache
def _adapter(shape: str) -> TypeAdapter[Any]:
    """Requests of ``shape``, extra keys forbidden (a list of them: pydantic takes a config
    for a TypedDict only inside another type)."""
    return TypeAdapter(list[_PARAMS[shape]], config=ConfigDict(extra="forbid"))


def _consumed(value: Any) -> Any:
    """``value`` with every lazily validated iterable read (validating its items)."""
    if isinstance(value, dict):
        return {key: _consumed(item) for key, item in value.items()}
    if isinstance(value, (str, bytes, int, float, bool)) or value is None:
        return value
    return [_consumed(item) for item in value]


def sdk_validate(shape: str, data: dict[str, Any]) -> None:
    """Require ``data`` to be a valid request of ``shape`` by the SDK's own types."""
    body = request(shape, data)
    (validated,) = _consumed(_adapter(shape).validate_python([body]))
    assert validated == body


def api_rules(shape: str, data: dict[str, Any]) -> None:
    """Require ``data`` to keep the server-side rules of ``shape`` (module docstring)."""
    rules = {"openai.chat": _chat_rules, "openai.responses": _responses_rules}
    rules.get(shape, _anthropic_rules)(data)


def _arguments_object(text: Any) -> None:
    assert isinstance(text, str)
    assert isinstance(json.loads(text), dict)


def _chat_rules(data: dict[str, Any]) -> None:
    assert set(data) == {"messages"}
    messages = data["messages"]
    seen: set[str] = set()
    open_ids: set[str] = set()  # ids of the last assistant message still unanswered
    answering = False
    for message in messages:
        role = message["role"]
        if role == "tool":
            assert answering and message["tool_call_id"] in open_ids, message
            open_ids.remove(message["tool_call_id"])
            assert isinstance(message["content"], str)
            continue
        assert not open_ids, f"tool calls {open_ids} unanswered before {message}"
        answering = False
        assert role in ("system", "user", "assistant")
        if "tool_calls" in message:
            assert role == "assistant" and message["tool_calls"]
            for call in message["tool_calls"]:
                assert call["type"] == "function"
                assert re.fullmatch(r"[A-Za-z0-9_-]{1,40}", call["id"])
                assert call["id"] not in seen
                seen.add(call["id"])
                open_ids.add(call["id"])
                assert _NAME.fullmatch(call["function"]["name"])
                _arguments_object(call["function"]["arguments"])
            answering = True
        else:
            assert isinstance(message["content"], str)
    assert not open_ids


def _responses_rules(data: dict[str, Any]) -> None:
    assert set(data) == {"input"}
    called: set[str] = set()
    answered: set[str] = set()
    for item in data["input"]:
        if item["type"] == "function_call":
            assert item["call_id"] not in called
            assert _NAME.fullmatch(item["name"])
            _arguments_object(item["arguments"])
            called.add(item["call_id"])
        elif item["type"] == "function_call_output":
            assert item["call_id"] in called and item["call_id"] not in answered
            answered.add(item["call_id"])
        else:
            assert item["type"] == "message"
            assert item["role"] in ("system", "user", "assistant")
            assert isinstance(item["content"], str)
    assert called == answered


def _visible_text(block: dict[str, Any]) -> None:
    assert block["type"] == "text"
    assert block["text"].strip(), "blank text block"


def _anthropic_rules(data: dict[str, Any]) -> None:
    assert set(data) <= {"system", "messages"}
    for block in data.get("system", []):
        _visible_text(block)
    if "system" in data:
        assert data["system"]
    messages = data["messages"]
    assert messages and messages[0]["role"] == "user"
    seen: set[str] = set()
    previous_uses: list[str] = []
    for index, message in enumerate(messages):
        role = message["role"]
        assert role == ("user" if index % 2 == 0 else "assistant"), "roles do not alternate"
        blocks = message["content"]
        assert isinstance(blocks, list) and blocks
        uses: list[str] = []
        results: list[str] = []
        leading = True
        for block in blocks:
            kind = block["type"]
            if kind == "tool_result":
                assert role == "user" and leading, "tool_result after other blocks"
                results.append(block["tool_use_id"])
                if "content" in block:
                    assert block["content"].strip()
                assert block.get("is_error", True) is True
                continue
            leading = False
            if kind == "tool_use":
                assert role == "assistant"
                assert _ANTHROPIC_ID.fullmatch(block["id"]) and block["id"] not in seen
                assert _NAME.fullmatch(block["name"])
                assert isinstance(block["input"], dict)
                seen.add(block["id"])
                uses.append(block["id"])
            else:
                _visible_text(block)
        assert sorted(results) == sorted(previous_uses), "tool_use without its tool_result"
        previous_uses = uses
    assert not previous_uses, "tool_use in the final message"
    last = messages[-1]
    if last["role"] == "assistant" and last["content"][-1]["type"] == "text":
        text = last["content"][-1]["text"]
        assert text == text.rstrip(), "final assistant content ends with whitespace"


# --- a loopback server for the real clients ---------------------------------------------------

_REPLIES: dict[str, dict[str, Any]] = {
    "/v1/chat/completions": {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 0,
        "model": MODEL,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": "ok"},
                "finish_reason": "stop",
            }
        ],
    },
    "/v1/responses": {
        "id": "resp_1",
        "object": "response",
        "created_at": 0,
        "model": MODEL,
        "status": "completed",
        "output": [],
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    },
    "/v1/messages": {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [{"type": "text", "text": "ok"}],
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    },
}


@contextmanager
def serving() -> Iterator[tuple[str, list[tuple[str, Any]]]]:
    """Run a fake provider API on 127.0.0.1 (a free port); yield its URL and the list
    ``(path, JSON body)`` of the requests it receives."""
    received: list[tuple[str, Any]] = []

    async def handle(request: web.Request) -> web.Response:
        received.append((request.path, json.loads(await request.read())))
        return web.json_response(_REPLIES[request.path])

    app = web.Application()
    for path in _REPLIES:
        app.router.add_post(path, handle)
    loop = asyncio.new_event_loop()
    runner = web.AppRunner(app)
    url: list[str] = []

    async def start() -> None:
        await runner.setup()
        site = web.TCPSite(runner, "127.0.0.1", 0)
        await site.start()
        host, port = runner.addresses[0][:2]
        url.append(f"http://{host}:{port}")

    worker = threading.Thread(target=loop.run_forever, daemon=True)
    worker.start()
    asyncio.run_coroutine_threadsafe(start(), loop).result(timeout=10)
    try:
        yield url[0], received
    finally:
        asyncio.run_coroutine_threadsafe(runner.cleanup(), loop).result(timeout=10)
        loop.call_soon_threadsafe(loop.stop)
        worker.join(timeout=10)
        loop.close()


_SHAPE_OF_PATH = {
    "/v1/chat/completions": "openai.chat",
    "/v1/responses": "openai.responses",
    "/v1/messages": "anthropic",
}


def sent_bodies(shapes: dict[str, dict[str, Any]]) -> dict[str, Any]:
    """Send each shape with the real SDK client (``client.chat.completions.create(model=...,
    **shape)``, ``client.responses.create``, ``client.messages.create``) to a loopback
    server; return the JSON body each client sent, by shape."""
    with serving() as (url, received):
        openai_client = openai.OpenAI(
            base_url=f"{url}/v1",
            api_key="test-key",
            max_retries=0,
            timeout=10,
            http_client=openai.DefaultHttpxClient(trust_env=False),
        )
        anthropic_client = anthropic.Anthropic(
            base_url=url,
            api_key="test-key",
            max_retries=0,
            timeout=10,
            http_client=anthropic.DefaultHttpxClient(trust_env=False),
        )
        with openai_client, anthropic_client:
            chat = openai_client.chat.completions.create(model=MODEL, **shapes["openai.chat"])
            assert chat.choices[0].message.content == "ok"
            response = openai_client.responses.create(model=MODEL, **shapes["openai.responses"])
            assert response.id == "resp_1"
            message = anthropic_client.messages.create(
                model=MODEL, max_tokens=MAX_TOKENS, **shapes["anthropic"]
            )
            assert message.content[0].type == "text"
    return {_SHAPE_OF_PATH[path]: body for path, body in received}
