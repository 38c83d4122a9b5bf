"""A local HTTP server that speaks just enough of the OpenAI Chat Completions and Anthropic
Messages APIs for the summarizer tests: real HTTP on 127.0.0.1 (port 0: the system picks a
free one), canned replies, every request kept for the test to inspect.

The server runs an aiohttp application on an event loop of its own thread, so the SDKs'
synchronous clients can call it from the test's thread.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web

Reply = Callable[[str], str]
"""The canned reply's text, given the prompt's user message."""


@dataclass
class Received:
    """One request the server answered."""

    path: str
    headers: dict[str, str]  # names in lower case
    body: dict[str, Any]


@dataclass
class ProviderServer:
    """Answers ``POST /v1/chat/completions`` and ``POST /v1/messages``.

    ``reply`` gives the assistant's text from the user message; ``status`` other than 200
    answers with that status and the provider's error shape; ``stop`` is the finish or stop
    reason sent (``None``: the normal one).
    """

    reply: Reply = lambda _prompt: ""
    status: int = 200
    stop: str | None = None
    received: list[Received] = field(default_factory=list)
    port: int = 0

    def __post_init__(self) -> None:
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        app = web.Application()
        app.router.add_post("/v1/chat/completions", self._openai)
        app.router.add_post("/v1/messages", self._anthropic)
        self._runner = web.AppRunner(app)

    # --- life -------------------------------------------------------------------------------

    def start(self) -> ProviderServer:
        self._thread.start()
        self._call(self._runner.setup())
        site = web.TCPSite(self._runner, "127.0.0.1", 0)
        self._call(site.start())
        sockets = self._runner.addresses
        self.port = int(sockets[0][1])
        return self

    def close(self) -> None:
        self._call(self._runner.cleanup())
        self._loop.call_soon_threadsafe(self._loop.stop)
        self._thread.join(timeout=10)
        self._loop.close()

    def _call(self, coroutine: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coroutine, self._loop).result(timeout=10)

    @property
    def openai_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    # --- handlers ---------------------------------------------------------------------------

    async def _receive(self, request: web.Request) -> dict[str, Any]:
        body: dict[str, Any] = await request.json()
        headers = {name.lower(): value for name, value in request.headers.items()}
        self.received.append(Received(request.path, headers, body))
        return body

    async def _openai(self, request: web.Request) -> web.Response:
        body = await self._receive(request)
        if self.status != 200:
            error = {"message": "the model is overloaded", "type": "server_error", "code": None}
            return web.json_response({"error": error}, status=self.status)
        prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
        message = {"role": "assistant", "content": self.reply(prompt), "refusal": None}
        return web.json_response(
            {
                "id": "chatcmpl-test",
                "object": "chat.completion",
                "created": 1_700_000_000,
                "model": body["model"],
                "choices": [{"index": 0, "message": message, "finish_reason": self.stop or "stop"}],
                "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120},
            }
        )

    async def _anthropic(self, request: web.Request) -> web.Response:
        body = await self._receive(request)
        if self.status != 200:
            error = {"type": "api_error", "message": "the model is overloaded"}
            return web.json_response({"type": "error", "error": error}, status=self.status)
        prompt = body["messages"][-1]["content"]
        if isinstance(prompt, list):
            prompt = "".join(block["text"] for block in prompt if block["type"] == "text")
        return web.json_response(
            {
                "id": "msg_test",
                "type": "message",
                "role": "assistant",
                "model": body["model"],
                "content": [{"type": "text", "text": self.reply(prompt)}],
                "stop_reason": self.stop or "end_turn",
                "stop_sequence": None,
                "usage": {"input_tokens": 100, "output_tokens": 20},
            }
        )


def folded_range(prompt: str) -> tuple[int, int]:
    """The folded range the prompt announces."""
    found = re.search(r"Folded range: entries (\d+)-(\d+)\.", prompt)
    assert found, prompt[:300]
    return int(found.group(1)), int(found.group(2))
