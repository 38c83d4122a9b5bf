"""``python -m registre.attest verify``: exit codes, one-line errors, the report, and a run with the
database layers blocked from import (the regulator's machine has none of them)."""

from __future__ import annotations

import functools
import json
import subprocess
import sys
from pathlib import Path
from typing import NoReturn

import pytest

from registre.attest.__main__ import main
from registre.attest.bundles import ZipFormatError
from registre.attest.notes import Signer
from registre.attest.verify import INACTIVE_LISTED
from registre.attest.verify import verifier as verifier_module
from registre.lifecycle import (
    ComputeRequest,
    EvidenceReviseRequest,
    ReadRequest,
    Statement,
    UpsertRequest,
)
from tests.bundles import ATTACKER, COSIGN_TIME, LOG, WITNESSES, Thread, build_thread, ref
from tests.tamper.helpers import entry_lines, with_entry_lines

BLOCKED = (
    "registre.ledger",
    "registre.bench",
    "registre.cli",
    "sqlmodel",
    "sqlalchemy",
    "psycopg",
    "click",
    "aiohttp",
)
BLOCKER = """
import importlib.abc, runpy, sys

class Blocker(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if any(name == b or name.startswith(b + ".") for b in {blocked!r}):
            raise ImportError("blocked for this test: " + name)
        return None

sys.meta_path.insert(0, Blocker())
import registre.attest.verify.entries  # spread even a small bundle over --jobs processes
registre.attest.verify.entries.MIN_LEAVES_PER_PROCESS = 1
sys.argv = ["registre.attest", *{args!r}]
runpy.run_module("registre.attest", run_name="__main__", alter_sys=True)
"""


@functools.cache
def genuine() -> bytes:
    return build_thread(12).full_bundle(witnesses=WITNESSES[:2])


def bundle_file(tmp_path: Path, data: bytes | None = None) -> Path:
    path = tmp_path / "thread-1.zip"
    path.write_bytes(genuine() if data is None else data)
    return path


def run(args: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        main(args)
        code = 0
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_verified_bundle_exits_0(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run(["verify", str(bundle_file(tmp_path)), "--key", LOG.vkey()], capsys)
    assert (code, err) == (0, "")
    assert out.startswith("registre bundle verification: VERIFIED")


def test_key_file_witnesses_state_and_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    key_file = tmp_path / "log.vkey"
    key_file.write_text(LOG.vkey() + "\n")
    state = tmp_path / "state.json"
    args = ["verify", str(bundle_file(tmp_path)), "--key-file", str(key_file), "--json"]
    args += ["--witness", WITNESSES[0].vkey(), "--witness", WITNESSES[1].vkey()]
    code, out, _ = run([*args, "--state", str(state), "--jobs", "2"], capsys)
    report = json.loads(out)
    assert code == 0 and report["verified"] and report["steps"][4]["status"] == "passed"
    assert "quorum 2" in " ".join(report["steps"][1]["checked"])
    assert state.exists()


def test_failed_check_exits_1_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    lines = entry_lines(genuine())
    lines[11] = lines[11].replace(b"turn 11", b"turn 99")
    path = bundle_file(tmp_path, with_entry_lines(genuine(), lines))
    code, out, err = run(["verify", str(path), "--key", LOG.vkey(), "--json"], capsys)
    assert code == 1
    assert json.loads(out)["failure"]["error"] == "EntrySignatureError"
    assert err.count("\n") == 1 and "Traceback" not in err
    assert err.startswith("attest: error: step 3 (entries), seq 11: EntrySignatureError:")


def test_quorum_defaults_to_every_witness(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    args = ["verify", str(bundle_file(tmp_path)), "--key", LOG.vkey()]
    args += [arg for w in WITNESSES for arg in ("--witness", w.vkey())]
    code, _, err = run(args, capsys)
    assert code == 1 and "QuorumNotMetError" in err
    code, _, _ = run([*args, "--quorum", "2"], capsys)
    assert code == 0


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--key", "not-a-key"], "must have the form"),
        ([], "exactly one of --key and --key-file"),
        (["--key", LOG.vkey(), "--key-file", "x"], "exactly one of"),
        (["--key-file", "/nonexistent/key"], "cannot read key file"),
        (["--key", LOG.vkey(), "--witness", LOG.vkey()], "cosignature/v1"),
        (["--key", LOG.vkey(), "--jobs", "0"], "--jobs"),
    ],
)
def test_unusable_input_exits_2_with_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], args: list[str], message: str
) -> None:
    code, _, err = run(["verify", str(bundle_file(tmp_path)), *args], capsys)
    assert code == 2 and message in err
    assert err.count("\n") == 1 and err.startswith("attest: error:")


