"""The OpenAI Agents SDK on a registre ledger (``registre[openai-agents]``).

:class:`RegistreSession` is an ``agents.memory.Session``: pass it as ``Runner.run(...,
session=...)``. Its items are signed ledger entries and its history is registre's working
context, not a list that grows until it is cleared and re-added::

    session = RegistreSession(ledger, "support-42", budget=8000)
    config = RunConfig(call_model_input_filter=session.model_input_filter("gpt-x"))
    result = await Runner.run(agent, "Where is my order?", session=session, run_config=config)

* ``add_items`` turns Responses input items into ``turn``, ``tool.call`` and ``tool.result``
  entries, all of a call in one transaction (an item it cannot record -- an image, a file,
  a hosted-tool call -- is refused with UnsupportedItemError and nothing is written).
  ``reasoning`` items are not recorded: their content is the provider's, often encrypted, and
  the model is not sent them again.
* ``get_items(limit)`` is the thread's projection at the session's budget as Responses input
  items (summaries of compacted history as system messages, then the recent tail), the last
  ``limit`` of them. When the context is past the policy's high-water mark it first appends
  a signed ``context.compaction``: compaction is an event on the record, the history it
  folds stays on the ledger and ``expand``-able with its proof.
* ``pop_item`` and ``clear_session`` never delete anything. The session lives on a chain of
  *segment* threads (``ID``, ``ID:2``, ``ID:3`` ...): ``clear_session`` continues it on a new,
  empty segment; ``pop_item`` on a new segment holding a copy of the entries before the
  popped item (the same kinds, bodies and actors, so the same context). Either way the old
  segment is closed by a ``decision`` entry naming the segment that continues it, written
  last, so a failure midway leaves the session where it was.
* :meth:`RegistreSession.model_input_filter` is a ``RunConfig.call_model_input_filter``: it
  records a ``model.call`` (shape ``openai.responses``, with the lifecycle block) and sends
  the model exactly the request whose SHA-256 that entry holds, so every response can be
  replayed to its context (``thread.replay_request(seq)``). The agent's instructions are
  part of it: the filter records them as a ``system`` turn when they change (once per change,
  not per call) and sends them inside the input, not beside it. The tool schemas the SDK
  sends beside the input are not covered by the digest (a ``model.call`` digests messages).

The ledger calls are short transactions run on the event loop's thread.
"""

from __future__ import annotations

import json
from collections.abc import Awaitable, Callable, Iterator, Mapping, Sequence
from typing import Any, Final

from agents.memory.session_settings import SessionSettings
from agents.run_config import CallModelData, ModelInputData

from registre.adapters.records import tool_call_body
from registre.attest.canonical_json import parse_strict
from registre.attest.entries import LIFECYCLE_KINDS, actor_name
from registre.context import Policy, Summarizer
from registre.errors import MalformedError, RefusedError
from registre.kinds import CONTEXT_COMPACTION, DECISION, MODEL_CALL, TOOL_CALL, TOOL_RESULT, TURN
from registre.ledger import Ledger, Thread

__all__ = [
    "CONTINUED_PREFIX",
    "PopRefusedError",
    "RegistreSession",
    "UnrecordedInputError",
    "UnsupportedItemError",
    "item_entries",
]

CONTINUED_PREFIX: Final = "registre.session: continued on thread "
"""How the ``decision`` entry closing a segment starts; the next segment's id follows."""

_CONTENT_KINDS: Final = (TURN, TOOL_CALL, TOOL_RESULT)
_CONTEXT_WRITES: Final = frozenset((CONTEXT_COMPACTION, MODEL_CALL))
_TEXT_PARTS: Final = ("input_text", "output_text", "text")
_ROLES: Final = {
    "user": "user",
    "assistant": "assistant",
    "system": "system",
    "developer": "system",
}

Item = Mapping[str, Any]
Entry = tuple[str, dict[str, Any], str]


class UnsupportedItemError(MalformedError):
    """An input item the session cannot record as an entry; nothing was written."""


class PopRefusedError(RefusedError):
    """``pop_item`` when the most recent item is no longer shown verbatim (a compaction
    folded it into a summary)."""


class UnrecordedInputError(RefusedError):
    """A model input whose newest item is not the session's newest entry: the filter can only
    vouch for input the session holds (run with ``session=`` this session)."""


# --- items to entries ----------------------------------------------------------------------


def _text(content: object, where: str) -> str:
    if isinstance(content, str):
        return content
    if not isinstance(content, list):
        raise UnsupportedItemError(f"{where}.content: expected a string or a list of text parts")
    texts = []
    for index, part in enumerate(content):
        kind = part.get("type") if isinstance(part, Mapping) else None
        if kind in _TEXT_PARTS and isinstance(part.get("text"), str):
            texts.append(part["text"])
        elif kind == "refusal" and isinstance(part.get("refusal"), str):
            texts.append(part["refusal"])
        else:
            raise UnsupportedItemError(
                f"{where}.content[{index}]: a {kind!r} part cannot be recorded; the session "
                "records text parts only"
            )
    return "".join(texts)


