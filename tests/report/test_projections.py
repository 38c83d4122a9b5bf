"""The investigation as a notebook and as a slide deck (issue 33 item 3, issue 29 item 11)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner

import registre
from registre.cli.commands import cli
from registre.ledger import Ledger
from registre.report import gather
from registre.report.notebook import CELL_ENTRIES, code_of, render_notebook
from registre.report.slides import render_slides
from tests.report.conftest import Investigation

ROOT = Path(registre.__file__).parent.parent


def _code_cells(notebook: nbformat.NotebookNode) -> list[nbformat.NotebookNode]:
    return [cell for cell in notebook.cells if cell.cell_type == "code"]


def _run_all(notebook: nbformat.NotebookNode, folder: Path, *flags: str) -> str:
    """What *Run All* does to the code cells: run them in order in one Python process (the
    notebook's kernel is python3), in the notebook's folder; their standard output."""
    source = "\n".join(cell.source for cell in _code_cells(notebook))
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, *flags, "-c", source],
        cwd=folder,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_notebook_validates_and_accounts_for_every_entry(investigation: Investigation) -> None:
    with Ledger.open(str(investigation.db), create=False) as ledger:
        thread = ledger.thread("q3-review")
        text = render_notebook(thread)
        entries = {entry.seq: entry for entry in thread.entries()}
    notebook = nbformat.reads(text, as_version=4)
    nbformat.validate(notebook)
    shown = [item for cell in notebook.cells for item in cell.metadata["registre"]["entries"]]
    # every entry once, in order, with its leaf hash
    assert [item["seq"] for item in shown] == sorted(entries)
    for item in shown:
        assert item["leaf_hash"] == entries[item["seq"]].leaf_hash.hex()
    # read from a database: the first cell says no bundle was verified
    assert "NO VERDICT" in notebook.cells[0].source
    assert notebook.metadata["registre"]["verdict"].startswith("NO VERDICT")
    # entries share cells (each of the many compactions of this small budget has its own)
    compactions = sum(1 for e in entries.values() if e.kind == "context.compaction")
    # (opening, check, contents, heading; a compaction's cell and the run before it each)
    assert len(notebook.cells) <= 4 + 2 * compactions + 1 + len(entries) // CELL_ENTRIES
    # the sql the agent ran is fenced as sql, its recorded result after it; no cell magic
    markdown = "\n".join(c.source for c in notebook.cells if c.cell_type == "markdown")
    assert "```sql\nselect * from risk where seg=0\n```" in markdown
    assert "row 0.0: exposure 100" in markdown
    assert "%%" not in "".join(cell.source for cell in _code_cells(notebook))
    # each compaction is a visible marker cell of its own
    markers = [c for c in notebook.cells if c.source.startswith("---") and "compaction" in c.source]
    assert len(markers) == sum(1 for e in entries.values() if e.kind == "context.compaction")
    assert all(len(c.metadata["registre"]["entries"]) == 1 for c in markers)
    # one section per request (the one user turn), with the contents before it
    headings = [c for c in notebook.cells if c.source.startswith("## ")]
    assert [c.source.split("\n")[0] for c in headings][:2] == [
        "## Contents",
        "## 1\\. user\\: Reconcile the Q3 ECL by segment; threshold EUR 2m\\.",
    ]


def test_notebook_from_a_bundle_opens_with_the_verdict_and_runs_all(
    investigation: Investigation, tmp_path: Path
) -> None:
    """Run All works under the Python kernel (issue 33 item 3): the one code cell checks the
    verdict again from the bundle beside the notebook -- or, without registre, prints the
    command -- and nothing an agent ran is run."""
    data = gather(investigation.bundle, investigation.policy)
    line = data.verification.verdict()
    (tmp_path / "bundle.zip").write_bytes(investigation.bundle.read_bytes())
    notebook = nbformat.reads(render_notebook(data, bundle="bundle.zip"), as_version=4)
    assert notebook.cells[0].source.startswith("# q3\\-review: the investigation, as recorded")
    rest = line[len("VERIFIED") :].replace(":", "\\:")
    assert f"⚠ **VERIFIED**{rest}" in notebook.cells[0].source
    code = _code_cells(notebook)
    assert len(code) == 1 and notebook.metadata["kernelspec"]["language"] == "python"
    for cell in code:
        compile(cell.source, "cell", "exec")  # Python, no magic, no shell escape
        assert not any(row.lstrip().startswith(("%", "!")) for row in cell.source.split("\n"))
    assert _run_all(notebook, tmp_path).strip() == line
    # without registre importable (isolated mode): still runs, and says what to run
    assert "python -m registre.attest verify" in _run_all(notebook, tmp_path, "-I", "-S")


def test_notebook_runs_attacker_text_fail(tmp_path: Path) -> None:
    """Markdown in transcript text stays text (no link, no image), and no code an agent's
    tool was given ever becomes a code cell (issue 29 item 11): the only code cell is
    registre's own check."""
    markdown_it = pytest.importorskip("markdown_it")
    from registre.attest.notes import Signer

    with Ledger.open(str(tmp_path / "n.db"), Signer.generate("nb.example/log")) as ledger:
        thread = ledger.create_thread("t1")
        thread.append(
            "turn",
            {
                "role": "user",
                "text": "[click](javascript:alert(1)) ![](http://evil.example/p.png) "
                "<img src=x onerror=alert(1)> <http://evil.example>",
            },
            "user",
        )
        thread.append(
            "tool.call",
            {
                "name": "web_fetch",
                "arguments": {"url": "http://x", "code": "import os; os.system('id')"},
                "call_id": "c1",
            },
            "agent",
        )
        thread.append("tool.result", {"call_id": "c1", "content": "[a](javascript:x)"}, "tool")
        thread.append(
            "tool.call",
            {
                "name": "python",
                "arguments": {"code": "print(1)\n```\n![](http://e/x)"},
                "call_id": "c2",
            },
            "agent",
        )
        notebook = nbformat.reads(render_notebook(thread), as_version=4)
    code = _code_cells(notebook)
    assert len(code) == 1 and "os.system" not in code[0].source and "print(1)" not in code[0].source
    assert _run_all(notebook, tmp_path).startswith("For a verdict:")
    assert notebook.metadata["registre"]["record"] is True
    renderer = markdown_it.MarkdownIt("commonmark", {"linkify": False})
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            html = renderer.render(cell.source)
            assert "<a " not in html and "<img" not in html, html
    assert "```python\nprint(1)" in "".join(c.source for c in notebook.cells)


def test_code_of_recognises_code_running_tools() -> None:
    assert code_of("python", {"code": "print(1)"}) == ("python", "print(1)")
    assert code_of("bash", {"command": "ls"}) == ("bash", "ls")
    assert code_of("sql", {"query": "select 1"}) == ("sql", "select 1")
    assert code_of("search", {"query": "ECL"}) is None
    assert code_of("bash", ["ls"]) is None
    assert code_of("web_fetch", {"code": "import os"}) is None  # not known to run Python


def test_slides_tell_task_findings_compactions_and_finals(investigation: Investigation) -> None:
    data = gather(investigation.bundle, investigation.policy)
    deck = "".join(render_slides(data))
    slides = deck.split('<section class="slide"')[1:]
    chapters = [s.split('<div class="chapter">', 1)[1].split("<", 1)[0] for s in slides[1:]]
    assert chapters == [
        "the task",
        *["key findings"] * 2,  # the final cites the revised evidence and a compute
        "compactions",
        "refusals",
        "final conclusions",
        "checking it",
    ]
    line = data.verification.verdict()
    title = slides[0]
    assert f'<div class="verdict warn" id="verdict"><b>VERIFIED</b>{line[8:]}</div>' in title
    assert "Reconcile the Q3 ECL by segment" in slides[1]  # the task
    assert "threshold EUR 2m" in slides[1]  # its pin
    assert "Offices ECL is 12.9m" in deck  # the evidence the final cites
    assert "r1: book.csv, rows 1-40, read at #" in deck  # down to the read entry
    assert f"Final conclusion {investigation.final_id}" in slides[-2]
    assert "compactions kept the context within budget" in deck
    assert "inactive_evidence" in slides[-3]  # the refused final, and why
    assert " src=" not in deck and "http" not in deck


def test_slides_from_a_database_say_no_bundle_was_verified(investigation: Investigation) -> None:
    with Ledger.open(str(investigation.db), create=False) as ledger:
        deck = "".join(render_slides(ledger.thread("q3-review")))
    title = deck.split('<section class="slide"')[1]
    assert "NO VERDICT (read from a ledger database; no bundle was verified)" in title
    assert "registre report bundle.zip" in deck


def test_slide_text_is_escaped(tmp_path: Path) -> None:
    from tests.report.conftest import build

    hostile = build(tmp_path, steps=2, marker="</section><script>alert(1)</script>")
    deck = "".join(render_slides(gather(hostile.bundle, hostile.policy)))
    assert "<script>alert(1)" not in deck


def test_cli_transcript_writes_notebook_and_slides(
    investigation: Investigation, tmp_path: Path
) -> None:
    runner = CliRunner()
    for fmt, name in (("ipynb", "thread.ipynb"), ("slides", "deck.html")):
        out = tmp_path / name
        result = runner.invoke(
            cli,
            [
                "transcript",
                "q3-review",
                "--format",
                fmt,
                "-o",
                str(out),
                "--db",
                str(investigation.db),
            ],
        )
        assert result.exit_code == 0, result.output
        assert out.stat().st_size > 0
    assert json.loads((tmp_path / "thread.ipynb").read_text())["nbformat"] == 4


def test_cli_report_writes_slides_and_notebook_with_the_verdict(
    investigation: Investigation, tmp_path: Path
) -> None:
    folder = tmp_path / "out"
    folder.mkdir()
    result = CliRunner().invoke(
        cli,
        [
            "report",
            str(investigation.bundle),
            "--key",
            investigation.vkey,
            "-o",
            str(folder / "audit.html"),
            "--slides",
            str(folder / "slides.html"),
            "--notebook",
            str(folder / "thread.ipynb"),
        ],
    )
    assert result.exit_code == 0, result.output
    line = result.output.splitlines()[0].removeprefix("registre bundle verification: ")
    notebook = nbformat.reads((folder / "thread.ipynb").read_text(), as_version=4)
    assert notebook.metadata["registre"]["verdict"] == line
    assert _run_all(notebook, folder).strip() == line  # the bundle, found from the notebook
    assert line[8:] in (folder / "slides.html").read_text(encoding="utf-8")
