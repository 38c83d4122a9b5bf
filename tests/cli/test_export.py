"""`registre export` and `registre verify FILE.zip`: the operator exports, the regulator
verifies with the pinned key; output and exit codes are those of `python -m registre.attest verify`;
bad input is one line, exit 2, and no file."""

from __future__ import annotations

import errno
import json
import os
from pathlib import Path

import pytest

from registre.attest.__main__ import main as attest_main
from registre.attest.bundles import read_bundle
from registre.attest.notes import CosignatureSigner, Signer
from registre.ledger.ledger import Ledger
from tests.bundles import members, rezip
from tests.cli.conftest import Run, error_and_hint, one_line_error
from tests.cli.test_conclusions import concluded  # noqa: F401  (fixture)

WITNESS = CosignatureSigner.from_seed("witness.test/w1", bytes([1]) * 32)
CHAIN_OF_CC2 = [3, 4, 5, 6, 7, 8]
"""The `concluded` thread: turns 0-2, r1 (3), r2 (4), ev-1 and ev-2 (5), compute cc-1 (6),
final cc-2 (7), ev-2 superseded by ev-3 (8). cc-2's chain is all but the turns."""


def seqs(bundle: Path) -> list[int]:
    return [json.loads(leaf)["entry"]["seq"] for leaf in read_bundle(bundle).leaves]


def attest_run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    capsys.readouterr()
    try:
        attest_main(args)
        code = 0
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture
def exported(initialised: str, run: Run, workdir: Path) -> Path:
    """t1 (three turns) checkpointed and exported to t1.zip."""
    assert run("checkpoint", "t1").code == 0
    result = run("export", "t1", "-o", "t1.zip")
    assert result.code == 0, result.err
    return workdir / "t1.zip"


# --- export ----------------------------------------------------------------------------


def test_export_then_verify(exported: Path, initialised: str, run: Run) -> None:
    result = run("export", "t1", "-o", "again.zip")
    assert result.out == (
        f"exported full bundle of thread t1: 3 entries, checkpoint 3 (+0 earlier), "
        f"{Path('again.zip').stat().st_size} bytes -> again.zip\n"
        f"verify with: registre verify again.zip --key {initialised}\n"
    )
    result = run("verify", str(exported), "--key", initialised)
    assert (result.code, result.err) == (0, "")
    assert result.out.startswith(
        "registre bundle verification: VERIFIED; not checked: witnesses, rollback\n"
    )
    assert "origin: registre.local/log/t1 (full bundle, 3 entries, tree size 3" in result.out


def test_export_claim_then_verify(concluded: str, run: Run, workdir: Path) -> None:  # noqa: F811
    assert run("checkpoint", "t1").code == 0
    result = run("export", "t1", "--claim", "cc-2", "-o", "cc-2.zip")
    assert result.code == 0, result.err
    assert result.out.startswith(
        "exported claim cc-2 of thread t1: 6 of 9 entries disclosed, checkpoint 9"
    )
    assert seqs(workdir / "cc-2.zip") == CHAIN_OF_CC2
    result = run("verify", "cc-2.zip", "--key", concluded, "--json")
    report = json.loads(result.out)
    assert result.code == 0 and report["verified"] and report["disclosure"] == "partial"
    assert report["steps"][6]["checked"] == [
        "2 conclusions (1 final) resolve to 2 source passages registered by 2 source.read "
        "entries in the bundle",
        "stale or inactive at size 9: cc-1 stale, final cc-2 stale, ev-2 superseded by ev-3",
    ]
    # the final it proves is stale at the checkpoint: verified, but not a plain "passed"
    assert report["steps"][6]["status"] == "stale"
    assert report["stale_finals"] == ["final cc-2 stale"]
    assert "STALE (at the checkpoint: final cc-2 stale)" in report["result"]


def test_export_at_checkpoint(initialised: str, run: Run, workdir: Path) -> None:
    assert run("checkpoint", "t1", "--size", "2").code == 0
    body = '{"role":"user","text":"four"}'
    assert run("append", "t1", "--kind", "turn", "--body", body).code == 0
    assert run("export", "t1", "--checkpoint", "2", "-o", "t1-2.zip").code == 0
    assert seqs(workdir / "t1-2.zip") == [0, 1]
    assert run("verify", "t1-2.zip", "--key", initialised).code == 0


