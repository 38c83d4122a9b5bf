"""The Claude Agent SDK session store on the ledger: the SDK's own conformance suite, lines
kept exactly, Claude Code's compactions recorded as ``compaction.imported`` events, the
PreCompact hook, and an exported bundle that verifies offline. SQLite and PostgreSQL."""

from __future__ import annotations

import asyncio
import hashlib
import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from claude_agent_sdk.testing import run_session_store_conformance

from registre.adapters.claude import DeleteRefusedError, RegistreSessionStore, precompact_hook
from registre.attest.canonical_json import canonical_bytes
from registre.attest.notes import Signer
from registre.attest.verify import TrustPolicy, verify_bundle
from registre.ledger import Ledger, Thread, export_thread

KEY: Any = {"project_key": "-home-dev-shop", "session_id": "b1f0c2d4-5e6f-4a70-8b91-c2d3e4f50617"}


def test_the_sdk_conformance_suite_passes(ledger: Ledger) -> None:
    counter = itertools.count()

    def fresh() -> RegistreSessionStore:  # each contract gets threads of its own
        return RegistreSessionStore(ledger, prefix=f"conf{next(counter)}")

    asyncio.run(run_session_store_conformance(fresh, skip_optional=frozenset({"delete"})))


def test_lines_load_exactly_as_appended_and_are_signed_canonical(ledger: Ledger) -> None:
    store = RegistreSessionStore(ledger)
    line = {"uuid": "u1", "type": "assistant", "costUSD": 0.0125, "z": [1, 2.5, None], "a": "é"}
    asyncio.run(store.append(KEY, [line, {"type": "tag", "tag": "x"}]))
    assert asyncio.run(store.load(KEY)) == [line, {"type": "tag", "tag": "x"}]
    thread = ledger.thread(store.thread_id(KEY))
    first = thread.entry(0)
    assert first.kind == "transcript.entry"
    assert first.body["entry_json"] == canonical_bytes(line).decode("utf-8")
    assert first.body["session"] == KEY["session_id"]


def test_a_retried_batch_is_not_recorded_twice(ledger: Ledger) -> None:
    store = RegistreSessionStore(ledger)
    batch = [{"type": "user", "uuid": "u1"}, {"type": "assistant", "uuid": "u2"}]
    asyncio.run(store.append(KEY, batch))
    asyncio.run(store.append(KEY, [*batch, {"type": "user", "uuid": "u3"}]))
    assert [line["uuid"] for line in asyncio.run(store.load(KEY)) or []] == ["u1", "u2", "u3"]


def test_delete_is_refused_and_erases_nothing(ledger: Ledger) -> None:
    store = RegistreSessionStore(ledger)
    asyncio.run(store.append(KEY, [{"type": "user", "uuid": "u1"}]))
    with pytest.raises(DeleteRefusedError, match="append-only"):
        asyncio.run(store.delete(KEY))
    assert asyncio.run(store.load(KEY)) == [{"type": "user", "uuid": "u1"}]


def _transcript() -> list[dict[str, Any]]:
    lines: list[dict[str, Any]] = [
        {"type": "user", "uuid": f"u{n}", "message": {"role": "user", "content": f"step {n}"}}
        for n in range(3)
    ]
    lines.append(
        {
            "type": "system",
            "subtype": "compact_boundary",
            "uuid": "b1",
            "content": "Conversation compacted",
            "compactMetadata": {"trigger": "auto", "preTokens": 167204},
        }
    )
    lines.append(
        {
            "type": "user",
            "uuid": "s1",
            "isCompactSummary": True,
            "message": {"role": "user", "content": [{"type": "text", "text": "Steps 0-2 done."}]},
        }
    )
    return lines


def test_compactions_are_recorded_as_imported_events(
    ledger: Ledger, signer: Signer, tmp_path: Path
) -> None:
    store = RegistreSessionStore(ledger)
    lines = _transcript()
    asyncio.run(store.append(KEY, lines[:2]))
    asyncio.run(store.append(KEY, lines[2:]))
    thread = ledger.thread(store.thread_id(KEY))
    entries = list(thread.entries())
    assert [e.kind for e in entries] == ["transcript.entry"] * 4 + ["compaction.imported"] + [
        "transcript.entry",
        "compaction.imported",
    ]
    boundary, summary = entries[4].body, entries[6].body
    assert boundary == {
        "framework": "claude-agent-sdk",
        "session": KEY["session_id"],
        "event": "boundary",
        "trigger": "auto",
        "pre_tokens": 167204,
        "folded": {"from": 0, "to": 2},
        "uuid": "b1",
    }
    assert summary["event"] == "summary" and summary["summary"] == "Steps 0-2 done."
    assert asyncio.run(store.load(KEY)) == lines  # the events are beside the lines, not in them
    assert thread.project(budget=1000).messages == ()  # on the record, never in the context

    thread.checkpoint()
    export_thread(ledger, thread.id, tmp_path / "session.zip")
    report = verify_bundle(tmp_path / "session.zip", TrustPolicy(log_key=signer.verifier()))
    assert report.failure is None


def test_the_precompact_hook_records_the_context_digest_and_the_pins(thread: Thread) -> None:
    thread.append("turn", {"role": "user", "text": "Do not touch the tests."}, "user")
    pin = thread.pin("decision", "Do not touch the tests.", 0)
    hook = precompact_hook(thread, budget=2000)
    hook_input = {
        "hook_event_name": "PreCompact",
        "session_id": KEY["session_id"],
        "transcript_path": "/tmp/t.jsonl",
        "cwd": "/tmp",
        "trigger": "manual",
        "custom_instructions": None,
    }
    assert asyncio.run(hook(hook_input, None, None)) == {}
    recorded = thread.entry(thread.head().size - 1)
    projection = thread.project(at=recorded.seq - 1, budget=2000, lifecycle_block=True)
    digest = hashlib.sha256(canonical_bytes(projection.to_json())).hexdigest()
    assert recorded.kind == "compaction.imported"
    assert recorded.body == {
        "framework": "claude-agent-sdk",
        "session": KEY["session_id"],
        "event": "pre_compact",
        "trigger": "manual",
        "context_sha256": digest,
        "pins": [pin.id],
    }
    other = {**hook_input, "hook_event_name": "Stop"}
    size = thread.head().size
    assert asyncio.run(hook(other, None, None)) == {} and thread.head().size == size


def test_sessions_subkeys_and_summaries_read_the_record(ledger: Ledger) -> None:
    store = RegistreSessionStore(ledger)
    sub = {**KEY, "subpath": "subagents/agent-1"}
    line = {"type": "user", "uuid": "u1", "timestamp": "2026-12-01T16:00:00.000Z"}
    asyncio.run(store.append(KEY, [line]))
    asyncio.run(store.append(sub, [{"type": "user", "uuid": "v1"}]))
    (listed,) = asyncio.run(store.list_sessions(KEY["project_key"]))
    assert listed["session_id"] == KEY["session_id"] and listed["mtime"] > 1e12
    assert asyncio.run(store.list_subkeys(KEY)) == ["subagents/agent-1"]
    (summary,) = asyncio.run(store.list_session_summaries(KEY["project_key"]))
    assert summary["session_id"] == KEY["session_id"] and summary["mtime"] == listed["mtime"]
    assert json.dumps(summary["data"])  # opaque SDK state, plain JSON
