"""`make demo` runs `registre demo`: it must record, prove and verify end to end, twice over."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path


def _demo(workdir: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "from ledger.cli import main; main()",
            "demo",
            "--dir",
            str(workdir),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )


def test_demo_records_proves_and_verifies(tmp_path: Path) -> None:
    run = _demo(tmp_path)
    assert run.returncode == 0, run.stderr
    steps = [line for line in run.stdout.splitlines() if line.startswith("[")]
    assert [s.split("]")[0] + "]" for s in steps] == [f"[{n}]" for n in range(1, 8)]
    assert "verify --db: 6 entries re-checked" in run.stdout
    assert (tmp_path / "operator.key").stat().st_mode & 0o777 == 0o600
    vkey = (tmp_path / "operator.vkey").read_text().strip()
    assert vkey.startswith("demo.registre.example+")
    # A second run reuses the key and starts a fresh database.
    again = _demo(tmp_path)
    assert again.returncode == 0, again.stderr
    assert "loaded the operator key" in again.stdout
    assert (tmp_path / "operator.vkey").read_text().strip() == vkey


def test_demo_with_a_corrupt_key_is_one_line_exit_2(tmp_path: Path) -> None:
    (tmp_path / "operator.key").write_text("not a key\n")
    run = _demo(tmp_path)
    assert run.returncode == 2
    assert run.stderr.count("\n") == 1 and run.stderr.startswith("registre: error:")
    assert "Traceback" not in run.stderr
