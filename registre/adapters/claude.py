"""The Claude Agent SDK on a registre ledger (``registre[claude]``).

:class:`RegistreSessionStore` is a ``claude_agent_sdk`` ``SessionStore``: pass it as
``ClaudeAgentOptions(session_store=...)`` and every transcript line the SDK mirrors becomes a
signed ``transcript.entry`` (``specs/entries.md`` section 4.7) on one thread per session::

    store = RegistreSessionStore(ledger)
    options = ClaudeAgentOptions(session_store=store, hooks={"PreCompact": [
        HookMatcher(hooks=[precompact_hook(ledger.thread("my-task"))])]})

Contract:

* ``append(key, entries)`` writes the batch in one transaction, each line as its RFC 8785
  canonical text (so what is hashed and signed is one spelling of it); a line whose ``uuid``
  the session's transcript (main or the same subpath) already holds is skipped, which makes
  the SDK's retries idempotent. Claude Code's own compactions are recorded beside the lines
  they come in: a ``compact_boundary`` line adds a ``compaction.imported`` event
  (``event: "boundary"``, its trigger and token count, and ``folded``: the seqs of the
  session's lines since the previous boundary), and the compact summary line adds one with
  ``event: "summary"`` and the summary's text;
* ``load(key)`` returns the lines of that transcript exactly as appended (deep-equal), None
  for a transcript never written; ``list_sessions``, ``list_session_summaries`` (folded by the
  SDK's own ``fold_session_summary`` from the record) and ``list_subkeys`` read the ledger;
* ``delete`` is refused (:class:`DeleteRefusedError`): the record is append-only, and the
  SDK's docstring allows a store to keep its transcripts.

Thread ids are ``PREFIX.P.S``: ``P`` the first 12 hex digits of the SHA-256 of the project
key, ``S`` the session id (or, when it is not a usable thread id, ``h`` + 32 hex digits of
its SHA-256). :func:`precompact_hook` is a ``PreCompact`` hook recording, on a thread of the
caller's choice, the SHA-256 of that thread's working context and its live pins at the moment
Claude Code compacts (``event: "pre_compact"``).
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any, Final

from claude_agent_sdk import fold_session_summary
from claude_agent_sdk.types import (
    SessionKey,
    SessionListSubkeysKey,
    SessionStoreEntry,
    SessionStoreListEntry,
    SessionSummaryEntry,
)

from registre.attest.canonical_json import canonical_bytes
from registre.errors import RefusedError
from registre.kinds import COMPACTION_IMPORTED, TRANSCRIPT_ENTRY
from registre.ledger import Ledger, Thread

__all__ = ["FRAMEWORK", "DeleteRefusedError", "RegistreSessionStore", "precompact_hook"]

FRAMEWORK: Final = "claude-agent-sdk"
_ACTOR: Final = "claude-agent-sdk"
_THREAD_PART = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}\Z")

Item = tuple[str, dict[str, Any], str]


class DeleteRefusedError(RefusedError):
    """``SessionStore.delete``: the ledger is append-only; nothing is erased."""


def _digest(text: str, digits: int) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()[:digits]


def _ms(time: str) -> int:
    """An entry's RFC 3339 UTC time as Unix epoch milliseconds."""
    return int(datetime.fromisoformat(time.replace("Z", "+00:00")).timestamp() * 1000)


def _summary_text(line: Mapping[str, Any]) -> str:
    message = line.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(
            str(block.get("text", ""))
            for block in content
            if isinstance(block, Mapping) and block.get("type") == "text"
        )
    return ""


