"""Numbers and places a command must bound or refuse before it does anything: timeouts,
sizes that would run for ever or exhaust memory, and databases a demo or benchmark would
damage. Each is one error line, exit 2, and nothing written."""

from __future__ import annotations

import sqlite3
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
