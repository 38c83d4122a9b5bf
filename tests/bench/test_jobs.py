"""`registre bench --jobs N`: the runs in worker processes, each on a SQLite file of its own,
give the figures of the serial run apart from timings, in the serial run's order; a worker's
error is the serial run's one line and exit code. No timing is asserted."""

from __future__ import annotations

import json
import multiprocessing
from pathlib import Path
from typing import Any

import pytest

from registre.bench.readme_table import header_line
from registre.bench.report import render_report
from registre.bench.schema import ResultsSchemaError, check_results
from registre.cli import main
from registre.context import ExtractiveSummarizer, Summarizer
from registre.errors import RefusedError

_TIMED_ENDS = ("_s", "_ms", "seconds", "per_second", "_vs_raw", "_vs_sign", "_rss_mb")
_TIMED = {"created", "at_largest", "bytes"}  # bytes: the zip of entries stamped with times


def _untimed(value: Any) -> Any:
    """``value`` without its timings: fields named as times, rates and memory, the seconds
    of every ``[history, seconds]`` point, the bundle's size, and the appends (all rates)."""
    if isinstance(value, dict):
        return {
            key: [point[0] for point in item] if key == "points" else _untimed(item)
            for key, item in value.items()
            if key not in _TIMED and key != "appends" and not key.endswith(_TIMED_ENDS)
        }
    if isinstance(value, list):
        return [_untimed(item) for item in value]
    return value


def _bench(out: Path, *extra: str) -> dict[str, Any]:
    sizes = ["--sizes", "120", "--budgets", "8k,32k", "--seed", "5", "--raw-appends", "20"]
    main(["bench", *sizes, *extra, "--out", str(out)])
    return json.loads((out / "results.json").read_text(encoding="utf-8"))  # type: ignore[no-any-return]


def test_jobs_give_the_serial_figures_in_its_order(tmp_path: Path) -> None:
    serial = _bench(tmp_path / "serial")
    parallel = _bench(tmp_path / "parallel", "--jobs", "2")
    check_results(parallel)
    assert serial["config"]["jobs"] == 1 and parallel["config"]["jobs"] == 2
    assert [(r["size"], r["budget"]) for r in parallel["runs"]] == [(120, 8000), (120, 32000)]
    assert parallel["appends"] is not None  # measured first, in the parent
    for before, after in zip(serial["runs"], parallel["runs"], strict=True):
        assert after["entries"] == before["entries"] and after["bundle"]["verified"]
        assert after["compaction"]["count"] == before["compaction"]["count"]
        assert after["storyline"] == before["storyline"]  # planned facts and needs too
        assert after["working_context"] == before["working_context"]
    assert _untimed(serial)["runs"] == _untimed(parallel)["runs"]
    assert _untimed(serial)["config"] | {"jobs": 2} == _untimed(parallel)["config"]
    out = tmp_path / "parallel"
    assert {p.name for p in out.glob("bench-*.db")} == {"bench-120-8000.db", "bench-120-32000.db"}
    report = (out / "report.md").read_text(encoding="utf-8")
    assert "jobs=2" in report and "include that contention" in report
    assert "jobs=1" in (tmp_path / "serial" / "report.md").read_text(encoding="utf-8")
    assert "include that contention" not in (tmp_path / "serial" / "report.md").read_text()


def test_a_document_without_jobs_is_still_read(tmp_path: Path) -> None:
    """Results written before ``--jobs`` (``registre-bench/4``) have no ``config.jobs``: the
    report and the README table read them as one job; a ``registre-bench/5`` document
    without it is refused."""
    results = _bench(tmp_path)
    del results["config"]["jobs"]
    with pytest.raises(ResultsSchemaError, match=r"results\.config\.jobs: missing"):
        check_results(results)
    assert "jobs=1" in render_report(results, {})
    assert "--jobs" not in header_line(results)


class WorkerlessSummarizer(ExtractiveSummarizer):
    """Loads in the parent (the CLI checks the name first), refuses in a worker process."""


def workerless() -> Summarizer:
    if multiprocessing.parent_process() is not None:
        raise RefusedError("this summarizer runs in no worker")
    return WorkerlessSummarizer()


def test_a_worker_error_is_one_line_and_the_serial_exit_code(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        _bench(tmp_path, "--jobs", "2", "--summarizer", f"{__name__}:workerless")
    assert exited.value.code == RefusedError.exit_code
    err = capsys.readouterr().err
    assert err == "registre: error: this summarizer runs in no worker\n"
    assert not (tmp_path / "results.json").exists()
