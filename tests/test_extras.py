"""registre.extras: the auditor's install says which extra a part of registre needs."""

from __future__ import annotations

import importlib.util
import subprocess
import sys

import pytest

from registre import extras
from registre.extras import MissingExtraError, missing_modules, require_extra


def test_the_development_install_has_the_ledger_extra() -> None:
    assert missing_modules("ledger") == []
    require_extra("ledger", "the registre command")


def test_missing_extra_error_names_the_extra_and_the_verifier(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = importlib.util.find_spec
    monkeypatch.setattr(
        extras.importlib.util,
        "find_spec",
        lambda name: None if name in ("click", "sqlmodel") else found(name),
    )
    with pytest.raises(MissingExtraError) as info:
        require_extra("ledger", "the registre command")
    assert str(info.value) == (
        "the registre command needs the 'ledger' extra, which this install lacks "
        "(no module click, sqlmodel)"
    )
    assert info.value.exit_code == 3
    assert info.value.hint is not None
    assert info.value.hint.startswith("pip install 'registre[ledger]'; to verify a bundle")
    assert "python -m registre.attest verify" in info.value.hint


def test_python_m_registre_without_click_is_one_line_and_exit_3() -> None:
    """The console script's entry (registre.__main__) checks the extra before importing the
    command line: click blocked, it says what to install instead of a traceback."""
    code = (
        "import importlib.util, sys\n"
        "real = importlib.util.find_spec\n"
        "importlib.util.find_spec = lambda n, *a: None if n == 'click' else real(n, *a)\n"
        "sys.argv = ['registre', '--help']\n"
        "import runpy\n"
        "runpy.run_module('registre', run_name='__main__')\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=60, check=False
    )
    assert result.returncode == 3, result.stderr
    error, hint = result.stderr.splitlines()
    assert error == (
        "registre: error: the registre command needs the 'ledger' extra, which this install "
        "lacks (no module click)"
    )
    assert hint.startswith("registre: hint: pip install 'registre[ledger]'")
