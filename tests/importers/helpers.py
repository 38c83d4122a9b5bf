"""Shared by the importer tests: the fixture files, what each holds, and message regrouping."""

from __future__ import annotations

import json
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from registre.importers import ImportedEntry, rebuild_message, skeleton_of

ROOT = Path(__file__).resolve().parents[1]
FIXTURES = ROOT / "fixtures" / "transcripts"
REAL = ROOT / "data" / "transcripts"
STEM = "01_mini-swe-agent_deepseek-chat_pylint-dev__astroid-1333"

FIXTURE_FORMATS = {
    "openai_chat.jsonl": "openai",
    "openai_chat_array.json": "openai",
    "anthropic.json": "anthropic",
    "claude_code.jsonl": "claude-code",
    "openai_responses.jsonl": "openai-responses",
    "tau_bench.json": "tau-bench",
    "swe_agent.traj": "swe-agent",
    "openhands.json": "openhands",
    "langchain.json": "langchain",
}


def fixture(name: str) -> bytes:
    return (FIXTURES / name).read_bytes()


def values(name: str) -> list[Any]:
    """The JSON values of a fixture: JSONL lines, or the one document."""
    data = fixture(name).decode()
    if name.endswith(".jsonl"):
        return [json.loads(line) for line in data.splitlines() if line.strip()]
    return [json.loads(data)]


def source_messages(name: str, fmt: str) -> list[Any]:
    """The source messages the importer reads from a fixture, in order (module docstring of
    each format: documents are split into their header and their messages)."""
    found: list[Any] = []
    for value in values(name):
        if fmt == "anthropic" and isinstance(value, dict):
            found += [{k: v for k, v in value.items() if k != "messages"}, *value["messages"]]
        elif fmt == "swe-agent":
            key = "history" if "history" in value else "messages"
            header = {k: v for k, v in value.items() if k not in (key, "trajectory")}
            found += [header, *value[key], *value.get("trajectory", [])]
        elif fmt == "tau-bench":
            for task in value:
                found += [{k: v for k, v in task.items() if k != "traj"}, *task["traj"]]
        elif isinstance(value, list):
            found += value
        else:
            found.append(value)
    return found


def regrouped(entries: Sequence[ImportedEntry]) -> list[Any]:
    """Each source message rebuilt from its entries (a message starts at an entry whose
    ``source`` keeps the rest of it)."""
    messages: list[Any] = []
    skeleton: dict[str, Any] | None = None
    group: list[dict[str, Any]] = []
    for entry in entries:
        start = skeleton_of(entry.body["source"])
        if start is not None:
            if skeleton is not None:
                messages.append(rebuild_message(skeleton, group))
            skeleton, group = start, []
        group.append(entry.body)
    if skeleton is not None:
        messages.append(rebuild_message(skeleton, group))
    return messages


def without_source(entries: Sequence[ImportedEntry]) -> list[tuple[str, dict[str, Any], str]]:
    return [(e.kind, {k: v for k, v in e.body.items() if k != "source"}, e.actor) for e in entries]
