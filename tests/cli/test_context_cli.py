"""CLI: `registre context`, `context diff`, `compact`, `pin`, `unpin`, `expand`, `transcript`.
Bad input is one line, exit 2, nothing written. Both engines."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from registre.attest.notes import Verifier, open_checkpoint
from registre.attest.tree import verify_inclusion
from registre.ledger.exchange.proof_text import parse_inclusion_proof
from registre.ledger.ledger import Ledger
from tests.cli.conftest import Run, one_line_error

POLICY = json.dumps(
    {
        "budget_tokens": 1,
        "high_water_permille": 800,
        "low_water_permille": 500,
        "keep_recent_turns": 1,
        "bulky_tool_output_tokens": 60,
        "summary_share_permille": 400,
    }
)


def head(db_url: str) -> tuple[int, bytes]:
    with Ledger.open(db_url, create=False) as ledger:
        found = ledger.thread("t1").head()
    return found.size, found.root


def grow(run: Run, steps: int = 8) -> None:
    """Tool calls with bulky results and the assistant's notes after the three turns."""
    for number in range(steps):
        call = {"call_id": f"c{number}", "name": "bash", "arguments": {"cmd": f"ls {number}"}}
        result = {"call_id": f"c{number}", "content": "".join(f"m{i}.py\n" for i in range(25))}
        note = {"role": "assistant", "text": f"Step {number}: nothing there."}
        for kind, body in (("tool.call", call), ("tool.result", result), ("turn", note)):
            assert run("append", "t1", "--kind", kind, "--body", json.dumps(body)).code == 0


def compacted(run: Run) -> str:
    grow(run)
    result = run("compact", "t1", "--budget", "400", "--policy", POLICY)
    assert result.code == 0, result.err
    return result.out


# --- context -------------------------------------------------------------------------------------


def test_context_prints_the_messages_and_digest(initialised: str, run: Run) -> None:
    result = run("context", "t1")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0].startswith("context of t1 after seq 2: 3 messages, ")
    assert lines[1].startswith("projection sha256 ")
    assert lines[2:] == ["[0] user: one", "[1] user: two", "[2] user: three"]
    assert run("context", "show", "t1", "--at", "0").out.splitlines()[2:] == ["[0] user: one"]


def test_context_json_is_the_projection_with_its_digest(initialised: str, run: Run) -> None:
    data = json.loads(run("context", "t1", "--json", "--budget", "500").out)
    projection = data["projection"]
    assert projection["format"] == "registre.projection/1" and projection["at"] == 2
    assert projection["budget_tokens"] == 500
    assert [m["content"] for m in projection["messages"]] == ["one", "two", "three"]
    assert len(data["projection_sha256"]) == 64


@pytest.mark.parametrize(
    ("args", "words"),
    [
        (("context", "t1", "--budget", "5"), "over the budget"),
        (("context", "t1", "--at", "3"), "is not one of them"),
        (("context", "t1", "--budget", "0"), "--budget"),
        (("context", "nope"), "no thread"),
        (("context", "diff", "t1"), "--at"),
    ],
)
def test_context_bad_input_is_one_line(
    initialised: str, run: Run, args: tuple[str, ...], words: str
) -> None:
    assert words in one_line_error(run(*args))


def test_context_diff_names_what_was_folded(initialised: str, run: Run) -> None:
    compacted(run)
    result = run("context", "diff", "t1", "--at", str(head_size(run)))
    assert result.code == 0, result.err
    assert "summarized (seen only as a summary line)" in result.out
    assert "compaction " in result.out and " line 0: " in result.out
    data = json.loads(run("context", "diff", "t1", "--at", str(head_size(run)), "--json").out)
    assert data["summarized"] and data["records"] == 1
    first = data["summarized"][0]
    assert first["from"] > 0 and first["text"]  # entry 0, the task, is pinned, not summarized


def head_size(run: Run) -> int:
    return int(run("context", "t1").out.split(" after seq ")[1].split(":")[0])


# --- compact -------------------------------------------------------------------------------------


