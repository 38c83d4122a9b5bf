"""CLI fixtures: run `registre` in-process through `registre.cli.main`, as the console script
does, so exit codes and one-line errors are the real ones."""

from __future__ import annotations

import io
import sys
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import pytest

from registre.cli import main
from tests.db_fixtures import db_url, ledger, signer, thread  # noqa: F401  (shared fixtures)


@dataclass
class Result:
    code: int
    out: str
    err: str


Run = Callable[..., Result]


@pytest.fixture
def run(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> Run:
    """``run("append", "t1", ..., stdin=b"...")`` -> Result(code, out, err)."""

    def invoke(*args: str, stdin: bytes = b"") -> Result:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(stdin)))
        capsys.readouterr()
        try:
            main(list(args))
            code = 0
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else 1
        captured = capsys.readouterr()
        return Result(code, captured.out, captured.err)

    return invoke


@pytest.fixture
def workdir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A clean current directory with no registre environment variables."""
    monkeypatch.chdir(tmp_path)
    for name in ("REGISTRE_DB", "REGISTRE_KEY", "REGISTRE_KEY_PASSPHRASE"):
        monkeypatch.delenv(name, raising=False)
    return tmp_path


@pytest.fixture
def initialised(workdir: Path, db_url: str, run: Run, monkeypatch: pytest.MonkeyPatch) -> str:  # noqa: F811
    """A ledger on each engine (REGISTRE_DB), with an operator key and thread t1 holding
    three turns; returns the verifier key."""
    monkeypatch.setenv("REGISTRE_DB", db_url)
    result = run("init")
    assert result.code == 0, result.err
    assert run("thread", "create", "t1").code == 0
    for text in ("one", "two", "three"):
        body = '{"role":"user","text":"' + text + '"}'
        assert run("append", "t1", "--kind", "turn", "--body", body).code == 0
    return result.out.strip().rsplit(" ", 1)[1]


def error_and_hint(result: Result, code: int = 2) -> tuple[str, str | None]:
    """Assert the failure shape every command promises -- the exit code, no traceback, one
    ``registre: error:`` line, then at most one ``registre: hint:`` line -- and return both
    lines (the hint line is None when the error has no hint)."""
    assert result.code == code, (result.out, result.err)
    assert "Traceback" not in result.err
    assert result.err.endswith("\n"), result.err
    lines = result.err[:-1].split("\n")
    assert 1 <= len(lines) <= 2 and lines[0].startswith("registre: error: "), result.err
    if len(lines) == 1:
        return lines[0], None
    assert lines[1].startswith("registre: hint: ") and lines[1] != "registre: hint: ", result.err
    return lines[0], lines[1]


def one_line_error(result: Result, code: int = 2) -> str:
    """Assert the failure shape (see :func:`error_and_hint`); return the error line."""
    return error_and_hint(result, code)[0]
