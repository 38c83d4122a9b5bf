"""The `registre` command line.

Every command runs through :func:`main`, which turns a :class:`registre.errors.RegistreError`
into one line on stderr -- ``registre: error: <message>``, followed by ``registre: hint:
<hint>`` on a line of its own when the error carries a hint -- and the error's exit code,
never a traceback. The exit codes are :data:`registre.errors.EXIT_CODES` (shown by
``registre --help``): 0 ok, 1 verification failed, 2 bad input or refused request, 3 could
not run (the database unreachable, locked past the timeout, read-only for a write, full), 4
an internal error (a bug: one line, and the traceback with ``REGISTRE_DEBUG=1``), 130
interrupted. Subcommands are defined in sibling modules; :mod:`registre.cli.commands` builds
:data:`cli` from its one explicit list of them.
"""

from __future__ import annotations

import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any

import click

from registre.cli.commands import cli
from registre.errors import EXIT_INTERNAL, RegistreError, UnavailableError

__all__ = ["COMMANDS", "DEBUG_ENV", "main"]

COMMANDS: tuple[click.Command, ...]  # loaded on first use, by __getattr__ below


def __getattr__(name: str) -> Any:
    """``COMMANDS`` (every command object) is loaded on first use: see commands.py."""
    if name == "COMMANDS":
        from registre.cli import commands

        return commands.COMMANDS
    raise AttributeError(name)


DEBUG_ENV = "REGISTRE_DEBUG"


def _fail(exc: RegistreError) -> None:
    click.echo(f"registre: error: {exc}", err=True)
    if exc.hint:
        click.echo(f"registre: hint: {exc.hint}", err=True)
    sys.exit(exc.exit_code)


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the console script: one line per error (and its hint), no traceback."""
    try:
        result = cli.main(args=list(argv) if argv is not None else None, standalone_mode=False)
    except RegistreError as exc:
        _fail(exc)
    except (click.exceptions.Abort, KeyboardInterrupt):
        click.echo("registre: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        hint = " (see --help)" if isinstance(exc, click.UsageError) else ""
        message = " ".join(exc.format_message().split())
        ctx = getattr(exc, "ctx", None)
        if isinstance(exc, click.UsageError) and message.startswith("Usage:") and ctx is not None:
            group = ctx.command
            names = group.list_commands(ctx) if isinstance(group, click.Group) else []
            message = f"`{ctx.command_path}` needs a command: {', '.join(names)}"
            hint = f" (see {ctx.command_path} --help)"
        click.echo(f"registre: error: {message}{hint}", err=True)
        sys.exit(2)
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        click.echo(f"registre: error: {exc.strerror or exc}{where}", err=True)
        sys.exit(2)
    except MemoryError:
        _fail(UnavailableError("out of memory").with_hint("use smaller inputs or sizes"))
    except Exception as exc:
        _internal(exc)
    if isinstance(result, int) and result != 0:
        sys.exit(result)


def _internal(exc: Exception) -> None:
    """One line for an exception registre did not expect (a bug), exit 4; the database
    faults that slipped past the store's translation get their own error and exit code."""
    from registre.ledger import database_fault

    fault = database_fault(exc, "the ledger database")
    if fault is not None:
        _fail(fault)
    if os.environ.get(DEBUG_ENV):
        traceback.print_exc()
    first = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    click.echo(f"registre: error: internal error: {type(exc).__name__}: {first}", err=True)
    click.echo(
        f"registre: hint: this is a bug in registre; {DEBUG_ENV}=1 shows the traceback",
        err=True,
    )
    sys.exit(EXIT_INTERNAL)
