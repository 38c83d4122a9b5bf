"""Numbers and places a command must bound or refuse before it does anything: timeouts,
sizes that would run for ever or exhaust memory, and databases a demo or benchmark would
damage. Each is one error line, exit 2, and nothing written."""

from __future__ import annotations

import json
import os
import sqlite3
import stat
from pathlib import Path

import pytest

from tests.cli.conftest import Run, one_line_error


@pytest.mark.parametrize("value", ["inf", "-5", "0", "nan", "601"])
def test_checkpoint_timeout_out_of_range_fail(initialised: str, run: Run, value: str) -> None:
    assert "--timeout" in one_line_error(run("checkpoint", "t1", "--timeout", value))


@pytest.mark.parametrize(
    ("option", "value"),
    [("--sizes", "1e30"), ("--sizes", "1e400"), ("--sizes", "3m"), ("--budgets", "1e9")],
)
def test_bench_unbounded_sizes_fail(workdir: Path, run: Run, option: str, value: str) -> None:
    error = one_line_error(run("bench", option, value, "--out", "b"))
    assert option in error and "at most" in error
    assert not (workdir / "b").exists()


@pytest.mark.parametrize("value", ["0", "-1", "65"])
def test_bench_jobs_out_of_range_fail(workdir: Path, run: Run, value: str) -> None:
    assert "--jobs" in one_line_error(run("bench", "--jobs", value, "--out", "b"))
    assert not (workdir / "b").exists()


@pytest.mark.parametrize("value", ["18446744073709551616", "1000001"])
def test_demo_unbounded_entries_fail(workdir: Path, run: Run, value: str) -> None:
    assert "1000000" in one_line_error(run("demo", "--entries", value, "--dir", "d"))
    assert not (workdir / "d").exists()


def test_demo_never_deletes_a_database_it_did_not_write(workdir: Path, run: Run) -> None:
    assert run("init", "--db", "d/ledger.db").code == 0
    assert run("thread", "create", "mine", "--db", "d/ledger.db").code == 0
    before = (workdir / "d" / "ledger.db").read_bytes()
    error = one_line_error(run("demo", "--entries", "100", "--dir", "d"))
    assert "never deletes" in error
    assert (workdir / "d" / "ledger.db").read_bytes() == before
    assert not (workdir / "d" / "operator.vkey").exists()


def test_demo_refuses_a_file_that_is_not_a_ledger(workdir: Path, run: Run) -> None:
    (workdir / "d").mkdir()
    (workdir / "d" / "ledger.db").write_text("my notes")
    one_line_error(run("demo", "--entries", "100", "--dir", "d"))
    assert (workdir / "d" / "ledger.db").read_text() == "my notes"


def test_bench_refuses_a_database_holding_threads(workdir: Path, run: Run) -> None:
    assert run("init", "--db", "real.db").code == 0
    assert run("thread", "create", "t1", "--db", "real.db").code == 0
    dump = "\n".join(sqlite3.connect("real.db").iterdump())
    error = one_line_error(
        run("bench", "--db", "real.db", "--sizes", "100", "--budgets", "8k", "--out", "b")
    )
    assert "holds 1 thread" in error
    assert "\n".join(sqlite3.connect("real.db").iterdump()) == dump


# --- one overwrite policy for every output --------------------------------------------------


@pytest.mark.parametrize("command", [("transcript", "t1", "--format", "md"), ("export", "t1")])
def test_output_over_an_existing_file_needs_force(
    initialised: str, run: Run, workdir: Path, command: tuple[str, ...]
) -> None:
    assert run("checkpoint", "t1").code == 0
    target = workdir / "out.file"
    target.write_text("mine")
    error = one_line_error(run(*command, "-o", str(target)))
    assert "exists" in error and target.read_text() == "mine"
    assert run(*command, "-o", str(target), "--force").code == 0
    assert target.read_bytes() != b"mine"


@pytest.mark.parametrize("command", [("transcript", "t1", "--format", "md"), ("export", "t1")])
@pytest.mark.parametrize("kind", ["symlink", "fifo", "device"])
def test_output_never_replaces_anything_but_a_regular_file(
    initialised: str, run: Run, workdir: Path, command: tuple[str, ...], kind: str
) -> None:
    assert run("checkpoint", "t1").code == 0
    target = workdir / "out.file"
    if kind == "symlink":
        (workdir / "real").write_text("mine")
        target.symlink_to(workdir / "real")
    elif kind == "fifo":
        os.mkfifo(target)
    else:
        target = Path("/dev/full")
    one_line_error(run(*command, "-o", str(target), "--force"))
    if kind == "symlink":
        assert target.is_symlink() and (workdir / "real").read_text() == "mine"
    elif kind == "fifo":
        assert stat.S_ISFIFO(target.lstat().st_mode)
    else:
        assert stat.S_ISCHR(target.lstat().st_mode)


# --- stored texts cannot drive the operator's terminal --------------------------------------


def test_control_characters_are_escaped_on_a_terminal(
    initialised: str, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    from registre.cli import files

    sha = "a" * 64
    assert run("source", "read", "t1", "--ref", "r1", "--source", "doc", "--location", "p",
               "--sha256", sha).code == 0  # fmt: skip
    hostile = "ok \x1b]0;owned\x07 \x1b[2J done"
    body = json.dumps({"statements": [{"text": hostile, "cites": ["r1"]}]})
    assert run("evidence", "upsert", "t1", "--body", body).code == 0
    assert run("conclude", "t1", "--kind", "compute", "--text", hostile, "--cite", "ev-1").code == 0
    commands = [
        ("evidence", "list", "t1"),
        ("evidence", "show", "t1", "ev-1"),
        ("conclusions", "t1"),
        ("trace", "t1", "cc-1"),
        ("transcript", "t1", "--format", "md"),
    ]
    monkeypatch.setattr(files, "to_terminal", lambda: True)
    for command in commands:
        out = run(*command).out
        assert "\x1b" not in out and "\x07" not in out, command
        assert "\\x1b" in out, command
    monkeypatch.setattr(files, "to_terminal", lambda: False)
    assert "\x1b" in run("evidence", "show", "t1", "ev-1").out  # piped: verbatim
