"""A summarizer backed by the Anthropic Messages API, through the caller's client.

``AnthropicSummarizer(client, model="claude-sonnet-4-5")`` sends
:data:`~.prompt.SYSTEM_PROMPT` as ``system`` and the folded items
(:func:`~.prompt.user_prompt`) as the user message with ``client.messages.create``, and reads
the ``SECTION | SEQS | TEXT`` lines of the reply's text blocks. The client is the caller's
(``anthropic.Anthropic`` or anything with the same ``messages.create``): registre opens no
connection of its own, and does not import the ``anthropic`` package
(``pip install 'registre[anthropic]'`` brings it).

Whatever the client raises (``anthropic.APIError`` and its kin) propagates and nothing is
recorded; a reply without text, refused by the model or cut at ``max_tokens`` raises
:class:`~.prompt.UnusableReplyError`; the summary itself goes through the controller's
checks (``Thread.compact``) like any other.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final, Protocol

from registre.summarizers.prompt import (
    ITEM_CHARS,
    SYSTEM_PROMPT,
    ClientSummarizer,
    UnusableReplyError,
)

__all__ = ["MAX_TOKENS", "AnthropicClient", "AnthropicSummarizer"]

MAX_TOKENS: Final = 4096
"""The default ``max_tokens`` of a request (the Messages API requires one)."""


class _Messages(Protocol):
    def create(self, *args: Any, **kwargs: Any) -> Any: ...


class AnthropicClient(Protocol):
    """What the summarizer uses of an ``anthropic.Anthropic`` client."""

    @property
    def messages(self) -> _Messages: ...


class AnthropicSummarizer(ClientSummarizer):
    """Summaries by an Anthropic model, named ``anthropic:<model>``, version
    :data:`~.prompt.PROMPT_VERSION`.

    ``max_tokens`` caps the reply (a reply cut there is refused, not recorded);
    ``temperature`` is sent only when given; ``extra`` is passed to ``create`` as further
    keyword arguments; ``item_chars`` caps each item's text in the prompt; ``name`` replaces
    the recorded name.
    """

    provider = "anthropic"

    def __init__(
        self,
        client: AnthropicClient,
        model: str,
        *,
        max_tokens: int = MAX_TOKENS,
        temperature: float | None = None,
        extra: Mapping[str, Any] | None = None,
        item_chars: int = ITEM_CHARS,
        name: str | None = None,
    ) -> None:
        if max_tokens < 1:
            raise ValueError(f"max_tokens must be at least 1, got {max_tokens}")
        options: dict[str, Any] = dict(extra or {})
        options["max_tokens"] = max_tokens
        if temperature is not None:
            options["temperature"] = temperature
        super().__init__(model, options, item_chars=item_chars, name=name)
        self._client = client

    def _ask(self, prompt: str) -> str | None:
        response = self._client.messages.create(
            model=self._model,
            system=SYSTEM_PROMPT,
            messages=[{"role": "user", "content": prompt}],
            **self._options,
        )
        return _reply_text(response)


def _reply_text(response: Any) -> str | None:
    reason = getattr(response, "stop_reason", None)
    if reason == "max_tokens":
        raise UnusableReplyError(
            "the model's reply was cut at max_tokens: a cut summary is not recorded"
        ).with_hint("raise max_tokens, or fold less at a time")
    if reason == "refusal":
        raise UnusableReplyError("the model refused to summarize")
    texts = [
        block.text
        for block in getattr(response, "content", None) or []
        if getattr(block, "type", None) == "text" and isinstance(getattr(block, "text", None), str)
    ]
    return "".join(texts) if texts else None