def _arguments(text: object, where: str) -> dict[str, Any]:
    if text in ("", None):
        return {}
    if not isinstance(text, str):
        raise UnsupportedItemError(f"{where}.arguments: expected the JSON text of an object")
    try:
        value = parse_strict(text.encode("utf-8", "surrogatepass"))
    except MalformedError as exc:
        raise UnsupportedItemError(f"{where}.arguments: not strict JSON: {exc}") from None
    if not isinstance(value, dict):
        raise UnsupportedItemError(f"{where}.arguments: expected the JSON text of an object")
    return value


def item_entries(items: Sequence[Item], names: Mapping[str, str] | None = None) -> list[Entry]:
    """The ``(kind, body, actor)`` entries recording ``items`` (module docstring), in order.
    ``names``: tool names of earlier calls by call id, for the results' actors. Raises
    UnsupportedItemError naming the item."""
    known = dict(names or {})
    entries: list[Entry] = []
    for index, item in enumerate(items):
        where = f"items[{index}]"
        if not isinstance(item, Mapping):
            raise UnsupportedItemError(f"{where}: expected an object")
        kind = item.get("type", "message")
        if kind == "message" and "role" in item:
            role = _ROLES.get(str(item["role"]))
            if role is None:
                raise UnsupportedItemError(f"{where}.role: {item['role']!r} is not a message role")
            text = _text(item.get("content"), where)
            if text:
                entries.append((TURN, {"role": role, "text": text}, role))
        elif kind == "function_call":
            call_id, name = str(item.get("call_id", "")), str(item.get("name", ""))
            body = tool_call_body(call_id, name, _arguments(item.get("arguments"), where))
            known[call_id] = name
            entries.append((TOOL_CALL, body, "assistant"))
        elif kind == "function_call_output":
            call_id = str(item.get("call_id", ""))
            body = {"call_id": call_id, "content": _text(item.get("output"), where)}
            if call_id in known:
                body["name"] = known[call_id]
            entries.append((TOOL_RESULT, body, actor_name(f"tool:{known.get(call_id, 'unknown')}")))
        elif kind == "reasoning":
            continue
        else:
            raise UnsupportedItemError(
                f"{where}: a {kind!r} item cannot be recorded; the session records messages, "
                "function calls and their outputs"
            )
    return entries


def _batches(entries: Iterator[Entry]) -> Iterator[list[Entry]]:
    """Runs of entries that one ``append_many`` accepts: lifecycle entries and compactions or
    model calls never share a batch."""
    batch: list[Entry] = []
    classes: set[str] = set()
    for entry in entries:
        kind = entry[0]
        cls = (
            "lifecycle" if kind in LIFECYCLE_KINDS else "context" if kind in _CONTEXT_WRITES else ""
        )
        if cls and classes - {cls}:
            yield batch
            batch, classes = [], set()
        batch.append(entry)
        if cls:
            classes.add(cls)
    if batch:
        yield batch


# --- the session ---------------------------------------------------------------------------


