"""Language-model summarizers: adapters for the official ``openai`` and ``anthropic`` clients.

The caller builds its own client (key, base URL, proxy, retries are its business) and passes
it with the model's name; registre opens no connection itself and imports neither package,
so importing this one needs neither::

    from registre.summarizers import AnthropicSummarizer, OpenAISummarizer

    thread.compact(summarizer=OpenAISummarizer(openai.OpenAI(), model="gpt-4.1-mini"))
    thread.compact(summarizer=AnthropicSummarizer(anthropic.Anthropic(), "claude-sonnet-4-5"))

Both send :data:`SYSTEM_PROMPT` (the ``SECTION | SEQS | TEXT`` format, the folded range,
verbatim quotes, the allowance, what to keep specific) and record their name
(``openai:<model>``, ``anthropic:<model>``) and the prompt's version
(:data:`PROMPT_VERSION`) in the compaction. Their summaries go through the controller's
lineage checks unchanged: a reply that points outside the fold or invents a quote is refused
and nothing is written.

This package sits on the application floor beside :mod:`registre.cli` (it does network I/O
through the caller's client, which the pure :mod:`registre.lifecycle` must not), and imports
only :mod:`registre.context`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from registre._lazy import lazy_face

if TYPE_CHECKING:
    from registre.summarizers.anthropic import (
        MAX_TOKENS,
        AnthropicClient,
        AnthropicSummarizer,
    )
    from registre.summarizers.openai import (
        OpenAIClient,
        OpenAISummarizer,
    )
    from registre.summarizers.prompt import (
        ITEM_CHARS,
        PROMPT_VERSION,
        SYSTEM_PROMPT,
        UnusableReplyError,
        read_reply,
        render_item,
        user_prompt,
    )

__all__ = [
    "ITEM_CHARS",
    "MAX_TOKENS",
    "PROMPT_VERSION",
    "SYSTEM_PROMPT",
    "AnthropicClient",
    "AnthropicSummarizer",
    "OpenAIClient",
    "OpenAISummarizer",
    "UnusableReplyError",
    "read_reply",
    "render_item",
    "user_prompt",
]

__getattr__, __dir__ = lazy_face(
    __name__,
    {
        "anthropic": (
            "AnthropicClient",
            "AnthropicSummarizer",
            "MAX_TOKENS",
        ),
        "openai": (
            "OpenAIClient",
            "OpenAISummarizer",
        ),
        "prompt": (
            "ITEM_CHARS",
            "PROMPT_VERSION",
            "SYSTEM_PROMPT",
            "UnusableReplyError",
            "read_reply",
            "render_item",
            "user_prompt",
        ),
    },
)