def test_compact_records_one_entry_when_due(initialised: str, db_url: str, run: Run) -> None:
    assert run("compact", "t1", "--budget", "5000").out.startswith("nothing to fold: ")
    size, _root = head(db_url)
    pin, compaction = compacted(run).splitlines()
    assert pin == f"seq {size + 24}\tpin\tpin-1 task_parameter of entry 0"
    assert compaction.startswith(f"seq {size + 25}\tcompaction\tfolded 0-")
    assert "tokens " in compaction
    assert run("verify", "--db").code == 0
    context = run("context", "t1").out
    assert "[pinned task_parameter pin-1] " in context and "task: " not in context


def test_compact_no_task_pin_leaves_the_task_to_the_summary(
    initialised: str, db_url: str, run: Run
) -> None:
    size, _root = head(db_url)
    grow(run)
    result = run("compact", "t1", "--budget", "400", "--policy", POLICY, "--no-task-pin")
    assert result.code == 0, result.err
    assert result.out.startswith(f"seq {size + 24}\tcompaction\tfolded 0-")
    assert "[pinned task_parameter" not in run("context", "t1").out


def test_compact_over_budget_writes_nothing(initialised: str, db_url: str, run: Run) -> None:
    grow(run, 3)
    before = head(db_url)
    assert "over the budget" in one_line_error(run("compact", "t1", "--budget", "60"))
    assert head(db_url) == before


def test_compact_bad_policy_is_one_line(initialised: str, db_url: str, run: Run) -> None:
    before = head(db_url)
    message = one_line_error(run("compact", "t1", "--budget", "60", "--policy", '{"x": 1}'))
    assert "--policy" in message
    assert head(db_url) == before


# --- pin / unpin ---------------------------------------------------------------------------------


def test_pin_and_unpin(initialised: str, run: Run) -> None:
    result = run(
        "pin", "t1", "--kind", "task_parameter", "--text", "Do not modify tests.", "--seq", "0"
    )
    assert result.out == "seq 3\tpin-1\tpinned\n"
    assert "[pinned task_parameter pin-1] Do not modify tests." in run("context", "t1").out
    assert run("unpin", "t1", "pin-1", "--reason", "done").out == "seq 4\tpin-1\tunpinned\n"
    message = one_line_error(run("unpin", "t1", "pin-1", "--reason", "again"))
    assert "recorded as seq 5" in message


def test_pin_of_a_later_entry_writes_nothing(initialised: str, db_url: str, run: Run) -> None:
    before = head(db_url)
    one_line_error(run("pin", "t1", "--kind", "decision", "--text", "x", "--seq", "3"))
    one_line_error(run("pin", "t1", "--kind", "opinion", "--text", "x", "--seq", "0"))
    assert head(db_url) == before


# --- expand --------------------------------------------------------------------------------------


def test_expand_prints_the_entry_and_a_proof_that_verifies(
    initialised: str, db_url: str, run: Run
) -> None:
    assert run("checkpoint", "t1").code == 0  # expand reads the stored checkpoint
    result = run("expand", "t1", "1")
    assert result.code == 0, result.err
    leaf, proof_text = result.out.split("\n", 1)
    assert json.loads(leaf)["entry"]["body"] == {"role": "user", "text": "two"}
    proof = parse_inclusion_proof(proof_text)
    checkpoint = open_checkpoint(proof.checkpoint, Verifier.from_vkey(initialised)).checkpoint
    with Ledger.open(db_url, create=False) as ledger:
        leaf_hash = ledger.thread("t1").entry(1).leaf_hash
    verify_inclusion(leaf_hash, 1, checkpoint.size, proof.hashes, checkpoint.root)
    assert proof.number == 1 and checkpoint.size == 3
    assert "is not in 0..3" in one_line_error(run("expand", "t1", "1", "--size", "9"))
    assert "no entry 5" in one_line_error(run("expand", "t1", "5"))


# --- transcript ----------------------------------------------------------------------------------


def test_transcript_html_escapes_entry_text(initialised: str, run: Run, workdir: Path) -> None:
    body = json.dumps({"role": "user", "text": 'Run <script>alert("x")</script> & see'})
    assert run("append", "t1", "--kind", "turn", "--body", body).code == 0
    run("pin", "t1", "--kind", "decision", "--text", "<b>bold</b>", "--seq", "3")
    compacted(run)
    result = run("transcript", "t1", "--format", "html", "-o", "out.html")
    assert result.code == 0, result.err
    page = (workdir / "out.html").read_text()
    assert "<script>" not in page and "<b>bold" not in page
    assert "&lt;script&gt;alert(&quot;x&quot;)&lt;/script&gt; &amp; see" in page
    assert 'class="entry compaction"' in page and 'class="entry pin"' in page
    assert page.count('class="entry ') == head_size(run) + 1


