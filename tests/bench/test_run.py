"""Smoke of `registre bench` at a tiny size, so the harness never rots: it runs through the
real ledger, writes a report naming every metric, results.json following registre-bench/5,
and its PNG plots. No timing is asserted."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from registre.bench.quality import METHODS
from registre.bench.report import METRICS
from registre.bench.run import parse_quantity, resolve_summarizer
from registre.bench.schema import SCHEMA, check_results
from registre.cli import main
from registre.context import ExtractiveSummarizer
from registre.ledger.ledger import Ledger


def test_results_follow_the_schema(smoke: tuple[Path, dict[str, Any]]) -> None:
    _out, results = smoke
    check_results(results)
    assert results["schema"] == SCHEMA == "registre-bench/5"
    assert results["config"]["sizes"] == [200] and results["config"]["budgets"] == [8000]
    default = ExtractiveSummarizer()
    assert results["config"]["summarizer"] == {"name": default.name, "version": default.version}


def test_report_names_every_metric(smoke: tuple[Path, dict[str, Any]]) -> None:
    report = (smoke[0] / "report.md").read_text(encoding="utf-8")
    missing = [metric for metric in METRICS if metric not in report]
    assert not missing


def test_plots_are_written(smoke: tuple[Path, dict[str, Any]]) -> None:
    for name in ("budget", "latency", "flat", "tokens", "pins"):
        data = (smoke[0] / f"{name}.png").read_bytes()
        assert data.startswith(b"\x89PNG\r\n\x1a\n") and len(data) > 10_000


def test_the_run_checks_what_it_reports(smoke: tuple[Path, dict[str, Any]]) -> None:
    (run,) = smoke[1]["runs"]
    assert run["entries"] == run["append"]["entries"] == sum(run["kinds"].values())
    assert run["storyline"]["planned"] == 200
    assert run["bundle"]["verified"] and run["bundle"]["entries"] == run["entries"]
    assert run["bundle"]["path"] is None and not list((smoke[0] / "bundles").iterdir())
    pointers = run["pointers"]
    assert pointers["checked"] > 0 and pointers["resolved"] == pointers["checked"]
    naive = run["projection"]["naive"]
    assert naive["count"] >= 1 and run["projection"]["naive_equal"] == naive["count"]
    pins = run["pins"]
    assert pins["checks"] > 0 and pins["ours_kept"] == pins["checks"]
    assert pins["truncation_kept"] < pins["checks"]  # the baseline does lose pins at 8k
    assert run["context"]["max_use"] <= 1
    assert run["merkle"]["leaves"] == run["entries"]


def test_every_method_is_measured_on_the_same_needs(smoke: tuple[Path, dict[str, Any]]) -> None:
    (run,) = smoke[1]["runs"]
    context = run["working_context"]
    methods = context["methods"]
    assert list(methods) == list(METHODS)
    facts = context["facts"]
    assert facts["planted"] == run["storyline"]["facts"] == sum(facts["by_kind"].values())
    assert facts["needs"] == run["storyline"]["fact_needs"] > 0
    calls = run["model_calls"]["count"] + run["model_calls"]["refused"]
    for name, figures in methods.items():
        recall = figures["fact_recall"]
        assert recall["needs"] == facts["needs"], name  # refused calls miss their facts
        assert recall["recalled"] == recall["verbatim"] + recall["summarized"] <= recall["needs"]
        assert figures["calls"] + figures["refused"]["calls"] == calls, name
        assert figures["tokens"]["max_use"] <= 1, name
    assert methods["registre"]["compactions"]["count"] == run["compaction"]["count"]
    assert methods["registre"]["refused"]["calls"] == run["model_calls"]["refused"]
    for name in ("truncation", "observation_masking"):
        assert methods[name]["count_only"]["share"] is None
        assert methods[name]["stable_prefix"]["declared_share"] is None
        assert methods[name]["refused"]["calls"] == methods[name]["compactions"]["count"] == 0
    assert methods["rolling_summary"]["compactions"]["count"] > 0
    assert methods["rolling_summary"]["pointers"]["span_p50"] is not None
    report = (smoke[0] / "report.md").read_text(encoding="utf-8")
    assert "## Working-context quality" in report
    assert "| 200 @ 8k | rolling summary |" in report


def test_quantities_accept_suffixes_and_exponents() -> None:
    assert parse_quantity("8k", "budget") == 8000
    assert parse_quantity("1e4", "size") == 10_000
    assert parse_quantity("128000", "budget") == 128_000
    assert parse_quantity("2.5k", "size") == 2500


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--sizes", "50"], "at least 100"),
        (["--sizes", "lots"], "not a number"),
        (["--budgets", ""], "at least one budget"),
        (["--summarizer", "nope"], "unknown summarizer"),
        (["--summarizer", "no.such.module:make"], "cannot be loaded"),
    ],
)
def test_bad_input_is_one_line_exit_2(
    args: list[str], says: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(["bench", "--out", str(tmp_path), *args])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and says in err and "Traceback" not in err
    assert not (tmp_path / "results.json").exists()


def test_a_summarizer_is_one_callable_away() -> None:
    summarizer = resolve_summarizer("registre.context:ExtractiveSummarizer")
    assert summarizer.name == "registre.extractive"


def test_bench_records_on_the_database_given(
    db_url: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """`--db` puts the runs on that database (SQLite or PostgreSQL), which must be empty: a
    second run onto a database that holds threads is refused (exit 2) and adds nothing."""
    args = ["bench", "--sizes", "120", "--budgets", "8k", "--db", db_url, "--out", str(tmp_path)]
    main(args)
    results = json.loads((tmp_path / "results.json").read_text(encoding="utf-8"))
    check_results(results)
    (run,) = results["runs"]
    assert run["bundle"]["verified"] and not (tmp_path / "bench.db").exists()
    with pytest.raises(SystemExit) as refused:
        main(args)
    assert refused.value.code == 2
    assert "bench writes only to an empty database" in capsys.readouterr().err
    with Ledger.open(db_url) as ledger:
        threads = [t for t in ledger.threads() if t.id.startswith("bench-n120-b8000-s0-")]
    assert len(threads) == 1 and {t.head().size for t in threads} == {run["entries"]}
    assert results["config"]["database"] == ("sqlite" if "sqlite" in db_url else "postgresql")
    capsys.readouterr()
