"""Pydantic AI agents on a registre ledger (``registre[pydantic-ai]``).

:class:`RegistreCapability` is a Pydantic AI capability (``AbstractCapability``) whose
``wrap_model_request`` hook makes the model see registre's working context of a thread,
while the run lands on the thread as signed entries::

    thread = ledger.create_thread("support-42")
    agent = Agent(model, system_prompt="Answer briefly.",
                  capabilities=[RegistreCapability(thread, "gpt-5", budget=8000)])

Contract, for each request step (``wrap_model_request`` runs once per step):

* the parts of the step's new ``ModelRequest`` (the last message of the request) are
  recorded: a ``SystemPromptPart`` as a ``system`` turn, and so are the rendered
  ``instructions`` when they differ from the last recorded (once per change, not per call:
  a new capability starts from the thread's latest ``system`` turn), a
  ``UserPromptPart`` of text as a ``user`` turn, a ``ToolReturnPart`` as a ``tool.result``
  (``is_error`` unless its outcome is ``success``: a retried call's validation error, ...), a
  ``RetryPromptPart`` as a ``tool.result`` with ``is_error`` (or a ``user`` turn when it
  answers no tool);
* a ``model.call`` is appended (shape ``openai.chat``; compacting first past the policy's
  high-water mark) and the model is sent exactly the messages of that request
  (:func:`model_messages`), the instructions cleared since the projection holds them:
  :func:`request_of` gives the request back from what the model received, and
  ``thread.replay_request(seq)`` rebuilds it from the ledger byte for byte (RFC 8785);
* the response's text is recorded as an ``assistant`` turn and each ``ToolCallPart`` as a
  ``tool.call``.

The agent's persistent message history is Pydantic AI's own and is left as it is; only the
request sent changes. Tool definitions and model settings travel beside the messages and are
not in the digest. Content other than text (images, documents, audio) is refused with
:class:`UnsupportedPartError`, before anything is written.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import replace
from typing import Any, Final

from pydantic_ai.capabilities import AbstractCapability
from pydantic_ai.messages import (
    ModelMessage,
    ModelRequest,
    ModelRequestPart,
    ModelResponse,
    ModelResponsePart,
    RetryPromptPart,
    SystemPromptPart,
    TextPart,
    ToolCallPart,
    ToolReturnPart,
    UserPromptPart,
)
from pydantic_ai.models import ModelRequestContext
from pydantic_ai.tools import RunContext

from registre.adapters.records import last_system_text, tool_call_body
from registre.attest.canonical_json import canonical_bytes
from registre.attest.entries import actor_name
from registre.context import Policy, Summarizer
from registre.errors import MalformedError
from registre.kinds import TOOL_CALL, TOOL_RESULT, TURN
from registre.ledger import Thread

__all__ = ["SHAPE", "RegistreCapability", "UnsupportedPartError", "model_messages", "request_of"]

SHAPE: Final = "openai.chat"
"""The shape of every ``model.call`` the capability records."""

Item = tuple[str, dict[str, Any], str]


class UnsupportedPartError(MalformedError):
    """A message part the capability cannot record as an entry; nothing was written."""


# --- the request and the messages the model receives ----------------------------------------


def model_messages(request: dict[str, Any]) -> list[ModelMessage]:
    """The Pydantic AI messages of an OpenAI Chat request ``{"messages": [...]}`` as registre
    shapes it: each run of system, user and tool messages is one ``ModelRequest``, each
    assistant message one ``ModelResponse``. :func:`request_of` is its inverse."""
    out: list[ModelMessage] = []
    parts: list[ModelRequestPart] = []
    names: dict[str, str] = {}
    for message in request["messages"]:
        role, content = message["role"], message.get("content", "")
        if role == "system":
            parts.append(SystemPromptPart(content=content))
        elif role == "user":
            parts.append(UserPromptPart(content=content))
        elif role == "tool":
            call_id = message["tool_call_id"]
            parts.append(
                ToolReturnPart(tool_name=names[call_id], content=content, tool_call_id=call_id)
            )
        else:
            if parts:
                out.append(ModelRequest(parts=parts))
                parts = []
            answer: list[ModelResponsePart] = [TextPart(content=content)] if content else []
            for call in message.get("tool_calls", ()):
                names[call["id"]] = call["function"]["name"]
                answer.append(
                    ToolCallPart(
                        tool_name=call["function"]["name"],
                        args=call["function"]["arguments"],
                        tool_call_id=call["id"],
                    )
                )
            out.append(ModelResponse(parts=answer))
    if parts:
        out.append(ModelRequest(parts=parts))
    return out


def _arguments(part: ToolCallPart) -> str:
    return part.args if isinstance(part.args, str) else canonical_bytes(part.args or {}).decode()


def request_of(messages: Sequence[ModelMessage]) -> dict[str, Any]:
    """The OpenAI Chat request whose :func:`model_messages` are ``messages``."""
    out: list[dict[str, Any]] = []
    for message in messages:
        if isinstance(message, ModelRequest):
            for part in message.parts:
                if isinstance(part, SystemPromptPart):
                    out.append({"role": "system", "content": part.content})
                elif isinstance(part, UserPromptPart):
                    out.append({"role": "user", "content": _user_text(part)})
                elif isinstance(part, ToolReturnPart):
                    content = part.model_response_str()
                    out.append(
                        {"role": "tool", "tool_call_id": part.tool_call_id, "content": content}
                    )
                else:
                    raise UnsupportedPartError(f"a {type(part).__name__} is not a chat message")
            continue
        text = "".join(p.content for p in message.parts if isinstance(p, TextPart))
        calls = [p for p in message.parts if isinstance(p, ToolCallPart)]
        item: dict[str, Any] = {"role": "assistant"}
        if text or not calls:
            item["content"] = text
        if calls:
            item["tool_calls"] = [
                {
                    "id": call.tool_call_id,
                    "type": "function",
                    "function": {"name": call.tool_name, "arguments": _arguments(call)},
                }
                for call in calls
            ]
        out.append(item)
    return {"messages": out}


def _user_text(part: UserPromptPart) -> str:
    if isinstance(part.content, str):
        return part.content
    texts = []
    for index, item in enumerate(part.content):
        if not isinstance(item, str):
            raise UnsupportedPartError(
                f"user prompt content[{index}]: a {type(item).__name__} cannot be recorded; the "
                "capability records text"
            )
        texts.append(item)
    return "".join(texts)


# --- the capability ---------------------------------------------------------------------------


class RegistreCapability(AbstractCapability[Any]):
    """A capability recording on ``thread`` and sending its projection (module docstring).
    ``model`` is the name each ``model.call`` records; ``budget``, ``policy`` and
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
        self.thread = thread
        self.model = model
        self.budget = budget
        self._policy = policy
        self._summarizer = summarizer
        self._system = self._instructions = last_system_text(self.thread)

    def _inputs(self, messages: Sequence[ModelMessage]) -> list[Item]:
        """The entries recording the step's new ``ModelRequest`` (module docstring)."""
        last = messages[-1] if messages else None
        if not isinstance(last, ModelRequest):
            return []
        items: list[Item] = []
        for part in last.parts:
            if isinstance(part, SystemPromptPart) and part.content != self._system:
                items.append((TURN, {"role": "system", "text": part.content}, "system"))
        if last.instructions and last.instructions != self._instructions:
            items.append((TURN, {"role": "system", "text": last.instructions}, "system"))
        for part in last.parts:
            if isinstance(part, UserPromptPart):
                text = _user_text(part)
                if text:
                    items.append((TURN, {"role": "user", "text": text}, "user"))
            elif isinstance(part, ToolReturnPart):
                body: dict[str, Any] = {
                    "call_id": part.tool_call_id,
                    "content": part.model_response_str(),
                    "name": part.tool_name,
                }
                if part.outcome != "success":
                    body["is_error"] = True
                items.append((TOOL_RESULT, body, actor_name(f"tool:{part.tool_name}")))
            elif isinstance(part, RetryPromptPart):
                text = part.model_response()
                if part.tool_name is None:
                    items.append((TURN, {"role": "user", "text": text}, "user"))
                else:
                    body = {
                        "call_id": part.tool_call_id,
                        "content": text,
                        "name": part.tool_name,
                        "is_error": True,
                    }
                    items.append((TOOL_RESULT, body, actor_name(f"tool:{part.tool_name}")))
        return items

    def _record_response(self, response: ModelResponse) -> None:
        items: list[Item] = []
        text = "".join(p.content for p in response.parts if isinstance(p, TextPart))
        if text:
            items.append((TURN, {"role": "assistant", "text": text}, "assistant"))
        for part in response.parts:
            if isinstance(part, ToolCallPart):
                arguments = json.loads(_arguments(part))
                body = tool_call_body(part.tool_call_id, part.tool_name, arguments)
                items.append((TOOL_CALL, body, "assistant"))
        if items:
            self.thread.append_many(items)

    async def wrap_model_request(
        self,
        ctx: RunContext[Any],
        *,
        request_context: ModelRequestContext,
        handler: Any,
    ) -> ModelResponse:
        """Record the step's input, send the projection, record the response (module
        docstring)."""
        items = self._inputs(request_context.messages)
        if items:
            self.thread.append_many(items)
            last = request_context.messages[-1]
            assert isinstance(last, ModelRequest)
            self._system = next(
                (p.content for p in last.parts if isinstance(p, SystemPromptPart)), self._system
            )
            self._instructions = last.instructions or self._instructions
        projection, _call = self.thread.model_call(
            self.model, self.budget, self._policy, summarizer=self._summarizer, shape=SHAPE
        )
        parameters = replace(request_context.model_request_parameters, instruction_parts=None)
        sent = replace(
            request_context,
            messages=model_messages(projection.as_openai_chat()),
            model_request_parameters=parameters,
        )
        response: ModelResponse = await handler(sent)
        self._record_response(response)
        return response
