"""The investigation as a Jupyter notebook (nbformat 4): the record, to read and to search.

``registre report BUNDLE.zip --notebook FILE`` (from a verified bundle, with its verdict) or
``registre transcript THREAD --format ipynb`` (from a ledger database: no bundle verified, and
the first cell says so). Guarantees (issue 33 item 3, issue 29 item 11):

* the first cell is the verdict line of :meth:`VerifyReport.summary` (the terminal's, word
  for word), what was not checked and why, and the history at the checkpoint; the second is
  the only code cell: plain Python that checks the verdict again from the bundle when
  registre and the bundle are at hand, and otherwise prints the command that does. *Run
  All* therefore works under the notebook's Python kernel, and runs nothing an agent's tool
  was given;
* the entries come in sections, one per request: a user turn starts a section, headed by
  who asked, what, the entries it spans and what happened in it (tool calls, evidence
  proposals, refusals, compactions, model calls), with a table of contents before them;
* every entry appears once, in seq order, as markdown, consecutive entries sharing a cell (at
  most :data:`CELL_ENTRIES` entries or about :data:`CELL_CHARS` characters); each
  ``context.compaction`` is a marker cell of its own. Code an agent ran -- a call of a tool
  known to run Python, shell or SQL -- is fenced with its language (``python``, ``bash``,
  ``sql``), never a code cell and never a cell magic; refused requests are marked
  ``refused``;
* every markdown character of recorded text is escaped: no link, image or HTML of the
  transcript renders.

Each cell's metadata carries ``registre.entries``: the seq and hex leaf hash of every entry it
shows (none for the headings and the check), so a cell can be checked against the ledger
(``registre prove inclusion``). The notebook is validated with ``nbformat.validate`` before it
is returned; no cell is executed.

Needs the ``notebook`` extra (``pip install 'registre[notebook]'``); without it
:class:`NotebookUnavailableError` says what to install.
"""

from __future__ import annotations

import importlib
import json
from collections import Counter
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Final

from registre.attest.entries import Entry
from registre.attest.verify import plural
from registre.errors import RefusedError
from registre.kinds import (
    CONTEXT_COMPACTION,
    EVIDENCE_UPSERT,
    MODEL_CALL,
    TOOL_CALL,
    TURN,
)
from registre.ledger.exchange.transcript import Block, describe
from registre.report.gathering import Record, ReportData, as_record
from registre.report.html import GAP_ADVICE, entry_meta

if TYPE_CHECKING:
    from registre.ledger import Thread

__all__ = [
    "CELL_CHARS",
    "CELL_ENTRIES",
    "NotebookUnavailableError",
    "check_cell",
    "code_of",
    "render_notebook",
]

CELL_ENTRIES: Final = 30
"""Entries shown in one markdown cell at most."""
CELL_CHARS: Final = 8000
"""A cell takes no more entries once its markdown is this long."""

_SHELL_TOOLS: Final = frozenset({"bash", "shell", "sh", "terminal", "run_shell", "execute_bash"})
_SQL_TOOLS: Final = frozenset({"sql", "query", "run_sql", "execute_sql"})
_PYTHON_TOOLS: Final = frozenset(
    {"python", "ipython", "run_python", "execute_python", "python_exec", "code_interpreter"}
)
_CODE_KEYS: Final = ("code", "source", "script")


class NotebookUnavailableError(RefusedError):
    """``nbformat`` is not installed: the ipynb format needs the ``notebook`` extra."""

    hint = "pip install 'registre[notebook]'"


def code_of(name: str, arguments: object) -> tuple[str, str] | None:
    """``(language, code)`` of a tool call that runs code -- ``python``, ``bash`` or ``sql``
    -- or None when the call runs no code (a tool not known to run code, whatever its
    arguments)."""
    if not isinstance(arguments, dict):
        return None
    for key in _CODE_KEYS:
        value = arguments.get(key)
        if name in _PYTHON_TOOLS and isinstance(value, str):
            return "python", value
    command = arguments.get("command", arguments.get("cmd"))
    if name in _SHELL_TOOLS and isinstance(command, str):
        return "bash", command
    query = arguments.get("query", arguments.get("sql"))
    if name in _SQL_TOOLS and isinstance(query, str):
        return "sql", query
    return None


