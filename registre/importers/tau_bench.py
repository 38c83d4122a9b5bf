"""tau-bench results (``tau-bench``): ``[{"task_id", "reward", "info", "traj": [...]}, ...]``.

Each task is a thread of its own (the caller names it, see :data:`Piece`): the task record
without ``traj`` is an ``imported`` ``task`` entry (reward, info, trial kept verbatim), then
each message of ``traj`` is read as an OpenAI chat message
(:mod:`~registre.importers.openai_chat`). The ``task_id`` is the thread key.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from registre.importers.core import At, Conversation, ImportedEntry, describe
from registre.importers.openai_chat import chat_message

__all__ = ["parse_tau_bench_values", "sniff", "task_key"]


def task_key(record: object) -> str:
    """The thread key of a task record: its ``task_id`` (plus ``-trial`` when there is one)."""
    if not isinstance(record, dict):
        return "task"
    key = str(record.get("task_id", "task"))
    trial = record.get("trial")
    return f"{key}-{trial}" if isinstance(trial, int) and trial else key


def parse_tau_bench_values(
    values: Iterator[tuple[Any, At]], conversation_for: Callable[[str], Conversation]
) -> Iterator[tuple[str, ImportedEntry]]:
    """``(task key, entry)`` for every task record, each task with its own pairing."""
    for value, at in values:
        records = value if isinstance(value, list) else [value]
        for index, record in enumerate(records):
            record_at = at.index(index) if isinstance(value, list) else at
            if not isinstance(record, dict) or not isinstance(record.get("traj"), list):
                record_at.fail(f"expected a task record with a traj list, got {describe(record)}")
            key = task_key(record)
            conversation = conversation_for(key)
            header = {name: item for name, item in record.items() if name != "traj"}
            task = conversation.message(header, record_at)
            task.imported("task")
            for entry in task.end():
                yield key, entry
            for number, item in enumerate(record["traj"]):
                message = chat_message(conversation, item, record_at.key("traj").index(number))
                for entry in message.end():
                    yield key, entry


def sniff(value: dict[str, Any]) -> str | None:
    """Why ``value``, a file's first object, is a tau-bench task record; None if it is not."""
    if "traj" in value and "task_id" in value:
        return "a task record with task_id and traj"
    return None
