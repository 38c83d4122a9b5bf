"""`registre bench --suite locomo PATH` and `--transcripts FILE...`: the reports a user gets,
and one clear line for input the suites cannot run on."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.bench.real.fixtures import agent_transcript, locomo_sample, v2_layout, write_json
from tests.cli.conftest import Run, one_line_error


def test_locomo_report(workdir: Path, run: Run) -> None:
    folder = workdir / "locomo"
    folder.mkdir()
    write_json(folder / "1.json", v2_layout(locomo_sample()))
    result = run("bench", "--suite", "locomo", "locomo", "--budgets", "1k", "--out", "b")
    assert result.code == 0, result.err
    assert "# LoCoMo" in result.out and "BM25 alone" in result.out
    assert (workdir / "b" / "report-locomo.md").read_text(encoding="utf-8") in result.out
    data = json.loads((workdir / "b" / "results-locomo.json").read_text(encoding="utf-8"))
    assert data["budgets"] == [1000] and data["conversations"][0]["questions"] == 2


def test_transcripts_json(workdir: Path, run: Run) -> None:
    write_json(workdir / "agent.json", agent_transcript(4))
    result = run("bench", "--transcripts", "agent.json", "--budgets", "2k", "--json", "--out", "b")
    assert result.code == 0, result.err
    data = json.loads(result.out)
    assert data["suite"] == "transcripts" and data["transcripts"][0]["calls"] == 6


@pytest.mark.parametrize(
    ("args", "says"),
    [
        (["--suite", "locomo"], "give the LoCoMo file"),
        (["--transcripts"], "at least one transcript"),
        (["data.json"], "without --suite locomo or --transcripts"),
        (["--suite", "locomo", "--transcripts", "data.json"], "not both"),
        (["--suite", "locomo", "data.json"], "no conversation with speaker_a"),
        (["--transcripts", "data.json", "--format", "nope"], "--format"),
        (["--suite", "locomo", "data.json", "--budgets", "0"], "budget"),
        (["--suite", "locomo", "missing.json"], "missing.json"),
    ],
)
def test_bad_input_fail(workdir: Path, run: Run, args: list[str], says: str) -> None:
    write_json(workdir / "data.json", {"x": 1})
    assert says in one_line_error(run("bench", *args, "--out", "b"))
    assert not (workdir / "b").exists()
