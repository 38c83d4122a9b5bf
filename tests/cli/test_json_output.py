"""`--json` on the commands that print a result: one line of JSON each, with the keys and
types specs/cli.md documents (a script relies on them, so a change here is a format change)."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

from tests.cli.conftest import Run

SHA = "a" * 64


def _one(run: Run, *args: str) -> Any:
    result = run(*args, "--json")
    assert result.code == 0, (args, result.err)
    lines = result.out.splitlines()
    assert len(lines) == 1, (args, result.out)
    return json.loads(lines[0])


def _keys(value: dict[str, Any], *names: str) -> None:
    assert list(value) == list(names), value


def _b64(value: str, size: int = 32) -> None:
    assert len(base64.b64decode(value, validate=True)) == size


def test_thread_commands_json(initialised: str, run: Run) -> None:
    created = _one(run, "thread", "create", "t2")
    _keys(created, "id", "origin")
    assert created["id"] == "t2" and created["origin"].endswith("/t2")
    listed = _one(run, "thread", "list")
    assert [row["id"] for row in listed] == ["t1", "t2"]
    _keys(listed[0], "id", "size", "origin")
    assert listed[0]["size"] == 3
    shown = _one(run, "thread", "show", "t1")
    _keys(shown, "id", "origin", "size", "root", "checkpoint")
    _b64(shown["root"])
    assert shown["checkpoint"] is None


def test_checkpoint_prove_expand_export_json(initialised: str, run: Run, workdir: Path) -> None:
    checkpoint = _one(run, "checkpoint", "t1")
    _keys(checkpoint, "thread", "size", "root", "note")
    assert checkpoint["size"] == 3 and checkpoint["note"].endswith("\n")
    inclusion = _one(run, "prove", "inclusion", "t1", "1")
    _keys(inclusion, "thread", "seq", "size", "leaf_hash", "hashes", "checkpoint")
    assert inclusion["checkpoint"] == checkpoint["note"] and len(inclusion["hashes"]) == 2
    assert run("checkpoint", "t1", "--size", "1").code == 0
    consistency = _one(run, "prove", "consistency", "t1", "1", "3")
    _keys(consistency, "thread", "old_size", "new_size", "old_root", "hashes", "checkpoint")
    expanded = _one(run, "expand", "t1", "2")
    _keys(expanded, "thread", "seq", "size", "leaf", "hashes", "checkpoint")
    assert expanded["leaf"]["entry"]["seq"] == 2
    exported = _one(run, "export", "t1", "-o", "t1.zip")
    _keys(
        exported,
        *("path", "thread", "origin", "disclosure", "tree_size", "entries", "checkpoints"),
        *("bytes", "log_key"),
    )
    assert exported["disclosure"] == "full" and exported["entries"] == 3
    assert (workdir / "t1.zip").stat().st_size == exported["bytes"]


def test_lifecycle_commands_json(initialised: str, run: Run) -> None:
    read = _one(run, "source", "read", "t1", "--ref", "r1", "--source", "doc",
                "--location", "p", "--sha256", SHA)  # fmt: skip
    assert read == {"seq": 3, "results": [{"index": 0, "accepted": True, "id": "r1"}]}
    body = '{"statements":[{"text":"s","cites":["r1"]},{"text":"t","cites":["r9"]}]}'
    result = run("evidence", "upsert", "t1", "--body", body, "--json")
    assert result.code == 2  # one statement rejected: recorded, exit 2, JSON still printed
    upsert = json.loads(result.out)
    assert upsert["results"][0] == {"index": 0, "accepted": True, "id": "ev-1"}
    assert upsert["results"][1]["accepted"] is False and upsert["results"][1]["reason"]
    conclusion = _one(run, "conclude", "t1", "--kind", "compute", "--text", "c", "--cite", "ev-1")
    assert conclusion == {"seq": 5, "id": "cc-1", "kind": "compute", "accepted": True}
    pin = _one(run, "pin", "t1", "--kind", "decision", "--text", "keep", "--seq", "0")
    assert pin == {"seq": 6, "id": "pin-1", "status": "pinned"}
    assert _one(run, "unpin", "t1", "pin-1", "--reason", "done")["status"] == "unpinned"
    revised = _one(run, "evidence", "revise", "t1", "ev-1", "--retract")
    assert revised == {"seq": 8, "id": "ev-1", "successor": None, "stale": ["cc-1"]}
    history = _one(run, "evidence", "history", "t1", "ev-1")
    assert [record["id"] for record in history] == ["ev-1"]
    assert history[0]["status"] == "retracted"


def test_import_rebuild_compact_json(initialised: str, run: Run, workdir: Path) -> None:
    lines = [json.dumps({"role": "user", "content": f"m{i}"}) for i in range(2)]
    (workdir / "t.jsonl").write_text("\n".join(lines) + "\n")
    imported = _one(run, "import", "t1", "t.jsonl", "--format", "openai")
    _keys(imported, "checked_only", "entries", "seconds", "files", "threads")
    assert imported["checked_only"] is False and imported["entries"] == 2
    assert imported["threads"] == {
        "t1": {"entries": 2, "first_seq": 3, "last_seq": 4, "created": False}
    }
    _keys(imported["files"][0], "path", "fmt", "why", "entries")
    rebuilt = _one(run, "rebuild")
    assert rebuilt == [{"thread": "t1", "size": 5, "lifecycle_entries": 0, "snapshots": 0}]
    compacted = _one(run, "compact", "t1", "--budget", "100000")
    _keys(compacted, "seq", "tokens", "high_water", "nothing_to_fold")
    assert compacted["seq"] is None


def test_init_and_verify_db_json(run: Run, workdir: Path) -> None:
    made = _one(run, "init")
    _keys(made, "ledger", "key_file", "key_created", "vkey")
    assert made["key_created"] is True and made["vkey"].startswith("registre.local/log+")
    assert _one(run, "init")["key_created"] is False
    assert run("thread", "create", "t1").code == 0
    assert run("append", "t1", "--kind", "turn", "--body", '{"role":"user","text":"hi"}').code == 0
    checked = _one(run, "verify", "--db")
    _keys(checked, "verified", "trusted", "threads")
    assert checked["verified"] is True and checked["trusted"] == "stored"
    (thread,) = checked["threads"]
    _keys(thread, "thread", "size", "root", "checkpoints")
    assert thread["thread"] == "t1" and thread["size"] == 1
    _b64(thread["root"])