class RegistreSessionStore:
    """A ``SessionStore`` on ``ledger`` (module docstring); ``prefix`` starts every thread id
    it uses, so stores with different prefixes share a ledger without seeing each other."""

    def __init__(self, ledger: Ledger, *, prefix: str = "claude") -> None:
        self._ledger = ledger
        self._prefix = prefix
        self._known: dict[str, _Known] = {}

    # --- thread ids ------------------------------------------------------------------------

    def _project_prefix(self, project_key: str) -> str:
        return f"{self._prefix}.{_digest(project_key, 12)}."

    def thread_id(self, key: SessionKey | SessionListSubkeysKey) -> str:
        """The id of the thread holding session ``key`` (module docstring)."""
        session = key["session_id"]
        part = session if _THREAD_PART.match(session) else "h" + _digest(session, 32)
        return self._project_prefix(key["project_key"]) + part

    def _find(self, key: SessionKey | SessionListSubkeysKey) -> Thread | None:
        wanted = self.thread_id(key)
        return next((t for t in self._ledger.threads() if t.id == wanted), None)

    def _sessions(self, project_key: str) -> Iterator[Thread]:
        prefix = self._project_prefix(project_key)
        return (t for t in self._ledger.threads() if t.id.startswith(prefix))

    # --- reading the record ----------------------------------------------------------------

    @staticmethod
    def _lines(thread: Thread) -> Iterator[tuple[int, str | None, dict[str, Any]]]:
        """``(seq, subpath, line)`` of every mirrored transcript line, in order."""
        for entry in thread.entries():
            if entry.kind == TRANSCRIPT_ENTRY:
                body = entry.body
                yield entry.seq, body.get("subpath"), json.loads(body["entry_json"])

    # --- the SessionStore protocol ---------------------------------------------------------

    def _tails(self, thread: Thread) -> dict[str | None, _Tail]:
        """The per-transcript state of ``thread`` (uuids written, lines since the last
        boundary), brought up to date by reading only the entries added since last time."""
        known = self._known.setdefault(thread.id, _Known())
        head = thread.head().size
        for entry in thread.entries(known.size, head):
            if entry.kind == TRANSCRIPT_ENTRY:
                tail = known.tails.setdefault(entry.body.get("subpath"), _Tail())
                tail.add(entry.seq, json.loads(entry.body["entry_json"]))
        known.size = head
        return known.tails

    async def append(self, key: SessionKey, entries: list[SessionStoreEntry]) -> None:
        """Record ``entries`` in one transaction (module docstring)."""
        if not entries:
            return
        thread = self._find(key) or self._ledger.create_thread(self.thread_id(key))
        subpath = key.get("subpath")
        tail = _Tail.copy_of(self._tails(thread).get(subpath))
        seq = thread.head().size
        items: list[Item] = []
        for entry in entries:
            line = dict(entry)
            if isinstance(line.get("uuid"), str) and line["uuid"] in tail.uuids:
                continue
            body: dict[str, Any] = {"framework": FRAMEWORK, "session": key["session_id"]}
            if subpath is not None:
                body["subpath"] = subpath
            body["entry_json"] = canonical_bytes(line).decode("utf-8")
            items.append((TRANSCRIPT_ENTRY, body, _ACTOR))
            event = self._compaction_event(key["session_id"], line, tail.span)
            tail.add(seq, line)
            seq += 1
            if event is not None:
                items.append((COMPACTION_IMPORTED, event, _ACTOR))
                seq += 1
        if items:
            thread.append_many(items)

    @staticmethod
    def _compaction_event(
        session: str, line: Mapping[str, Any], folded: tuple[int, int] | None
    ) -> dict[str, Any] | None:
        body: dict[str, Any] = {"framework": FRAMEWORK, "session": session}
        if _is_boundary(line):
            body["event"] = "boundary"
            metadata = line.get("compactMetadata")
            metadata = metadata if isinstance(metadata, Mapping) else {}
            if isinstance(metadata.get("trigger"), str) and metadata["trigger"]:
                body["trigger"] = metadata["trigger"][:256]
            if type(metadata.get("preTokens")) is int and metadata["preTokens"] >= 0:
                body["pre_tokens"] = metadata["preTokens"]
            if folded is not None:
                body["folded"] = {"from": folded[0], "to": folded[1]}
        elif line.get("isCompactSummary") is True:
            body["event"] = "summary"
            text = _summary_text(line)
            if text:
                body["summary"] = text
        else:
            return None
        if isinstance(line.get("uuid"), str) and line["uuid"]:
            body["uuid"] = line["uuid"][:256]
        return body

    async def load(self, key: SessionKey) -> list[SessionStoreEntry] | None:
        """The lines of transcript ``key`` as appended; None if it was never written."""
        thread = self._find(key)
        if thread is None:
            return None
        subpath = key.get("subpath")
        lines: list[Any] = [line for _seq, sub, line in self._lines(thread) if sub == subpath]
        return lines or None

    async def list_sessions(self, project_key: str) -> list[SessionStoreListEntry]:
        """Every session of ``project_key``, with the time of its latest entry (epoch ms)."""
        listed: list[SessionStoreListEntry] = []
        for thread in self._sessions(project_key):
            size = thread.head().size
            if size:
                session = str(thread.entry(0).body["session"])
                listed.append({"session_id": session, "mtime": _ms(thread.entry(size - 1).time)})
        return listed

    async def list_session_summaries(self, project_key: str) -> list[SessionSummaryEntry]:
        """The SDK's summary of each session of ``project_key``, folded from its main
        transcript; ``mtime`` as :meth:`list_sessions` gives it."""
        summaries: list[SessionSummaryEntry] = []
        for thread in self._sessions(project_key):
            size = thread.head().size
            if not size:
                continue
            session = str(thread.entry(0).body["session"])
            key: SessionKey = {"project_key": project_key, "session_id": session}
            main: list[Any] = [line for _seq, sub, line in self._lines(thread) if sub is None]
            if not main:
                continue
            summary = fold_session_summary(None, key, main)
            summary["mtime"] = _ms(thread.entry(size - 1).time)
            summaries.append(summary)
        return summaries

    async def list_subkeys(self, key: SessionListSubkeysKey) -> list[str]:
        """The subpaths (subagent transcripts) of session ``key``, in order of first write."""
        thread = self._find(key)
        if thread is None:
            return []
        found: dict[str, None] = {}
        for _seq, subpath, _line in self._lines(thread):
            if subpath is not None:
                found.setdefault(subpath)
        return list(found)

    async def delete(self, key: SessionKey) -> None:
        """Refused: the ledger is append-only (DeleteRefusedError)."""
        raise DeleteRefusedError(
            f"session {key['session_id']!r} is on a signed append-only ledger; nothing is "
            "deleted from it"
        ).with_hint("leave delete unconfigured: the SDK then treats deleting as a no-op")


