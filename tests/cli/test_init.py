"""`registre init` and `registre key show|export`."""

from __future__ import annotations

import json
import stat
from pathlib import Path

import pytest

from registre.attest.notes import Verifier
from tests.cli.conftest import Run, error_and_hint, one_line_error


def test_init_creates_database_and_private_key(workdir: Path, run: Run) -> None:
    result = run("init")
    assert result.code == 0, result.err
    key = workdir / ".registre" / "operator.key"
    assert (workdir / ".registre" / "registre.db").exists()
    assert stat.S_IMODE(key.stat().st_mode) == 0o600
    vkey = result.out.strip().splitlines()[-1].rsplit(" ", 1)[1]
    verifier = Verifier.from_vkey(vkey)
    assert verifier.name == "registre.local/log"
    assert run("key", "show").out.strip() == vkey


def test_init_again_reuses_the_key(workdir: Path, run: Run) -> None:
    first = run("init", "--name", "example.org/agents").out
    second = run("init")
    assert second.code == 0 and "existing" in second.out
    assert first.splitlines()[-1] == second.out.splitlines()[-1]


def test_init_with_other_name_for_existing_key_refused(workdir: Path, run: Run) -> None:
    run("init")
    message, hint = error_and_hint(run("init", "--name", "other.example/log"))
    assert message == (
        f"registre: error: the key at {Path('.registre/operator.key')} is named "
        "'registre.local/log', not 'other.example/log'; a log keeps its name"
    )
    assert hint == "registre: hint: drop --name, or use another --key-file"


def test_init_with_bad_name_writes_nothing(workdir: Path, run: Run) -> None:
    one_line_error(run("init", "--name", "has space"))
    assert not (workdir / ".registre").exists()


def test_init_with_db_and_key_file_options(workdir: Path, run: Run) -> None:
    result = run("init", "--db", str(workdir / "elsewhere.db"), "--key-file", "k.key")
    assert result.code == 0, result.err
    assert (workdir / "elsewhere.db").exists() and (workdir / "k.key").exists()
    assert run("key", "show", "--key-file", "k.key").code == 0
    message, hint = error_and_hint(run("key", "show"))  # the default key file does not exist
    assert message == f"registre: error: no operator key at {Path('.registre/operator.key')}"
    assert hint == "registre: hint: run `registre init`, or pass --key-file (env REGISTRE_KEY)"


def test_key_export_json_and_file(workdir: Path, run: Run) -> None:
    run("init")
    vkey = run("key", "show").out.strip()
    document = json.loads(run("key", "export", "--format", "json").out)
    assert document["vkey"] == vkey and document["algorithm"] == "ed25519"
    assert Verifier.from_vkey(vkey).key_id.hex() == document["key_id"]
    assert run("key", "export", "-o", "operator.vkey").code == 0
    assert (workdir / "operator.vkey").read_text() == vkey + "\n"
    one_line_error(run("key", "export", "-o", "operator.vkey"))  # never overwritten


def test_key_passphrase_from_environment(
    workdir: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REGISTRE_KEY_PASSPHRASE", "correct horse")
    assert run("init").code == 0
    assert b"ENCRYPTED" in (workdir / ".registre" / "operator.key").read_bytes()
    assert run("key", "show").code == 0
    monkeypatch.setenv("REGISTRE_KEY_PASSPHRASE", "wrong")
    one_line_error(run("key", "show"))