def check_cell(record: Record, bundle: str | None = None) -> str:
    """The notebook's one code cell: plain Python (any kernel's ``python3``) that verifies
    ``bundle`` (default: the record's) again with the trust the verdict was reached with and
    prints the verdict line, or prints the command that does when registre or the bundle is
    not at hand. Every recorded or given string is written with :func:`repr`."""
    if record.verification is None or record.log_key is None:
        command = (
            f"registre export {record.thread} -o bundle.zip && python -m registre.attest "
            "verify bundle.zip --key-file operator.vkey"
        )
        return (
            "# This notebook was read from a ledger database: no bundle was verified.\n"
            f"print('For a verdict:', {command!r})\n"
        )
    path = bundle if bundle is not None else (record.bundle or "bundle.zip")
    return (
        "# Check the verdict above again, offline, from the bundle (what\n"
        "# `python -m registre.attest verify` does). Nothing an agent ran is run here.\n"
        "import importlib.util\n"
        "import os\n"
        "\n"
        f"BUNDLE = {path!r}\n"
        f"LOG_KEY = {record.log_key!r}\n"
        f"WITNESSES = {list(record.witnesses)!r}\n"
        f"QUORUM = {record.quorum!r}\n"
        "if importlib.util.find_spec('registre') is None or not os.path.exists(BUNDLE):\n"
        "    print('To check it again: python -m registre.attest verify',\n"
        "          BUNDLE, '--key', LOG_KEY)\n"
        "else:\n"
        "    from registre.attest.notes import CosignatureVerifier, Verifier\n"
        "    from registre.attest.verify import TrustPolicy, report_of, verify_bundle\n"
        "    from registre.errors import RegistreError\n"
        "\n"
        "    policy = TrustPolicy(\n"
        "        log_key=Verifier.from_vkey(LOG_KEY),\n"
        "        witnesses=tuple(CosignatureVerifier.from_vkey(w) for w in WITNESSES),\n"
        "        quorum=QUORUM,\n"
        "    )\n"
        "    try:\n"
        "        report = verify_bundle(BUNDLE, policy)\n"
        "    except RegistreError as error:\n"
        "        report = report_of(error)\n"
        "        if report is None:\n"
        "            raise\n"
        "    print(report.verdict())\n"
    )


def render_notebook(source: Thread | ReportData | Record, *, bundle: str | None = None) -> str:
    """The notebook of ``source`` as JSON text (module docstring); ``bundle``: how its check
    cell names the bundle (a path relative to the notebook, say). Raises
    NotebookUnavailableError without nbformat, and nbformat's ValidationError if the notebook
    built is not valid (a bug, never silently written)."""
    try:  # nbformat has no type hints: use it as Any
        nbformat: Any = importlib.import_module("nbformat")
        v4: Any = importlib.import_module("nbformat.v4")
    except ImportError:
        raise NotebookUnavailableError(
            "the ipynb format needs the nbformat package, which is not installed"
        ) from None
    record = as_record(source)
    entries = list(record.entries)
    blocks = [describe(entry) for entry in entries]
    sections = _sections(entries)
    cells: list[Any] = [
        _mark(v4.new_markdown_cell(_opening(record, entries))),
        _mark(v4.new_code_cell(source=check_cell(record, bundle))),
    ]
    if sections:
        cells.append(_mark(v4.new_markdown_cell(_contents(sections, entries, blocks))))
    for number, (start, end) in enumerate(sections, start=1):
        part, shown = entries[start:end], blocks[start:end]
        cells.append(_mark(v4.new_markdown_cell(_heading(number, part, shown))))
        cells.extend(_entry_cells(v4, part, shown))
    notebook = v4.new_notebook(cells=cells)
    notebook.metadata["registre"] = {
        "thread": record.thread,
        "origin": record.origin,
        "size": len(entries),
        "record": True,
        "verdict": record.verdict().line(),
    }
    notebook.metadata["kernelspec"] = {
        "name": "python3",
        "display_name": "Python 3",
        "language": "python",
    }
    notebook.metadata["language_info"] = {"name": "python"}
    nbformat.validate(notebook)
    text: str = nbformat.writes(notebook)
    return text


# --- the cells ---------------------------------------------------------------------------------


_TONES: Final = {"ok": "✔", "warn": "⚠", "bad": "✘"}


def _opening(record: Record, entries: Sequence[Entry]) -> str:
    verdict = record.verdict()
    parts = [
        f"# {_md(record.thread)}: the investigation, as recorded",
        f"{_TONES[verdict.tone]} **{_md(verdict.headline)}**"
        f"{_md(verdict.line()[len(verdict.headline) :])}",
    ]
    if verdict.reasons:
        parts.append(
            "\n".join(
                f"- not checked, **{_md(name)}**: {_md(GAP_ADVICE.get(name, reason))}"
                for name, reason in verdict.reasons
            )
        )
    history = verdict.history_line()
    if history is not None:
        parts.append(_md(history[0].upper() + history[1:] + " (ordinary history)."))
    source = f"bundle {_md(record.bundle)}" if record.bundle else "the ledger database"
    parts.append(
        f"Origin {_md(record.origin)}, {_md(plural(len(entries), 'entry'))}, read from "
        f"{source}. The entries follow in sections, one per request. Each cell's metadata "
        "`registre.entries` names the entries it shows (seq and leaf hash). What the agent "
        "ran is shown as recorded, with its recorded output, and never run: *Run All* only "
        "checks the verdict again (the next cell)."
    )
    return "\n\n".join(parts)


def _mark(cell: Any, *entries: Entry) -> Any:
    cell.metadata["registre"] = {
        "entries": [{"seq": e.seq, "leaf_hash": e.leaf_hash.hex()} for e in entries]
    }
    return cell


