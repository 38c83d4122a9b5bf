"""The auditor's install: ``pip install registre`` -- the wheel, no extras -- verifies a bundle.

The test builds the wheel from this checkout (``pip wheel --no-deps``), makes a fresh virtual
environment without the system's site packages, installs the wheel with no extras from the
package index (pip's cache helps), and checks that

* the environment holds registre, cryptography and rfc8785 and what cryptography itself
  needs (cffi, pycparser), and none of SQLAlchemy, SQLModel, psycopg, aiohttp or click;
* ``python -m registre.attest verify`` verifies a bundle this test records through the ledger
  (turns, tool calls, a source read, evidence, a supersession, a final, model calls with
  compactions), and fails a tampered one with exit 1;
* the ``registre`` command says in one line which extra it needs (exit 3).

It needs the package index. When the index cannot be reached the test is skipped, saying so
-- unless ``REGISTRE_TEST_INDEX=1`` (``make test`` sets it), where it fails: a run that is
meant to check the install never passes without having checked it.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from registre.attest.notes import Signer
from registre.ledger import Ledger, export_thread, source_ref

pytestmark = pytest.mark.index

ROOT = Path(__file__).resolve().parents[1]
INDEX_ENV = "REGISTRE_TEST_INDEX"
ALLOWED = {"registre", "cryptography", "rfc8785", "cffi", "pycparser"}
FORBIDDEN = {"sqlalchemy", "sqlmodel", "psycopg", "psycopg-binary", "aiohttp", "click"}
PIP_TIMEOUT = 240


def _clean_env() -> dict[str, str]:
    """The environment without anything that would let the venv see this checkout."""
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PYTHON", "VIRTUAL_ENV"))}
    env["PIP_DISABLE_PIP_VERSION_CHECK"] = "1"
    return env


def _pip(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "pip", *args],
        capture_output=True,
        text=True,
        timeout=PIP_TIMEOUT,
        check=False,
        cwd=cwd,
        env=_clean_env(),
    )


def _index_or_skip(work: Path) -> None:
    """Skip (or, with REGISTRE_TEST_INDEX=1, fail) when the package index cannot be reached:
    probed by downloading rfc8785, one of the two dependencies, without its own."""
    probe = _pip("download", "--no-deps", "--dest", str(work / "probe"), "rfc8785", cwd=work)
    if probe.returncode == 0:
        return
    why = f"the package index cannot be reached: {probe.stderr.strip().splitlines()[-1:]}"
    if os.environ.get(INDEX_ENV) == "1":
        pytest.fail(f"{why} ({INDEX_ENV}=1: this run must check the auditor's install)")
    pytest.skip(f"{why}; set {INDEX_ENV}=1 to fail instead (make test does)")


def _wheel(work: Path) -> Path:
    """The wheel of this checkout, built from a copy (the build writes beside its source)."""
    source = work / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy2(ROOT / name, source / name)
    shutil.copytree(
        ROOT / "registre", source / "registre", ignore=shutil.ignore_patterns("__pycache__")
    )
    built = _pip("wheel", "--no-deps", "--wheel-dir", str(work / "dist"), str(source), cwd=work)
    assert built.returncode == 0, built.stdout + built.stderr
    (wheel,) = (work / "dist").glob("registre-*.whl")
    return wheel


def _record_bundle(folder: Path) -> tuple[Path, Path]:
    """A small real investigation, checkpointed and exported: ``(bundle, operator.vkey)``."""
    signer = Signer.generate("slim.example/ledger")
    with Ledger.open(str(folder / "ledger.db"), signer) as ledger:
        thread = ledger.create_thread("audit")
        task = thread.append(
            "turn", {"role": "user", "text": "Reconcile the Q3 ECL by segment."}, "user"
        )
        thread.pin("task_parameter", "Reconcile the Q3 ECL by segment.", task.seq)
        thread.read_source([source_ref("r1", "book.csv", "rows 1-40", passage="ECL 12.4m")])
        first = thread.evidence.upsert([{"text": "Offices ECL is 12.4m", "cites": ["r1"]}])
        for step in range(8):
            call = {"call_id": f"c{step}", "name": "sql", "arguments": {"segment": step}}
            thread.append("tool.call", call, "agent")
            rows = "\n".join(f"row {step}.{i}: exposure {100 + i}" for i in range(40))
            thread.append("tool.result", {"call_id": f"c{step}", "content": rows}, "tool:sql")
            thread.model_call("scripted-model", budget=1500)
        revised = thread.evidence.revise(
            first.accepted[0], {"text": "Offices ECL is 12.9m", "cites": ["r1"]}
        )
        thread.conclude("final", "Offices ECL is 12.9m", [revised.successor or ""])
        thread.checkpoint()
        bundle = folder / "audit.zip"
        export_thread(ledger, "audit", bundle)
    vkey = folder / "operator.vkey"
    vkey.write_text(signer.vkey() + "\n")
    return bundle, vkey


def _tampered(bundle: Path, folder: Path) -> Path:
    """``bundle`` with one entry's text changed (its member no longer has its digest)."""
    out = folder / "tampered.zip"
    with zipfile.ZipFile(bundle) as source, zipfile.ZipFile(out, "w") as target:
        for info in source.infolist():
            data = source.read(info)
            if info.filename.endswith("entries.jsonl"):
                data = data.replace(b"Offices ECL is 12.4m", b"Offices ECL is 99.9m", 1)
            target.writestr(info, data)
    return out


