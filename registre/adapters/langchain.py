"""LangChain v1 agents on a registre ledger (``registre[langchain]``).

:class:`RegistreMiddleware` is an ``AgentMiddleware``: pass it to ``create_agent(...,
middleware=[...])`` and the agent's model sees registre's working context of a thread, not
the state's growing message list, while everything it said and did lands on the thread as
signed entries::

    thread = ledger.create_thread("support-42")
    agent = create_agent(model, tools, system_prompt="Answer briefly.",
                         middleware=[RegistreMiddleware(thread, "gpt-5", budget=8000)])

Contract:

* ``wrap_model_call`` first records what the thread does not hold yet: the system prompt as
  a ``turn`` (role ``system``) when its text differs from the last one recorded (once per
  change, not per call), and the human messages the state gained since the last model call
  (by message id) as ``user`` turns. It then appends a ``model.call`` (shape
  ``openai.chat``, compacting first when the context is past the policy's high-water mark)
  and sends the model exactly the messages of that request (:func:`chat_messages`), with no
  separate system message: the system prompt is in the projection. ``request_of(messages)``
  gives the request back from what the model received, and ``thread.replay_request(seq)``
  rebuilds it from the ledger, byte for byte (RFC 8785), digest proved. The response is
  recorded as an ``assistant`` turn (its text) and one ``tool.call`` per tool call.
  Tool schemas and model settings travel beside the messages and are not in the digest.
* ``wrap_tool_call`` records each tool's result as a ``tool.result`` (``is_error`` when the
  ``ToolMessage``'s status is ``error``).
* It is a drop-in for ``SummarizationMiddleware`` that loses nothing: history the context
  folds stays on the ledger as entries, the fold is a signed ``context.compaction`` whose
  summary lines point at them, and ``thread.expand(seq)`` returns any of them with its proof.

The middleware refuses (:class:`UnrecordedInputError`, nothing sent) a model call whose last
state message is neither a new human message nor the thread's newest entry: it vouches only
for input the thread holds. The ledger calls are short transactions run on the caller's
thread.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Final

from langchain.agents.middleware import AgentMiddleware, ModelRequest, ModelResponse
from langchain_core.messages import (
    AIMessage,
    AnyMessage,
    BaseMessage,
    HumanMessage,
    SystemMessage,
    ToolMessage,
)
from langgraph.prebuilt.tool_node import ToolCallRequest
from langgraph.types import Command

from registre.adapters.records import last_system_text, tool_call_body
from registre.attest.canonical_json import canonical_bytes
from registre.attest.entries import actor_name
from registre.context import Policy, Summarizer
from registre.errors import MalformedError, RefusedError
from registre.kinds import TOOL_CALL, TOOL_RESULT, TURN
from registre.ledger import Thread

__all__ = [
    "SHAPE",
    "RegistreMiddleware",
    "UnrecordedInputError",
    "UnsupportedMessageError",
    "chat_messages",
    "request_of",
]

SHAPE: Final = "openai.chat"
"""The shape of every ``model.call`` the middleware records."""

_CONTENT_KINDS: Final = (TURN, TOOL_CALL, TOOL_RESULT)

Item = tuple[str, dict[str, Any], str]
ToolHandler = Callable[[ToolCallRequest], ToolMessage | Command[Any]]


class UnsupportedMessageError(MalformedError):
    """A message the middleware cannot record as an entry (an image part, ...); nothing
    was written."""


class UnrecordedInputError(RefusedError):
    """A model call whose last message is not on the thread (module docstring)."""


# --- the request and the messages the model receives ----------------------------------------


def chat_messages(request: dict[str, Any]) -> list[AnyMessage]:
    """The LangChain messages of an OpenAI Chat request ``{"messages": [...]}`` as registre
    shapes it (``specs/context.md`` section 8.1); :func:`request_of` is its inverse."""
    out: list[AnyMessage] = []
    for message in request["messages"]:
        role, content = message["role"], message.get("content", "")
        if role == "system":
            out.append(SystemMessage(content=content))
        elif role == "user":
            out.append(HumanMessage(content=content))
        elif role == "tool":
            out.append(ToolMessage(content=content, tool_call_id=message["tool_call_id"]))
        else:
            calls = [
                {
                    "name": call["function"]["name"],
                    "args": json.loads(call["function"]["arguments"]),
                    "id": call["id"],
                    "type": "tool_call",
                }
                for call in message.get("tool_calls", ())
            ]
            out.append(AIMessage(content=content, tool_calls=calls))
    return out


def request_of(messages: Sequence[BaseMessage]) -> dict[str, Any]:
    """The OpenAI Chat request whose :func:`chat_messages` are ``messages``."""
    out: list[dict[str, Any]] = []
    for message in messages:
        text = _text(message.content, "message")
        if isinstance(message, SystemMessage):
            out.append({"role": "system", "content": text})
        elif isinstance(message, HumanMessage):
            out.append({"role": "user", "content": text})
        elif isinstance(message, ToolMessage):
            out.append({"role": "tool", "tool_call_id": message.tool_call_id, "content": text})
        elif isinstance(message, AIMessage):
            item: dict[str, Any] = {"role": "assistant"}
            if text or not message.tool_calls:
                item["content"] = text
            if message.tool_calls:
                item["tool_calls"] = [
                    {
                        "id": call["id"],
                        "type": "function",
                        "function": {
                            "name": call["name"],
                            "arguments": canonical_bytes(call["args"]).decode("utf-8"),
                        },
                    }
                    for call in message.tool_calls
                ]
            out.append(item)
        else:
            raise UnsupportedMessageError(f"a {type(message).__name__} is not a chat message")
    return {"messages": out}


def _text(content: object, where: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise UnsupportedMessageError(f"{where}: expected text content")
    parts = []
    for index, part in enumerate(content):
        if isinstance(part, str):
            parts.append(part)
        elif isinstance(part, dict) and part.get("type") == "text":
            parts.append(str(part.get("text", "")))
        else:
            kind = part.get("type") if isinstance(part, dict) else type(part).__name__
            raise UnsupportedMessageError(
                f"{where}.content[{index}]: a {kind!r} part cannot be recorded; the "
                "middleware records text"
            )
    return "".join(parts)


# --- the middleware ---------------------------------------------------------------------------


class RegistreMiddleware(AgentMiddleware[Any, Any, Any]):
    """An ``AgentMiddleware`` recording on ``thread`` and sending its projection (module
    docstring). ``model`` is the name each ``model.call`` records; ``budget``, ``policy`` and
    ``summarizer`` as for :meth:`registre.ledger.Thread.model_call`."""

    def __init__(
        self,
        thread: Thread,
        model: str,
        *,
        budget: int = 32000,
        policy: Policy | None = None,
        summarizer: Summarizer | None = None,
    ) -> None:
        super().__init__()
        self.thread = thread
        self.model = model
        self.budget = budget
        self._policy = policy
        self._summarizer = summarizer
        self._seen: set[str] = set()
        self._system = last_system_text(self.thread)

    # --- model calls -------------------------------------------------------------------------

    def _prepare(self, request: ModelRequest[Any]) -> tuple[ModelRequest[Any], int]:
        """Record the request's new input, then the ``model.call``; the request to send and
        that call's seq."""
        items: list[Item] = []
        if request.system_message is not None:
            prompt = _text(request.system_message.content, "system_message")
            if prompt and prompt != self._system:
                items.append((TURN, {"role": "system", "text": prompt}, "system"))
        fresh = self._new_inputs(request.messages)
        for message in fresh:
            text = _text(message.content, "message")
            if text:
                items.append((TURN, {"role": "user", "text": text}, "user"))
        if not fresh:
            self._check_recorded(request.messages)
        if items:
            self.thread.append_many(items)
            if items[0][1]["role"] == "system":
                self._system = items[0][1]["text"]
        self._seen.update(str(m.id) for m in fresh if m.id)
        projection, call = self.thread.model_call(
            self.model,
            self.budget,
            self._policy,
            summarizer=self._summarizer,
            shape=SHAPE,
        )
        sent = chat_messages(projection.as_openai_chat())
        return request.override(messages=sent, system_message=None), call.seq

    def _new_inputs(self, messages: Sequence[AnyMessage]) -> list[AnyMessage]:
        """The human messages at the end of ``messages`` the middleware has not recorded."""
        tail: list[AnyMessage] = []
        for message in reversed(messages):
            if not isinstance(message, HumanMessage):
                break
            if message.id and str(message.id) in self._seen:
                break
            tail.append(message)
        return tail[::-1]

    def _check_recorded(self, messages: Sequence[AnyMessage]) -> None:
        if not messages:
            return
        last = messages[-1]
        size = self.thread.head().size
        for entry in reversed(list(self.thread.entries(max(0, size - 64), size))):
            if entry.kind not in _CONTENT_KINDS:
                continue
            held = (
                entry.body["call_id"] == last.tool_call_id
                if isinstance(last, ToolMessage) and entry.kind == TOOL_RESULT
                else isinstance(last, HumanMessage)
                and entry.body == {"role": "user", "text": _text(last.content, "message")}
            )
            if held:
                return
            break
        raise UnrecordedInputError(
            f"the agent state ends with a {type(last).__name__} thread {self.thread.id!r} "
            "does not hold; the middleware sends only what the thread holds"
        ).with_hint("give the agent one RegistreMiddleware per thread, from its first call")

    def _record_response(self, response: ModelResponse[Any] | AIMessage | Any) -> None:
        messages = response.result if isinstance(response, ModelResponse) else [response]
        items: list[Item] = []
        for message in messages:
            if not isinstance(message, AIMessage):
                continue
            text = _text(message.content, "response")
            if text:
                items.append((TURN, {"role": "assistant", "text": text}, "assistant"))
            for call in message.tool_calls:
                body = tool_call_body(str(call["id"]), call["name"], dict(call["args"]))
                items.append((TOOL_CALL, body, "assistant"))
        if items:
            self.thread.append_many(items)

    def wrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], ModelResponse[Any]],
    ) -> ModelResponse[Any]:
        """Record, send the projection, record the response (module docstring)."""
        sent, _seq = self._prepare(request)
        response = handler(sent)
        self._record_response(response)
        return response

    async def awrap_model_call(
        self,
        request: ModelRequest[Any],
        handler: Callable[[ModelRequest[Any]], Awaitable[ModelResponse[Any]]],
    ) -> ModelResponse[Any]:
        """:meth:`wrap_model_call`, awaiting the handler."""
        sent, _seq = self._prepare(request)
        response = await handler(sent)
        self._record_response(response)
        return response

    # --- tool calls --------------------------------------------------------------------------

    def _record_result(self, request: ToolCallRequest, result: ToolMessage | Command[Any]) -> None:
        if not isinstance(result, ToolMessage):
            return
        call = request.tool_call
        body: dict[str, Any] = {
            "call_id": str(call["id"]),
            "content": _text(result.content, "tool result"),
            "name": call["name"],
        }
        if result.status == "error":
            body["is_error"] = True
        self.thread.append(TOOL_RESULT, body, actor_name(f"tool:{call['name']}"))

    def wrap_tool_call(
        self, request: ToolCallRequest, handler: ToolHandler
    ) -> ToolMessage | Command[Any]:
        """Run the tool and record its result."""
        result = handler(request)
        self._record_result(request, result)
        return result

    async def awrap_tool_call(
        self,
        request: ToolCallRequest,
        handler: Callable[[ToolCallRequest], Awaitable[ToolMessage | Command[Any]]],
    ) -> ToolMessage | Command[Any]:
        """:meth:`wrap_tool_call`, awaiting the handler."""
        result = await handler(request)
        self._record_result(request, result)
        return result
