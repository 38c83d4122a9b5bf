"""`registre append THREAD --kind K --body JSON|@FILE|-`: sign and store one entry."""

from __future__ import annotations

import base64
import sys
from pathlib import Path

import click

from registre.attest.bodies import MAX_BODY_BYTES
from registre.attest.canonical import parse_strict
from registre.attest.errors import MalformedError
from registre.cli import cli
from registre.cli.options import ledger_options, open_ledger

__all__ = ["BodyInputError", "append_command", "read_body"]

MAX_BODY_INPUT = 2 * MAX_BODY_BYTES  # room for whitespace; the schema caps the body itself


class BodyInputError(MalformedError):
    """A --body argument that cannot be read: missing file, too large, not strict JSON
    (the parser's own error is chained as the cause)."""


def read_body(value: str) -> object:
    """The JSON value of a ``--body``: inline JSON, ``@path`` for a file, ``-`` for stdin.

    Read strictly: duplicate keys, NaN, lone surrogates, ... are refused. Raises
    BodyInputError, naming where the body came from and what is wrong.
    """
    if value == "-":
        data = sys.stdin.buffer.read(MAX_BODY_INPUT + 1)
        where = "standard input"
    elif value.startswith("@"):
        where = value[1:]
        try:
            with open(where, "rb") as handle:
                data = handle.read(MAX_BODY_INPUT + 1)
        except OSError as exc:
            raise BodyInputError(f"cannot read body file {where}: {exc.strerror}") from None
    else:
        data = value.encode("utf-8", "surrogatepass")
        where = "--body"
    if len(data) > MAX_BODY_INPUT:
        raise BodyInputError(f"body from {where} is larger than {MAX_BODY_INPUT} bytes")
    try:
        return parse_strict(data)
    except MalformedError as exc:
        raise BodyInputError(f"body from {where} is not strict JSON: {exc}") from exc


@cli.command("append")
@click.argument("thread_id", metavar="THREAD")
@click.option("--kind", required=True, help="Entry kind, e.g. turn, tool.call, decision.")
@click.option("--body", "body_text", required=True, help="Body: JSON text, @FILE, or - for stdin.")
@click.option("--actor", default="operator", show_default=True, help="Who acted.")
@click.option("--json", "as_json", is_flag=True, help="Print the signed leaf (one JSON line).")
@ledger_options
def append_command(
    thread_id: str,
    kind: str,
    body_text: str,
    actor: str,
    as_json: bool,
    db: str | None,
    key_file: Path | None,
) -> None:
    """Sign and append one entry to THREAD."""
    body = read_body(body_text)
    with open_ledger(db, key_file, need_key=True) as ledger:
        entry = ledger.thread(thread_id).append(kind, body, actor)
    if as_json:
        click.echo(entry.leaf.decode("utf-8"))
    else:
        digest = base64.b64encode(entry.leaf_hash).decode("ascii")
        click.echo(f"{thread_id} seq {entry.seq} leaf hash {digest}")
