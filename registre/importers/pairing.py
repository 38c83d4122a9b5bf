"""Tool-call pairing as the providers define it, across imports into one thread.

A result answers **the most recent unanswered call with its id** (OpenAI
``tool_call_id``, Anthropic ``tool_use_id``). Ids may be reused: the second call with an id
already used in the thread gets ``call_ref`` ``ID#2`` (the third ``ID#3``, ...), unique in
the thread, and the result that answers it carries the same ``call_ref``; the original id
stays in ``call_id``. A first use carries no ``call_ref``, so threads without reuse have the
bodies they always had. Parallel calls stay in the order they were made.

:meth:`Pairing.from_entries` rebuilds the state from the thread's entries, so a file that
starts with the result of a call issued by an earlier import pairs with that call.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

__all__ = ["Pairing"]


@dataclass
class _Open:
    ref: str | None
    name: str
    where: str


@dataclass
class Pairing:
    """Calls made so far (by id) and the ones still unanswered, most recent last."""

    uses: dict[str, int] = field(default_factory=dict)
    open: dict[str, list[_Open]] = field(default_factory=dict)

    @classmethod
    def from_entries(cls, entries: Iterable[tuple[str, Mapping[str, Any]]]) -> Pairing:
        """The state after ``(kind, body)`` entries of a thread, in seq order."""
        pairing = cls()
        for kind, body in entries:
            call_id = body.get("call_id")
            if not isinstance(call_id, str):
                continue
            if kind == "tool.call":
                pairing.uses[call_id] = pairing.uses.get(call_id, 0) + 1
                ref = body.get("call_ref")
                name = str(body.get("name", ""))
                where = "an earlier import"
                pairing.open.setdefault(call_id, []).append(
                    _Open(ref if isinstance(ref, str) else None, name, where)
                )
            elif kind == "tool.result":
                ref = body.get("call_ref")
                pairing._answer(call_id, ref if isinstance(ref, str) else None)
        return pairing

    def call(self, call_id: str, name: str, where: str) -> str | None:
        """Record a call; its ``call_ref`` when the id was used before in the thread."""
        count = self.uses.get(call_id, 0) + 1
        self.uses[call_id] = count
        ref = None if count == 1 else f"{call_id}#{count}"
        self.open.setdefault(call_id, []).append(_Open(ref, name, where))
        return ref

    def result(self, call_id: str) -> tuple[str | None, str] | None:
        """Answer the most recent unanswered call ``call_id``: its ``(call_ref, name)``, or
        ``None`` when no call with that id waits for a result."""
        waiting = self.open.get(call_id)
        if not waiting:
            return None
        call = waiting.pop()
        if not waiting:
            del self.open[call_id]
        return call.ref, call.name

    def why_unpaired(self, call_id: str) -> str:
        """Why a result for ``call_id`` pairs with nothing (after :meth:`result` said so)."""
        if call_id in self.uses:
            return (
                f"second result for tool call {call_id!r}: every call with that id already "
                "has its result"
            )
        return (
            f"result for tool call {call_id!r}, which no call in this file or earlier in the "
            "thread issued"
        )

    def unanswered(self) -> list[str]:
        """Ids of the calls still waiting for a result."""
        return [call_id for call_id, waiting in self.open.items() for _ in waiting]

    def _answer(self, call_id: str, ref: str | None) -> None:
        waiting = self.open.get(call_id)
        if not waiting:
            return
        for index in range(len(waiting) - 1, -1, -1):
            if waiting[index].ref == ref:
                del waiting[index]
                break
        else:
            waiting.pop()
        if not waiting:
            del self.open[call_id]