def test_export_without_covering_checkpoint_fail(initialised: str, run: Run, workdir: Path) -> None:
    message, hint = error_and_hint(run("export", "t1", "-o", "t1.zip"))
    assert message == "registre: error: thread t1 has no signed checkpoint to export against"
    assert hint == (
        "registre: hint: run `registre checkpoint t1` (needs the operator key), then export"
    )
    assert run("checkpoint", "t1", "--size", "2").code == 0
    message, hint = error_and_hint(run("export", "t1", "-o", "t1.zip"))
    assert message.endswith("has 3 entries but its latest signed checkpoint covers 2")
    assert hint == (
        "registre: hint: run `registre checkpoint t1` to sign the head, "
        "or pass --checkpoint 2 to export the first 2"
    )
    one_line_error(run("export", "t1", "--checkpoint", "1", "-o", "t1.zip"))
    assert not (workdir / "t1.zip").exists()


def test_export_unknown_thread_or_claim_fail(exported: Path, run: Run, workdir: Path) -> None:
    assert "no thread 't9'" in one_line_error(run("export", "t9", "-o", "t9.zip"))
    assert "no conclusion 'cc-1'" in one_line_error(
        run("export", "t1", "--claim", "cc-1", "-o", "cc-1.zip")
    )
    assert sorted(p.name for p in workdir.iterdir() if p.suffix == ".zip") == ["t1.zip"]


def test_export_keeps_existing_file_unless_force(exported: Path, run: Run) -> None:
    exported.write_bytes(b"keep me")
    assert "exists" in one_line_error(run("export", "t1", "-o", str(exported)))
    assert exported.read_bytes() == b"keep me"
    assert run("export", "t1", "-o", str(exported), "--force").code == 0
    assert read_bundle(exported).manifest.entry_count == 3


def test_export_into_missing_folder_fail(exported: Path, run: Run, workdir: Path) -> None:
    one_line_error(run("export", "t1", "-o", "absent/t1.zip"))
    assert not (workdir / "absent").exists()


def test_export_needs_output(exported: Path, run: Run) -> None:
    assert "-o" in one_line_error(run("export", "t1"))


# --- verify FILE.zip -------------------------------------------------------------------


def test_same_report_as_attest_verify(
    exported: Path, initialised: str, run: Run, capsys: pytest.CaptureFixture[str]
) -> None:
    for extra in ([], ["--json"], ["--jobs", "2"]):
        args = ["verify", str(exported), "--key", initialised, *extra]
        assert attest_run(args, capsys) == (0, run(*args).out, "")


def test_key_file_state_and_witnesses(
    exported: Path, initialised: str, run: Run, workdir: Path, db_url: str
) -> None:
    (workdir / "log.vkey").write_text(initialised + "\n")
    args = ["verify", str(exported), "--key-file", "log.vkey", "--state", "state.json"]
    assert run(*args).code == 0
    logs = json.loads((workdir / "state.json").read_text())["logs"]
    assert logs[initialised]["registre.local/log/t1"]["size"] == 3
    # a cosigned checkpoint: the witness quorum is checked from the bundle's note
    with Ledger.open(db_url) as ledger:
        thread = ledger.thread("t1")
        note = thread.checkpoint().note
        thread.add_cosignatures(3, [WITNESS.cosign(note[: note.index("\n\n") + 1], 1_800_000)])
    assert run("export", "t1", "-o", "cosigned.zip").code == 0
    result = run("verify", "cosigned.zip", "--key", initialised, "--witness", WITNESS.vkey())
    assert result.code == 0 and "head cosigned by 1 pinned witness, quorum 1" in result.out
    other = CosignatureSigner.from_seed("witness.test/w2", bytes([2]) * 32).vkey()
    result = run("verify", str(exported), "--key", initialised, "--witness", other)
    assert "QuorumNotMetError" in one_line_error(result, code=1)


def test_tampered_bundle_fail(exported: Path, initialised: str, run: Run) -> None:
    """A flipped byte in entry 1, the manifest fixed to match: the report is printed, then
    the first failure as one line, exit 1."""
    data = exported.read_bytes()
    lines = members(data)["entries.jsonl"].split(b"\n")
    lines[1] = lines[1].replace(b'"two"', b'"tw0"')
    exported.write_bytes(rezip(data, {"entries.jsonl": b"\n".join(lines)}))
    result = run("verify", str(exported), "--key", initialised)
    message = one_line_error(result, code=1)
    assert message.startswith("registre: error: step 3 (entries), seq 1: EntrySignatureError: ")
    assert result.out.startswith(
        "registre bundle verification: NOT VERIFIED (step 3: EntrySignatureError, seq 1); "
        "not checked: witnesses; not run: tree, history, semantics, claims\n"
    )
    assert "first failure: step 3 (entries), seq 1: EntrySignatureError" in result.out