def _is_boundary(line: Mapping[str, Any]) -> bool:
    return line.get("type") == "system" and line.get("subtype") == "compact_boundary"


@dataclass
class _Tail:
    """One transcript's state: the uuids it holds, and the seqs of its first and last lines
    since its last ``compact_boundary`` (None: no line since)."""

    uuids: set[str] = field(default_factory=set)
    span: tuple[int, int] | None = None

    def add(self, seq: int, line: Mapping[str, Any]) -> None:
        if isinstance(line.get("uuid"), str):
            self.uuids.add(line["uuid"])
        if _is_boundary(line):
            self.span = None
        else:
            self.span = (seq, seq) if self.span is None else (self.span[0], seq)

    @classmethod
    def copy_of(cls, tail: _Tail | None) -> _Tail:
        return cls() if tail is None else cls(set(tail.uuids), tail.span)


@dataclass
class _Known:
    """What a store has read of one thread: its first ``size`` entries, as ``tails``."""

    size: int = 0
    tails: dict[str | None, _Tail] = field(default_factory=dict)


HookCallback = Callable[[Any, str | None, Any], Awaitable[dict[str, Any]]]


def precompact_hook(thread: Thread, *, budget: int | None = None) -> HookCallback:
    """A ``PreCompact`` hook that appends to ``thread``, before Claude Code compacts, a
    ``compaction.imported`` event (``event: "pre_compact"``) with the SHA-256 of the thread's
    projection at ``budget`` (RFC 8785 bytes of ``projection.to_json()``, lifecycle block
    included) and the ids of its live pins. Other hook events are let through untouched."""

    async def hook(hook_input: Any, _tool_use_id: str | None, _context: Any) -> dict[str, Any]:
        if hook_input.get("hook_event_name") != "PreCompact":
            return {}
        body: dict[str, Any] = {
            "framework": FRAMEWORK,
            "session": str(hook_input["session_id"])[:256],
            "event": "pre_compact",
        }
        if isinstance(hook_input.get("trigger"), str):
            body["trigger"] = hook_input["trigger"]
        if thread.head().size:
            projection = thread.project(budget=budget, lifecycle_block=True)
            digest = hashlib.sha256(canonical_bytes(projection.to_json())).hexdigest()
            body["context_sha256"] = digest
        body["pins"] = [pin.id for pin in thread.pins(live=True)]
        thread.append(COMPACTION_IMPORTED, body, _ACTOR)
        return {}

    return hook
