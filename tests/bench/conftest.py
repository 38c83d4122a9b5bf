"""A tiny `registre bench` run, made once and shared by the harness and schema tests; and the
ledger tests' ``db_url`` fixture (SQLite, and PostgreSQL when REGISTRE_TEST_PG is set)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from registre.cli import main
from tests.db_fixtures import db_url  # noqa: F401  (a fresh SQLite or PostgreSQL database)


@pytest.fixture(scope="session")
def smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """``registre bench --sizes 200 --budgets 8k`` into a temporary folder: (folder, results)."""
    out = tmp_path_factory.mktemp("bench")
    sizes = ["--sizes", "200", "--budgets", "8k", "--seed", "3"]
    main(["bench", *sizes, "--raw-appends", "40", "--out", str(out)])
    return out, json.loads((out / "results.json").read_text(encoding="utf-8"))


@pytest.fixture(scope="session")
def lean_smoke(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    """``registre bench --sizes 150 --lean-above 100``: a lean run, as 1e6 entries run."""
    out = tmp_path_factory.mktemp("bench-lean")
    sizes = ["--sizes", "150", "--budgets", "8k", "--lean-above", "100"]
    main(["bench", *sizes, "--raw-appends", "0", "--out", str(out)])
    return out, json.loads((out / "results.json").read_text(encoding="utf-8"))
