"""`make demo` runs `registre demo`: record a long investigation on an embedded SQLite ledger
with compactions, export a signed bundle, verify it offline, write the report -- twice over."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from registre.attest.notes import Verifier
from registre.attest.verify import TrustPolicy, verify_bundle
from registre.bench.schema import check_results


def _demo(workdir: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [
            sys.executable,
            "-c",
            "from registre.cli import main; main()",
            "demo",
            "--dir",
            str(workdir),
            *extra,
        ],
        capture_output=True,
        text=True,
        timeout=300,
    )


def test_demo_records_exports_verifies_and_reports(tmp_path: Path) -> None:
    run = _demo(tmp_path, "--entries", "300")
    assert run.returncode == 0, run.stderr
    steps = [line for line in run.stdout.splitlines() if line.startswith("[")]
    assert [s.split("]")[0] + "]" for s in steps] == [f"[{n}]" for n in range(1, 9)]
    assert "compactions" in steps[1] and "digest proved" in steps[3]
    assert "checked against the signed checkpoint" in steps[4]
    assert "verified it offline" in steps[5] and "failed" not in steps[5]
    assert (tmp_path / "operator.key").stat().st_mode & 0o777 == 0o600
    vkey = (tmp_path / "operator.vkey").read_text().strip()
    assert vkey.startswith("demo.registre.example+")
    # What it prints is where the auditor's three files are; the bundle verifies on its own.
    for name in ("report.md", "bundle.zip", "operator.vkey", "audit.html", "thread.ipynb"):
        assert str(tmp_path / name) in run.stdout
    verdict = "VERIFIED; not checked: witnesses, rollback"
    assert steps[7].endswith(f"each opening with the verdict: {verdict}")
    audit = (tmp_path / "audit.html").read_text(encoding="utf-8")
    # no witness pinned: verified, in the warning tone
    assert 'class="verdict warn"' in audit and 'id="report-data"' in audit
    notebook = json.loads((tmp_path / "thread.ipynb").read_text())
    assert notebook["nbformat"] == 4 and notebook["metadata"]["registre"]["verdict"] == verdict
    slides = (tmp_path / "slides.html").read_text(encoding="utf-8")
    assert 2 < slides.count('class="slide"') <= 30 and f"</b>{verdict[8:]}</div>" in slides
    report = verify_bundle(tmp_path / "bundle.zip", TrustPolicy(Verifier.from_vkey(vkey)))
    assert report.verified and report.kinds["context.compaction"] >= 1
    results = json.loads((tmp_path / "results.json").read_text())
    check_results(results)
    assert results["runs"][0]["entries"] == report.entries
    # A second run reuses the key and starts a fresh database.
    again = _demo(tmp_path, "--entries", "300")
    assert again.returncode == 0, again.stderr
    assert "loaded the operator key" in again.stdout
    assert (tmp_path / "operator.vkey").read_text().strip() == vkey


def test_demo_with_a_corrupt_key_is_one_line_exit_2(tmp_path: Path) -> None:
    (tmp_path / "operator.key").write_text("not a key\n")
    run = _demo(tmp_path)
    assert run.returncode == 2
    lines = run.stderr.splitlines()
    assert lines[0].startswith("registre: error:")
    assert len(lines) == 1 or (len(lines) == 2 and lines[1].startswith("registre: hint: "))
    assert "Traceback" not in run.stderr