def test_missing_or_broken_bundle_exits_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, _, err = run(["verify", str(tmp_path / "none.zip"), "--key", LOG.vkey()], capsys)
    assert code == 2 and "BundleFileError" in err
    broken = bundle_file(tmp_path, b"PK not really")
    code, _, err = run(["verify", str(broken), "--key", LOG.vkey()], capsys)
    assert code == 2 and "ZipFormatError" in err


def test_bundle_signed_by_another_key_exits_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    forged = bundle_file(tmp_path, build_thread(12, signer=ATTACKER).full_bundle())
    code, _, err = run(["verify", str(forged), "--key", LOG.vkey()], capsys)
    assert code == 1 and "NoTrustedSignatureError" in err


@pytest.mark.parametrize("reported", [True, False])
def test_hint_printed_on_its_own_line(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    reported: bool,
) -> None:
    """An error's ``hint`` follows the error line, whether the report was printed or not."""

    def refuse(*args: object, **kwargs: object) -> NoReturn:
        raise ZipFormatError("not a readable zip file").with_hint("ask for the bundle again")

    # in the verifier's step 1 (a report is printed first), or before any report is started
    where = "verify.verifier.open_bundle" if reported else "__main__.verify_bundle"
    monkeypatch.setattr(f"registre.attest.{where}", refuse)
    code, out, err = run(["verify", str(bundle_file(tmp_path)), "--key", LOG.vkey()], capsys)
    assert code == 2 and ("NOT VERIFIED" in out) == reported
    error, hint = err.splitlines()
    assert error.startswith("attest: error: ") and error.endswith("not a readable zip file")
    assert hint == "attest: hint: ask for the bundle again"


def blocked_run(args: list[str]) -> subprocess.CompletedProcess[str]:
    code = BLOCKER.format(blocked=BLOCKED, args=args)
    return subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=False
    )


