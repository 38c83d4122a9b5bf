"""The thread as a Jupyter notebook (nbformat 4), for the analyst who wants to re-run it.

``registre transcript THREAD --format ipynb``. Every entry appears once, in seq order:

* turns, decisions and lifecycle events as markdown cells (the wording of the transcript),
  every markdown character of recorded text escaped: no link, image or HTML of the
  transcript renders (issue 29 item 11);
* a call of a tool known to run code in a language -- a Python runner with ``code``,
  ``source`` or ``script``, a shell runner with ``command``/``cmd``, a SQL runner with
  ``query``/``sql`` -- as a **code cell** whose source is :data:`RECORD_GUARD` then that code
  and whose output is the paired ``tool.result`` (a stream, or an error output when
  ``is_error``); shell and SQL code get a ``%%bash`` / ``%%sql`` cell magic so a reader sees
  what it is. The guard raises if the cell is run (a notebook is a record: *Run All* runs
  nothing an agent's tool was given); the reader who means to re-run a cell deletes it. A
  call of any other tool, whatever its arguments, is never a code cell;
* other tool calls, and results with no code cell to go to, as markdown with the arguments
  and output fenced;
* each ``context.compaction`` as a visible marker cell: the range folded, the summary lines
  with their pointers, tokens before and after.

Each cell's metadata carries ``registre.entries``: the seq and hex leaf hash of every entry
it shows, so a cell can be checked against the ledger (``registre prove inclusion``). The
notebook is validated with ``nbformat.validate`` before it is returned; cells are never
executed (no outputs are invented: an output is what the ledger recorded).

Needs the ``notebook`` extra (``pip install 'registre[notebook]'``); without it
:class:`NotebookUnavailableError` says what to install.
"""

from __future__ import annotations

import importlib
import json
from typing import TYPE_CHECKING, Any, Final

from registre.attest.entries import Entry
from registre.errors import RefusedError
from registre.kinds import CONTEXT_COMPACTION, TOOL_CALL, TOOL_RESULT
from registre.ledger.exchange.transcript import describe

if TYPE_CHECKING:
    from registre.ledger import Thread

__all__ = ["RECORD_GUARD", "NotebookUnavailableError", "render_notebook"]

_SHELL_TOOLS: Final = frozenset({"bash", "shell", "sh", "terminal", "run_shell", "execute_bash"})
_SQL_TOOLS: Final = frozenset({"sql", "query", "run_sql", "execute_sql"})
_PYTHON_TOOLS: Final = frozenset(
    {"python", "ipython", "run_python", "execute_python", "python_exec", "code_interpreter"}
)
_CODE_KEYS: Final = ("code", "source", "script")
RECORD_GUARD: Final = (
    'raise RuntimeError("registre: a record of what the agent ran, shown with its recorded '
    'output; delete this line to run it again")'
)
"""The first line of every code cell: running the cell raises before anything else."""


class NotebookUnavailableError(RefusedError):
    """``nbformat`` is not installed: the ipynb format needs the ``notebook`` extra."""

    hint = "pip install 'registre[notebook]'"


def code_of(name: str, arguments: object) -> str | None:
    """The code a tool call runs, as a cell source, or None when the call runs no code."""
    if not isinstance(arguments, dict):
        return None
    for key in _CODE_KEYS:
        value = arguments.get(key)
        if name in _PYTHON_TOOLS and isinstance(value, str):
            return value
    command = arguments.get("command", arguments.get("cmd"))
    if name in _SHELL_TOOLS and isinstance(command, str):
        return "%%bash\n" + command
    query = arguments.get("query", arguments.get("sql"))
    if name in _SQL_TOOLS and isinstance(query, str):
        return "%%sql\n" + query
    return None


def render_notebook(thread: Thread) -> str:
    """The notebook of ``thread`` as JSON text (module docstring). Raises
    NotebookUnavailableError without nbformat, and nbformat's ValidationError if the
    notebook built is not valid (a bug, never silently written)."""
    try:  # nbformat has no type hints: use it as Any
        nbformat: Any = importlib.import_module("nbformat")
        v4: Any = importlib.import_module("nbformat.v4")
    except ImportError:
        raise NotebookUnavailableError(
            "the ipynb format needs the nbformat package, which is not installed"
        ) from None
    head = thread.head()
    cells: list[Any] = [
        v4.new_markdown_cell(
            f"# Thread {thread.id}\n\nOrigin `{thread.origin}`, {head.size} entries. Each "
            "cell's metadata `registre.entries` names the entries it shows (seq and leaf "
            "hash); outputs are what the ledger recorded, never re-run."
        )
    ]
    pending: dict[str, Any] = {}  # call_id -> the code cell waiting for its result
    for entry in thread.entries():
        cell = _cell(v4, entry, pending)
        if cell is not None:
            cells.append(cell)
    notebook = v4.new_notebook(cells=cells)
    notebook.metadata["registre"] = {
        "thread": thread.id,
        "origin": thread.origin,
        "size": head.size,
        "record": True,
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


def _mark(cell: Any, *entries: Entry) -> Any:
    cell.metadata["registre"] = {
        "entries": [{"seq": e.seq, "leaf_hash": e.leaf_hash.hex()} for e in entries]
    }
    return cell


def _cell(v4: Any, entry: Entry, pending: dict[str, Any]) -> Any | None:
    body = entry.body
    if entry.kind == TOOL_CALL:
        arguments = body.get("arguments")
        if arguments is None and "arguments_json" in body:
            arguments = json.loads(str(body["arguments_json"]))
        code = code_of(str(body["name"]), arguments)
        if code is not None:
            cell = _mark(v4.new_code_cell(source=f"{RECORD_GUARD}\n{code}"), entry)
            cell.metadata["registre"]["tool"] = body["name"]
            pending[str(body["call_id"])] = cell
            return cell
    if entry.kind == TOOL_RESULT:
        cell = pending.pop(str(body["call_id"]), None)
        if cell is not None:
            content = str(body["content"])
            if body.get("is_error") is True:
                output = v4.new_output(
                    "error", ename="ToolError", evalue=content[:200], traceback=[content]
                )
            else:
                output = v4.new_output("stream", name="stdout", text=content)
            cell.outputs.append(output)
            cell.metadata["registre"]["entries"].append(
                {"seq": entry.seq, "leaf_hash": entry.leaf_hash.hex()}
            )
            return None
    block = describe(entry)
    parts = [f"**{_md(block.title)}**  \n<sub>{_md(block.meta)}</sub>"]
    if entry.kind == CONTEXT_COMPACTION:
        parts[0] = "---\n\n" + parts[0]
    if block.text:
        parts.append(_md(block.text))
    if block.code is not None:
        parts.append(_fence(block.code))
    if block.items:
        parts.append("\n".join(f"- {_md(item)}" for item in block.items))
    if entry.kind == CONTEXT_COMPACTION:
        parts.append("---")
    return _mark(v4.new_markdown_cell("\n\n".join(parts)), entry)


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


def _fence(code: str) -> str:
    longest = max((len(run) for run in code.split("\n") if set(run) == {"`"}), default=0)
    ticks = "`" * max(3, longest + 1)
    while ticks in code:
        ticks += "`"
    return f"{ticks}\n{code}\n{ticks}"
