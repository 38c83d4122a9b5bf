"""The `registre` command line.

Every command runs through :func:`main`, which turns a :class:`registre.errors.RegistreError`
into one line on stderr -- ``registre: error: <message>``, followed by ``registre: hint:
<hint>`` on a line of its own when the error carries a hint -- and the error's exit code (2
for malformed input and refused requests, 1 for failed verification), never a traceback.
Subcommands are defined in sibling modules; :mod:`registre.cli.commands` builds :data:`cli`
from its one explicit list of them.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from registre.cli.commands import COMMANDS, cli
from registre.errors import RegistreError

__all__ = ["COMMANDS", "cli", "main"]


def main(argv: Sequence[str] | None = None) -> None:
    """Entry point of the console script: one line per error (and its hint), no traceback."""
    try:
        result = cli.main(args=list(argv) if argv is not None else None, standalone_mode=False)
    except RegistreError as exc:
        click.echo(f"registre: error: {exc}", err=True)
        if exc.hint:
            click.echo(f"registre: hint: {exc.hint}", err=True)
        sys.exit(exc.exit_code)
    except click.exceptions.Abort:
        click.echo("registre: aborted", err=True)
        sys.exit(130)
    except click.ClickException as exc:
        hint = " (see --help)" if isinstance(exc, click.UsageError) else ""
        click.echo(f"registre: error: {exc.format_message()}{hint}", err=True)
        sys.exit(2)
    except OSError as exc:
        where = f": {exc.filename}" if exc.filename else ""
        click.echo(f"registre: error: {exc.strerror or exc}{where}", err=True)
        sys.exit(2)
    if isinstance(result, int) and result != 0:
        sys.exit(result)