def test_the_auditors_install_verifies_a_bundle_with_two_dependencies(tmp_path: Path) -> None:
    _index_or_skip(tmp_path)
    wheel = _wheel(tmp_path)
    venv = tmp_path / "auditor"
    subprocess.run(
        [sys.executable, "-m", "venv", "--without-pip", str(venv)],
        check=True,
        timeout=120,
        env=_clean_env(),
    )
    python = venv / "bin" / "python"
    installed = _pip("--python", str(python), "install", str(wheel), cwd=tmp_path)
    assert installed.returncode == 0, installed.stdout + installed.stderr

    run = tmp_path / "elsewhere"  # not the checkout: nothing importable from the cwd
    run.mkdir()

    def auditor(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [str(python), *args],
            capture_output=True,
            text=True,
            timeout=120,
            check=False,
            cwd=run,
            env=_clean_env(),
        )

    listed = auditor(
        "-c",
        "import importlib.metadata as m; "
        "print('\\n'.join(sorted(d.metadata['Name'].lower() for d in m.distributions())))",
    )
    names = set(listed.stdout.split())
    assert names - {"pip", "setuptools"} <= ALLOWED, names
    assert {"registre", "cryptography", "rfc8785"} <= names
    assert not names & FORBIDDEN
    where = auditor("-c", "import registre; print(registre.__file__)")
    assert where.stdout.startswith(str(venv)), where.stdout + where.stderr

    bundle, vkey = _record_bundle(tmp_path)
    verified = auditor("-m", "registre.attest", "verify", str(bundle), "--key-file", str(vkey))
    assert verified.returncode == 0, verified.stderr
    assert verified.stdout.startswith("registre bundle verification: VERIFIED")
    assert verified.stderr == ""

    broken = _tampered(bundle, tmp_path)
    failed = auditor("-m", "registre.attest", "verify", str(broken), "--key-file", str(vkey))
    assert failed.returncode == 1 and "NOT VERIFIED" in failed.stdout
    assert failed.stderr.startswith("attest: error: step 1 (container)"), failed.stderr
    assert "Traceback" not in failed.stderr

    command = auditor("-m", "registre", "log", "audit")
    assert command.returncode == 3
    error, hint = command.stderr.splitlines()
    assert error.startswith("registre: error: the registre command needs the 'ledger' extra")
    assert hint.startswith("registre: hint: pip install 'registre[ledger]'")


@pytest.mark.parametrize("required", [True, False])
def test_an_unreachable_index_never_passes(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, required: bool
) -> None:
    """No index: skipped with the reason, or failed under REGISTRE_TEST_INDEX=1."""
    down = subprocess.CompletedProcess([], 1, "", "ERROR: No matching distribution found")
    monkeypatch.setattr(sys.modules[__name__], "_pip", lambda *args, **kwargs: down)
    if required:
        monkeypatch.setenv(INDEX_ENV, "1")
        with pytest.raises(pytest.fail.Exception, match="must check the auditor's install"):
            _index_or_skip(tmp_path)
    else:
        monkeypatch.delenv(INDEX_ENV, raising=False)
        with pytest.raises(pytest.skip.Exception, match="cannot be reached"):
            _index_or_skip(tmp_path)
