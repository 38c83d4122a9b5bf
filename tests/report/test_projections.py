"""The thread as a notebook and as a slide deck."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
from click.testing import CliRunner

from registre.cli.commands import cli
from registre.ledger import Ledger
from registre.report.notebook import RECORD_GUARD, code_of, render_notebook
from registre.report.slides import render_slides
from tests.report.conftest import Investigation


def test_notebook_validates_and_accounts_for_every_entry(investigation: Investigation) -> None:
    with Ledger.open(str(investigation.db), create=False) as ledger:
        thread = ledger.thread("q3-review")
        text = render_notebook(thread)
        entries = {entry.seq: entry for entry in thread.entries()}
    notebook = nbformat.reads(text, as_version=4)
    nbformat.validate(notebook)
    shown = [item for cell in notebook.cells[1:] for item in cell.metadata["registre"]["entries"]]
    # every entry once, in order, with its leaf hash
    assert [item["seq"] for item in shown] == sorted(entries)
    for item in shown:
        assert item["leaf_hash"] == entries[item["seq"]].leaf_hash.hex()
    # sql calls became code cells carrying their recorded result as output
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert code and code[0].source.startswith(f"{RECORD_GUARD}\n%%sql\nselect * from risk")
    assert code[0].outputs[0].output_type == "stream"
    assert "exposure 100" in code[0].outputs[0].text
    assert len(code[0].metadata["registre"]["entries"]) == 2  # the call and its result
    # each compaction is a visible marker cell
    markers = [c for c in notebook.cells if "compaction" in c.source and c.source.startswith("---")]
    assert len(markers) == sum(1 for e in entries.values() if e.kind == "context.compaction")


def test_notebook_runs_attacker_text_fail(tmp_path: Path) -> None:
    """Markdown in transcript text stays text (no link, no image), a tool not known to run
    Python never becomes a code cell whatever its arguments, and every code cell raises if
    run (issue 29 item 11)."""
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
            {"name": "python", "arguments": {"code": "print(1)"}, "call_id": "c2"},
            "agent",
        )
        notebook = nbformat.reads(render_notebook(thread), as_version=4)
    code = [cell for cell in notebook.cells if cell.cell_type == "code"]
    assert [cell.metadata["registre"]["tool"] for cell in code] == ["python"]
    assert all(cell.source.startswith(RECORD_GUARD + "\n") for cell in code)
    with pytest.raises(RuntimeError, match="a record"):
        exec(code[0].source.split("\n", 1)[0])  # the guard line: what Run All meets first
    assert notebook.metadata["registre"]["record"] is True
    renderer = markdown_it.MarkdownIt("commonmark", {"linkify": False})
    for cell in notebook.cells:
        if cell.cell_type == "markdown":
            html = renderer.render(cell.source)
            assert "<a " not in html and "<img" not in html, html


def test_code_of_recognises_code_running_tools() -> None:
    assert code_of("python", {"code": "print(1)"}) == "print(1)"
    assert code_of("bash", {"command": "ls"}) == "%%bash\nls"
    assert code_of("sql", {"query": "select 1"}) == "%%sql\nselect 1"
    assert code_of("search", {"query": "ECL"}) is None
    assert code_of("bash", ["ls"]) is None
    assert code_of("web_fetch", {"code": "import os"}) is None  # not known to run Python


def test_slides_tell_task_chapters_and_conclusions(investigation: Investigation) -> None:
    with Ledger.open(str(investigation.db), create=False) as ledger:
        thread = ledger.thread("q3-review")
        deck = "".join(render_slides(thread))
        chapters = sum(
            1 for e in thread.entries() if e.kind == "context.compaction" and e.body.get("summary")
        )
    assert deck.count('<section class="slide"') == 1 + chapters + 1
    assert "Reconcile the Q3 ECL by segment" in deck  # the task
    assert "threshold EUR 2m" in deck  # the pin
    assert f"Conclusion {investigation.final_id}" in deck
    assert "Offices ECL is 12.9m" in deck  # the evidence the final cites
    assert " src=" not in deck and "http" not in deck


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