def _sections(entries: Sequence[Entry]) -> list[tuple[int, int]]:
    """``(start, end)`` index ranges: a user turn starts a section."""
    starts = [0] if entries else []
    for index, entry in enumerate(entries):
        if index and entry.kind == TURN and entry.body.get("role") == "user":
            starts.append(index)
    return [(a, b) for a, b in zip(starts, [*starts[1:], len(entries)], strict=True)]


def _label(part: Sequence[Entry]) -> str:
    first = part[0]
    if first.kind == TURN and first.body.get("role") == "user":
        return f"{first.actor}: {_cut(str(first.body.get('text', '')), 90)}"
    return "Before the first request"


def _what_happened(part: Sequence[Entry], shown: Sequence[Block]) -> str:
    kinds = Counter(entry.kind for entry in part)
    refused = sum(1 for block in shown if block.refused)
    said = [
        plural(kinds[TOOL_CALL], "tool call"),
        plural(kinds[EVIDENCE_UPSERT], "evidence proposal"),
        plural(refused, "refused request"),
        plural(kinds[CONTEXT_COMPACTION], "compaction"),
        plural(kinds[MODEL_CALL], "model call"),
    ]
    return ", ".join(item for item in said if not item.startswith("0 "))


def _contents(
    sections: Sequence[tuple[int, int]], entries: Sequence[Entry], blocks: Sequence[Block]
) -> str:
    lines = ["## Contents", ""]
    for number, (start, end) in enumerate(sections, start=1):
        part = entries[start:end]
        lines.append(
            f"{number}\\. {_md(_label(part))} <sub>(entries {part[0].seq}–{part[-1].seq}"
            f"{'; refusals' if any(b.refused for b in blocks[start:end]) else ''})</sub>  "
        )
    return "\n".join(lines)


def _heading(number: int, part: Sequence[Entry], shown: Sequence[Block]) -> str:
    happened = _what_happened(part, shown)
    return f"## {number}\\. {_md(_label(part))}\n\nEntries {part[0].seq}–{part[-1].seq}" + (
        f": {_md(happened)}." if happened else "."
    )


def _entry_cells(v4: Any, part: Sequence[Entry], shown: Sequence[Block]) -> list[Any]:
    cells: list[Any] = []
    texts: list[str] = []
    held: list[Entry] = []

    def flush() -> None:
        if held:
            cells.append(_mark(v4.new_markdown_cell("\n\n".join(texts)), *held))
            texts.clear()
            held.clear()

    for entry, block in zip(part, shown, strict=True):
        text = _entry_md(entry, block)
        if entry.kind == CONTEXT_COMPACTION:
            flush()
            cells.append(_mark(v4.new_markdown_cell(text), entry))
            continue
        if held and (len(held) >= CELL_ENTRIES or sum(map(len, texts)) >= CELL_CHARS):
            flush()
        texts.append(text)
        held.append(entry)
    flush()
    return cells


def _entry_md(entry: Entry, block: Block) -> str:
    refused = "**refused** · " if block.refused else ""
    head = f"{refused}**{_md(block.title)}**  \n<sub>{_md(entry_meta(entry, block))}</sub>"
    if entry.kind == MODEL_CALL:
        return head
    parts = [head]
    if entry.kind == CONTEXT_COMPACTION:
        parts[0] = "---\n\n" + head
    if block.text:
        parts.append(_md(block.text))
    code = _recorded_code(entry)
    if code is not None:
        parts.append(_fence(code[1], code[0]))
    elif block.code is not None:
        parts.append(_fence(block.code, "text"))
    if block.items:
        parts.append("\n".join(f"- {_md(item)}" for item in block.items))
    if entry.kind == CONTEXT_COMPACTION:
        parts.append("---")
    return "\n\n".join(parts)


def _recorded_code(entry: Entry) -> tuple[str, str] | None:
    if entry.kind != TOOL_CALL:
        return None
    body = entry.body
    arguments = body.get("arguments")
    if arguments is None and "arguments_json" in body:
        try:
            arguments = json.loads(str(body["arguments_json"]))
        except ValueError:
            return None
    return code_of(str(body.get("name", "")), arguments)


_MARKDOWN_ESCAPES: Final = {
    **{ord(c): "\\" + c for c in "\\`*_{}[]()#+-.!|~:\"'=^$"},
    ord("&"): "&amp;",
    ord("<"): "&lt;",
    ord(">"): "&gt;",
}


def _md(text: str) -> str:
    """Text shown as written in markdown: every ASCII punctuation character that markdown
    reads escaped with a backslash (CommonMark), and the HTML special characters as
    entities -- so ``[click](javascript:…)`` and ``![](http://…)`` stay text, nothing in a
    ledger renders as a link, an image or markup in a notebook viewer."""
    return text.translate(_MARKDOWN_ESCAPES)


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " …"


def _fence(code: str, language: str) -> str:
    longest = max((len(run) for run in code.split("\n") if set(run) == {"`"}), default=0)
    ticks = "`" * max(3, longest + 1)
    while ticks in code:
        ticks += "`"
    return f"{ticks}{language}\n{code}\n{ticks}"
