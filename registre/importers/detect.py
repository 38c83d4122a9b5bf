"""``--format auto``: which transcript format a file holds, from its layout and first value.

:func:`detect` looks at the first JSON value only (the file is not read further) and returns
the format name with the reason it was chosen, or ``None`` with a description of what it saw.
Each format's module declares ``sniff(value)``; :data:`SNIFFERS` asks them in this order,
first match wins:

=======================  ================================================================
first value              format
=======================  ================================================================
``{task_id, traj}``      ``tau-bench``
``{history|trajectory}`` ``swe-agent`` (also ``{messages, info}``: mini-swe-agent)
``{messages}``           ``anthropic`` (a conversation document)
``{type, data}``         ``langchain`` (``type`` human, ai, system, tool, ...)
``{type, uuid}`` ...     ``claude-code`` (``type`` user/assistant/system/summary/..., with
                         ``uuid``, ``sessionId`` or ``leafUuid``)
``{type: ITEM}``         ``openai-responses`` (message, function_call, function_call_output,
                         reasoning, compaction, ...)
``{action|observation}`` ``openhands``
``{role, content}``      ``anthropic`` when content holds Anthropic blocks (tool_use,
                         tool_result, thinking, ...), else ``openai``
=======================  ================================================================
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from registre.importers import (
    anthropic,
    claude_code,
    langchain,
    openai_chat,
    openai_responses,
    openhands,
    swe_agent,
    tau_bench,
)

__all__ = ["PLAIN_MESSAGE_FORMATS", "SNIFFERS", "describe_value", "detect"]

PLAIN_MESSAGE_FORMATS = frozenset(("openai", "anthropic", "openai-responses"))
"""Formats a plain ``{"role", "content": "text"}`` message may belong to: a file starting with
one is detected as ``openai`` but any of these may be asked for."""


def describe_value(value: Any) -> str:
    """What a first value looks like, for messages: ``an object with keys a, b, c``."""
    if isinstance(value, dict):
        keys = ", ".join(sorted(value)[:8])
        return f"an object with keys {keys}" if keys else "an empty object"
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    return f"a JSON {type(value).__name__}"


SNIFFERS: tuple[tuple[str, Callable[[dict[str, Any]], str | None]], ...] = (
    ("tau-bench", tau_bench.sniff),
    ("swe-agent", swe_agent.sniff),
    ("anthropic", anthropic.sniff_document),
    ("langchain", langchain.sniff),
    ("claude-code", claude_code.sniff),
    ("openai-responses", openai_responses.sniff),
    ("openhands", openhands.sniff),
    ("anthropic", anthropic.sniff),
    ("openai", openai_chat.sniff),
)
"""``(format, sniff)`` in the order they are asked; the first that recognises the value wins.
Each format's module declares its own ``sniff`` (the reason it recognises a first object, or
None)."""


def detect(value: Any) -> tuple[str | None, str]:
    """``(format, why)`` for a file whose first value is ``value`` (a list: its first item)."""
    if isinstance(value, list):
        if not value:
            return None, "an empty list"
        value = value[0]
    if not isinstance(value, dict):
        return None, describe_value(value)
    for name, sniff in SNIFFERS:
        why = sniff(value)
        if why is not None:
            return name, why
    return None, describe_value(value)
