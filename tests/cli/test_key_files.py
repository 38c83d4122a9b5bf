"""Issue 14, keys: nothing signs with a key the operator did not choose. Each attack on the
operator key file ends in one line, exit 2, and an unchanged database."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from sqlalchemy import text

from registre.attest.notes import Signer
from registre.ledger.store.engine import make_engine
from tests.cli.conftest import Run, error_and_hint

KEY = Path(".registre/operator.key")
TURN = '{"role":"user","text":"four"}'


def _keys(db_url: str) -> list[str]:
    engine = make_engine(db_url)
    try:
        with engine.connect() as conn:
            return [str(v) for v in conn.execute(text("SELECT vkey FROM public_key")).scalars()]
    finally:
        engine.dispose()


def _size(run: Run) -> str:
    result = run("thread", "show", "t1")
    assert result.code == 0, result.err
    return result.out


def test_key_file_bit_flip_fail(initialised: str, run: Run) -> None:
    before = _size(run)
    original = KEY.read_bytes()
    data = bytearray(original)
    index = original.index(b"\n-----END") - 10  # a base64 character of the seed
    data[index] = ord("A") if data[index] != ord("A") else ord("B")  # still valid base64
    KEY.write_bytes(bytes(data))
    line, _hint = error_and_hint(run("append", "t1", "--kind", "turn", "--body", TURN))
    assert "does not give the verifier key it states" in line
    KEY.write_bytes(original)
    assert _size(run) == before


@pytest.mark.parametrize("mode", [0o644, 0o666])
def test_key_file_readable_by_others_fail(initialised: str, run: Run, mode: int) -> None:
    before = _size(run)
    KEY.chmod(mode)
    line, hint = error_and_hint(run("append", "t1", "--kind", "turn", "--body", TURN))
    assert f"mode {mode:04o}" in line
    assert hint == f"registre: hint: chmod 600 {KEY}"
    KEY.chmod(0o600)
    assert _size(run) == before


def test_encrypted_key_without_passphrase_fail(
    workdir: Path, db_url: str, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REGISTRE_DB", db_url)
    monkeypatch.setenv("REGISTRE_KEY_PASSPHRASE", "correct horse")
    assert run("init").code == 0
    assert run("thread", "create", "t1").code == 0
    monkeypatch.delenv("REGISTRE_KEY_PASSPHRASE")
    assert run("log", "t1").code == 0  # reads need no passphrase
    line, hint = error_and_hint(run("append", "t1", "--kind", "turn", "--body", TURN))
    assert "REGISTRE_KEY_PASSPHRASE" in line and hint is not None
    assert "REGISTRE_KEY_PASSPHRASE" in hint


def test_any_key_file_stored_for_ever_fail(initialised: str, db_url: str, run: Run) -> None:
    stranger = Signer.generate("stranger.example/log")
    stranger.save("stranger.key")
    assert run("log", "t1", "--key-file", "stranger.key").code == 0
    result = run("append", "t1", "--kind", "turn", "--body", TURN, "--key-file", "stranger.key")
    error_and_hint(result)
    assert _keys(db_url) == [initialised]


def test_second_key_with_the_same_name_fail(initialised: str, db_url: str, run: Run) -> None:
    """`registre init` after the key file was lost makes a new key with the same log name:
    it cannot append to, or checkpoint, the threads of the old one."""
    before = _size(run)
    shutil.move(str(KEY), "lost.key")
    assert run("init").code == 0  # a new key, same default name
    line, _hint = error_and_hint(run("append", "t1", "--kind", "turn", "--body", TURN))
    assert "bound to the key" in line
    error_and_hint(run("checkpoint", "t1"))
    assert _size(run) == before
    assert _keys(db_url) == [initialised]


def test_first_format_key_file_is_upgraded(initialised: str, run: Run) -> None:
    lines = KEY.read_text().split("\n")
    KEY.write_text("\n".join(lines[:2] + lines[3:]))  # as registre wrote it before
    result = run("append", "t1", "--kind", "turn", "--body", TURN)
    assert result.code == 0, result.err
    assert result.err.startswith("registre: warning: ") and "key upgrade" in result.err
    upgraded = run("key", "upgrade")
    assert upgraded.code == 0 and initialised in upgraded.out
    assert KEY.stat().st_mode & 0o777 == 0o600
    again = run("append", "t1", "--kind", "turn", "--body", TURN)
    assert again.code == 0 and again.err == ""
    assert run("key", "show").out.strip() == initialised
