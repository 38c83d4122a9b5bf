"""Every run measures its steps (time and peak memory), the verifier beside its signature
checks alone, projection by third of the history, and appends beside their raw floors; a
lean run (as 1e6 entries run) still runs every step for real. No timing is asserted."""

from __future__ import annotations

import base64
import copy
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from registre.attest.notes import Signer
from registre.bench.memory import StepMeter
from registre.bench.readme_table import main as readme_main
from registre.bench.scale_report import STEP_NAMES
from registre.bench.schema import check_results
from registre.bench.stepproc import signature_messages
from registre.ledger import Ledger


def _steps_are_measured(run: dict[str, Any]) -> None:
    assert list(run["steps"]) == list(STEP_NAMES)
    for name, step in run["steps"].items():
        assert step["seconds"] >= 0, name
        assert step["peak_rss_mb"] is not None and step["peak_rss_mb"] > 0, name
        assert step["how"] in ("vmhwm", "sampled", "subprocess"), name
    assert run["steps"]["export"]["how"] == run["steps"]["verify"]["how"] == "subprocess"
    assert run["steps"]["prove"]["count"] > 0


def test_every_step_has_its_time_and_peak_memory(smoke: tuple[Path, dict[str, Any]]) -> None:
    (run,) = smoke[1]["runs"]
    _steps_are_measured(run)
    bundle = run["bundle"]
    # the signature checks alone ran over every entry of the same bundle
    assert bundle["signatures"] == bundle["entries"] == run["entries"]
    assert bundle["signatures_s"] > 0 and bundle["verify_jobs"] == 1
    assert bundle["verify_s"] == pytest.approx(run["steps"]["verify"]["seconds"], abs=1e-5)


def test_projection_is_reported_by_third(smoke: tuple[Path, dict[str, Any]]) -> None:
    (run,) = smoke[1]["runs"]
    parts = run["projection"]["by_third"]
    assert [p["part"] for p in parts] == [1, 2, 3]
    assert parts[0]["from"] == 0 and parts[-1]["to"] == run["entries"]
    assert sum(p["model_calls"] for p in parts) == run["model_calls"]["count"]
    assert sum(p["ours_samples"] for p in parts) == run["projection"]["ours"]["count"]
    assert all(p["ours_samples"] > 0 for p in parts)  # the even samples reach every third
    ratio = run["projection"]["naive_ratio"]
    assert ratio["samples"] == run["projection"]["naive"]["count"] and ratio["at_largest"] > 0


def test_appends_are_measured_beside_raw_floors(smoke: tuple[Path, dict[str, Any]]) -> None:
    appends = smoke[1]["appends"]
    for key in ("raw_sqlite_txn_per_second", "single_per_second", "concurrent_per_second"):
        assert appends[key] > 0, key
    assert appends["single_vs_raw"] == pytest.approx(
        appends["single_per_second"] / appends["raw_sqlite_txn_per_second"], rel=1e-2
    )
    # raw signing and batches alternate; the CPU-time ratio comes from the same rounds
    assert appends["batch_vs_sign"] == pytest.approx(
        appends["batch_per_second"] / appends["raw_sign_per_second"], rel=1e-2
    )
    assert appends["batch_vs_sign_cpu"] > 0
    report = (smoke[0] / "report.md").read_text(encoding="utf-8")
    assert "in CPU time the batched appends ran at" in report
    for heading in (
        "## Steps: time and peak memory",
        "## Projection latency by third of the history, per budget",
        "## Verify beside its signature checks alone",
        "## Appends beside raw durable transactions",
    ):
        assert heading in report


def test_a_lean_run_runs_every_step_and_says_so(lean_smoke: tuple[Path, dict[str, Any]]) -> None:
    out, results = lean_smoke
    check_results(results)
    (run,) = results["runs"]
    assert run["lean"] and results["config"]["lean_above"] == 100
    for skipped in ("working_context", "pins", "evidence", "merkle"):
        assert skipped not in run
    assert run["projection"]["naive"]["count"] == 0
    _steps_are_measured(run)
    assert run["bundle"]["verified"] and run["bundle"]["entries"] == run["entries"]
    assert results["appends"] is None  # --raw-appends 0
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "(lean)" in report and "skipped the working-context quality tallies" in report
    assert not (out / "pins.png").exists() and (out / "flat.png").exists()


