"""The side-by-side table puts ours next to the baseline of the same group, with the ratio."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from registre.bench.sidebyside import load_rows, main, render


def _result(tmp_path: Path) -> Path:
    def bench(name: str, group: str, median: float) -> dict[str, object]:
        return {"name": name, "group": group, "stats": {"median": median}}

    path = tmp_path / "r.json"
    path.write_text(
        json.dumps(
            {
                "benchmarks": [
                    bench("test_append_registre[n=10]", "append n=10", 0.001),
                    bench("test_append_pymerkle[n=10]", "append n=10", 0.004),
                    bench("test_solo_registre", "solo", 2e-6),
                ]
            }
        )
    )
    return path


def test_ratio_is_baseline_over_ours(tmp_path: Path) -> None:
    table = render(load_rows(_result(tmp_path)))
    assert "| append n=10 | append_registre | 1 ms | 4.00x append_pymerkle |" in table
    assert "| append n=10 | append_pymerkle | 4 ms | baseline |" in table
    assert "| solo | solo_registre | 2 µs | - |" in table


def test_not_a_result_is_one_line_and_exit_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "bad.json"
    bad.write_text('{"benchmarks": [{"name": 1}]}')
    assert main([str(bad)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "not a pytest-benchmark JSON result" in err