def test_other_key_fail(exported: Path, run: Run) -> None:
    other = Signer.generate("registre.local/log").vkey()
    assert "step 2 (checkpoints)" in one_line_error(run("verify", str(exported), "--key", other), 1)


def test_unusable_input_fail(exported: Path, initialised: str, run: Run, workdir: Path) -> None:
    (workdir / "not.zip").write_bytes(b"not a zip")
    one_line_error(run("verify", "not.zip", "--key", initialised))
    one_line_error(run("verify", "absent.zip", "--key", initialised))
    one_line_error(run("verify", str(exported), "--key", "not-a-key"))
    assert "--key" in one_line_error(run("verify", str(exported)))


def test_bundle_and_database_options_do_not_mix(exported: Path, initialised: str, run: Run) -> None:
    assert "not both" in one_line_error(run("verify", str(exported), "--db", "--key", initialised))
    assert "not both" in one_line_error(
        run("verify", str(exported), "--key", initialised, "--vkey", initialised)
    )
    assert "--key applies to a bundle" in one_line_error(
        run("verify", "--db", "--key", initialised)
    )
    assert "--require-full applies to a bundle" in one_line_error(
        run("verify", "--db", "--require-full")
    )
    assert "--max-age applies to a bundle" in one_line_error(
        run("verify", "--db", "--max-age", "1d")
    )
    # REGISTRE_DB in the environment does not count as --db
    assert run("verify", str(exported), "--key", initialised).code == 0
    assert run("verify", str(exported), "--key", initialised, "--require-full").code == 0
    assert run("verify", "--db").code == 0  # the database check is unchanged


def test_private_key_given_error_through_registre_verify(
    exported: Path, run: Run, workdir: Path
) -> None:
    """`--key-file` names the private key in every other command; given to `verify FILE.zip`
    it is refused as what it is, with the file to pass instead (no whitespace complaint)."""
    private = Path(".registre") / "operator.key"
    assert private.exists()
    message, hint = error_and_hint(run("verify", str(exported), "--key-file", str(private)))
    assert message == (
        f"registre: error: {private} is an operator (private) key; pass operator.vkey, its "
        "verifier key"
    )
    assert hint == (
        f"registre: hint: `registre key export --key-file {private} -o operator.vkey` writes "
        "it; a verifier never needs the private key"
    )
    assert run("key", "export", "-o", "operator.vkey").code == 0
    assert run("verify", str(exported), "--key-file", "operator.vkey").code == 0


def test_output_folder_error_names_the_bundle_not_a_temporary_file(
    exported: Path, run: Run, workdir: Path
) -> None:
    message, hint = error_and_hint(run("export", "t1", "-o", "missing/t1.zip"))
    assert (
        message == "registre: error: cannot write missing/t1.zip: its folder missing does not exist"
    )
    assert hint == "registre: hint: create the folder first, or choose another path"
    message, _ = error_and_hint(run("transcript", "t1", "-o", "missing/t1.md"))
    assert message.endswith("cannot write missing/t1.md: its folder missing does not exist")


def test_output_write_error_never_names_the_temporary_file(
    exported: Path, run: Run, workdir: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A file system without hard links (the bundle is linked into place) or a full disk: the
    error names the output, nothing is left behind, exit 3."""

    def no_links(source: str, target: str) -> None:
        raise PermissionError(errno.EPERM, "Operation not permitted", source, None, target)

    monkeypatch.setattr(os, "link", no_links)
    message, hint = error_and_hint(run("export", "t1", "-o", "again.zip"), code=3)
    assert message == "registre: error: cannot write again.zip: operation not permitted"
    assert hint is not None and "--force" in hint
    assert ".again.zip." not in message + hint and not list(workdir.glob(".again.zip*"))

    def disk_full(source: str, target: str) -> None:
        raise OSError(errno.ENOSPC, "No space left on device", source, None, target)

    monkeypatch.setattr(os, "replace", disk_full)
    message, hint = error_and_hint(run("transcript", "t1", "-o", "t1.md"), code=3)
    assert message == "registre: error: cannot write t1.md: no space left on device"
    assert hint is not None and hint.startswith("registre: hint: free space")
    assert not list(workdir.glob(".t1.md*")) and not (workdir / "t1.md").exists()
