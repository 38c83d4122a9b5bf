"""A scripted ``agents`` Model: answers from a list, records every input it is sent."""

from __future__ import annotations

import copy
from collections.abc import AsyncIterator
from typing import Any

from agents import ModelResponse, Usage
from agents.models.interface import Model
from openai.types.responses import (
    ResponseFunctionToolCall,
    ResponseOutputItem,
    ResponseOutputMessage,
    ResponseOutputText,
)


def say(text: str) -> ResponseOutputMessage:
    part = ResponseOutputText(text=text, type="output_text", annotations=[])
    return ResponseOutputMessage(
        id="msg", content=[part], role="assistant", status="completed", type="message"
    )


def call(call_id: str, name: str, arguments: str) -> ResponseFunctionToolCall:
    return ResponseFunctionToolCall(
        arguments=arguments, call_id=call_id, name=name, type="function_call", status="completed"
    )


class ScriptedModel(Model):
    """Returns ``script[i]`` on the i-th call; ``inputs[i]`` is what that call was sent."""

    def __init__(self, script: list[ResponseOutputItem]) -> None:
        self.script = list(script)
        self.inputs: list[Any] = []
        self.instructions: list[str | None] = []

    async def get_response(
        self,
        system_instructions: str | None,
        input: Any,
        model_settings: Any,
        tools: Any,
        output_schema: Any,
        handoffs: Any,
        tracing: Any,
        **_kwargs: Any,
    ) -> ModelResponse:
        self.inputs.append(copy.deepcopy(input))
        self.instructions.append(system_instructions)
        return ModelResponse(output=[self.script.pop(0)], usage=Usage(), response_id=None)

    def stream_response(self, *args: Any, **kwargs: Any) -> AsyncIterator[Any]:
        raise NotImplementedError("the scripted model does not stream")
