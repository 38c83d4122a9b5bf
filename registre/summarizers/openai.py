"""A summarizer backed by the OpenAI Chat Completions API, through the caller's client.

``OpenAISummarizer(client, model="gpt-4.1-mini")`` sends :data:`~.prompt.SYSTEM_PROMPT` as
the system message and the folded items (:func:`~.prompt.user_prompt`) as the user message
with ``client.chat.completions.create``, and reads the reply's ``SECTION | SEQS | TEXT``
lines. The client is the caller's (``openai.OpenAI``, ``openai.AzureOpenAI`` or anything
with the same ``chat.completions.create``): registre opens no connection of its own, and
does not import the ``openai`` package (``pip install 'registre[openai]'`` brings it).

Whatever the client raises (``openai.APIError`` and its kin) propagates and nothing is
recorded; a reply without text, refused by the model or cut at its token limit raises
:class:`~.prompt.UnusableReplyError`; the summary itself goes through the controller's
checks (``Thread.compact``) like any other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from registre.summarizers.prompt import (
    ITEM_CHARS,
    SYSTEM_PROMPT,
    ClientSummarizer,
    UnusableReplyError,
)

__all__ = ["OpenAIClient", "OpenAISummarizer"]


class _Completions(Protocol):
    def create(self, *args: Any, **kwargs: Any) -> Any: ...


class _Chat(Protocol):
    @property
    def completions(self) -> _Completions: ...


class OpenAIClient(Protocol):
    """What the summarizer uses of an ``openai.OpenAI`` client."""

    @property
    def chat(self) -> _Chat: ...


class OpenAISummarizer(ClientSummarizer):
    """Summaries by an OpenAI chat model, named ``openai:<model>``, version
    :data:`~.prompt.PROMPT_VERSION`.

    ``max_completion_tokens`` and ``temperature`` are sent only when given (reasoning models
    refuse ``temperature``); ``extra`` is passed to ``create`` as further keyword arguments
    (``{"reasoning_effort": "low"}``, ``{"seed": 7}``); ``item_chars`` caps each item's text in
    the prompt; ``name`` replaces the recorded name (say which deployment it is).
    """

    provider = "openai"

    def __init__(
        self,
        client: OpenAIClient,
        model: str,
        *,
        max_completion_tokens: int | None = None,
        temperature: float | None = None,
        extra: Mapping[str, Any] | None = None,
        item_chars: int = ITEM_CHARS,
        name: str | None = None,
    ) -> None:
        options: dict[str, Any] = dict(extra or {})
        if max_completion_tokens is not None:
            options["max_completion_tokens"] = max_completion_tokens
        if temperature is not None:
            options["temperature"] = temperature
        super().__init__(model, options, item_chars=item_chars, name=name)
        self._client = client

    def _ask(self, prompt: str) -> str | None:
        response = self._client.chat.completions.create(
            model=self._model,
            messages=[
                {"role": "system", "content": SYSTEM_PROMPT},
                {"role": "user", "content": prompt},
            ],
            **self._options,
        )
        return _reply_text(response)


def _reply_text(response: Any) -> str | None:
    choices = getattr(response, "choices", None) or []
    if not choices:
        raise UnusableReplyError("the model's reply has no choice")
    choice = choices[0]
    message = choice.message
    refusal = getattr(message, "refusal", None)
    if refusal:
        raise UnusableReplyError(f"the model refused to summarize: {refusal}")
    reason = getattr(choice, "finish_reason", None)
    if reason in ("length", "content_filter"):
        raise UnusableReplyError(
            f"the model's reply stopped early (finish_reason {reason!r}): a cut summary is "
            "not recorded"
        ).with_hint("raise max_completion_tokens, or fold less at a time")
    content = message.content
    return content if isinstance(content, str) else None
