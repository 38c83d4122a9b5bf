"""`registre source read` and `registre evidence upsert|revise|list|show|history`.

Writes (``source read``, ``evidence upsert``, ``evidence revise``) record ONE entry holding
the request and the rules' decision (``Thread.read_source`` / ``thread.evidence``). Exit codes:

* 0: everything asked for was accepted;
* 2 with one line on stderr: bad input (nothing written), or a request the rules refused --
  a rejected batch item or a refused revision -- whose refusal IS recorded (the line names
  the seq). Accepted items of a partly accepted batch are recorded and printed on stdout.

Reads (``list``, ``show``, ``history``) come from the derived tables.
"""

from __future__ import annotations

import hashlib
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
    read_body,
    refusal,
    report_batch,
)
from registre.errors import MalformedError
from registre.kinds import EVIDENCE_REVISE, EVIDENCE_UPSERT, SOURCE_READ
from registre.ledger import EvidenceRecord, LifecycleRefusedError
from registre.lifecycle import (
    EvidenceReviseRequest,
    LifecycleFormatError,
    ReadRequest,
    UpsertRequest,
    parse_request,
)

__all__ = ["PassageFileError", "evidence_group", "evidence_json", "source_group"]

ACTOR_HELP = "Who acts (recorded in the entry)."
STATUSES = ("active", "superseded", "retracted")
TEXT_WIDTH = 80


class PassageFileError(MalformedError):
    """A --passage-file that cannot be read."""


# --- source read ---------------------------------------------------------------------------


@click.group("source")
def source_group() -> None:
    """Register the passages an agent read."""


@source_group.command("read")
@click.argument("thread_id", metavar="THREAD")
@click.option("--ref", "ref_id", required=True, help="Reference id statements will cite.")
@click.option("--source", "source", required=True, help="The source (file, URL, document id).")
@click.option("--location", required=True, help="Where in the source (page, paragraph, lines).")
@click.option("--sha256", "digest", default=None, help="SHA-256 of the passage (64 hex digits).")
@click.option(
    "--passage-file",
    type=click.Path(dir_okay=False, path_type=Path),
    default=None,
    help="The passage text; its SHA-256 is recorded (the text itself is not).",
)
@actor_option(help=ACTOR_HELP)
@json_option
@ledger_options
def source_read(
    thread_id: str,
    ref_id: str,
    source: str,
    location: str,
    digest: str | None,
    passage_file: Path | None,
    actor: str,
    as_json: bool,
    db: str | None,
    key_file: Path | None,
) -> None:
    """Record a source.read registering one passage reference."""
    if (digest is None) == (passage_file is None):
        raise click.UsageError("give exactly one of --sha256 and --passage-file")
    if passage_file is not None:
        try:
            digest = hashlib.sha256(passage_file.read_bytes()).hexdigest()
        except OSError as exc:
            raise PassageFileError(
                f"cannot read passage file {passage_file}: {exc.strerror}"
            ) from None
    fields = {"ref": ref_id, "source": source, "location": location, "sha256": digest}
    try:
        request = parse_request(SOURCE_READ, {"refs": [fields]})
    except LifecycleFormatError as exc:  # name the option, not the body field
        option = f"--{exc.path.rsplit('.', 1)[-1]}"
        raise LifecycleFormatError(option, exc.problem).with_hint(exc.hint) from None
    assert isinstance(request, ReadRequest)
    with open_ledger(db, key_file, need_key=True) as ledger:
        result = ledger.thread(thread_id).read_source(request.refs, actor=actor, partial=True)
    report_batch(result, "reference", as_json=as_json)


# --- evidence ------------------------------------------------------------------------------


@click.group("evidence")
def evidence_group() -> None:
    """Admit, revise and read evidence."""


@evidence_group.command("upsert")
@click.argument("thread_id", metavar="THREAD")
@click.option(
    "--body",
    "body_text",
    required=True,
    help='Statements: {"statements": [{"text", "cites"}, ...]} or the list; JSON, @FILE or -.',
)
@actor_option(help=ACTOR_HELP)
@dry_run_option
@json_option
@ledger_options
def upsert(
    thread_id: str,
    body_text: str,
    actor: str,
    dry_run: bool,
    as_json: bool,
    db: str | None,
    key_file: Path | None,
) -> None:
    """Propose statements; each is admitted or rejected on its own."""
    value = read_body(body_text)
    if isinstance(value, list):
        value = {"statements": value}
    if dry_run:
        return preview(db, key_file, thread_id, EVIDENCE_UPSERT, value, "--body")
    request = parse_request(EVIDENCE_UPSERT, value, "--body")
    assert isinstance(request, UpsertRequest)
    with open_ledger(db, key_file, need_key=True) as ledger:
        result = ledger.thread(thread_id).evidence.upsert(
            request.statements, actor=actor, partial=True
        )
    report_batch(result, "statement", as_json=as_json)


