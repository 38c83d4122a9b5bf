"""Input conveniences a person at a terminal relies on: ``@FILE`` and ``-`` for long texts,
``log --limit/--tail``, one-line usage errors for groups and choices, and messages that name
the option the user typed."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.cli.conftest import Run, one_line_error


def test_pin_text_from_a_file_and_from_stdin(initialised: str, run: Run, workdir: Path) -> None:
    (workdir / "long.txt").write_text("a long decision\nover two lines", encoding="utf-8")
    assert run("pin", "t1", "--kind", "decision", "--text", "@long.txt", "--seq", "0").code == 0
    result = run("pin", "t1", "--kind", "decision", "--text", "-", "--seq", "1", stdin=b"piped")
    assert result.code == 0, result.err
    assert run("pin", "t1", "--kind", "decision", "--text", "@@at", "--seq", "2").code == 0
    shown = run("context", "show", "t1").out
    assert "a long decision" in shown and "piped" in shown and "@at" in shown


def test_text_file_that_cannot_be_read_names_the_option(initialised: str, run: Run) -> None:
    error = one_line_error(
        run("conclude", "t1", "--kind", "compute", "--text", "@missing.txt", "--cite", "ev-1")
    )
    assert "--text file missing.txt" in error


@pytest.mark.parametrize(
    ("command", "option"),
    [
        (("compact", "t1", "--budget", "100", "--policy", "{"), "--policy"),
        (("evidence", "revise", "t1", "ev-1", "--replacement", "{"), "--replacement"),
        (("append", "t1", "--kind", "turn", "--body", "{"), "--body"),
    ],
)
def test_json_errors_name_the_option_typed(
    initialised: str, run: Run, command: tuple[str, ...], option: str
) -> None:
    assert one_line_error(run(*command)).startswith(f"registre: error: {option} ")


def test_log_limit_and_tail(initialised: str, run: Run) -> None:
    def seqs(*args: str) -> list[int]:
        out = run("log", "t1", "--json", *args).out
        return [json.loads(line)["entry"]["seq"] for line in out.splitlines()]

    assert seqs("--tail", "2") == [1, 2]
    assert seqs("--limit", "1", "--from", "1") == [1]
    assert seqs("--limit", "0") == []
    assert seqs("--tail", "9") == [0, 1, 2]
    one_line_error(run("log", "t1", "--limit", "1", "--tail", "1"))


@pytest.mark.parametrize("group", ["evidence", "prove", "thread", "context show"])
def test_group_without_command_is_one_line(workdir: Path, run: Run, group: str) -> None:
    result = run(*group.split())
    if group == "context show":
        one_line_error(result)  # a missing THREAD argument
        return
    error = one_line_error(result)
    assert "needs a command:" in error and "Usage" not in error


def test_choice_error_is_one_line(workdir: Path, run: Run) -> None:
    error = one_line_error(run("conclude", "t1", "--kind", "nope", "--text", "x"))
    assert "'nope' is not one of 'compute', 'final'" in error


# --- --dry-run: decide and show, write nothing ----------------------------------------------


def _size(run: Run) -> int:
    return len(run("log", "t1", "--json").out.splitlines())


@pytest.mark.parametrize(
    "command",
    [
        ("evidence", "revise", "t1", "ev-99", "--retract"),
        ("conclude", "t1", "--kind", "final", "--text", "done"),
        ("unpin", "t1", "pin-99", "--reason", "typo"),
        ("pin", "t1", "--kind", "decision", "--text", " ", "--seq", "0"),
        ("evidence", "upsert", "t1", "--body", '{"statements":[{"text":"s","cites":["r9"]}]}'),
    ],
)
def test_dry_run_shows_a_refusal_and_records_nothing(
    initialised: str, run: Run, command: tuple[str, ...]
) -> None:
    before = _size(run)
    result = run(*command, "--dry-run")
    assert result.out.startswith("dry run (nothing recorded): ")
    assert "would refuse" in one_line_error(result)
    assert _size(run) == before
    assert run(*command).code == 2  # without --dry-run the refusal is recorded
    assert _size(run) == before + 1


def test_dry_run_of_an_accepted_request_records_nothing(initialised: str, run: Run) -> None:
    before = _size(run)
    result = run("pin", "t1", "--kind", "decision", "--text", "keep", "--seq", "0", "--dry-run")
    assert result.code == 0, result.err
    assert json.loads(result.out.split(": ", 1)[1])["accepted"] is True
    assert _size(run) == before
