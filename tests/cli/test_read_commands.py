"""`registre thread`, `log`, `checkpoint`: reading a ledger from the command line."""

from __future__ import annotations

import json
from pathlib import Path

from registre.attest.notes import Verifier, open_checkpoint
from tests.cli.conftest import Run, one_line_error


def test_thread_create_list_show(initialised: str, run: Run) -> None:
    assert run("thread", "create", "t2").out.strip() == "registre.local/log/t2"
    lines = run("thread", "list").out.splitlines()
    assert lines == ["t1\t3\tregistre.local/log/t1", "t2\t0\tregistre.local/log/t2"]
    shown = run("thread", "show", "t1").out
    assert "size: 3" in shown and "checkpoint: none" in shown
    assert "already exists" in one_line_error(run("thread", "create", "t1"))
    assert "not allowed" in one_line_error(run("thread", "create", "a/b"))
    one_line_error(run("thread", "show", "t9"))


def test_log_human_and_json(initialised: str, run: Run) -> None:
    lines = run("log", "t1").out.splitlines()
    assert [line.split("\t")[0] for line in lines] == ["0", "1", "2"]
    assert lines[1].split("\t")[2:] == ["turn", "operator", "user: two"]
    leaves = run("log", "t1", "--from", "1", "--to", "2", "--json").out.splitlines()
    assert [json.loads(leaf)["entry"]["seq"] for leaf in leaves] == [1, 2]


def test_log_bad_range_fail(initialised: str, run: Run) -> None:
    one_line_error(run("log", "t1", "--to", "3"))
    one_line_error(run("log", "t1", "--from", "-1"))
    one_line_error(run("log", "t1", "--from", "abc"))
    one_line_error(run("log", "nope"))


def test_checkpoint_prints_signed_note(initialised: str, run: Run) -> None:
    note = run("checkpoint", "t1").out
    opened = open_checkpoint(note, Verifier.from_vkey(initialised), origin="registre.local/log/t1")
    assert opened.checkpoint.size == 3
    assert run("checkpoint", "t1").out == note
    assert "size 3" in run("thread", "show", "t1").out
    older = run("checkpoint", "t1", "--size", "1").out
    assert open_checkpoint(older, Verifier.from_vkey(initialised)).checkpoint.size == 1
    one_line_error(run("checkpoint", "t1", "--size", "4"))


def test_checkpoint_without_key_fail(initialised: str, run: Run) -> None:
    one_line_error(run("checkpoint", "t1", "--key-file", "absent.key"))


def test_log_shows_the_text_first_and_cuts_only_past_the_width(
    initialised: str, run: Run, workdir: Path
) -> None:
    """An imported turn's line is its text, not its source metadata; a long text is whole
    up to --width (2,000 by default), then cut saying how much more there is."""
    text = "The Q3 ECL by segment: " + "Offices 12.4m, Retail 41.2m; " * 20
    line = json.dumps({"role": "user", "content": f"{text}\nSecond line."})
    (workdir / "chat.jsonl").write_text(line + "\n")
    assert run("import", "t1", "chat.jsonl", "--quiet").code == 0
    whole = f"user: {text.strip()} ⏎ Second line."
    (shown,) = run("log", "t1", "--tail", "1").out.splitlines()
    assert shown.split("\t")[4] == whole
    (cut,) = run("log", "t1", "--tail", "1", "--width", "40").out.splitlines()
    more = len(whole) - 40
    assert cut.split("\t")[4] == f"{whole[:40]}… (+{more:,} characters; --width 0 shows all)"


def test_transcript_defaults_to_the_chat_view(initialised: str, run: Run) -> None:
    result = run("transcript", "t1")
    assert result.code == 0, result.err
    lines = result.out.splitlines()
    assert lines[0] == "Transcript of thread t1 (origin registre.local/log/t1, 3 entries)"
    assert lines[2].startswith("#0 user  (operator, ") and lines[3] == "    one"