def test_the_readme_table_is_regenerated_from_a_run(
    smoke: tuple[Path, dict[str, Any]], capsys: pytest.CaptureFixture[str]
) -> None:
    results = smoke[0] / "results.json"
    assert readme_main([str(results), "--old", str(results)]) == 0
    text = capsys.readouterr().out
    created = smoke[1]["created"][:10]
    assert text.startswith("`registre bench --sizes 200 --budgets 8k` on " + created)
    assert "| projection p50 / p99 |" in text and " → " in text
    assert "signatures alone" in text and "peak memory: export / verify" in text


def test_the_readme_table_refuses_other_files(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    other = tmp_path / "other.json"
    other.write_text('{"benchmarks": []}', encoding="utf-8")
    assert readme_main([str(other)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a registre bench results document" in err


def test_signature_messages_are_what_the_entry_signed(tmp_path: Path) -> None:
    signer = Signer.generate("bench.example")
    with Ledger.open(str(tmp_path / "l.db"), signer) as ledger:
        thread = ledger.create_thread("t")
        entry = thread.append("turn", {"role": "user", "text": 'a "quoted" ,"sig":" text'}, "u")
    message, signature = signature_messages(entry.leaf)
    assert signature == entry.signature
    signer.verifier().verify(message, signature)  # raises if not what was signed
    with pytest.raises(ValueError):
        signature_messages(base64.b64encode(entry.leaf))


def test_the_step_meter_sees_memory_a_step_holds() -> None:
    with StepMeter() as meter:
        held = bytearray(64 * 2**20)
        held[::4096] = b"\x01" * len(held[::4096])  # touch every page
    del held
    measure = meter.measure
    assert measure is not None and measure.peak_mb is not None and measure.start_mb is not None
    assert measure.peak_mb - measure.start_mb >= 48


def test_an_old_results_document_prints_beside_a_new_one(
    smoke: tuple[Path, dict[str, Any]], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A registre-bench/2 document (before steps, thirds and signatures) is an old column:
    what it lacks prints as ``-``."""
    old = copy.deepcopy(smoke[1])
    old["schema"] = "registre-bench/2"
    for run in old["runs"]:
        for name in ("steps", "run_s", "lean"):
            run.pop(name)
        for name in ("naive_ratio", "by_third"):
            run["projection"].pop(name)
        for name in ("signatures", "signatures_s"):
            run["bundle"].pop(name)
    path = tmp_path / "old.json"
    path.write_text(json.dumps(old), encoding="utf-8")
    assert readme_main([str(smoke[0] / "results.json"), "--old", str(path)]) == 0
    text = capsys.readouterr().out
    assert "| peak memory: export / verify | - → " in text
    assert "| projection p50 / p99, last third of the history | - → " in text
    assert readme_main([str(path)]) == 0  # an old document alone prints too
    assert "| whole run (investigation, steps and checks) | - |" in capsys.readouterr().out


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")
def test_a_child_step_reports_its_own_peak_not_the_harness(tmp_path: Path) -> None:
    """Export and verify run in children of a harness that may hold hundreds of MB:
    ``ru_maxrss`` survives ``exec`` and reported the harness's peak for them (428 MB for a
    verify that held far less); the child's figure is its own address space's."""
    held = bytearray(300 * 2**20)  # the harness holding 300 MB
    held[::4096] = b"x" * len(held[::4096])
    code = "from registre.bench.memory import peak_rss_mb; print(peak_rss_mb())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert float(done.stdout.strip()) < 200
    del held


def test_durable_measures_take_turns_round_by_round() -> None:
    """Each side runs once per round and the order turns by one every round, so a slow
    moment of the disk falls on every side in turn (registre.bench.raw)."""
    from registre.bench.raw import _durable_rounds

    calls: list[str] = []
    sides = {name: (10, lambda name=name: calls.append(name)) for name in ("a", "b", "c")}
    rates = _durable_rounds(sides, 4)
    assert calls == ["a", "b", "c", "b", "c", "a", "c", "a", "b", "a", "b", "c"]
    assert sorted(rates) == ["a", "b", "c"] and all(rate > 0 for rate in rates.values())
