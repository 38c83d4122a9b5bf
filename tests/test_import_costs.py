"""What each entry point loads, at run time: the façades must not hide a heavy import.

Each case runs in a fresh interpreter and lists ``sys.modules`` afterwards. The import-linter
contracts see the import graph; these see what a façade actually loads when used.
"""

from __future__ import annotations

import json
import subprocess
import sys

import pytest

DATABASE = ("sqlalchemy", "sqlmodel", "psycopg")

WITNESS_SERVER = "import registre.witness.server"
OFFLINE_VERIFIER = """
import io, contextlib, runpy, sys, tempfile, pathlib
sys.argv = ["registre.attest", "verify", str(pathlib.Path(tempfile.mkdtemp()) / "none.zip"),
            "--key", "k+00000000+AAAA"]
with contextlib.redirect_stderr(io.StringIO()), contextlib.redirect_stdout(io.StringIO()):
    try:
        runpy.run_module("registre.attest", run_name="__main__", alter_sys=True)
    except SystemExit:
        pass
from registre.attest.verify import verify_bundle, TrustPolicy
"""
IMPORTERS = """
import registre.importers
from registre.importers import detect, open_transcript
"""
CLI_HELP = """
import io, contextlib, sys
sys.argv = ["registre", "--help"]
with contextlib.redirect_stdout(io.StringIO()):
    try:
        from registre.cli import main
        main()
    except SystemExit:
        pass
"""
LEDGER_FACE = "import registre.ledger"
IMPORTERS_FACE = "import registre.importers"
BENCH_FACE = "import registre.bench"


def loaded(code: str) -> set[str]:
    """The modules loaded after running ``code`` in a fresh interpreter."""
    script = f"{code}\nimport json, sys\nprint(json.dumps(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, check=True, timeout=120
    )
    return set(json.loads(result.stdout.splitlines()[-1]))


def heavy(modules: set[str], packages: tuple[str, ...]) -> list[str]:
    return sorted(m for m in modules if m.split(".")[0] in packages or m in packages)


@pytest.mark.parametrize(
    ("name", "code", "forbidden"),
    [
        ("witness server", WITNESS_SERVER, (*DATABASE, "click")),
        ("offline verifier", OFFLINE_VERIFIER, (*DATABASE, "aiohttp")),
        ("importers", IMPORTERS, (*DATABASE, "click", "aiohttp")),
        ("registre --help", CLI_HELP, (*DATABASE, "aiohttp")),
        ("the ledger face", LEDGER_FACE, DATABASE),
        ("the bench face", BENCH_FACE, (*DATABASE, "click", "aiohttp")),
    ],
)
def test_an_entry_point_loads_no_database_stack(
    name: str, code: str, forbidden: tuple[str, ...]
) -> None:
    assert heavy(loaded(code), forbidden) == [], name


@pytest.mark.parametrize(
    ("code", "internal"),
    [
        (WITNESS_SERVER, "registre.ledger"),
        (OFFLINE_VERIFIER, "registre.ledger"),
        (IMPORTERS, "registre.ledger"),
        (CLI_HELP, "registre.ledger"),
        (LEDGER_FACE, "registre.ledger.store"),
        (BENCH_FACE, "registre.ledger"),
    ],
)
def test_an_entry_point_loads_no_floor_it_does_not_use(code: str, internal: str) -> None:
    modules = loaded(code)
    assert not [m for m in modules if m == internal or m.startswith(internal + ".")]


@pytest.mark.parametrize(
    ("face", "modules"),
    [
        (IMPORTERS_FACE, "registre.importers."),
        (BENCH_FACE, "registre.bench."),
        (LEDGER_FACE, "registre.ledger."),
    ],
)
def test_a_face_alone_loads_none_of_its_modules(face: str, modules: str) -> None:
    assert not [m for m in loaded(face) if m.startswith(modules)]


@pytest.mark.parametrize(
    ("code", "module"),
    [
        ("from registre.importers import open_transcript", "registre.importers.transcript"),
        ("from registre.bench import run_bench", "sqlalchemy"),
    ],
)
def test_a_face_loads_a_name_s_module_when_the_name_is_used(code: str, module: str) -> None:
    """The checks above can fail: using a name loads what it needs."""
    assert module in loaded(code)


def test_the_ledger_loads_its_database_stack_when_used() -> None:
    """The check above can fail: using the face loads SQLAlchemy."""
    assert "sqlalchemy" in loaded("from registre.ledger import Ledger")


def test_the_verifier_did_run_in_the_offline_case() -> None:
    assert "registre.attest.verify.verifier" in loaded(OFFLINE_VERIFIER)
