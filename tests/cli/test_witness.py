"""`registre witness init|follow|show|serve` and the witness options of `registre checkpoint`
(the server itself is tested as a real process in tests/witness/)."""

from __future__ import annotations

import stat
from pathlib import Path

import pytest

from registre.attest.notes import Checkpoint, CosignatureSigner, CosignatureVerifier, Signer
from registre.witness.state import WitnessState
from tests.cli.conftest import Run, error_and_hint, one_line_error
from tests.witness.conftest import read_only_file

LOG = Signer.from_seed("example.org/log", bytes(range(32)))


def cosigner_key(out: str) -> str:
    return out.strip().splitlines()[-1].rsplit(" ", 1)[1]


def test_init_creates_key_and_state(workdir: Path, run: Run) -> None:
    result = run("witness", "init", "--name", "witness.example/w1")
    assert result.code == 0, result.err
    state_dir = workdir / ".registre" / "witness"
    assert stat.S_IMODE((state_dir / "witness.key").stat().st_mode) == 0o600
    verifier = CosignatureVerifier.from_vkey(cosigner_key(result.out))
    assert verifier.name == "witness.example/w1"
    loaded = CosignatureSigner.load(state_dir / "witness.key")
    assert loaded.vkey() == verifier.vkey()
    WitnessState.open(state_dir / "witness.db").close()


def test_init_twice_refused_and_key_kept(workdir: Path, run: Run) -> None:
    first = run("witness", "init")
    message, hint = error_and_hint(run("witness", "init", "--name", "other/w"))
    assert message.endswith("witness.key exists: this directory already holds a witness")
    assert hint == "registre: hint: see `registre witness show`; choose another --state-dir"
    assert f"cosigner key: {cosigner_key(first.out)}\n" in run("witness", "show").out


def test_init_bad_name_writes_nothing(workdir: Path, run: Run) -> None:
    one_line_error(run("witness", "init", "--name", "two words"))
    assert not (workdir / ".registre" / "witness").exists()


def test_commands_without_state_refused(workdir: Path, run: Run) -> None:
    for args in (["witness", "show"], ["witness", "follow", LOG.vkey()]):
        message, hint = error_and_hint(run(*args))
        key_path = Path(".registre") / "witness" / "witness.key"
        assert message == f"registre: error: no witness key at {key_path}"
        assert hint == "registre: hint: run `registre witness init` (or pass --state-dir)"


def test_follow_default_prefix_is_the_log_name(workdir: Path, run: Run) -> None:
    run("witness", "init", "--state-dir", "w")
    result = run("witness", "follow", "--state-dir", "w", LOG.vkey())
    assert result.code == 0, result.err
    assert "now follows" in result.out and "example.org/log/*" in result.out
    assert "already follows" in run("witness", "follow", "--state-dir", "w", LOG.vkey()).out
    assert (
        run("witness", "follow", "--state-dir", "w", LOG.vkey(), "--origin-prefix", "x/").code == 0
    )
    shown = run("witness", "show", "--state-dir", "w").out
    assert f"follows: {LOG.vkey()} for origins example.org/log/*" in shown
    assert f"follows: {LOG.vkey()} for origins x/*" in shown


def test_follow_refuses_witness_key_and_bad_prefix(workdir: Path, run: Run) -> None:
    run("witness", "init")
    witness_key = CosignatureSigner.from_seed("w/x", bytes(32)).vkey()
    assert "cosignature/v1" in one_line_error(run("witness", "follow", witness_key))
    one_line_error(run("witness", "follow", LOG.vkey(), "--origin-prefix", "has space/"))
    one_line_error(run("witness", "follow", "not-a-key"))


def test_follow_on_read_only_state_refused_fail(workdir: Path, run: Run) -> None:
    run("witness", "init", "--state-dir", "w")
    state = workdir / "w" / "witness.db"
    before = state.read_bytes()
    with read_only_file(state):
        message, hint = error_and_hint(run("witness", "follow", "--state-dir", "w", LOG.vkey()))
        assert message.startswith(f"registre: error: witness state {Path('w') / 'witness.db'}")
        assert "is read-only (attempt to write a readonly database)" in message
        assert hint is not None and "`registre witness show` only reads" in hint
        # reading still works, on read-only state
        shown = run("witness", "show", "--state-dir", "w")
        assert shown.code == 0 and "follows: nothing yet" in shown.out, shown.err
    assert state.read_bytes() == before


def test_state_dir_from_environment(
    workdir: Path, run: Run, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("REGISTRE_WITNESS_DIR", str(workdir / "elsewhere"))
    assert run("witness", "init").code == 0
    assert (workdir / "elsewhere" / "witness.db").exists()


def test_show_origin_prints_what_was_cosigned(workdir: Path, run: Run) -> None:
    run("witness", "init")
    state = WitnessState.open(workdir / ".registre" / "witness" / "witness.db")
    checkpoint = Checkpoint("example.org/log/t1", 3, bytes(32))
    state.advance(checkpoint, "note\n", lambda held: None, lambda: ("— w line\n", 7))
    state.close()
    shown = run("witness", "show", "--origin", "example.org/log/t1").out
    assert shown == "# size 3, cosigned at 7\nnote\n— w line\n"
    assert "origin example.org/log/t1: size 3" in run("witness", "show").out


def test_serve_bad_listen_refused(workdir: Path, run: Run) -> None:
    run("witness", "init")
    for value in ("7380", "host:", "127.0.0.1:99999", ":80"):
        assert "--listen" in one_line_error(run("witness", "serve", "--listen", value))


def test_checkpoint_quorum_without_witness_refused(workdir: Path, run: Run) -> None:
    message = one_line_error(run("checkpoint", "t1", "--quorum", "1"))
    assert "--quorum needs at least one --witness" in message


def test_checkpoint_bad_witness_spec_refused(workdir: Path, run: Run) -> None:
    message = one_line_error(run("checkpoint", "t1", "--witness", "http://127.0.0.1:7380"))
    assert "VKEY@URL" in message