def test_verifies_with_database_layers_blocked(tmp_path: Path) -> None:
    """The regulator's path imports only attest, lifecycle, context, cryptography and rfc8785:
    not click either (the options are read with argparse)."""
    probe = blocked_run(["--help"])
    assert probe.returncode == 0
    path = str(bundle_file(tmp_path))
    for jobs in ("1", "2"):
        result = blocked_run(["verify", path, "--key", LOG.vkey(), "--jobs", jobs])
        assert result.returncode == 0, result.stderr
        assert "VERIFIED" in result.stdout
    # the blocker really blocks: importing the ledger under it fails
    check = subprocess.run(
        [
            sys.executable,
            "-c",
            BLOCKER.format(blocked=BLOCKED, args=[]).split("sys.argv")[0]
            + "import registre.ledger",
        ],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert check.returncode != 0 and "blocked for this test: registre.ledger" in check.stderr


def test_require_full_refuses_a_partial_bundle_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    partial = bundle_file(tmp_path, build_thread(12).partial_bundle([1, 2, 3, 4, 5, 11]))
    code, out, _ = run(["verify", str(partial), "--key", LOG.vkey()], capsys)
    assert code == 0 and out.startswith("registre bundle verification: VERIFIED, PARTIAL")
    code, out, err = run(["verify", str(partial), "--key", LOG.vkey(), "--require-full"], capsys)
    assert code == 2 and "NOT VERIFIED" in out
    assert err.startswith("attest: error: step 1 (container): PartialBundleRefusedError:")
    assert "attest: hint: ask the exporter for a full bundle" in err
    full = bundle_file(tmp_path)
    assert run(["verify", str(full), "--key", LOG.vkey(), "--require-full"], capsys)[0] == 0


def test_max_age_option(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(verifier_module.time, "time", lambda: COSIGN_TIME + 2 * 86400)
    path = str(bundle_file(tmp_path))
    pinned = ["--witness", WITNESSES[0].vkey(), "--quorum", "1"]
    code, out, err = run(["verify", path, "--key", LOG.vkey(), *pinned, "--max-age", "3d"], capsys)
    assert code == 0 and "newest pinned-witness cosignature 2d 0h old" in out
    code, out, err = run(["verify", path, "--key", LOG.vkey(), *pinned, "--max-age", "1d"], capsys)
    assert code == 1 and "CheckpointTooOldError" in err and "2d 0h old" in err
    code, _, err = run(["verify", path, "--key", LOG.vkey(), "--max-age", "soon"], capsys)
    assert code == 2 and "is not a duration" in err


def test_inactive_line_names_the_first_12_and_json_lists_all(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Step 7.2's text line names the first :data:`INACTIVE_LISTED` ids that are stale or
    inactive at the checkpoint and how many more; ``--json`` lists every one."""
    sources = 15
    thread = Thread()
    thread.turn("Reconcile the figures.")  # 0
    thread.decide(ReadRequest(tuple(ref(f"r{k}") for k in range(1, sources + 1))))
    statements = tuple(Statement(f"figure {k}", (f"r{k}",)) for k in range(1, sources + 1))
    thread.decide(UpsertRequest(statements))  # ev-1 .. ev-15
    thread.decide(ComputeRequest("The figures add up", tuple(f"ev-{k}" for k in range(1, 16))))
    for k in range(1, sources):  # ev-1 .. ev-14 superseded by ev-16 .. ev-29; ev-15 stays
        replacement = Statement(f"figure {k}, revised", (f"r{k}",))
        thread.decide(EvidenceReviseRequest(f"ev-{k}", replacement))
    expected = ["cc-1 stale"] + [f"ev-{k} superseded by ev-{k + 15}" for k in range(1, 15)]
    assert len(expected) > INACTIVE_LISTED
    path = bundle_file(tmp_path, thread.full_bundle())
    code, out, _ = run(["verify", str(path), "--key", LOG.vkey()], capsys)
    assert code == 0
    listed = ", ".join(expected[:INACTIVE_LISTED])
    more = len(expected) - INACTIVE_LISTED
    line = (
        f"stale or inactive at size {thread.size}: {listed}, … and {more} more "
        '(all of them in --json, as "inactive")'
    )
    assert f"    - {line}" in out.splitlines()
    assert expected[INACTIVE_LISTED] not in out
    code, out, _ = run(["verify", str(path), "--key", LOG.vkey(), "--json"], capsys)
    report = json.loads(out)
    assert code == 0 and report["inactive"] == expected
    assert line in report["steps"][6]["checked"]


def test_private_key_given_error_names_the_verifier_key_to_pass(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--key-file operator.key` (the operator's private key, which `--key-file` means in
    every other command) is refused as such, naming the file to pass instead."""
    private = tmp_path / "operator.key"
    Signer.generate("acme.example/ledger").save(private)
    code, out, err = run(["verify", str(bundle_file(tmp_path)), "--key-file", str(private)], capsys)
    assert (code, out) == (2, "")
    error, hint = err.splitlines()
    assert error == (
        f"attest: error: {private} is an operator (private) key; pass operator.vkey, its "
        "verifier key"
    )
    assert hint.startswith(f"attest: hint: `registre key export --key-file {private} -o ")
    assert "whitespace" not in err


def test_private_key_given_error_for_a_signer_key_string(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    skey = Signer.generate("acme.example/ledger").skey()
    code, _, err = run(["verify", str(bundle_file(tmp_path)), "--key", skey], capsys)
    assert code == 2
    assert err.startswith("attest: error: --key holds an operator (private) key;")


def test_key_pin_error_without_a_key(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["verify", str(bundle_file(tmp_path))], capsys)
    assert code == 2
    assert err == "attest: error: pin the log's key with exactly one of --key and --key-file\n"


def test_command_line_error_is_one_line_without_usage_text(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    for args in (["verify", "--nope"], ["frobnicate"], ["verify"]):
        code, out, err = run(args, capsys)
        assert code == 2 and out == ""
        assert err.count("\n") == 1 and err.startswith("attest: error: ")
        assert "(see python -m registre.attest" in err and "usage:" not in err


def test_help_needs_no_command_line_framework(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, _ = run(["verify", "--help"], capsys)
    assert code == 0 and "--key-file" in out and "pip install registre" in out
