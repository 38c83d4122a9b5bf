"""`registre mcp serve [--db URL] [--thread ID] [--listen HOST:PORT]`: registre as an MCP server.

Over stdio by default, which is how MCP clients (Claude Code, Codex, Cursor, IDEs) start a
local server: ``{"command": "registre", "args": ["mcp", "serve", "--thread", "T"]}``. Standard
output is the protocol channel, so everything the command says goes to standard error. With
``--listen`` it serves streamable HTTP at ``http://HOST:PORT/mcp``, on a loopback address only
(the server has no authentication).

The operator key is used when present (the record tools need it; without it the server reads
and proves only). ``--thread`` names the default thread of every tool, and creates it when the
ledger has no such thread yet. The ``mcp`` package is the ``registre[mcp]`` extra; it is
imported only when the server starts, so ``registre --help`` works without it.
"""

from __future__ import annotations

import asyncio
import re
from pathlib import Path

import click

from registre.cli.options import ledger_options, open_ledger
from registre.errors import RefusedError

__all__ = ["MissingExtraError", "mcp_group"]

_LISTEN = re.compile(r"(?:\[(?P<v6>[^\]]+)\]|(?P<host>[^:]+)):(?P<port>[0-9]{1,5})\Z")
_LOOPBACK = ("127.0.0.1", "localhost", "::1")


class MissingExtraError(RefusedError):
    """A command whose optional dependency (an extra) is not installed."""


def _listen_address(value: str) -> tuple[str, int]:
    match = _LISTEN.match(value)
    if match is None or not 0 < int(match["port"]) < 65536:
        raise click.BadParameter(f"expected HOST:PORT, got {value!r}", param_hint="--listen")
    host = match["v6"] or match["host"]
    if host not in _LOOPBACK:
        raise click.BadParameter(
            f"{host} is not a loopback address; the server has no authentication, so it "
            f"listens only on {', '.join(_LOOPBACK)}",
            param_hint="--listen",
        )
    return host, int(match["port"])


@click.group("mcp")
def mcp_group() -> None:
    """Serve registre to MCP clients (Claude Code, Codex, Cursor, IDEs)."""


@mcp_group.command("serve")
@ledger_options
@click.option("--thread", "thread_id", default=None, help="Default thread of every tool.")
@click.option(
    "--listen",
    default=None,
    metavar="HOST:PORT",
    help="Serve streamable HTTP on this loopback address instead of stdio.",
)
def serve(db: str | None, key_file: Path | None, thread_id: str | None, listen: str | None) -> None:
    """Run the MCP server over stdio (or streamable HTTP with --listen)."""
    address = _listen_address(listen) if listen is not None else None
    try:
        from registre.adapters import mcp_server
    except ModuleNotFoundError as exc:
        missing = (exc.name or "mcp").split(".")[0]
        raise MissingExtraError(
            f"registre mcp serve needs the {missing} package, which is not installed"
        ).with_hint("pip install 'registre[mcp]'") from None
    with open_ledger(db, key_file) as ledger:
        if thread_id is not None and thread_id not in {t.id for t in ledger.threads()}:
            origin = ledger.create_thread(thread_id).origin
            click.echo(f"registre: created thread {origin}", err=True)
        if address is None:
            asyncio.run(mcp_server.serve_stdio(ledger, thread_id))
        else:
            host, port = address
            click.echo(f"registre: serving MCP at http://{host}:{port}/mcp", err=True)
            asyncio.run(mcp_server.serve_http(ledger, host, port, thread_id))
