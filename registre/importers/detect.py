"""``--format auto``: which transcript format a file holds, from its layout and first value.

:func:`detect` looks at the first JSON value only (the file is not read further) and returns
the format name with the reason it was chosen, or ``None`` with a description of what it saw.
The rules, first match wins:

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

from typing import Any

__all__ = ["PLAIN_MESSAGE_FORMATS", "describe_value", "detect"]

PLAIN_MESSAGE_FORMATS = frozenset(("openai", "anthropic", "openai-responses"))
"""Formats a plain ``{"role", "content": "text"}`` message may belong to: a file starting with
one is detected as ``openai`` but any of these may be asked for."""

_LANGCHAIN = frozenset(("human", "ai", "system", "tool", "function", "chat", "AIMessageChunk"))
_RESPONSES = frozenset(
    (
        "message",
        "function_call",
        "function_call_output",
        "reasoning",
        "compaction",
        "web_search_call",
        "file_search_call",
        "computer_call",
        "computer_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "mcp_call",
        "image_generation_call",
        "local_shell_call",
        "item_reference",
    )
)
_ANTHROPIC_BLOCKS = frozenset(
    (
        "tool_use",
        "tool_result",
        "thinking",
        "redacted_thinking",
        "server_tool_use",
        "web_search_tool_result",
        "document",
    )
)


def describe_value(value: Any) -> str:
    """What a first value looks like, for messages: ``an object with keys a, b, c``."""
    if isinstance(value, dict):
        keys = ", ".join(sorted(value)[:8])
        return f"an object with keys {keys}" if keys else "an empty object"
    if isinstance(value, list):
        return f"a list of {len(value)} items"
    return f"a JSON {type(value).__name__}"


def detect(value: Any) -> tuple[str | None, str]:
    """``(format, why)`` for a file whose first value is ``value`` (a list: its first item)."""
    if isinstance(value, list):
        if not value:
            return None, "an empty list"
        value = value[0]
    if not isinstance(value, dict):
        return None, describe_value(value)
    kind = value.get("type")
    if "traj" in value and "task_id" in value:
        return "tau-bench", "a task record with task_id and traj"
    if (
        "history" in value
        or "trajectory" in value
        or ("messages" in value and ("trajectory_format" in value or "info" in value))
    ):
        return "swe-agent", "a trajectory document (history/trajectory or messages with info)"
    if isinstance(value.get("messages"), list) and "role" not in value:
        return "anthropic", "a conversation document {messages}"
    if kind in _LANGCHAIN and isinstance(value.get("data"), dict):
        return "langchain", f"a LangChain message dict of type {kind!r}"
    if isinstance(kind, str) and ("uuid" in value or "sessionId" in value or "leafUuid" in value):
        return "claude-code", f"a Claude Code session record of type {kind!r}"
    if kind in _RESPONSES:
        return "openai-responses", f"a Responses item of type {kind!r}"
    if ("action" in value or "observation" in value) and "id" in value:
        return "openhands", "an OpenHands event (action/observation with an id)"
    if "role" in value:
        content = value.get("content")
        if isinstance(content, list) and any(
            isinstance(block, dict) and block.get("type") in _ANTHROPIC_BLOCKS for block in content
        ):
            return "anthropic", "a message whose content holds Anthropic blocks"
        if value.get("role") in ("tool", "developer") or "tool_calls" in value:
            return "openai", "a chat-completions message"
        return "openai", "a plain message with role and content"
    return None, describe_value(value)