def test_transcript_shows_evidence_transitions(initialised: str, run: Run) -> None:
    sha = "a" * 64
    ref = ("--ref", "r1", "--source", "report.pdf", "--location", "p. 4", "--sha256", sha)
    assert run("source", "read", "t1", *ref).code == 0
    statements = '[{"text": "Revenue was 4.2m.", "cites": ["r1"]}, {"text": "x", "cites": []}]'
    run("evidence", "upsert", "t1", "--body", statements)
    assert run("evidence", "revise", "t1", "ev-1", "--retract").code == 0
    page = run("transcript", "t1", "--format", "html").out
    assert page.count('class="entry evidence"') == 2
    assert page.count('class="entry evidence refused"') == 1  # one statement rejected
    assert "r1 (report.pdf, p. 4): registered" in page
    assert "ev-1 admitted: Revenue was 4.2m. (cites r1)" in page
    assert "rejected (no_citation: " in page and "#5 ev-1 retracted" in page


def test_context_with_a_budget_ends_with_the_lifecycle_block(initialised: str, run: Run) -> None:
    ref = ("--ref", "r1", "--source", "report.pdf", "--location", "p. 4", "--sha256", "a" * 64)
    assert run("source", "read", "t1", *ref).code == 0
    statements = '[{"text": "Revenue was 4.2m.", "cites": ["r1"]}]'
    assert run("evidence", "upsert", "t1", "--body", statements).code == 0
    shown = run("context", "t1", "--budget", "4000").out
    assert "[lifecycle at entry" in shown and "- ev-1: Revenue was 4.2m." in shown
    plain = run("context", "t1", "--budget", "4000", "--no-lifecycle-block").out
    assert "[lifecycle at entry" not in plain and "ev-1" in plain  # the upsert, verbatim
    assert "[lifecycle at entry" not in run("context", "t1").out  # sized to itself: no room


def test_rebuild_rebuilds_the_context_snapshots(initialised: str, run: Run) -> None:
    compacted(run)
    assert "rebuilt t1: 1 context snapshot(s)" in run("rebuild").out
    assert run("verify", "--db").code == 0


def test_transcript_markdown_marks_compactions_and_pins(initialised: str, run: Run) -> None:
    run("pin", "t1", "--kind", "decision", "--text", "Use `ruff`", "--seq", "0")
    compacted(run)
    out = run("transcript", "t1", "--format", "md").out
    assert out.startswith("# Transcript of thread t1\n")
    assert "> **\\#3 pinned decision pin-1**" in out and "Use \\`ruff\\`" in out
    assert "compaction: folded entries 0-" in out and "> - " in out
    assert '```text\n{"cmd":"ls 0"}\n```' in out


def test_transcript_chat_view_is_the_default(initialised: str, run: Run) -> None:
    """Without --format: the conversation as plain text, compactions between rules, pins,
    tool calls and evidence labelled."""
    run("pin", "t1", "--kind", "decision", "--text", "Use `ruff`", "--seq", "0")
    compacted(run)
    out = run("transcript", "t1").out
    assert out == run("transcript", "t1", "--format", "chat").out
    assert out.startswith("Transcript of thread t1 (origin registre.local/log/t1, ")
    assert "\n#3 pinned decision pin-1  (operator, " in out and "\n    Use `ruff`\n" in out
    assert "\n" + "-" * 72 + "\n#" in out and "compaction: folded entries 0-" in out
    assert '\n    | {"cmd":"ls 0"}\n' in out


@pytest.mark.parametrize(
    "args",
    [
        ("transcript", "t1", "--format", "pdf", "-o", "out.x"),
        ("transcript", "t9", "--format", "md", "-o", "out.x"),
    ],
)
def test_transcript_bad_input_writes_nothing(
    initialised: str, run: Run, workdir: Path, args: tuple[str, ...]
) -> None:
    one_line_error(run(*args))
    assert not (workdir / "out.x").exists()
    assert not list(workdir.glob(".out.x.*"))