class RegistreSession:
    """An ``agents`` Session on ledger thread ``session_id`` (and its continuation segments).

    ``budget`` is the token budget of ``get_items`` and of the model calls the filter records;
    ``policy`` and ``summarizer`` as for :meth:`registre.ledger.Thread.compact`. The thread is
    created when the ledger has none of that id (which needs the ledger's signer).
    """

    session_settings: SessionSettings | None = None

    def __init__(
        self,
        ledger: Ledger,
        session_id: str,
        *,
        budget: int = 32000,
        policy: Policy | None = None,
        summarizer: Summarizer | None = None,
    ) -> None:
        self.session_id = session_id
        self.budget = budget
        self._ledger = ledger
        self._policy = policy
        self._summarizer = summarizer
        self._instructions: str | None = None
        existing = {thread.id: thread for thread in ledger.threads()}
        thread = existing.get(session_id) or ledger.create_thread(session_id)
        while (following := self._continuation(thread)) is not None:
            thread = existing.get(following) or ledger.thread(following)
        self._thread = thread

    @property
    def thread(self) -> Thread:
        """The segment thread the session is on now."""
        return self._thread

    # --- the Session protocol --------------------------------------------------------------

    async def get_items(self, limit: int | None = None) -> list[Any]:
        """The working context as Responses input items, the last ``limit`` (module docstring)."""
        items = self._view()
        return items if limit is None else items[-limit:] if limit > 0 else []

    async def add_items(self, items: list[Any]) -> None:
        """Record ``items`` in one transaction (module docstring)."""
        entries = item_entries(items, self._call_names())
        if entries:
            self._thread.append_many(entries)

    async def pop_item(self) -> Any | None:
        """Withdraw the most recent item from the session and return it (as ``get_items``
        showed it), continuing on a new segment without it. None when the session is empty.
        PopRefusedError when that item was compacted into a summary."""
        view = self._view()
        last = self._last_content_seq()
        if not view or last is None:
            return None
        run = self._thread.project(budget=self.budget, policy=self._policy).manifest.status_of(last)
        if run.status not in ("verbatim", "stubbed"):
            raise PopRefusedError(
                f"the most recent item (entry {last}) is {run.status}: a compaction folded it, "
                "so it is no longer an item to withdraw"
            )
        size = self._thread.head().size
        self._continue(
            f"pop_item withdrew entries {last}..{size - 1}; entries 0..{last - 1} are copied there",
            copy_until=last,
        )
        return view[-1]

    async def clear_session(self) -> None:
        """Continue the session on a new, empty segment; the old one stays as it is."""
        self._continue("clear_session: the session starts empty there", copy_until=0)

    # --- the model input filter ------------------------------------------------------------

    def model_input_filter(
        self, model: str, *, lifecycle_block: bool = True
    ) -> Callable[[CallModelData[Any]], Awaitable[ModelInputData]]:
        """A ``RunConfig.call_model_input_filter`` recording each call to ``model`` (module
        docstring). The filter raises UnrecordedInputError when the input's newest item is not
        the session's newest entry."""

        async def record_call(data: CallModelData[Any]) -> ModelInputData:
            self._check_recorded(data.model_data.input)
            self._record_instructions(data.model_data.instructions)
            projection, _call = self._thread.model_call(
                model,
                self.budget,
                self._policy,
                summarizer=self._summarizer,
                shape="openai.responses",
                lifecycle_block=lifecycle_block,
            )
            request = projection.as_openai_responses()
            return ModelInputData(input=request["input"], instructions=None)

        return record_call

    # --- helpers ---------------------------------------------------------------------------

    def _record_instructions(self, instructions: str | None) -> None:
        """Append the agent's instructions as a ``system`` turn when they differ from the
        last ones this session recorded (once per change, not per call)."""
        if instructions and instructions != self._instructions:
            self._thread.append(TURN, {"role": "system", "text": instructions}, "system")
            self._instructions = instructions

    def _view(self) -> list[Any]:
        if self._thread.head().size == 0:
            return []
        self._thread.compact(self.budget, self._policy, self._summarizer)
        projection = self._thread.project(budget=self.budget, policy=self._policy)
        return list(projection.as_openai_responses()["input"])

    def _recent(self, window: int = 64) -> list[Any]:
        size = self._thread.head().size
        return list(self._thread.entries(max(0, size - window), size))

    def _last_content_seq(self) -> int | None:
        for entry in reversed(self._recent()):
            if entry.kind in _CONTENT_KINDS:
                return int(entry.seq)
        return None

    def _call_names(self) -> dict[str, str]:
        return {
            str(e.body["call_id"]): str(e.body["name"])
            for e in self._recent()
            if e.kind == TOOL_CALL
        }

    def _check_recorded(self, model_input: Sequence[Any]) -> None:
        wanted = item_entries([item for item in model_input if isinstance(item, Mapping)])
        if not wanted:
            return
        kind, body, _actor = wanted[-1]
        for entry in reversed(self._recent()):
            if entry.kind in _CONTENT_KINDS:
                if (entry.kind, _canonical(entry.body)) == (kind, _canonical(body)):
                    return
                break
        raise UnrecordedInputError(
            f"the model input ends with a {kind} the session {self.session_id!r} has not "
            "recorded; the filter sends only what the session holds"
        ).with_hint("pass session= this session to Runner.run")

    def _continue(self, reason: str, *, copy_until: int) -> None:
        following = self._next_segment_id()
        segment = self._ledger.create_thread(following)
        if copy_until:
            copied = (
                (entry.kind, entry.body, entry.actor)
                for entry in self._thread.entries(0, copy_until)
            )
            for batch in _batches(copied):
                segment.append_many(batch)
        self._thread.append(
            DECISION, {"text": f"{CONTINUED_PREFIX}{following} ({reason})"}, "registre"
        )
        self._thread = segment

    def _next_segment_id(self) -> str:
        taken = {thread.id for thread in self._ledger.threads()}
        number = 2
        while f"{self.session_id}:{number}" in taken:
            number += 1
        return f"{self.session_id}:{number}"

    @staticmethod
    def _continuation(thread: Thread) -> str | None:
        size = thread.head().size
        if size == 0:
            return None
        last = thread.entry(size - 1)
        text = last.body.get("text", "") if last.kind == DECISION else ""
        if not text.startswith(CONTINUED_PREFIX):
            return None
        return str(text[len(CONTINUED_PREFIX) :].split(" ", 1)[0])


def _canonical(body: Mapping[str, Any]) -> str:
    return json.dumps(body, sort_keys=True, ensure_ascii=False)