@evidence_group.command("revise")
@click.argument("thread_id", metavar="THREAD")
@click.argument("evidence_id", metavar="ID")
@click.option("--replacement", default=None, help='{"text", "cites"}: JSON, @FILE or -.')
@click.option("--retract", is_flag=True, help="Retract the entry instead of superseding it.")
@actor_option(help=ACTOR_HELP)
@dry_run_option
@json_option
@ledger_options
def revise(
    thread_id: str,
    evidence_id: str,
    replacement: str | None,
    retract: bool,
    actor: str,
    dry_run: bool,
    as_json: bool,
    db: str | None,
    key_file: Path | None,
) -> None:
    """Supersede evidence ID by a replacement, or retract it."""
    if retract == (replacement is not None):
        raise click.UsageError("give exactly one of --replacement and --retract")
    value = None if replacement is None else read_body(replacement, "--replacement")
    if dry_run:
        value = {"id": evidence_id, "replacement": value}
        return preview(db, key_file, thread_id, EVIDENCE_REVISE, value, "ID")
    request = parse_request(EVIDENCE_REVISE, {"id": evidence_id, "replacement": value})
    assert isinstance(request, EvidenceReviseRequest)
    with open_ledger(db, key_file, need_key=True) as ledger:
        try:
            result = ledger.thread(thread_id).evidence.revise(
                request.id, request.replacement, actor=actor
            )
        except LifecycleRefusedError as exc:
            raise refusal(exc) from None
    if as_json:
        echo_json(
            {
                "seq": result.seq,
                "id": result.id,
                "successor": result.successor,
                "stale": list(result.stale),
            }
        )
        return
    change = "retracted" if result.successor is None else f"superseded by {result.successor}"
    stale = ", ".join(result.stale) or "none"
    click.echo(f"seq {result.seq}\t{result.id} {change}\tstale: {stale}")


@evidence_group.command("list")
@click.argument("thread_id", metavar="THREAD")
@click.option("--status", type=click.Choice(STATUSES), default=None, help="Only this status.")
@click.option("--json", "as_json", is_flag=True, help="Print a JSON array.")
@ledger_options
def list_command(
    thread_id: str, status: str | None, as_json: bool, db: str | None, key_file: Path | None
) -> None:
    """One line per evidence entry: id, status, admitted seq, cites, text."""
    with open_ledger(db, key_file) as ledger:
        records = ledger.thread(thread_id).evidence.list(status)
    if as_json:
        click.echo(json.dumps([evidence_json(r) for r in records], ensure_ascii=False))
        return
    for record in records:
        cites = ",".join(record.cites)
        click.echo(
            terminal_text(
                f"{record.id}\t{record.status}\tseq {record.seq}\t{cites}\t{_short(record.text)}"
            )
        )


@evidence_group.command("show")
@click.argument("thread_id", metavar="THREAD")
@click.argument("evidence_id", metavar="ID")
@click.option("--json", "as_json", is_flag=True, help="Print one JSON object.")
@ledger_options
def show(
    thread_id: str, evidence_id: str, as_json: bool, db: str | None, key_file: Path | None
) -> None:
    """Evidence ID in full, with the passages it cites."""
    with open_ledger(db, key_file) as ledger:
        thread = ledger.thread(thread_id)
        record = thread.evidence.get(evidence_id)
        references = {ref.ref: ref for ref in thread.references() if ref.ref in record.cites}
    if as_json:
        click.echo(json.dumps(evidence_json(record), ensure_ascii=False))
        return
    click.echo(f"id: {record.id}")
    click.echo(f"status: {record.status}")
    click.echo(terminal_text(f"text: {record.text}"))
    click.echo(f"admitted: seq {record.seq}")
    if record.changed_seq is not None:
        click.echo(f"changed: seq {record.changed_seq}")
    if record.predecessor is not None:
        click.echo(f"predecessor: {record.predecessor}")
    if record.successor is not None:
        click.echo(f"successor: {record.successor}")
    for ref_id in record.cites:
        ref = references[ref_id]
        click.echo(
            terminal_text(
                f"cites: {ref.ref}\t{ref.source}\t{ref.location}\tsha256 {ref.sha256}\t"
                f"read at seq {ref.seq}"
            )
        )


@evidence_group.command("history")
@click.argument("thread_id", metavar="THREAD")
@click.argument("evidence_id", metavar="ID")
@json_option
@ledger_options
def history(
    thread_id: str, evidence_id: str, as_json: bool, db: str | None, key_file: Path | None
) -> None:
    """The revision chain through evidence ID, oldest first, with the seqs that made it."""
    with open_ledger(db, key_file) as ledger:
        chain = ledger.thread(thread_id).evidence.history(evidence_id)
    if as_json:
        echo_json([evidence_json(record) for record in chain])
        return
    for record in chain:
        changed = (
            "" if record.changed_seq is None else f"{record.status} at seq {record.changed_seq}"
        )
        click.echo(
            terminal_text(
                f"{record.id}\tadmitted at seq {record.seq}\t{changed or record.status}\t"
                f"{_short(record.text)}"
            )
        )


def evidence_json(record: EvidenceRecord) -> dict[str, Any]:
    """The JSON form of an evidence record (``evidence list/show --json``)."""
    return {
        "id": record.id,
        "status": record.status,
        "text": record.text,
        "cites": list(record.cites),
        "successor": record.successor,
        "predecessor": record.predecessor,
        "seq": record.seq,
        "changed_seq": record.changed_seq,
    }


def _short(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= TEXT_WIDTH else flat[: TEXT_WIDTH - 1] + "…"
