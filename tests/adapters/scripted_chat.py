"""A scripted LangChain chat model: answers from a list, keeps every message list it is sent,
and accepts tools (``bind_tools`` returns the model itself: the script decides the calls)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from langchain_core.callbacks import CallbackManagerForLLMRun
from langchain_core.language_models.fake_chat_models import FakeMessagesListChatModel
from langchain_core.messages import BaseMessage
from langchain_core.outputs import ChatResult


class ScriptedChat(FakeMessagesListChatModel):
    """``responses[i]`` answers the i-th call; ``received[i]`` is what that call was sent."""

    received: list[list[BaseMessage]] = []  # noqa: RUF012 (a pydantic field, copied per model)

    def bind_tools(self, tools: Sequence[Any], **kwargs: Any) -> ScriptedChat:  # type: ignore[override]
        return self

    def _generate(
        self,
        messages: list[BaseMessage],
        stop: list[str] | None = None,
        run_manager: CallbackManagerForLLMRun | None = None,
        **kwargs: Any,
    ) -> ChatResult:
        self.received.append([m.model_copy(deep=True) for m in messages])
        return super()._generate(messages, stop, run_manager, **kwargs)
