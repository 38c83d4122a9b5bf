"""`registre conclude`, `registre conclusions` and `registre trace`.

``conclude`` records ONE ``conclusion.compute`` / ``conclusion.final`` entry; a refusal (a
stale or inactive citation, ...) is recorded too and exits 2 with the rule's sentence and the
seq. ``trace`` walks a conclusion back to the passages behind it::

    cc-2 final active fresh (seq 4) Revenue grew by about 10% in 2023.
    └── cc-1 compute active fresh (seq 3) Revenue grew 10.5% ...
        ├── ev-1 active (seq 2) Revenue in 2023 was EUR 4.2 million.
        │   └── r1 annual-report-2023.pdf p. 4 sha256 86ae99d1d347… (source.read seq 1)
        ...
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import click

from registre.cli.files import terminal_text
from registre.cli.options import (
    actor_option,
    dry_run_option,
    echo_json,
    json_option,
    ledger_options,
    open_ledger,
    preview,
    read_text,
    refusal,
)
from registre.ledger import (
    ConclusionRecord,
    EvidenceRecord,
    LifecycleRefusedError,
    TraceNode,
    trace_to_json,
)
from registre.lifecycle import ComputeRequest, FinalRequest, LifecycleFormatError, parse_request

__all__ = [
    "conclude_command",
    "conclusion_json",
    "conclusions_command",
    "trace_command",
    "trace_lines",
]

TEXT_WIDTH = 72


@click.command("conclude")
@click.argument("thread_id", metavar="THREAD")
@click.option("--kind", type=click.Choice(("compute", "final")), required=True)
@click.option(
    "--text", "text", required=True, help="The conclusion, written out (or @FILE, - for stdin)."
)
@click.option(
    "--cite",
    "cites",
    multiple=True,
    help="Evidence id (or, for a final, compute id) relied on; repeatable.",
)
@actor_option()
@dry_run_option
@json_option
@ledger_options
def conclude_command(
    thread_id: str,
    kind: str,
    text: str,
    cites: tuple[str, ...],
    actor: str,
    dry_run: bool,
    as_json: bool,
    db: str | None,
    key_file: Path | None,
) -> None:
    """Record a compute or final conclusion citing evidence (and computes)."""
    text = read_text(text, "--text")
    try:
        request = parse_request(f"conclusion.{kind}", {"text": text, "cites": list(cites)})
    except LifecycleFormatError as exc:  # name the option, not the body field
        path = exc.path.replace("request.cites", "--cite").replace("request.text", "--text")
        raise LifecycleFormatError(path, exc.problem).with_hint(exc.hint) from None
    assert isinstance(request, (ComputeRequest, FinalRequest))
    if dry_run:
        value = {"text": text, "cites": list(cites)}
        return preview(db, key_file, thread_id, f"conclusion.{kind}", value, "--text")
    with open_ledger(db, key_file, need_key=True) as ledger:
        try:
            result = ledger.thread(thread_id).conclude(
                kind, request.text, request.cites, actor=actor
            )
        except LifecycleRefusedError as exc:
            raise refusal(exc) from None
    if as_json:
        echo_json({"seq": result.seq, "id": result.id, "kind": kind, "accepted": True})
    else:
        click.echo(f"seq {result.seq}\t{result.id}\t{kind} accepted")


@click.command("conclusions")
@click.argument("thread_id", metavar="THREAD")
@click.option("--stale", is_flag=True, help="Only the active conclusions left stale.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
@ledger_options
def conclusions_command(
    thread_id: str, stale: bool, as_json: bool, db: str | None, key_file: Path | None
) -> None:
    """One line per conclusion version: id, kind, status, fresh/stale, seq, cites, text."""
    with open_ledger(db, key_file) as ledger:
        book = ledger.thread(thread_id).conclusions
        records = book.list(stale=True, status="active") if stale else book.list()
    if as_json:
        click.echo(json.dumps([conclusion_json(r) for r in records], ensure_ascii=False))
        return
    for r in records:
        freshness = "stale" if r.stale else "fresh"
        click.echo(
            terminal_text(
                f"{r.id}\t{r.kind}\t{r.status}\t{freshness}\tseq {r.seq}\t{','.join(r.cites)}\t"
                f"{_short(r.text)}"
            )
        )


@click.command("trace")
@click.argument("thread_id", metavar="THREAD")
@click.argument("conclusion_id", metavar="CONCLUSION")
@click.option("--json", "as_json", is_flag=True, help="Print the tree as one JSON object.")
@ledger_options
def trace_command(
    thread_id: str, conclusion_id: str, as_json: bool, db: str | None, key_file: Path | None
) -> None:
    """CONCLUSION -> evidence -> source references -> the source.read entries, with seqs."""
    with open_ledger(db, key_file) as ledger:
        tree = ledger.thread(thread_id).trace(conclusion_id)
    if as_json:
        click.echo(json.dumps(trace_to_json(tree), ensure_ascii=False))
        return
    for line in trace_lines(tree):
        click.echo(terminal_text(line))


def trace_lines(
    node: TraceNode, prefix: str = "", last: bool = True, root: bool = True
) -> list[str]:
    """The readable tree of ``node``, one string per line."""
    branch = "" if root else ("└── " if last else "├── ")
    lines = [prefix + branch + _describe(node.item)]
    child_prefix = prefix if root else prefix + ("    " if last else "│   ")
    leaves: list[Any] = [*node.children, *node.references]
    for index, child in enumerate(leaves):
        is_last = index == len(leaves) - 1
        if isinstance(child, TraceNode):
            lines += trace_lines(child, child_prefix, is_last, root=False)
        else:
            lines.append(
                child_prefix
                + ("└── " if is_last else "├── ")
                + f"{child.ref} {child.source} {child.location} sha256 {child.sha256[:12]}… "
                f"(source.read seq {child.seq})"
            )
    return lines


def _describe(item: ConclusionRecord | EvidenceRecord) -> str:
    if isinstance(item, ConclusionRecord):
        freshness = "stale" if item.stale else "fresh"
        head = f"{item.id} {item.kind} {item.status} {freshness} (seq {item.seq})"
    else:
        head = f"{item.id} {item.status} (seq {item.seq})"
    if item.successor is not None:
        head += f" -> {item.successor}"
    return f"{head} {_short(item.text)}"


def conclusion_json(record: ConclusionRecord) -> dict[str, Any]:
    """The JSON form of a conclusion record (``conclusions --json``)."""
    return {
        "id": record.id,
        "kind": record.kind,
        "status": record.status,
        "stale": record.stale,
        "text": record.text,
        "cites": list(record.cites),
        "relies_on": list(record.relies_on),
        "successor": record.successor,
        "predecessor": record.predecessor,
        "seq": record.seq,
        "changed_seq": record.changed_seq,
    }


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= TEXT_WIDTH else flat[: TEXT_WIDTH - 1] + "…"
